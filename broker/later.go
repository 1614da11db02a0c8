package broker

import "sync"

// laterWrites orders the store writes no client waits on - a disconnect's
// record and cursor, a session ending with its connection or at its expiry, a
// delayed Will's removal - per client id, off the event loop. The loop that
// saw the end changes the session in memory under its shard lock and queues
// the writes here; they are applied one after another on a goroutine of the
// id's own, in the order they were queued (notes-0004 "Ordering guarantees":
// a write issued after another returned commits after it). A CONNECT for the
// id settles them before it reads or writes the session (Broker.Connect), so
// the record a resume writes is never overtaken by the disconnect's, and an
// ending is never undone by a later write of the ended session.
//
// One goroutine per client id with writes queued, gone once they are: their
// number is bounded by the sessions, and one id's commit never waits behind
// another id's queue - the writer batches the ids' writes together.
type laterWrites struct {
	mu   sync.Mutex
	ids  map[string]*idWrites
	busy sync.WaitGroup // a goroutine per id with writes queued
}

// idWrites is one client id's queue; its goroutine runs while it is in ids.
type idWrites struct{ fns []func() }

// add queues fn behind every write already queued for id.
func (w *laterWrites) add(id string, fn func()) {
	w.mu.Lock()
	q := w.ids[id]
	if q == nil {
		if w.ids == nil {
			w.ids = make(map[string]*idWrites)
		}
		q = &idWrites{}
		w.ids[id] = q
		w.busy.Add(1)
		go w.run(id, q)
	}
	q.fns = append(q.fns, fn)
	w.mu.Unlock()
}

// run applies id's queue in order until it is empty.
func (w *laterWrites) run(id string, q *idWrites) {
	defer w.busy.Done()
	for {
		w.mu.Lock()
		if len(q.fns) == 0 {
			delete(w.ids, id)
			w.mu.Unlock()
			return
		}
		fn := q.fns[0]
		q.fns[0] = nil
		q.fns = q.fns[1:]
		w.mu.Unlock()
		fn()
	}
}

// pending reports whether writes are queued or being applied for id. Every
// queueing happens under the id's shard lock, so a caller holding it that
// reads false knows none will be until it lets go.
func (w *laterWrites) pending(id string) bool {
	w.mu.Lock()
	_, ok := w.ids[id]
	w.mu.Unlock()
	return ok
}

// settle returns once every write queued for id before the call has been
// applied. It must not be called with a shard lock held: a queued write may
// take one (making room in a full provider, a record the store lost).
func (w *laterWrites) settle(id string) {
	if !w.pending(id) {
		return
	}
	done := make(chan struct{})
	w.add(id, func() { close(done) })
	<-done
}

// wait returns once every queued write has been applied.
func (w *laterWrites) wait() { w.busy.Wait() }

// storeLater makes write, a store write for client id that no client waits
// on. On a provider that commits to disk it is queued behind id's earlier
// such writes (laterWrites) and run with no shard lock held; on a memory
// provider it runs now, under held - the shard lock the caller holds - since
// a lock costs less than the hand-over.
func (b *Broker) storeLater(held *shard, id string, write func(held *shard)) {
	if !b.opts.SessionsWaitOnDisk {
		write(held)
		return
	}
	b.later.add(id, func() { write(nil) })
}

// storeNow makes write, a store write a client waits on, for client id with
// sh - id's shard - locked on entry and on return. On a provider that commits
// to disk the lock is let go while the write is made, behind id's queued
// writes and on their goroutine, so an event loop that needs the shard
// (Holds, Acked, a disconnect, a delivery) never waits for this client's
// commit; the caller finds the session as others left it meanwhile and must
// look again. On a memory provider it is made under the lock, as held.
func (b *Broker) storeNow(sh *shard, id string, write func(held *shard) error) error {
	if !b.opts.SessionsWaitOnDisk {
		return write(sh)
	}
	var err error
	done := make(chan struct{})
	b.later.add(id, func() {
		err = write(nil)
		close(done)
	})
	sh.mu.Unlock()
	<-done
	sh.mu.Lock()
	return err
}

// lockSettled takes id's shard lock with no write of id's still queued
// (laterWrites) and no other CONNECT claiming the id (connectWrites): what a CONNECT reads and writes follows what the id's last
// connection and timers left. With AwaitClient set, those writes are the
// waiting client's, answering class, while it settles them.
func (b *Broker) lockSettled(sh *shard, id string) (release func()) {
	release = func() {}
	if b.opts.AwaitClient != nil {
		release = b.opts.AwaitClient(id)
	}
	for {
		b.later.settle(id)
		sh.mu.Lock()
		claim := sh.claims[id]
		if claim == nil && !b.later.pending(id) {
			return release
		}
		sh.mu.Unlock()
		if claim != nil {
			<-claim // another CONNECT is storing the id's record
		}
	}
}
