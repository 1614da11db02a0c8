package conformance

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Queue channels through the real binary (issue 13; checklist C).

const queueChannel = `jobs:
  type: queue
  filter: work/+/inspect
  visibility_timeout: 1s
  retry:
    max_attempts: 3`

const queueForm = "$saguin/queue/jobs"
const queueResponse = "$saguin/queue/jobs/response"

func startQueueBroker(t *testing.T, channels string) *brokerProc {
	t.Helper()
	return startBroker(t, brokerConfig{Channels: channels})
}

func queueWorker(t *testing.T, addr, id string) *raw {
	t.Helper()
	w := dialRaw(t, addr, codec.Version5)
	w.mustConnect(id, nil)
	if got := w.subscribe(1, queueForm, 1); len(got) != 1 || got[0] != codec.GrantedQoS1 {
		t.Fatalf("SUBACK %v for the queue's form, want 0x01", got)
	}
	return w
}

func queueLabel(p *codec.Publish, key string) (string, bool) {
	for _, u := range p.Properties.User {
		if string(u.Key) == key {
			return string(u.Value), true
		}
	}
	return "", false
}

func offerAttempt(t *testing.T, p *codec.Publish) int {
	t.Helper()
	v, ok := queueLabel(p, "saguin-attempt")
	if !ok {
		t.Fatalf("offer without saguin-attempt: %v", userProps(&p.Properties))
	}
	n, _ := strconv.Atoi(v)
	return n
}

// queueProducer is a connected MQTT 5 client that publishes jobs.
func queueProducer(t *testing.T, addr string) *raw {
	t.Helper()
	pub := dialRaw(t, addr, codec.Version5)
	pub.mustConnect("producer", nil)
	return pub
}

// takeOffer reads the next offer, waiting up to 5 s, and acknowledges its
// PUBLISH: the lease's visibility timeout starts at that PUBACK.
func (c *raw) takeOffer() *codec.Publish {
	c.t.Helper()
	o := c.expectPublishWithin(5 * time.Second)
	c.ackDelivery(o)
	return o
}

// answer publishes ack or return for offer o on its Response Topic, at QoS 0
// (a QoS 1 answer's PUBACK would interleave with the next offer).
func (c *raw) answer(o *codec.Publish, payload string) {
	c.t.Helper()
	p := &codec.Publish{Topic: o.Properties.ResponseTopic, Payload: []byte(payload)}
	p.Properties.CorrelationData = o.Properties.CorrelationData
	p.Properties.Present.Set(codec.PropCorrelationData)
	c.sendPublish(p)
}

func TestQueueFormSubackCodes(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("codes", nil)
	cases := []struct {
		sub  codec.Subscription
		want codec.ReasonCode
	}{
		{codec.Subscription{Filter: []byte(queueForm), QoS: 1}, codec.GrantedQoS1},
		{codec.Subscription{Filter: []byte(queueForm), QoS: 2}, codec.GrantedQoS1},
		{codec.Subscription{Filter: []byte(queueForm), QoS: 0}, codec.ImplementationSpecificError},
		{codec.Subscription{Filter: []byte(queueForm), QoS: 1, NoLocal: true}, codec.TopicFilterInvalid},
		{codec.Subscription{Filter: []byte(queueForm + "/#"), QoS: 1}, codec.TopicFilterInvalid},
		{codec.Subscription{Filter: []byte(queueResponse), QoS: 1}, codec.TopicFilterInvalid},
		{codec.Subscription{Filter: []byte("$saguin/queue/#"), QoS: 1}, codec.TopicFilterInvalid},
		{codec.Subscription{Filter: []byte("$saguin/queue/nothing"), QoS: 1}, codec.TopicFilterInvalid},
		{codec.Subscription{Filter: []byte("$saguin/queue/jobs__dlq"), QoS: 1}, codec.TopicFilterInvalid},
		{codec.Subscription{Filter: []byte("work/+/inspect"), QoS: 1}, codec.TopicFilterInvalid},
		{codec.Subscription{Filter: []byte("work/7/inspect"), QoS: 1}, codec.TopicFilterInvalid},
		{codec.Subscription{Filter: []byte("#"), QoS: 1}, codec.GrantedQoS1},
		{codec.Subscription{Filter: []byte("$share/g/work/+/inspect"), QoS: 1}, codec.GrantedQoS1},
		{codec.Subscription{Filter: []byte("$share/g/" + queueForm), QoS: 1}, codec.NotAuthorized},
	}
	for i, k := range cases {
		ack := c.subscribeWith(uint16(10+i), nil, k.sub)
		if len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] != k.want {
			t.Errorf("%s (QoS %d, No Local %v): SUBACK %v, want 0x%02x", k.sub.Filter, k.sub.QoS, k.sub.NoLocal, ack.ReasonCodes, byte(k.want))
		}
	}
	// A refusal keeps the connection.
	c.expectNothing("after the refusals")
}

func TestQueueFormFrom311Refused0x80(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	c := dialRaw(t, b.addr, codec.Version311)
	c.mustConnect("old-worker", nil)
	if got := c.subscribe(1, queueForm, 1); len(got) != 1 || got[0] != 0x80 {
		t.Fatalf("a 3.1.1 worker's SUBACK %v, want 0x80", got)
	}
}

func TestQueueOfferFromA311ProducerCarriesResponseTopicAndDeliveryID(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	w := queueWorker(t, b.addr, "w1")
	pub := dialRaw(t, b.addr, codec.Version311)
	pub.mustConnect("producer", nil)
	pub.publishQoS1("work/7/inspect", []byte("job-1"), 1)
	o := w.expectPublishWithin(5 * time.Second)
	if o.QoS != 1 || string(o.Topic) != "work/7/inspect" || string(o.Payload) != "job-1" {
		t.Fatalf("offer QoS %d on %q: %q", o.QoS, o.Topic, o.Payload)
	}
	if string(o.Properties.ResponseTopic) != queueResponse {
		t.Fatalf("Response Topic %q", o.Properties.ResponseTopic)
	}
	if n := len(o.Properties.CorrelationData); n == 0 || n > 32 {
		t.Fatalf("Correlation Data of %d bytes", n)
	}
	for _, k := range []string{"saguin-id", "saguin-offset", "saguin-timestamp", "saguin-attempt"} {
		if _, ok := queueLabel(o, k); !ok {
			t.Fatalf("offer lacks %s: %v", k, userProps(&o.Properties))
		}
	}
	for _, k := range []string{"saguin-channel", "saguin-expires"} {
		if _, ok := queueLabel(o, k); ok {
			t.Fatalf("offer carries %s", k)
		}
	}
}

func TestQueueAckResolvesAndTheNextJobIsOfferedAtOnce(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/1/inspect", []byte("a"), 1)
	pub.publishQoS1("work/2/inspect", []byte("b"), 2)
	first := w.expectPublishWithin(5 * time.Second)
	w.expectNothing("one job per worker, whatever its Receive Maximum")
	w.ackDelivery(first)
	w.answer(first, "ack")
	second := w.expectPublishWithin(5 * time.Second)
	if string(second.Payload) == string(first.Payload) {
		t.Fatal("an acknowledged job was offered again")
	}
	w.ackDelivery(second)
	// A QoS 1 answer is PUBACKed 0x00.
	p := &codec.Publish{QoS: 1, PacketID: 9, Topic: second.Properties.ResponseTopic, Payload: []byte("ack")}
	p.Properties.CorrelationData = second.Properties.CorrelationData
	p.Properties.Present.Set(codec.PropCorrelationData)
	if code := w.publishAs(p, 9); code != codec.Success {
		t.Fatalf("the answer's PUBACK 0x%02x, want 0x00", byte(code))
	}
	w.quietFor(1500*time.Millisecond, "both jobs acknowledged: nothing is offered again")
}

func TestQueueResponseToNoQueueIs0x90(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("x", nil)
	p := &codec.Publish{QoS: 1, PacketID: 3, Topic: []byte("$saguin/queue/nothing/response"), Payload: []byte("ack")}
	if code := c.publishAs(p, 3); code != codec.TopicNameInvalid {
		t.Fatalf("PUBACK 0x%02x, want 0x90", byte(code))
	}
}

func TestQueueVisibilityTimeoutFromThePubackOffersTheNextAttempt(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/1/inspect", []byte("a"), 1)
	o := w.expectPublishWithin(5 * time.Second)
	w.ackDelivery(o) // the 1 s visibility timeout starts here
	again := w.expectPublishWithin(5 * time.Second)
	if offerAttempt(t, again) != 2 || string(again.Properties.CorrelationData) == string(o.Properties.CorrelationData) {
		t.Fatalf("after the timeout: attempt %d", offerAttempt(t, again))
	}
}

func TestQueueReturnOffersAgainWithTheNextAttempt(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/1/inspect", []byte("a"), 1)
	o := w.takeOffer()
	w.answer(o, "return")
	again := w.expectPublishWithin(5 * time.Second)
	if offerAttempt(t, again) != 2 {
		t.Fatalf("after a return: attempt %d", offerAttempt(t, again))
	}
}

func TestQueueWorkerDisconnectReturnsItsJob(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	a := queueWorker(t, b.addr, "a")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/1/inspect", []byte("a"), 1)
	a.takeOffer()
	a.expectNothing("leased")
	bw := queueWorker(t, b.addr, "b")
	a.drop()
	got := bw.expectPublishWithin(5 * time.Second)
	if string(got.Payload) != "a" || offerAttempt(t, got) != 2 {
		t.Fatalf("the other worker got %q at attempt %d", got.Payload, offerAttempt(t, got))
	}
}

func TestQueueRetainDroppedOnTheOffer(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	pub.sendPublish(&codec.Publish{QoS: 1, PacketID: 1, Retain: true, Topic: []byte("work/1/inspect"), Payload: []byte("r")})
	if code := pub.expectAck(codec.TypePuback, 1); code != codec.Success {
		t.Fatalf("a retained queue publish PUBACK 0x%02x, want 0x00", byte(code))
	}
	o := w.expectPublishWithin(5 * time.Second)
	if o.Retain {
		t.Fatal("the offer carries RETAIN")
	}
}

func TestQueueAtMaxBytesRefuses0x97AndRecovers(t *testing.T) {
	b := startQueueBroker(t, queueChannel+"\n  max_bytes: 200")
	pub := queueProducer(t, b.addr)
	payload := []byte(strings.Repeat("x", 60))
	refused := false
	for i := uint16(1); i < 10; i++ {
		pub.publish("work/1/inspect", payload, 1, i)
		if code := pub.expectAck(codec.TypePuback, i); code == codec.QuotaExceeded {
			refused = true
			break
		} else if code != codec.Success {
			t.Fatalf("PUBACK 0x%02x", byte(code))
		}
	}
	if !refused {
		t.Fatal("max_bytes never refused 0x97")
	}
	w := queueWorker(t, b.addr, "w1")
	o := w.takeOffer()
	w.answer(o, "ack")
	// Logged once the store has the job resolved and its bytes free.
	if b.log.wait(regexp.MustCompile(`queue: acknowledged`), 5*time.Second) == "" {
		t.Fatal("no acknowledgement logged within 5 s")
	}
	pub.publish("work/1/inspect", payload, 1, 20)
	if code := pub.expectAck(codec.TypePuback, 20); code != codec.Success {
		t.Fatalf("after a job resolved: PUBACK 0x%02x, want 0x00", byte(code))
	}
}

// TestQueueAckFromMosquittoPubIsIgnored: an ack sent by mosquitto_pub, a
// separate session, echoing the worker's Delivery ID, is acknowledged at
// MQTT level and changes nothing (checklist C5.7).
func TestQueueAckFromMosquittoPubIsIgnored(t *testing.T) {
	if _, err := exec.LookPath("mosquitto_pub"); err != nil {
		t.Skip("mosquitto_pub is not installed")
	}
	b := startQueueBroker(t, queueChannel)
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/1/inspect", []byte("a"), 1)
	o := w.takeOffer()
	host, port := hostPort(t, b.addr)
	out, err := exec.Command("mosquitto_pub", "-h", host, "-p", port, "-V", "mqttv5", "-q", "1", "-i", "intruder",
		"-t", queueResponse, "-m", "ack", "-D", "publish", "correlation-data", string(o.Properties.CorrelationData)).CombinedOutput()
	if err != nil {
		t.Fatalf("mosquitto_pub: %v: %s", err, out)
	}
	if b.log.wait(regexp.MustCompile(`answer ignored.*client_id=intruder.*held by another session`), 5*time.Second) == "" {
		t.Fatal("no log line for the intruder's ignored answer")
	}
	// Still the worker's: its own return is applied and the job comes back.
	w.answer(o, "return")
	again := w.expectPublishWithin(5 * time.Second)
	if string(again.Payload) != "a" || offerAttempt(t, again) != 2 {
		t.Fatalf("got %q attempt %d", again.Payload, offerAttempt(t, again))
	}
}

// TestQueueKill9RestartOnSqliteOffersEveryUnresolvedJobAttemptsKept: with
// one job acknowledged, one leased and one waiting, kill -9; after the
// restart both unresolved jobs are offered at once, the leased one at its
// next attempt, and the acknowledged one never (checklist C14).
func TestQueueKill9RestartOnSqliteOffersEveryUnresolvedJobAttemptsKept(t *testing.T) {
	dir := t.TempDir()
	yaml := saguinYAML(sqliteStorage, "") + "channels:\n  jobs:\n    type: queue\n    filter: work/+/inspect\n    visibility_timeout: 1m\n"
	b := startSaguin(t, dir, yaml)
	pub := queueProducer(t, b.addr)
	for i, p := range []string{"done", "leased", "waiting"} {
		pub.publishQoS1("work/1/inspect", []byte(p), uint16(i+1))
	}
	w := queueWorker(t, b.addr, "w1")
	o := w.takeOffer()
	w.answer(o, "ack")
	w.takeOffer()
	w.expectNothing("the second job is leased") // the PUBACK is handled before the PINGRESP
	if b.log.wait(regexp.MustCompile(`queue: leased.*offset=2`), 5*time.Second) == "" {
		t.Fatal("no log line for the second job's lease")
	}
	b.kill9()

	b2 := startSaguin(t, dir, yaml)
	got := map[string]int{}
	for _, id := range []string{"a", "b"} {
		c := queueWorker(t, b2.addr, id)
		p := c.expectPublishWithin(5 * time.Second)
		got[string(p.Payload)] = offerAttempt(t, p)
	}
	if len(got) != 2 || got["leased"] != 2 || got["waiting"] != 1 {
		t.Fatalf("after kill -9: %v, want leased at attempt 2 and waiting at 1, done never", got)
	}
}

// TestQueueDeadLetterAfterTheLastAttemptReadableAsAnAppendChannel: a job
// returned at its last attempt moves to jobs__dlq on the topic with the
// __dlq level, with its saguin-dlq-* headers, saguin-channel and the
// publisher's Response Topic and Correlation Data; a reader of the derived
// filter replays it (checklist C10, C11).
func TestQueueDeadLetterAfterTheLastAttemptReadableAsAnAppendChannel(t *testing.T) {
	b := startQueueBroker(t, "jobs:\n  type: queue\n  filter: work/+/inspect\n  retry:\n    max_attempts: 1")
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	p := &codec.Publish{QoS: 1, PacketID: 1, Topic: []byte("work/7/inspect"), Payload: []byte("doomed")}
	p.Properties.ResponseTopic = []byte("producer/replies")
	p.Properties.CorrelationData = []byte("mine")
	p.Properties.Present.Set(codec.PropResponseTopic)
	p.Properties.Present.Set(codec.PropCorrelationData)
	if code := pub.publishAs(p, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	o := w.takeOffer()
	w.answer(o, "return")
	if b.log.wait(regexp.MustCompile(`level=WARN msg="queue: dead-lettered".*reason=attempts_exhausted`), 5*time.Second) == "" {
		t.Fatal("no warn line for the dead-letter move")
	}

	r := dialRaw(t, b.addr, codec.Version5)
	r.mustConnect("dlq-reader", nil)
	r.mustSubscribe(1, "work/+/inspect/__dlq", 1)
	d := r.expectPublishWithin(5 * time.Second)
	if string(d.Topic) != "work/7/inspect/__dlq" || string(d.Payload) != "doomed" {
		t.Fatalf("dead letter %q on %q", d.Payload, d.Topic)
	}
	want := map[string]string{"saguin-dlq-channel": "jobs", "saguin-dlq-offset": "1", "saguin-dlq-attempts": "1",
		"saguin-dlq-reason": "attempts_exhausted", "saguin-channel": "jobs__dlq"}
	for k, v := range want {
		if got, _ := queueLabel(d, k); got != v {
			t.Errorf("%s = %q, want %q (%v)", k, got, v, userProps(&d.Properties))
		}
	}
	for _, k := range []string{"saguin-dlq-first", "saguin-dlq-last", "saguin-dlq-at", "saguin-id"} {
		if _, ok := queueLabel(d, k); !ok {
			t.Errorf("dead letter lacks %s", k)
		}
	}
	if string(d.Properties.ResponseTopic) != "producer/replies" || string(d.Properties.CorrelationData) != "mine" {
		t.Errorf("the publisher's Response Topic %q / Correlation Data %q were not carried", d.Properties.ResponseTopic, d.Properties.CorrelationData)
	}
}

// TestQueueDeadLetterReachesAReaderConnectedBeforeTheMove: the dead-letter
// channel serves a reader already subscribed as any append channel serves
// a publish - the move wakes it, nothing waits for its next subscribe
// (checklist C11.3).
func TestQueueDeadLetterReachesAReaderConnectedBeforeTheMove(t *testing.T) {
	b := startQueueBroker(t, "jobs:\n  type: queue\n  filter: work/+/inspect\n  retry:\n    max_attempts: 1")
	r := dialRaw(t, b.addr, codec.Version5)
	r.mustConnect("dlq-reader", nil)
	r.mustSubscribe(1, "work/+/inspect/__dlq", 1)
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/7/inspect", []byte("doomed"), 1)
	o := w.takeOffer()
	w.answer(o, "return")
	d := r.expectPublishWithin(5 * time.Second)
	if string(d.Topic) != "work/7/inspect/__dlq" || string(d.Payload) != "doomed" {
		t.Fatalf("dead letter %q on %q", d.Payload, d.Topic)
	}
}

func TestQueuePublishIntoTheDeadLetterChannelIs0x87(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("forger", nil)
	p := &codec.Publish{QoS: 1, PacketID: 2, Topic: []byte("work/7/inspect/__dlq"), Payload: []byte("x")}
	if code := c.publishAs(p, 2); code != codec.NotAuthorized {
		t.Fatalf("PUBACK 0x%02x, want 0x87", byte(code))
	}
}

func TestQueueWillOnTheDeadLetterChannelIsConnack0x90(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	c := dialRaw(t, b.addr, codec.Version5)
	ack := c.connect("will-forger", func(p *codec.Connect) {
		p.WillFlag, p.WillTopic, p.WillPayload = true, []byte("work/7/inspect/__dlq"), []byte("x")
	})
	if ack.ReasonCode != codec.TopicNameInvalid {
		t.Fatalf("CONNACK 0x%02x, want 0x90", byte(ack.ReasonCode))
	}
}

// TestQueueFormWithSaguinFilterIs0x83ForThatFilterAlone (checklist C2.9): a
// queue already divides its work; the packet's other filter is granted.
func TestQueueFormWithSaguinFilterIs0x83ForThatFilterAlone(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	c := dialRaw(t, b.addr, codec.Version5)
	c.mustConnect("slicer", nil)
	ack := c.subscribeWith(1, func(p *codec.Properties) {
		p.User = []codec.UserProperty{{Key: []byte("saguin-filter"), Value: []byte("topic_hash(4, 1)")}}
		p.Present.Set(codec.PropUserProperty)
	}, codec.Subscription{Filter: []byte(queueForm), QoS: 1}, codec.Subscription{Filter: []byte("other/#"), QoS: 1})
	if len(ack.ReasonCodes) != 2 || ack.ReasonCodes[0] != codec.ImplementationSpecificError || ack.ReasonCodes[1] != codec.GrantedQoS1 {
		t.Fatalf("SUBACK %v, want [0x83 0x01]", ack.ReasonCodes)
	}
}

// TestQueueSessionHoldingAFilterTheNewQueueRefusesIsEndedAtStart (checklist
// C2.22): kept sessions subscribed while work/+/inspect was broadcast and
// old was a queue; the broker restarted with a queue claiming work/+/inspect
// and no queue old. The session holding the filter inside the new queue and
// the one holding old's form are ended at the start and counted
// subscription_refused, their clients come back to Session Present 0; a
// session whose filter merely crosses the queue is restored.
func TestQueueSessionHoldingAFilterTheNewQueueRefusesIsEndedAtStart(t *testing.T) {
	dir := t.TempDir()
	base := saguinYAML(sqliteStorage, "operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0")
	b := startSaguin(t, dir, base+"channels:\n  old:\n    type: queue\n    filter: old/#\n")
	inside, crossing := awaySubscriber(t, b.addr, "work/+/inspect"), awaySubscriber(t, b.addr, "work/#")
	worker := awaySubscriber(t, b.addr, "$saguin/queue/old")
	b.stop()

	b = startSaguin(t, dir, base+"channels:\n  jobs:\n    type: queue\n    filter: work/+/inspect\n")
	for _, w := range []struct{ id, filter string }{{inside, `work/\+/inspect`}, {worker, `\$saguin/queue/old`}} {
		if b.log.wait(regexp.MustCompile(`session ended at the start: it holds a subscription the channels now refuse.*client_id=`+w.id+`.*filter=`+w.filter+` code="Topic Filter invalid"`), 5*time.Second) == "" {
			t.Errorf("no warning for the session holding %s", w.filter)
		}
	}
	ob := withOps(b)
	_, body := ob.get(t, "GET", "/metrics")
	fams := parseScrape(t, body)
	if v, ok := value(fams["saguin_sessions_dropped_total"], "cause", "subscription_refused"); !ok || v != 2 {
		t.Errorf("saguin_sessions_dropped_total{cause=subscription_refused} = %v (present %v), want 2", v, ok)
	}
	if v, ok := value(fams["saguin_sessions_restored_total"]); !ok || v != 1 {
		t.Errorf("saguin_sessions_restored_total = %v (present %v), want 1: the crossing session alone", v, ok)
	}
	for _, id := range []string{inside, worker} {
		if ack := dialRaw(t, b.addr, codec.Version5).mustConnect(id, session(300)); ack.SessionPresent {
			t.Errorf("Session Present 1 for %s, ended at the start", id)
		}
	}
	if ack := dialRaw(t, b.addr, codec.Version5).mustConnect(crossing, session(300)); !ack.SessionPresent {
		t.Error("Session Present 0 for a session whose filter merely crosses the queue")
	}
}
