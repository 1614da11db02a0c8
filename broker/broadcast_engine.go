package broker

import (
	"fmt"
	"strings"

	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// broadcastEngine is the engine (engine.Engine) serving every topic no
// channel's filter holds: live fan-out, the broadcast log for kept sessions,
// shared groups and retained values (broadcast_*.go). The broker routes to it
// as to any channel engine (routes.target, byRef, engines) and calls it
// through the interface. It stays in package broker because what it keeps
// per session - the owed window, the groups, the completed QoS 2 entries -
// lives on the session under its shard lock; its methods are called with
// the locks LOCKS.md gives each engine call.
//
// Two of broadcast's steps have no call in the seam and stay the broker's,
// said where they are: the retained values sent after a SUBACK, which read
// the retained store with no shard lock held (Broker.Subscribe), and a
// shared group's cursor stored with its first kept member's filter, in the
// session record's write (Broker.Subscribe).
type broadcastEngine struct {
	b    *Broker
	host engine.Host
	// restore is what the broker's session phases of Restore read, handed
	// over for the log's phases (Restore takes no argument: broadcast is the
	// one engine whose store is owed by the sessions' records). returnedBy
	// is what the log's phases found each expired session gives back, for
	// the broker's ending of it.
	restore    *restoring
	returnedBy map[*session][]store.Returned
}

func newBroadcastEngine(b *Broker) *broadcastEngine {
	return &broadcastEngine{b: b, host: b.Host("")}
}

func (e *broadcastEngine) Kind() delivery.Kind { return delivery.KindBroadcast }
func (e *broadcastEngine) Name() string        { return "" }
func (e *broadcastEngine) Filters() []string   { return nil }

// Publish routes p: the retained store if RETAIN, then every subscriber the
// topic reaches (Broker.route).
func (e *broadcastEngine) Publish(publisher string, p *codec.Publish) (codec.ReasonCode, string) {
	return e.b.route(publisher, p)
}

// Waits is decided by what the publish will store, its topic known: a
// retained value; a QoS 2 hold (written before the PUBREC); at QoS 1, a
// broadcast-log append, made only when a session that outlives its
// connection is reached at QoS 1 or 2 or a shared group with such a member
// is (logsFor). A QoS 1 publish no kept session is owed stays on the loop.
func (e *broadcastEngine) Waits(publisher string, p *codec.Publish) bool {
	o := &e.b.opts
	switch {
	case p.Retain && o.RetainedWaitOnDisk:
		return true
	case !o.SessionsWaitOnDisk || p.QoS == 0:
		return false
	case p.QoS == 2:
		return true
	}
	return e.b.logsFor(publisher, p)
}

// Holder is the broadcast log's, a hold taking its room from the log's
// oldest messages when the provider is full (Host.WithRoom).
func (e *broadcastEngine) Holder() store.Holder { return broadcastHolder{e} }

// broadcastHolder is the broadcast log's store.Holder with Hold made room
// for.
type broadcastHolder struct{ e *broadcastEngine }

func (h broadcastHolder) Hold(x store.Held) error {
	return h.e.host.WithRoom(x.ClientID, "an exactly-once publish", func() error { return h.e.b.bcast.log.Hold(x) })
}

func (h broadcastHolder) ReleaseHeld(clientID string, packetID uint16) (store.Record, error) {
	return h.e.b.bcast.log.ReleaseHeld(clientID, packetID)
}

func (h broadcastHolder) DropHeld(clientID string, packetID uint16) (bool, error) {
	return h.e.b.bcast.log.DropHeld(clientID, packetID)
}

func (h broadcastHolder) Held() ([]store.Held, error) { return h.e.b.bcast.log.Held() }

// Release stores a retained publish's value first (a refusal keeps the
// hold), then takes the log's next offset for the message and drops the
// hold in one operation (ReleaseHeld). A message whose expiry ran out while
// held is written all the same, and delivered to nobody (Released).
func (e *broadcastEngine) Release(h store.Held) (engine.Released, codec.ReasonCode, string, error) {
	var p codec.Publish
	live := publishOf(&h.Record, e.b.now(), &p)
	if h.Record.Retain && live {
		if code, why := e.b.retainHeld(e.host, h.ClientID, &p); code != codec.Success {
			return engine.Released{}, code, why, nil
		}
	}
	rec, err := e.b.bcast.log.ReleaseHeld(h.ClientID, h.PacketID)
	if err != nil {
		return engine.Released{}, codec.Success, "", err
	}
	return engine.Released{Publisher: h.ClientID, Record: rec, Live: live}, codec.Success, "", nil
}

// Released delivers a released message from its log offset: to the sessions
// that are away through the log, directly to the rest (routeLogged).
func (e *broadcastEngine) Released(r engine.Released) {
	b := e.b
	size := store.RecordSize(&r.Record)
	b.counters.LogMessages.Add(1)
	b.counters.LogBytes.Add(size)
	if !r.Live {
		b.bcast.unownAll(r.Record.Offset)
		b.counters.DeliveriesExpired.Add(1)
		return
	}
	var p codec.Publish
	publishOf(&r.Record, b.now(), &p)
	// Already in the log at its offset: nothing is written, nothing fails.
	_ = b.routeLogged(r.Publisher, &p, r.Record.Offset, size)
}

// sessionOf is the broker's session behind what it lent an engine.
func sessionOf(s engine.Session) *session {
	switch x := s.(type) {
	case *session:
		return x
	case restoringSession:
		return x.session
	}
	panic("broker: not a session of this broker")
}

// Subscribe puts a plain filter in the subscription index, or s in a shared
// group, as the session's stored subscription says; a connected member is
// handed what its groups hold and its window is filled. Nothing retained is
// sent here (the broker sends it after the SUBACK). Shard lock held.
func (e *broadcastEngine) Subscribe(s engine.Session, f engine.Filter) (codec.ReasonCode, string) {
	b, x := e.b, sessionOf(s)
	sub := x.filters[f.Filter]
	if f.Share == "" {
		b.subs.add(f.Filter, x, sub)
		return codec.Success, ""
	}
	b.joinShare(f.Filter, f.Inner, x, sub)
	if ref := x.client.Load(); ref != nil && !s.Restoring() {
		// Taken over meanwhile, it is the new connection's to be sent.
		b.drainShares(x, ref.c)
		b.bcast.pump(x, ref.c)
	}
	return codec.Success, ""
}

// Unsubscribe takes filter out of the index, or s out of its group.
func (e *broadcastEngine) Unsubscribe(s engine.Session, filter string) {
	e.unsubscribe(sessionOf(s), filter)
}

func (e *broadcastEngine) unsubscribe(s *session, filter string) {
	if strings.HasPrefix(filter, topic.SharePrefix) {
		e.b.leaveShare(filter, s)
	} else {
		e.b.subs.remove(filter, s)
	}
}

// Resume sends what s's last connection left unfinished first, under its
// identifiers, then what its groups hold for it, then the log.
func (e *broadcastEngine) Resume(s engine.Session, c delivery.Client, carried []delivery.Unfinished) {
	x := sessionOf(s)
	e.b.sendCarried(x, c, carried)
	e.b.drainShares(x, c)
	e.b.bcast.pump(x, c)
}

// Detach forgets the connection's window and queues the write of what it
// completed and the session's cursor, so a clean DISCONNECT or a stop
// leaves every acknowledgement stored; no client waits for it (storeLater).
func (e *broadcastEngine) Detach(s engine.Session) {
	x := sessionOf(s)
	done, cursor := e.b.bcast.detach(x)
	e.b.storeLater(nil, x.id, func(*shard) { e.b.storeCursor(x.id, done, cursor) })
}

// End gives what s's groups handed it back to them - from the log, and what
// its last connection left unfinished from memory, as a connection-bound
// member's is (RFC 0003 "Broadcast": any ending) - takes its filters out of
// the index and its groups, and forgets what it was owed. What went back
// into a group's backlog is left on s.givenBack for the session's ending
// to write in the same operation. Shard lock held.
func (e *broadcastEngine) End(s engine.Session) {
	b, x := e.b, sessionOf(s)
	back := b.takeShared(x)
	b.returnToGroups(x, broadcastOnly(x.rareOrNone().carry))
	for f := range x.filters {
		e.unsubscribe(x, f)
	}
	b.bcast.end(x)
	if given := b.giveBack(x, back); len(given) > 0 || x.rare != nil {
		x.rarely().givenBack = given
	}
}

// Ack: a PUBACK or PUBCOMP lets the session's log entry go and fills its
// window from the room made - and a group it is a member of may drain
// into it; a PUBREC of a delivery from the log is stored in the session's
// window before the PUBREL goes (storeReceipt). A Ref with no offset is a
// shared group's delivery from memory. Called from the connection that
// owns s, shard lock held.
func (e *broadcastEngine) Ack(s engine.Session, ref delivery.Ref, stage engine.AckStage, packetID uint16) bool {
	b, x := e.b, sessionOf(s)
	if stage == engine.AckReceived {
		return b.storeReceipt(x, ref.N, packetID)
	}
	if i := x.owed.find(ref.N); i >= 0 { // never for 0: offsets start at 1
		b.bcast.drop(x, i)
		if c := x.client.Load(); c != nil {
			b.bcast.pump(x, c.c) // the room it made is used at once
		}
	}
	if x.rare != nil && len(x.rare.groups) > 0 {
		b.memberMayTake(x) // its groups' backlogs drain into the room
	}
	if rs := x.retained.Load(); rs != nil {
		if ref.N == 0 && ref.Name == "" {
			rs.acked(int64(ref.Attempt))
		}
		rs.poke() // a retained pass waiting for room
	}
	return true
}

// staleAck is a PUBACK or PUBCOMP read on the connection s was taken over
// from, which settled the exchange on its side: that connection changes
// nothing (invariant 17), so the session still owes it and its new
// connection is sent it again rather than nobody. The seam hands an engine
// only its owners' acknowledgements; this one is broadcast's, whose window
// the two connections share. Shard lock held.
func (e *broadcastEngine) staleAck(s *session, c delivery.Client, ref delivery.Ref) {
	if owner := s.client.Load(); owner != nil && s.rare != nil && s.rare.takenFrom == c {
		e.b.bcast.resend(s, owner.c, ref.N)
	}
}

// Restore reads the log once the broker has read the sessions' records and
// windows (restore): the shared groups' backlogs, what members handed and
// expired members give back, and what every kept session is owed again.
func (e *broadcastEngine) Restore() error {
	b, r := e.b, e.restore
	groups, err := b.restoreBacklogs()
	if err != nil {
		return fmt.Errorf("reading the shared groups' cursors: %w", err)
	}
	if err := b.restoreWindows(r); err != nil {
		return err
	}
	givenBack, err := b.expiredGiveBack(r.expired)
	if err != nil {
		return err
	}
	e.returnedBy, err = b.restoreLog(r, groups, givenBack)
	return err
}

// Close stores the cursors still waiting and releases what nobody is owed.
func (e *broadcastEngine) Close() error {
	e.b.bcast.commit()
	return nil
}

var _ engine.Engine = (*broadcastEngine)(nil)
