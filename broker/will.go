package broker

import (
	"time"

	records "github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// willOf copies the CONNECT's Will into the form the session store keeps:
// its own memory, its publish properties in the record encoding, its User
// Properties as headers, and the name its client authenticated as - the
// name the Will is asked for again, as that client, when it fires.
func willOf(req *netloop.ConnectRequest, user string) *store.Will {
	w := req.Will
	sw := &store.Will{
		Topic:    string(w.Topic),
		Payload:  append([]byte{}, w.Payload...),
		QoS:      w.QoS,
		Retain:   w.Retain,
		Delay:    time.Duration(w.Properties.WillDelay) * time.Second,
		AuthName: user,
		Props:    records.EncodeProps(&w.Properties),
	}
	for _, u := range w.Properties.User {
		sw.Headers = append(sw.Headers, store.Header{Key: string(u.Key), Value: string(u.Value)})
	}
	return sw
}

// fireWill publishes the session's Will through the ordinary publish path,
// as the client that armed it. It runs on its own goroutine: the caller
// holds a shard lock, and the publish takes the locks of the sessions it
// reaches.
func (b *Broker) fireWill(s *session, cause WillCause) {
	w := s.will
	if w == nil {
		return
	}
	s.will = nil
	id := s.id
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.publishWill(id, w, cause)
	}()
}

// publishWill routes a Will, counted under what made it due. The topic was
// checked at CONNECT; it is checked again because a stored Will may predate a
// change of limits.
func (b *Broker) publishWill(clientID string, w *store.Will, cause WillCause) {
	p := codec.Publish{QoS: w.QoS, Retain: w.Retain, Topic: []byte(w.Topic), Payload: w.Payload}
	if p.Payload == nil {
		p.Payload = []byte{}
	}
	records.DecodeProps(w.Props, &p.Properties)
	for _, h := range w.Headers {
		p.Properties.AddUser([]byte(h.Key), []byte(h.Value))
	}
	if code, why := b.checkTopic(p.Topic); code != codec.Success {
		b.log.Warn("Will not published", "client_id", clientID, "code", code.String(), "why", why)
		return
	}
	// Asked again as its arming client: the acl_file may have been re-read
	// since the CONNECT that armed it (RFC 0002 "What a refused client sees").
	if !b.mayWrite(&identity{user: w.AuthName}, clientID, w.Topic) {
		b.counters.PublishRefused.Add(delivery.ReasonOf(codec.NotAuthorized))
		b.log.Warn("Will not published", "client_id", clientID, "user", w.AuthName, "code", codec.NotAuthorized.String(), "why", "the acl_file grants its client no write on the Will's topic")
		return
	}
	if code, why := b.publishAs(clientID, &p); code != codec.Success {
		b.countEngineRefusal(code)
		b.log.Warn("Will not published", "client_id", clientID, "code", code.String(), "why", why)
		return
	}
	b.counters.WillsPublished[cause].Add(1)
	b.log.Info("Will published", "client_id", clientID, "topic", w.Topic)
}
