package conformance

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// The /v1 routes that list the broker's records (RFC 0005 "What the /v1
// routes answer with"; checklist D.8 #81, #89-#96), through the binary.

var stampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)

// getJSON GETs path from the tcp door and decodes a 200 answer into v.
func (ob *opsBroker) getJSON(t *testing.T, path string, v any) string {
	t.Helper()
	resp, body := ob.get(t, "GET", path)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
	return body
}

type refusedBody struct {
	Clients []struct {
		ClientID string  `json:"client_id"`
		User     string  `json:"user"`
		Reason   string  `json:"reason"`
		Count    int     `json:"count"`
		LastSeen *string `json:"last_seen"`
	} `json:"clients"`
	Returned, Tracked, Beyond *int
}

// D.8 #89-#91: a CONNECT refused by Sagüin, one refused for its protocol
// version before the broker is asked anything, one naming no client id, and
// a connection ended for a refusal are each a row keyed by client id and
// user name, worst first, counted, with the code's name; a client that
// connected and left normally is none.
func TestOperationsRefusedListsEveryRefusedClientWorstFirst(t *testing.T) {
	ob := startOps(t, t.TempDir(), opsTCP, brokerConfig{MQTT: `min_protocol_version: "5"`})
	authMethod := func(user string) func(*codec.Connect) {
		return func(p *codec.Connect) {
			p.UsernameFlag, p.Username = true, []byte(user)
			p.Properties.AuthMethod = []byte("SCRAM-SHA-1")
			p.Properties.Present.Set(codec.PropAuthMethod)
		}
	}
	for range 2 {
		c := dialRaw(t, ob.addr, codec.Version5)
		if ack := c.connect("tasmota-c4f1", authMethod("fleet")); ack.ReasonCode != codec.BadAuthenticationMethod {
			t.Fatalf("CONNACK 0x%02x, want 0x8c", byte(ack.ReasonCode))
		}
	}
	old := dialRaw(t, ob.addr, codec.Version311)
	if ack := old.connect("old-1", func(p *codec.Connect) { p.UsernameFlag, p.Username = true, []byte("legacy") }); ack.ReasonCode != codec.ConnRefusedProtocolVersion311 {
		t.Fatalf("3.1.1 CONNACK 0x%02x, want 0x01", byte(ack.ReasonCode))
	}
	anon := dialRaw(t, ob.addr, codec.Version5)
	if ack := anon.connect("", authMethod("")); ack.ReasonCode != codec.BadAuthenticationMethod {
		t.Fatalf("CONNACK 0x%02x, want 0x8c", byte(ack.ReasonCode))
	}
	twice := dialRaw(t, ob.addr, codec.Version5)
	twice.mustConnect("dev-b", func(p *codec.Connect) { p.UsernameFlag, p.Username = true, []byte("ops-b") })
	twice.send(twice.connectPacket("dev-b", nil)) // a second CONNECT: ended 0x82
	twice.expectDisconnect(codec.ProtocolError)
	fine := dialRaw(t, ob.addr, codec.Version5)
	fine.mustConnect("fine", nil)
	fine.disconnect()

	var got refusedBody
	body := ob.getJSON(t, "/v1/operations/refused", &got)
	if got.Returned == nil || got.Tracked == nil || got.Beyond == nil || *got.Returned != 4 || *got.Tracked != 4 || *got.Beyond != 0 {
		t.Fatalf("returned/tracked/beyond: %s", body)
	}
	want := map[string]struct {
		user, reason string
		count        int
	}{
		"tasmota-c4f1": {"fleet", "bad authentication method", 2},
		"old-1":        {"legacy", "unsupported protocol version", 1},
		"":             {"", "bad authentication method", 1},
		"dev-b":        {"ops-b", "protocol error", 1},
	}
	for i, c := range got.Clients {
		w, ok := want[c.ClientID]
		if !ok || c.User != w.user || c.Reason != w.reason || c.Count != w.count {
			t.Errorf("row %+v, want %+v", c, w)
		}
		if c.LastSeen == nil || !stampRE.MatchString(*c.LastSeen) {
			t.Errorf("row %q last_seen %v, want RFC 3339 UTC to the second", c.ClientID, c.LastSeen)
		}
		delete(want, c.ClientID)
		if i == 0 && c.ClientID != "tasmota-c4f1" {
			t.Errorf("first row %q, want the client refused twice", c.ClientID)
		}
	}
	if len(want) > 0 {
		t.Errorf("no row for %v: %s", want, body)
	}
}

type consumersBody struct {
	Channels []struct {
		Channel    string `json:"channel"`
		NextOffset uint64 `json:"next_offset"`
		Consumers  int    `json:"consumers"`
		Returned   int    `json:"returned"`
		Positions  []struct {
			Reader   string  `json:"reader"`
			Offset   uint64  `json:"offset"`
			Behind   uint64  `json:"behind"`
			LastSeen *string `json:"last_seen"`
		} `json:"positions"`
	} `json:"channels"`
}

type lostBody struct {
	Readers []struct {
		Reader        string  `json:"reader"`
		Channel       string  `json:"channel"`
		Kind          string  `json:"kind"`
		Reported      bool    `json:"reported"`
		Count         uint64  `json:"count"`
		RecordsMissed uint64  `json:"records_missed"`
		LastPosition  uint64  `json:"last_position"`
		LastFloor     uint64  `json:"last_floor"`
		LastSeen      *string `json:"last_seen"`
	} `json:"readers"`
	Returned, Tracked int
	Beyond            uint64
}

// D.8 #81, #93-#96 and D.6 #60: /consumers lists the durable positions
// furthest behind with how far; once retention passes an away consumer's
// position and it comes back, /position-lost has its row - a session,
// reported (its CONNACK says Session Present 0), count 1, records_missed =
// last_floor - last_position - and the
// rows' counts sum to saguin_channel_position_lost_total.
func TestOperationsConsumersAndPositionLostFollowADurableConsumer(t *testing.T) {
	dir := t.TempDir()
	b := startAppend(t, dir, memoryStorage, "session:\n  ack_commit_interval: 10ms\n"+
		"operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0", "retention_bytes: 2000")
	ob := withOps(b)
	lag := dialRaw(t, b.addr, codec.Version5)
	lag.mustConnect("lagger", freshSession(3600))
	lag.mustSubscribe(1, "ev/#", 1)
	lag.disconnect()
	here := dialRaw(t, b.addr, codec.Version5)
	here.mustConnect("reader", freshSession(3600))
	here.mustSubscribe(1, "ev/#", 1)

	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("pub", nil)
	payload := []byte(strings.Repeat("x", 200))
	const n = 40
	for i := 1; i <= n; i++ {
		pub.publishQoS1("ev/x", payload, uint16(i))
	}
	if got := here.collect(n); len(got) != n {
		t.Fatalf("the connected reader read %d of %d", len(got), n)
	}

	var cons consumersBody
	deadline := time.Now().Add(waitLong)
	for {
		body := ob.getJSON(t, "/v1/operations/consumers", &cons)
		if len(cons.Channels) == 1 && cons.Channels[0].Consumers == 2 && len(cons.Channels[0].Positions) == 2 &&
			cons.Channels[0].Positions[1].Offset == n+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumers never listed the two durable readers: %s", body)
		}
		time.Sleep(20 * time.Millisecond) // polling a route; nothing here waits on a clock
	}
	ch := cons.Channels[0]
	worst := ch.Positions[0]
	if ch.Channel != "events" || ch.NextOffset != n+1 || ch.Returned != 2 {
		t.Fatalf("channel row %+v", ch)
	}
	if worst.Reader != "mqtt:lagger" || worst.Offset != 1 || worst.Behind != n || worst.LastSeen == nil || !stampRE.MatchString(*worst.LastSeen) {
		t.Fatalf("worst position %+v, want mqtt:lagger at 1, %d behind", worst, n)
	}
	if p := ch.Positions[1]; p.Reader != "mqtt:reader" || p.Behind != 0 || p.LastSeen == nil {
		t.Fatalf("second position %+v, want the connected mqtt:reader, caught up", p)
	}

	// Another reader's row (the watcher's seeks) is its own business.
	watch := dialRaw(t, b.addr, codec.Version5)
	watch.mustConnect("watcher", freshSession(300))
	waitFloorAbove(t, watch, "events", 1)
	floor := floorOf(t, watch, "events", 99)
	var lost lostBody
	lagger := func() (row int) {
		for i, r := range lost.Readers {
			if r.Reader == "mqtt:lagger" {
				return i
			}
		}
		return -1
	}
	if body := ob.getJSON(t, "/v1/operations/position-lost", &lost); lagger() >= 0 {
		t.Fatalf("a passing recorded before the consumer came back: %s", body)
	}
	lag = dialRaw(t, b.addr, codec.Version5)
	if ack := lag.mustConnect("lagger", session(3600)); ack.SessionPresent {
		t.Fatal("the passed session was answered Session Present 1")
	}
	deadline = time.Now().Add(waitLong)
	var body string
	for {
		body = ob.getJSON(t, "/v1/operations/position-lost", &lost)
		if lagger() >= 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the returning consumer was never recorded: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := lost.Readers[lagger()]
	if r.Channel != "events" || r.Kind != "session" || !r.Reported || r.Count != 1 ||
		r.LastPosition != 1 || r.LastFloor < floor || r.RecordsMissed != r.LastFloor-r.LastPosition ||
		r.LastSeen == nil || !stampRE.MatchString(*r.LastSeen) || lost.Returned != len(lost.Readers) || lost.Tracked != len(lost.Readers) || lost.Beyond != 0 {
		t.Fatalf("position-lost: %s", body)
	}
	var sum uint64
	for _, r := range lost.Readers {
		if r.Channel == "events" {
			sum += r.Count
		}
	}
	_, scrape := ob.get(t, "GET", "/metrics")
	if v, ok := value(parseScrape(t, scrape)["saguin_channel_position_lost_total"], "channel", "events"); !ok || v != float64(sum) {
		t.Fatalf("saguin_channel_position_lost_total{channel=events} = %v (present %v), want the rows' counts summed, %d", v, ok, sum)
	}
}

type queueBody struct {
	Channel    string `json:"channel"`
	Unresolved int    `json:"unresolved"`
	Returned   int    `json:"returned"`
	Records    []struct {
		Offset     uint64  `json:"offset"`
		Topic      string  `json:"topic"`
		Attempts   int     `json:"attempts"`
		State      string  `json:"state"`
		Holder     *string `json:"holder"`
		LeaseUntil *string `json:"lease_until"`
		FirstSeen  *string `json:"first_seen"`
		LastSeen   *string `json:"last_seen"`
	} `json:"records"`
}

// D.8 #87-#88: /queues/<channel> lists the unresolved jobs, most attempts
// first, each waiting, delivering (offered, no PUBACK) or leased - holder
// and lease_until on a leased one only - with its delivery times, no
// payload, and the total beside the rows; the dead-letter channel and any
// name that is not a queue are 404.
func TestOperationsQueueRouteListsTheJobsAndTheirState(t *testing.T) {
	dir := t.TempDir()
	yaml := saguinYAML(memoryStorage, "operations:\n  listen:\n    tcp:\n      address: 127.0.0.1:0") +
		"channels:\n  jobs:\n    type: queue\n    filter: work/+/inspect\n    visibility_timeout: 1h\n"
	b := startSaguin(t, dir, yaml)
	ob := withOps(b)
	pub := dialRaw(t, b.addr, codec.Version5)
	pub.mustConnect("producer", nil)
	for i, p := range []string{"payload-one", "payload-two", "payload-three"} {
		pub.publishQoS1("work/"+string(rune('1'+i))+"/inspect", []byte(p), uint16(i+1))
	}
	w1 := queueWorker(t, b.addr, "w1")
	w1.ackDelivery(w1.expectPublishWithin(waitLong)) // job 1 leased by w1
	w2 := queueWorker(t, b.addr, "w2")
	w2.expectPublishWithin(waitLong) // job 2 offered to w2, no PUBACK

	var q queueBody
	var body string
	deadline := time.Now().Add(waitLong)
	for {
		body = ob.getJSON(t, "/v1/operations/queues/jobs", &q)
		if len(q.Records) == 3 && q.Records[0].State == "leased" && q.Records[1].State == "delivering" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue never showed one job leased and one delivering: %s", body)
		}
		time.Sleep(20 * time.Millisecond) // polling a route; nothing here waits on a clock
	}
	if q.Channel != "jobs" || q.Unresolved != 3 || q.Returned != 3 {
		t.Fatalf("queue body: %s", body)
	}
	leased, delivering, waiting := q.Records[0], q.Records[1], q.Records[2]
	if leased.Offset != 1 || leased.Topic != "work/1/inspect" || leased.Attempts != 1 || leased.Holder == nil || *leased.Holder != "w1" ||
		leased.LeaseUntil == nil || !stampRE.MatchString(*leased.LeaseUntil) || leased.FirstSeen == nil || leased.LastSeen == nil {
		t.Fatalf("the leased job: %s", body)
	}
	if delivering.Offset != 2 || delivering.Holder != nil || delivering.LeaseUntil != nil || waiting.Offset != 3 || waiting.State != "waiting" ||
		waiting.Holder != nil || waiting.FirstSeen != nil || waiting.LastSeen != nil {
		t.Fatalf("the delivering and waiting jobs: %s", body)
	}
	if strings.Contains(body, "payload-") {
		t.Fatalf("a payload came back: %s", body)
	}
	for _, name := range []string{"jobs__dlq", "events"} {
		if resp, body := ob.get(t, "GET", "/v1/operations/queues/"+name); resp.StatusCode != 404 || strings.Contains(body, "jobs") {
			t.Errorf("/queues/%s: %d %s, want 404 naming no queue", name, resp.StatusCode, body)
		}
	}
}
