package latest

import (
	"sync"

	"github.com/saguin-edge/saguin/broker/channel"
	"github.com/saguin-edge/saguin/broker/engine"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop/delivery"
	"github.com/saguin-edge/saguin/store"
)

// sub is one plain subscription of a session that reaches this channel.
type sub struct {
	inner  string
	opts   delivery.SubscribeOptions
	accept func(topic string) bool // saguin-filter; nil: every topic
	// label: the filter reaches more than one channel, so its deliveries
	// say which (saguin-channel).
	label bool
}

func (s *sub) matches(t string) bool {
	return topic.Match(s.inner, t) && (s.accept == nil || s.accept(t))
}

// item is one value waiting for a reader's connection: from a state pass
// (RETAIN set) or a live change. key is the topic, or the group's filter and
// the topic for a shared group's change.
type item struct {
	key   string
	v     store.Value
	pass  bool
	group *group                    // nil: a plain subscription's
	gopts delivery.SubscribeOptions // the member's, for a group's change
}

// sentAt is the newest offset of a topic handed to a reader's connection, and
// the generation of passes it was handed in (see reader.gen).
type sentAt struct {
	off uint64
	gen uint32
}

// pass is a walk of the store's values, a page at a time, for a state pass
// (SUBSCRIBE) or a resume's difference. Values at or above upto are the live
// changes' to send.
type pass struct {
	from, upto uint64
	deletions  bool
	match      func(topic string) bool
	gen        uint32
	buf        []store.Value
	at         int
	done       bool // the store has nothing more below upto
}

// reader is one session's part in this channel: its subscriptions, the
// values waiting for its connection, what it was handed, and its mark.
// Guarded by mu (below Engine.mu).
type reader struct {
	mu   sync.Mutex
	e    *Engine
	id   string
	kept bool

	subs map[string]*sub // by filter

	// away: the session has no connection here (detached, or restored and
	// not yet resumed); nothing is handed out and no change waits.
	away bool
	c    delivery.Client // the connection, once known (Resume, or the host)

	pending map[string]*item // at most one per key (B4.4)
	order   []string         // keys of pending, in arrival order
	sent    map[string]sentAt
	gen     uint32
	passes  []*pass

	// missed is the lowest offset of a value that could not be delivered
	// (too large, refused), 0 for none; kept until a new SUBSCRIBE (B5.5).
	missed uint64
	// mark is where a resume is served from (B5.3): set at Detach, valid
	// when marked. A reader restored at a broker start is not marked, so
	// its resume is the full state (B5.7).
	mark   uint64
	marked bool

	// passItem is the state pass's value being sent, kept here so that a
	// pass of 100,000 values allocates no item for each.
	passItem item

	inflight      map[uint64]int64 // QoS 1/2 deliveries by offset, their sizes
	inflightBytes int64

	// era changes at every Resume, Detach, End and Close: a routine of an
	// earlier era stops without acting. runEra is the era whose routine runs.
	era, runEra uint64
	wake        chan struct{}
}

func (e *Engine) newReader(id string, kept bool) *reader {
	return &reader{e: e, id: id, kept: kept, subs: map[string]*sub{}, pending: map[string]*item{},
		sent: map[string]sentAt{}, inflight: map[uint64]int64{}, era: 1, wake: make(chan struct{}, 1)}
}

// poke wakes the reader's routine if it waits.
func (r *reader) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// startLocked runs the reader's routine if there is something to send and
// none of this era runs. r.mu held.
func (r *reader) startLocked() {
	if r.away || r.e.closed.Load() {
		return
	}
	if len(r.order) == 0 && len(r.passes) == 0 {
		return
	}
	if r.runEra == r.era {
		r.poke()
		return
	}
	r.runEra = r.era
	go r.run(r.era)
}

// newest is the newest offset of key the reader was handed or holds waiting.
func (r *reader) newest(key string) uint64 {
	n := r.sent[key].off
	if it := r.pending[key]; it != nil && it.v.Offset > n {
		n = it.v.Offset
	}
	return n
}

// offerLocked puts a live change in the reader's waiting set: never one
// older than what it was handed (B4.3); a newer value replaces a waiting
// one, counted as superseded (B4.4). r.mu held.
func (r *reader) offerLocked(key string, v store.Value, g *group, gopts delivery.SubscribeOptions) {
	if v.Offset <= r.newest(key) {
		return
	}
	if old := r.pending[key]; old != nil {
		old.v, old.pass, old.group, old.gopts = v, false, g, gopts
		r.e.counters.Superseded.Add(1)
		return
	}
	r.pending[key] = &item{key: key, v: v, group: g, gopts: gopts}
	r.order = append(r.order, key)
	r.startLocked()
}

// fanOut hands a stored value or deletion to every connected reader one of
// whose subscriptions matches it (a live deletion goes to every one,
// regardless of saguin-deletions: B4.2), and to one member of each shared
// group over it. e.mu held.
func (e *Engine) fanOut(v store.Value) {
	for _, r := range e.readers {
		r.mu.Lock()
		if !r.away {
			for _, s := range r.subs {
				if s.matches(v.Topic) {
					r.offerLocked(v.Topic, v, nil, delivery.SubscribeOptions{})
					break
				}
			}
		}
		r.mu.Unlock()
	}
	for _, g := range e.groups {
		g.offer(v)
	}
}

// Subscribe implements engine.Engine.
func (e *Engine) Subscribe(s engine.Session, f engine.Filter) (codec.ReasonCode, string) {
	// The broker refused a malformed declaration for the whole packet
	// already; read here for what it says.
	decl, code, why := channel.ReadSubscribe(f.Properties)
	if code != codec.Success {
		return code, why
	}
	var accept func(string) bool
	if decl.Partition.Declared() {
		accept = decl.Partition.Accepts // the state pass and changes alike (A11.16)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.readers[s.ClientID()]
	if r == nil {
		r = e.newReader(s.ClientID(), s.Kept())
		r.away = s.Restoring()
		e.readers[r.id] = r
	}
	if f.Share != "" {
		// Changes only, no state pass (B9.1).
		g := e.groups[f.Filter]
		if g == nil {
			g = &group{filter: f.Filter, inner: f.Inner, e: e}
			e.groups[f.Filter] = g
		}
		g.join(r, f.Options, accept)
		if !r.away {
			g.drain() // held for a member that left the group before this one came
		}
		return codec.Success, ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kept = s.Kept()
	su := &sub{inner: f.Inner, opts: f.Options, accept: accept, label: e.cfg.Reaches != nil && e.cfg.Reaches(f.Inner) > 1}
	r.subs[f.Filter] = su
	if s.Restoring() {
		return codec.Success, ""
	}
	// A new SUBSCRIBE clears the missed-value mark (B5.5).
	r.missed = 0
	switch f.Options.RetainHandling {
	case 1:
		if !f.New {
			return codec.Success, ""
		}
	case 2:
		return codec.Success, ""
	}
	r.gen++
	r.passes = append(r.passes, &pass{from: 0, upto: e.st.Next(), deletions: decl.Deletions,
		match: su.matches, gen: r.gen})
	r.startLocked()
	return codec.Success, ""
}

// Unsubscribe implements engine.Engine.
func (e *Engine) Unsubscribe(s engine.Session, filter string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.readers[s.ClientID()]
	if r == nil {
		return
	}
	if g := e.groups[filter]; g != nil {
		if g.leave(r) {
			delete(e.groups, filter)
		}
		return
	}
	r.mu.Lock()
	delete(r.subs, filter)
	r.mu.Unlock()
}

// Resume implements engine.Engine: what the session's last connection left
// unfinished goes out first, without the values superseded since (B6), then
// the values that changed while it was away (B5), or the full state for a
// session whose mark did not survive (a broker restart) or with a QoS 0
// subscription.
func (e *Engine) Resume(s engine.Session, c delivery.Client, carried []delivery.Unfinished) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.readers[s.ClientID()]
	if r == nil {
		for _, u := range carried {
			e.resend(nil, c, u)
		}
		return
	}
	r.mu.Lock()
	r.resumeLocked(c, carried)
	r.mu.Unlock()
	// What its groups held while nobody was there may go to it now.
	for _, g := range e.groups {
		if g.has(r) {
			g.drain()
		}
	}
}

// resumeLocked is Resume's part under r.mu.
func (r *reader) resumeLocked(c delivery.Client, carried []delivery.Unfinished) {
	e := r.e
	r.era++
	r.away, r.c = false, c
	clear(r.inflight)
	r.inflightBytes = 0
	for _, u := range carried {
		if u.Delivery.Ref.Name == e.cfg.Name {
			e.resend(r, c, u)
		}
	}
	if len(r.subs) == 0 {
		return
	}
	full := !r.marked
	for _, su := range r.subs {
		if su.opts.QoS == 0 {
			full = true // no acknowledgements to compute a difference from (B5.6)
		}
	}
	p := &pass{upto: e.st.Next(), match: r.matcher()}
	if full {
		r.gen++
	} else {
		p.from = r.mark
		if r.missed != 0 {
			// A value missed once is re-sent from below on every resume
			// until a new SUBSCRIBE (B5.5): what an earlier resume handed
			// out above the mark is not taken as held.
			r.gen++
		}
	}
	p.gen = r.gen
	r.marked = false
	r.passes = append(r.passes[:0], p)
	r.startLocked()
}

// resend sends a carried delivery again under its identifier, unless a
// newer value has superseded it in the store (B6.1): then it is dropped
// before anything is re-sent, and the mark is held below it (B6.2). r nil:
// a delivery of no reader's (a shared group's).
func (e *Engine) resend(r *reader, c delivery.Client, u delivery.Unfinished) {
	cur, ok, err := e.st.Get(string(u.Msg.Topic))
	if err == nil && (!ok || cur.Offset != u.Delivery.Ref.N) {
		e.counters.Superseded.Add(1)
		if r != nil && (r.mark == 0 || u.Delivery.Ref.N < r.mark) {
			r.mark = u.Delivery.Ref.N
		}
		return
	}
	if r != nil {
		size := int64(u.Msg.Bytes())
		r.inflight[u.Delivery.Ref.N] = size
		r.inflightBytes += size
	}
	c.Deliver(u.Msg, u.Delivery)
}

// matcher reports whether some plain subscription the reader holds now
// matches a topic: a copy of the list, since the store calls it with no
// lock of the reader's held. r.mu held.
func (r *reader) matcher() func(string) bool {
	subs := make([]*sub, 0, len(r.subs))
	for _, s := range r.subs {
		subs = append(subs, s)
	}
	return func(t string) bool {
		for _, s := range subs {
			if s.matches(t) {
				return true
			}
		}
		return false
	}
}

// Detach implements engine.Engine: the session keeps its subscriptions here
// and its mark - the lowest offset not yet delivered (B5.3): below every
// value still waiting, every state pass unfinished, every value it missed,
// and every write not yet fanned out.
func (e *Engine) Detach(s engine.Session) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.readers[s.ClientID()]
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	mark := e.st.Next()
	if e.writing > 0 && e.writeLow < mark {
		mark = e.writeLow
	}
	low := func(o uint64) {
		if o != 0 && o < mark {
			mark = o
		}
	}
	for _, it := range r.pending {
		if it.group == nil {
			low(it.v.Offset)
		}
	}
	for _, p := range r.passes {
		for _, v := range p.buf[p.at:] {
			low(v.Offset)
		}
		if !p.done {
			low(max(p.from, 1))
		}
	}
	low(r.missed)
	low(r.mark) // a carried value removed as superseded
	r.mark, r.marked = mark, true
	r.away, r.c = true, nil
	r.era++
	clear(r.pending)
	r.order = r.order[:0]
	r.passes = nil
	r.poke()
}

// End implements engine.Engine: everything of the session's here goes.
func (e *Engine) End(s engine.Session) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.readers[s.ClientID()]
	if r == nil {
		return
	}
	for f, g := range e.groups {
		if g.leave(r) {
			delete(e.groups, f)
		}
	}
	delete(e.readers, s.ClientID())
	r.mu.Lock()
	r.era++
	r.away, r.c = true, nil
	r.mu.Unlock()
	r.poke()
}

// Ack implements engine.Engine: a finished delivery frees its place in the
// reader's window. Nothing is stored at a PUBREC: the answer is always true.
func (e *Engine) Ack(s engine.Session, ref delivery.Ref, stage engine.AckStage, _ uint16) bool {
	if stage != engine.AckFinished {
		return true
	}
	e.mu.Lock()
	r := e.readers[s.ClientID()]
	e.mu.Unlock()
	if r == nil {
		return true
	}
	r.mu.Lock()
	if size, ok := r.inflight[ref.N]; ok {
		delete(r.inflight, ref.N)
		r.inflightBytes -= size
		r.poke()
	}
	r.mu.Unlock()
	return true
}
