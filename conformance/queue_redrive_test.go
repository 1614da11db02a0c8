package conformance

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// TestQueueRedriveRepublishesDeadLettersAsNewJobs runs examples/redrive,
// the client-side redrive of notes-0003 "Putting dead-lettered work back"
// (checklist C13), against the binary: two jobs dead-lettered after their
// one attempt - one with a saguin-id, a Content Type and a User Property of
// its publisher's, on a queue whose filter ends in # so the __dlq level sits
// inside the topic - are read from the dead-letter channel and published
// back without that level. A worker is offered each as a new record: the
// original topic and payload, the publisher's properties and saguin-id, no
// saguin-dlq-* label, a new offset and attempt 1. A second run finds nothing
// left to redrive: the redriver's kept session holds its position.
func TestQueueRedriveRepublishesDeadLettersAsNewJobs(t *testing.T) {
	saguinOnly(t, "the test needs a saguin queue")
	bin := filepath.Join(t.TempDir(), "redrive")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/saguin-edge/saguin/examples/redrive").CombinedOutput(); err != nil {
		t.Fatalf("building examples/redrive: %v\n%s", err, out)
	}
	b := startQueueBroker(t, "jobs:\n  type: queue\n  filter: jobs/#\n  retry:\n    max_attempts: 1")
	pub := queueProducer(t, b.addr)
	p := &codec.Publish{QoS: 1, PacketID: 1, Topic: []byte("jobs/pump/7"), Payload: []byte("inspect pump 7")}
	p.Properties.ContentType = []byte("text/plain")
	p.Properties.User = []codec.UserProperty{{Key: []byte("saguin-id"), Value: []byte("order-42")}, {Key: []byte("site"), Value: []byte("depot")}}
	p.Properties.Present.Set(codec.PropContentType)
	p.Properties.Present.Set(codec.PropUserProperty)
	if code := pub.publishAs(p, 1); code != codec.Success {
		t.Fatalf("PUBACK 0x%02x", byte(code))
	}
	pub.publishQoS1("jobs/valve/3", []byte("inspect valve 3"), 2)
	w := queueWorker(t, b.addr, "failing")
	for i := 0; i < 2; i++ {
		o := w.takeOffer()
		w.answer(o, "return")
	}
	for _, off := range []string{"1", "2"} {
		if b.log.wait(regexp.MustCompile(`msg="queue: dead-lettered" .*offset=`+off+` reason=attempts_exhausted`), 5*time.Second) == "" {
			t.Fatalf("job %s was not dead-lettered", off)
		}
	}
	w.disconnect()

	redrive := func() string {
		t.Helper()
		out, err := exec.Command(bin, "-broker", b.addr, "-filter", "jobs/__dlq/#", "-idle", "1s").CombinedOutput()
		if err != nil {
			t.Fatalf("redrive: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := redrive(); out != "redriven 2" {
		t.Fatalf("redrive printed %q, want redriven 2", out)
	}
	again := queueWorker(t, b.addr, "fixed")
	got := map[string]*codec.Publish{}
	for i := 0; i < 2; i++ {
		o := again.takeOffer()
		again.answer(o, "ack")
		got[string(o.Topic)] = o
	}
	pump, valve := got["jobs/pump/7"], got["jobs/valve/3"]
	if pump == nil || valve == nil || string(pump.Payload) != "inspect pump 7" || string(valve.Payload) != "inspect valve 3" {
		t.Fatalf("redriven jobs on %v, want jobs/pump/7 and jobs/valve/3 with their payloads", got)
	}
	if id, _ := queueLabel(pump, "saguin-id"); id != "order-42" {
		t.Errorf("saguin-id %q, want the publisher's order-42 kept", id)
	}
	if site, _ := queueLabel(pump, "site"); site != "depot" || string(pump.Properties.ContentType) != "text/plain" {
		t.Errorf("the publisher's properties were not carried: site %q, content type %q", site, pump.Properties.ContentType)
	}
	for _, o := range []*codec.Publish{pump, valve} {
		if off, _ := queueLabel(o, "saguin-offset"); off != "3" && off != "4" {
			t.Errorf("%s at offset %s, want a new record (3 or 4)", o.Topic, off)
		}
		if offerAttempt(t, o) != 1 {
			t.Errorf("%s at attempt %d, want 1", o.Topic, offerAttempt(t, o))
		}
		for _, u := range o.Properties.User {
			if strings.HasPrefix(string(u.Key), "saguin-dlq-") {
				t.Errorf("%s carries %s", o.Topic, u.Key)
			}
		}
	}
	if out := redrive(); out != "redriven 0" {
		t.Fatalf("a second redrive printed %q, want redriven 0", out)
	}
}
