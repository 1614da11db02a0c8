package conformance

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"
)

// TestQueueMQTTjsWorkerReturnsThenAcksOnTheResponseTopic runs
// conformance/interop/queue-worker.js (MQTT.js, pinned by the interop lock
// file): a stock MQTT 5 client granted the queue's form at QoS 1 takes a
// job, hands it back with return on the Response Topic, is offered it again
// at its next attempt under a new Delivery ID, and acknowledges it; both
// answers are applied and answered PUBACK 0x00 (checklist C5.1, C5.5,
// C5.8).
func TestQueueMQTTjsWorkerReturnsThenAcksOnTheResponseTopic(t *testing.T) {
	node, dir := mqttJS(t)
	b := startQueueBroker(t, queueChannel)
	pub := queueProducer(t, b.addr)
	pub.publishQoS1("work/7/inspect", []byte("inspect pump 7"), 1)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := runNode(ctx, node, dir, "queue-worker.js", b.addr, "js-worker", "jobs")
	var res struct {
		Error   string
		Granted []int
		Offers  []struct {
			Topic, Payload, Attempt, ResponseTopic, CorrelationData, Answer string
			QoS, PubackReason                                               int
		}
	}
	if jerr := json.Unmarshal(out, &res); jerr != nil || err != nil || res.Error != "" {
		t.Fatalf("node queue-worker.js: %v %v %s: %s", err, jerr, res.Error, out)
	}
	if len(res.Granted) != 1 || res.Granted[0] != 1 {
		t.Errorf("granted %v, want [1]", res.Granted)
	}
	if len(res.Offers) != 2 {
		t.Fatalf("offers %+v, want the job twice", res.Offers)
	}
	for i, o := range res.Offers {
		if o.Topic != "work/7/inspect" || o.Payload != "inspect pump 7" || o.QoS != 1 || o.ResponseTopic != queueResponse || o.CorrelationData == "" || o.PubackReason != 0 {
			t.Errorf("offer %d: %+v", i+1, o)
		}
	}
	if res.Offers[0].Attempt != "1" || res.Offers[1].Attempt != "2" || res.Offers[0].CorrelationData == res.Offers[1].CorrelationData {
		t.Errorf("the returned job was offered at attempts %s then %s, Delivery IDs %s then %s: want 1 then 2 under a new one",
			res.Offers[0].Attempt, res.Offers[1].Attempt, res.Offers[0].CorrelationData, res.Offers[1].CorrelationData)
	}
	if b.log.wait(regexp.MustCompile(`msg="queue: returned" .*offset=1 holder=js-worker`), 5*time.Second) == "" {
		t.Error("the return was not applied")
	}
	if b.log.wait(regexp.MustCompile(`msg="queue: acknowledged" .*offset=1 holder=js-worker`), 5*time.Second) == "" {
		t.Error("the ack was not applied")
	}
	// Resolved: a new worker is offered nothing.
	w := queueWorker(t, b.addr, "after")
	w.expectNothing("an acknowledged job")
}
