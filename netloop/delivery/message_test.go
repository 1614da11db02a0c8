package delivery

import (
	"testing"
	"time"

	"github.com/saguin-edge/saguin/codec"
)

// Releasing a pooled message more often than it was held is a bug that would
// hand one message's memory to two publishes; it fails loudly instead.
func TestAMessageReleasedMoreOftenThanHeldPanics(t *testing.T) {
	m := AcquireMessage(&codec.Publish{Topic: []byte("a"), Payload: []byte("x")}, time.Now)
	m.Retain()
	m.Release()
	m.Release()
	defer func() {
		if recover() == nil {
			t.Fatal("a second release of the last reference did not panic")
		}
	}()
	m.Release()
}
