package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Queue rules of checklist C that the first queue tests left untested.

// TestQueueC3_11OffersGoOutInOffsetOrder: checklist C3.11 - a queue offers
// its jobs in offset order, the order they were stored in.
func TestQueueC3_11OffersGoOutInOffsetOrder(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	pub := queueProducer(t, b.addr)
	want := []string{"j1", "j2", "j3", "j4"}
	for i, p := range want {
		pub.publishQoS1("work/"+p+"/inspect", []byte(p), uint16(i+1))
	}
	w := queueWorker(t, b.addr, "w1")
	for _, p := range want {
		o := w.expectPublishWithin(5 * time.Second)
		if string(o.Payload) != p {
			t.Fatalf("offered %q, want %q (offset order %v)", o.Payload, p, want)
		}
		w.ackDelivery(o)
		w.answer(o, "ack")
	}
}

// TestQueueC4_4AWorkerOfTwoQueuesHoldsOneJobFromEach: checklist C4.4 - the
// one-job lease is per queue, so a worker subscribed to two queues holds a
// job of each at once, and no second job of either.
func TestQueueC4_4AWorkerOfTwoQueuesHoldsOneJobFromEach(t *testing.T) {
	b := startQueueBroker(t, queueChannel+"\nmail:\n  type: queue\n  filter: mail/+\n  visibility_timeout: 30s")
	w := queueWorker(t, b.addr, "w1")
	if got := w.subscribe(2, "$saguin/queue/mail", 1); len(got) != 1 || got[0] != codec.GrantedQoS1 {
		t.Fatalf("SUBACK %v for the second queue's form, want 0x01", got)
	}
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/1/inspect", []byte("job-a"), 1)
	pub.publishQoS1("work/2/inspect", []byte("job-b"), 2)
	pub.publishQoS1("mail/1", []byte("mail-a"), 3)
	pub.publishQoS1("mail/2", []byte("mail-b"), 4)
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		o := w.expectPublishWithin(5 * time.Second)
		got[string(o.Payload)] = true
	}
	if !got["job-a"] || !got["mail-a"] {
		t.Fatalf("offers %v, want the first job of each queue", got)
	}
	w.expectNothing("one job held from each queue: no second of either")
}

// TestQueueC3_8OfferCarriesSubscriptionIdentifierAndCountedDownExpiry:
// checklist C3.8 - an offer carries the Subscription Identifier of the
// worker's subscription and the Message Expiry Interval counted down by the
// time the job waited.
func TestQueueC3_8OfferCarriesSubscriptionIdentifierAndCountedDownExpiry(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	w := dialRaw(t, b.addr, codec.Version5)
	w.mustConnect("w1", nil)
	ack := w.subscribeWith(1, func(p *codec.Properties) {
		p.SubscriptionIDs = append(p.SubscriptionIDs, 42)
		p.Present.Set(codec.PropSubscriptionID)
	}, codec.Subscription{Filter: []byte(queueForm), QoS: 1})
	if len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] != codec.GrantedQoS1 {
		t.Fatalf("SUBACK %v, want 0x01", ack.ReasonCodes)
	}
	pub := queueProducer(t, b.addr)
	p := &codec.Publish{QoS: 1, PacketID: 1, Topic: []byte("work/1/inspect"), Payload: []byte("a")}
	p.Properties.MessageExpiry = 100
	p.Properties.Present.Set(codec.PropMessageExpiry)
	if code := pub.publishAs(p, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	check := func(o *codec.Publish, maxExpiry uint32) {
		t.Helper()
		if len(o.Properties.SubscriptionIDs) != 1 || o.Properties.SubscriptionIDs[0] != 42 {
			t.Errorf("offer's Subscription Identifiers %v, want [42]", o.Properties.SubscriptionIDs)
		}
		if !o.Properties.Present.Has(codec.PropMessageExpiry) || o.Properties.MessageExpiry == 0 || o.Properties.MessageExpiry > maxExpiry {
			t.Errorf("offer's Message Expiry Interval %d (present %v), want 1..%d",
				o.Properties.MessageExpiry, o.Properties.Present.Has(codec.PropMessageExpiry), maxExpiry)
		}
	}
	first := w.expectPublishWithin(5 * time.Second)
	check(first, 100)
	w.ackDelivery(first) // the 1 s visibility timeout starts here
	again := w.expectPublishWithin(5 * time.Second)
	if offerAttempt(t, again) != 2 {
		t.Fatalf("after the timeout: attempt %d", offerAttempt(t, again))
	}
	// At least a second has passed since the publish: the interval is counted down.
	check(again, 99)
}

// TestQueueC7_2ABackoffMaximumKeyIsRefusedAtStartNamingIt: checklist C7.2 -
// a queue's retry has no backoff maximum; a file giving one refuses the
// start and names the key, rather than starting with it ignored.
func TestQueueC7_2ABackoffMaximumKeyIsRefusedAtStartNamingIt(t *testing.T) {
	if *brokerFlag != "" {
		t.Skip("needs a broker started on its own configuration; -broker is set")
	}
	code, out := startFailing(t, brokerConfig{Channels: queueChannel + "\n    backoff_max: 10s"}, t.TempDir())
	if code == 0 || !strings.Contains(out, "channels.jobs.retry.backoff_max") {
		t.Fatalf("retry.backoff_max: exit %d, want a refusal naming the key; output:\n%s", code, out)
	}
}

// TestQueueC11_6DeadLetterChannelPublishedTotalStays0AfterAMove: checklist
// C11.6 - a dead-letter move is not a publish: after a job is moved,
// saguin_published_total{channel="jobs__dlq"} is still 0 while the
// dead-letter channel holds the record.
func TestQueueC11_6DeadLetterChannelPublishedTotalStays0AfterAMove(t *testing.T) {
	dir := t.TempDir()
	yaml := saguinYAML(memoryStorage, "operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0") +
		"channels:\n  jobs:\n    type: queue\n    filter: work/+/inspect\n    retry:\n      max_attempts: 1\n"
	b := startSaguin(t, dir, yaml)
	ob := withOps(b)
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/7/inspect", []byte("doomed"), 1)
	o := w.takeOffer()
	w.answer(o, "return")
	// The move is done once a reader gets the dead letter.
	r := dialRaw(t, b.addr, codec.Version5)
	r.mustConnect("dlq-reader", nil)
	r.mustSubscribe(1, "work/+/inspect/__dlq", 1)
	if d := r.expectPublishWithin(5 * time.Second); string(d.Payload) != "doomed" {
		t.Fatalf("dead letter %q", d.Payload)
	}
	_, body := ob.get(t, "GET", "/metrics")
	fams := parseScrape(t, body)
	for _, w := range []struct {
		name   string
		labels []string
		value  float64
	}{
		{"saguin_queue_dead_lettered_total", []string{"channel", "jobs"}, 1},
		{"saguin_channel_records", []string{"channel", "jobs__dlq"}, 1},
		{"saguin_published_total", []string{"channel", "jobs__dlq"}, 0},
		{"saguin_published_total", []string{"channel", "jobs"}, 1},
	} {
		if v, ok := value(fams[w.name], w.labels...); !ok || v != w.value {
			t.Errorf("%s%v = %v (present %v), want %v", w.name, w.labels, v, ok, w.value)
		}
	}
}

// TestQueueC9_4A311ProducerAtMaxBytesIsClosedAndQoS0IsDropped:
// checklist C9.4 - at a queue's max_bytes, a 3.1.1 producer's QoS 1 publish
// (whose PUBACK has no code for 0x97) closes its connection, and a QoS 0
// publish is dropped silently, its connection kept. (The count of the drop
// is not asserted: saguin_publish_refused_total gets no series for any of
// these refusals - reported to the lead.)
func TestQueueC9_4A311ProducerAtMaxBytesIsClosedAndQoS0IsDropped(t *testing.T) {
	b := startQueueBroker(t, queueChannel+"\n  max_bytes: 200")
	payload := []byte(strings.Repeat("x", 60))
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("producer5", nil)
	full, stored := false, 0
	for i := uint16(1); i < 10 && !full; i++ {
		pub.publish("work/1/inspect", payload, 1, i)
		switch code := pub.expectAck(codec.TypePuback, i); code {
		case codec.QuotaExceeded:
			full = true
		case codec.Success:
			stored++
		default:
			t.Fatalf("PUBACK 0x%02x", byte(code))
		}
	}
	if !full {
		t.Fatal("max_bytes never refused 0x97")
	}
	old := dialRaw(t, b.addr, codec.Version311)
	old.mustConnect("producer311", nil)
	old.publish("work/2/inspect", payload, 1, 1)
	old.expectClosedSilently()

	q0 := dialRaw(t, b.addr, codec.Version311)
	q0.mustConnect("producer311-qos0", nil)
	q0.publish("work/3/inspect", []byte(strings.Repeat("d", 60)), 0, 0)
	// The connection is kept: a PINGREQ after the publish is answered.
	q0.ping()
	w := queueWorker(t, b.addr, "w1")
	for i := 0; i < stored; i++ {
		o := w.expectPublishWithin(5 * time.Second)
		if string(o.Payload) != string(payload) || string(o.Topic) != "work/1/inspect" {
			t.Fatalf("offered %q on %q, want a job the MQTT 5 producer stored", o.Payload, o.Topic)
		}
		w.ackDelivery(o)
		w.answer(o, "ack")
	}
	w.quietFor(1500*time.Millisecond, "the refused publishes were not stored: nothing more is offered")
}

// TestQueueC10_5ARecordAtMaxTopicLevelsIsDeadLetteredOneLevelDeeper:
// checklist C10.5 - a job whose topic has limits.max_topic_levels levels is
// dead-lettered one level deeper and kept, read through a shallower #
// filter, while a point read of the deeper topic is refused.
func TestQueueC10_5ARecordAtMaxTopicLevelsIsDeadLetteredOneLevelDeeper(t *testing.T) {
	b := startBroker(t, brokerConfig{Limits: "max_topic_levels: 3",
		Channels: "jobs:\n  type: queue\n  filter: work/+/inspect\n  retry:\n    max_attempts: 1"})
	w := queueWorker(t, b.addr, "w1")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/7/inspect", []byte("deep"), 1)
	o := w.takeOffer()
	w.answer(o, "return")

	r := dialRaw(t, b.addr, codec.Version5)
	r.mustConnect("dlq-reader", nil)
	if got := r.subscribe(1, "work/7/inspect/__dlq", 1); len(got) != 1 || got[0] == codec.GrantedQoS1 || got[0] == codec.GrantedQoS0 {
		t.Errorf("a point read four levels deep: SUBACK %v, want a refusal", got)
	}
	r.mustSubscribe(2, "work/#", 1)
	d := r.expectPublishWithin(5 * time.Second)
	if string(d.Topic) != "work/7/inspect/__dlq" || string(d.Payload) != "deep" {
		t.Fatalf("through work/#: %q on %q, want the dead letter on work/7/inspect/__dlq", d.Payload, d.Topic)
	}
}

// TestQueueC3_3TheTopicDoesNotPickTheWorker: checklist C3.3 - any free
// worker takes the next job whatever its topic: two jobs on one topic go
// to two workers at once, rather than the second waiting for the worker
// holding the first.
func TestQueueC3_3TheTopicDoesNotPickTheWorker(t *testing.T) {
	b := startQueueBroker(t, queueChannel)
	a := queueWorker(t, b.addr, "a")
	bw := queueWorker(t, b.addr, "b")
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/1/inspect", []byte("first"), 1)
	pub.publishQoS1("work/1/inspect", []byte("second"), 2)
	got := map[string]bool{}
	for _, w := range []*raw{a, bw} {
		o := w.expectPublishWithin(5 * time.Second)
		got[string(o.Payload)] = true
	}
	if !got["first"] || !got["second"] {
		t.Fatalf("offers %v, want both jobs of the one topic, one to each worker", got)
	}
}

// TestQueueC2_8AWorkerWithoutConsumeIsRefused0x87: checklist C2.8 - the
// queue's form is granted only to a user whose roles allow consume on the
// queue; a user granted every topic but not consume is refused 0x87.
func TestQueueC2_8AWorkerWithoutConsumeIsRefused0x87(t *testing.T) {
	saguinOnly(t, "the test needs a saguin started with its own password file")
	dir := t.TempDir()
	pw := writePasswd(t, dir, map[string]string{"plain": "pwp", "worker": "pww"})
	acl := "roles:\n  all:\n    - topic: \"#\"\n      allow: [write, read]\n  work:\n    - channel: jobs\n      allow: [consume]\n" +
		"users:\n  plain: [all]\n  worker: [all, work]\n"
	if err := os.WriteFile(filepath.Join(dir, "acl.yaml"), []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBrokerIn(t, dir, brokerConfig{
		MQTT:     "password_file: " + pw + "\nacl_file: " + filepath.Join(dir, "acl.yaml"),
		Channels: queueChannel,
	})
	for _, k := range []struct {
		user, pass string
		want       codec.ReasonCode
	}{{"plain", "pwp", codec.NotAuthorized}, {"worker", "pww", codec.GrantedQoS1}} {
		c := dialRaw(t, b.addr, codec.Version5)
		c.mustConnect(clientID(t, k.user), login(k.user, k.pass))
		if got := c.subscribe(1, queueForm, 1); len(got) != 1 || got[0] != k.want {
			t.Errorf("%s: SUBACK %v for the queue's form, want 0x%02x", k.user, got, byte(k.want))
		}
	}
}
