package netloop_test

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/saguin-edge/saguin/broker"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/store"
)

// leaverSessions is a sqlite session store whose writes of a disconnect for
// one client id wait until open is closed: a disk that takes its time over
// that client's commits.
type leaverSessions struct {
	store.Sessions
	id      string
	entered chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (l *leaverSessions) Update(x store.Session) error {
	if x.ClientID == l.id && !x.DisconnectedAt.IsZero() {
		l.once.Do(func() { close(l.entered) })
		<-l.open
	}
	return l.Sessions.Update(x)
}

func TestAPublisherIsNotHeldByAnotherConnectionsDisconnectCommits(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	p, ss, r := openSQLite(t)
	slow := &leaverSessions{Sessions: ss, id: "leaver", entered: make(chan struct{}), open: make(chan struct{})}
	br, err := broker.New(broker.Options{Sessions: slow, Retained: r, Logger: quiet,
		SessionsWaitOnDisk: true, RetainedWaitOnDisk: true, AwaitClient: p.AwaitClient})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		br.Close()
		p.Close()
	})
	s := startServer(t, netloop.Options{Handler: br, EventLoops: 1})
	// Run before the server's shutdown: a loop held by the commit is let go.
	t.Cleanup(func() { close(slow.open) })

	leaver := dial(t, s, codec.Version5)
	leaver.connect("leaver", func(c *codec.Connect) {
		c.CleanStart = false
		c.Properties.SessionExpiry = 3600
		c.Properties.Present.Set(codec.PropSessionExpiry)
	})
	pub := dial(t, s, codec.Version5)
	pub.connect("pub", nil)
	leaver.send((&codec.Disconnect{}).Append(nil, codec.Version5))
	select {
	case <-slow.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the disconnect's record was never written")
	}
	// The disconnect's commit is held; the loop both connections share
	// must go on serving the publisher.
	for id := uint16(1); id <= 3; id++ {
		pub.publish("t", "x", 1, id)
		pub.expectAck(codec.TypePuback, id)
	}
}
