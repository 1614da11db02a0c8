//go:build saguin_testhooks

package broker

// HoldPublishPath takes one session shard's lock and keeps it until the
// returned func is called: how the conformance tests make /health see a
// wedged broker. Built only with the saguin_testhooks tag, never into the
// shipped binary.
func (b *Broker) HoldPublishPath() (release func()) {
	b.shards[0].mu.Lock()
	return b.shards[0].mu.Unlock
}
