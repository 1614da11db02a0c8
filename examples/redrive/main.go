// Command redrive puts dead-lettered work back into its queue, the
// client-side procedure of notes-0003 "Putting dead-lettered work back"
// (checklist C13): read the dead-letter channel like any append channel,
// take the __dlq level out of each topic, and publish the payload back with
// the publisher's own properties and its saguin-id.
//
//	go run ./examples/redrive -broker 127.0.0.1:1883 -filter 'iot/+/work/+/__dlq'
//
// It reads as a durable consumer (Clean Start 0, its session kept a day),
// so a run takes the dead letters where the last one stopped, the first
// from the floor (everything still held). Each dead letter is acknowledged
// only once the broker has answered its republished job 0x00: a run cut
// short sends a job again rather than losing one (its saguin-id says it is
// the same job). It stops once no dead letter has come for -idle.
//
// Redriving into a queue whose workers still fail dead-letters the jobs
// again, each time at a new offset in both channels.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"strings"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

const (
	deadLetterLevel = "__dlq"
	reservedPrefix  = "saguin-"
	idKey           = "saguin-id"
)

func main() {
	broker := flag.String("broker", "127.0.0.1:1883", "the broker's MQTT address, host:port")
	filter := flag.String("filter", "", "the dead-letter filter to read, e.g. iot/+/work/+/__dlq or jobs/__dlq/#")
	id := flag.String("id", "redrive", "the client id; its kept session holds the position between runs")
	user := flag.String("user", "", "user name, if the door asks for one")
	password := flag.String("password", "", "password")
	idle := flag.Duration("idle", 2*time.Second, "stop once no dead letter has come for this long")
	flag.Parse()
	if *filter == "" || !strings.Contains(*filter, deadLetterLevel) {
		fmt.Fprintln(os.Stderr, "redrive: -filter names the dead-letter topics, with their __dlq level")
		os.Exit(2)
	}
	n, err := run(*broker, *filter, *id, *user, *password, *idle)
	fmt.Printf("redriven %d\n", n)
	if err != nil {
		log.Fatalf("redrive: %v", err)
	}
}

// JobTopic is the queue topic a dead letter came from: t without its
// __dlq level, wherever the queue's filter put it (inserted at the #, or
// appended; RFC 0002 "The dead-letter channel"). No job topic holds a
// __dlq level of its own, since the dead-letter channel claims such a
// topic.
func JobTopic(t string) (string, bool) {
	levels := strings.Split(t, "/")
	for i, l := range levels {
		if l == deadLetterLevel {
			return strings.Join(append(levels[:i:i], levels[i+1:]...), "/"), true
		}
	}
	return "", false
}

// jobProperties are the publisher's own properties of a dead letter - Content
// Type, Payload Format, Response Topic, Correlation Data and its User
// Properties - with saguin-id, the one reserved name a publisher may set;
// the broker's saguin- labels stay behind.
func jobProperties(p *paho.PublishProperties) *paho.PublishProperties {
	if p == nil {
		return nil
	}
	out := &paho.PublishProperties{ContentType: p.ContentType, PayloadFormat: p.PayloadFormat,
		ResponseTopic: p.ResponseTopic, CorrelationData: p.CorrelationData}
	for _, u := range p.User {
		if u.Key == idKey || !strings.HasPrefix(u.Key, reservedPrefix) {
			out.User = append(out.User, u)
		}
	}
	return out
}

// window is how many dead letters the broker may have in flight to the
// redriver (its Receive Maximum): they are put back in order, one at a time.
const window = 16

func run(addr, filter, id, user, password string, idle time.Duration) (int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, fmt.Errorf("dialing %s: %w", addr, err)
	}
	// Acknowledged by hand, once put back: a dead letter received and not
	// yet put back when the run ends is never acknowledged, so the next run
	// has it again.
	letters, stop := make(chan *paho.Publish, window), make(chan struct{})
	c := paho.NewClient(paho.ClientConfig{Conn: conn, EnableManualAcknowledgment: true, SendAcksInterval: 10 * time.Millisecond,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			select {
			case letters <- pr.Packet:
			case <-stop: // the run is over: left unacknowledged
			}
			return true, nil
		}}})
	cp := &paho.Connect{ClientID: id, CleanStart: false, KeepAlive: 30,
		Properties: &paho.ConnectProperties{SessionExpiryInterval: ptr(uint32(86400)), ReceiveMaximum: ptr(uint16(window))}}
	if user != "" {
		cp.Username, cp.UsernameFlag = user, true
		cp.Password, cp.PasswordFlag = []byte(password), true
	}
	ca, err := c.Connect(ctx, cp)
	if err != nil {
		return 0, fmt.Errorf("connecting: %w", err)
	}
	if ca.ReasonCode != 0 {
		return 0, fmt.Errorf("CONNACK 0x%02x", ca.ReasonCode)
	}
	// A clean DISCONNECT, whatever happens: the position reached is stored.
	defer func() {
		close(stop)
		_ = c.Disconnect(&paho.Disconnect{})
	}()
	sa, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}})
	if err != nil {
		return 0, fmt.Errorf("subscribing to %s: %w", filter, err)
	}
	if len(sa.Reasons) != 1 || sa.Reasons[0] >= 0x80 {
		return 0, fmt.Errorf("SUBACK %v for %s", sa.Reasons, filter)
	}
	n := 0
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return n, nil
		case p := <-letters:
			t, ok := JobTopic(p.Topic)
			if ok {
				resp, err := c.Publish(ctx, &paho.Publish{QoS: 1, Topic: t, Payload: p.Payload, Properties: jobProperties(p.Properties)})
				if err == nil && resp.ReasonCode >= 0x80 {
					err = fmt.Errorf("0x%02x %s", resp.ReasonCode, resp.Properties.ReasonString)
				}
				if err != nil {
					return n, fmt.Errorf("putting back the job on %s (its dead letter is kept for the next run): %w", t, err)
				}
				n++
			}
			if err := c.Ack(p); err != nil {
				return n, fmt.Errorf("acknowledging the dead letter on %s: %w", p.Topic, err)
			}
			timer.Reset(idle)
		}
	}
}

func ptr[T any](v T) *T { return &v }
