// Package netloop owns the MQTT doors of the broker: the listeners (tcp and
// unix, served on a gnet event loop), admission (max_connections counted from
// accept, the overflow budget, connect_timeout, max_connect_size,
// max_connect_rate), and the per-connection state machine that frames and
// decodes packets, keeps the keepalive, bounds what a client may have in
// flight in both directions, and hands what it decoded to a Handler.
//
// It knows MQTT and sockets; it does not know what a channel is. Everything a
// packet means beyond the connection it arrived on is the Handler's business.
package netloop

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"time"

	"github.com/saguin-edge/saguin/broker/clock"
	"github.com/saguin-edge/saguin/config/defaults"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// Door kinds served here. Plain tcp and unix doors run on the gnet loops;
// TLS and WebSocket doors feed the same Conn state machine through their
// own Transport (streamdoor.go).
const (
	KindTCP  = "tcp"
	KindWS   = "ws"
	KindUnix = "unix"
)

// Door is one listener. Name is what a log line's listener= says: the kind
// itself for a door written as a single mapping, the entry's name in a list.
type Door struct {
	Name    string
	Kind    string      // KindTCP, KindWS or KindUnix
	Address string      // tcp and ws: host:port
	Path    string      // unix: socket path; a leading @ is an abstract name
	Mode    fs.FileMode // unix: the socket file's permissions; 0 means 0660

	// TLS makes a tcp or ws door speak TLS (wss); nil is plain. The
	// certs package's Store hands out one that follows SIGUSR1.
	TLS *tls.Config
	// CrossOrigin is a ws door's same_origin: false; AllowedOrigins its
	// allowed_origins (RFC 0002 "Which web pages may connect").
	CrossOrigin    bool
	AllowedOrigins []string
	// ProxyProtocol makes a unix door read a PROXY protocol v2 header from
	// every connection before anything else (RFC 0002 "Behind a proxy that
	// terminated TLS").
	ProxyProtocol bool
}

// Options are the resolved settings netloop runs with. cmd/saguin maps the
// configuration onto them; tests fill them in directly.
type Options struct {
	// Doors to open. None means one tcp door on :1883 (RFC 0002 Validation:
	// a configuration naming no listener gets tcp on :1883).
	Doors []Door

	// MinProtocolVersion is 4 (MQTT 3.1.1, the default) or 5.
	MinProtocolVersion byte

	MaxConnections    int           // limits.max_connections, one count over every door
	ConnectTimeout    time.Duration // limits.connect_timeout
	MaxConnectSize    int           // limits.max_connect_size, the whole packet
	MaxConnectRate    int           // limits.max_connect_rate per door a second; 0 is none
	MaxMessageSize    int           // limits.max_message_size: Maximum Packet Size, both ways
	MaxClientIDLength int           // limits.max_client_id_length
	MaxSessionExpiry  time.Duration // limits.max_session_expiry
	MaxKeepalive      time.Duration // limits.max_keepalive; 0 is none
	WriteTimeout      time.Duration // limits.write_timeout; 0 is none
	// SessionQueueBytes bounds what waits in one connection's outbound queue
	// (limits.session_queue_bytes).
	SessionQueueBytes int

	// ReceiveMaximum is what the CONNACK tells an MQTT 5 client it may have
	// unacknowledged towards the broker; one more is DISCONNECT 0x93. It is
	// applied to 3.1.1 clients too, which cannot be told, by closing.
	ReceiveMaximum int

	// RetainAvailable is the CONNACK's Retain Available: whether anything on
	// this broker can keep a retained message.
	RetainAvailable bool
	// MayDenyFeatures: the handler may take qos2 or share away from a client
	// (an acl_file is in force), so the CONNACK a client's Maximum Packet
	// Size must hold may carry Maximum QoS and Shared Subscription Available.
	MayDenyFeatures bool

	// EventLoops is how many gnet event loops serve the connections; 0 means
	// half the processors, at least one. A delivery to a connection on
	// another loop costs a cross-thread wake, which on a small box outweighs
	// the parallelism a second loop buys (docs/netloop.md has the figures).
	EventLoops int

	// Logger receives the connection lines at RFC 0002's levels.
	Logger *slog.Logger

	// Handler is the broker the connections hand their packets to.
	Handler Handler

	// OnConnectRefused hears every connection netloop counts in
	// ConnectionsRefused but a server-busy close (which has no client id):
	// the client id and user name the CONNECT named, empty where it got no
	// further, and the code decided. It is how /v1/operations/refused learns
	// which device it was (RFC 0005): a refusal for the protocol version
	// happens before the broker is asked anything. Called on the goroutine
	// that refused, so it must not block; nil is none.
	OnConnectRefused func(clientID, user string, reason delivery.Reason)

	// Clock is where netloop reads the time and arms its timers: the timer
	// scan (connect_timeout, keepalive, write_timeout), max_connect_rate and
	// the overflow budget's wait. nil is clock.Real. Socket deadlines stay on
	// the wall clock, which is what the kernel checks them against.
	Clock clock.Clock
}

// What netloop defaults that is no configuration key; the keys' defaults are
// config/defaults'.
const (
	// DefaultReceiveMaximum is the CONNACK's Receive Maximum. It bounds the
	// exchanges a client may leave unfinished (a packet identifier each) and
	// sits above broker.qos2.max_inflight_per_client (20), so that a QoS 2
	// publisher past that bound meets its 0x97 on the PUBREC before it could
	// meet this 0x93.
	DefaultReceiveMaximum = 1024
	// TopicAliasMaximum is fixed by RFC 0001: 16 per connection.
	TopicAliasMaximum = 16
	// defaultUnixMode is the socket file's permissions when none is written.
	defaultUnixMode fs.FileMode = 0o660
)

// WithDefaults returns o with every zero field given RFC 0002's default.
// Fields whose zero value means "none" (MaxConnectRate, MaxKeepalive,
// WriteTimeout) are left alone: a caller wanting the default writes it.
func (o Options) WithDefaults() Options {
	if len(o.Doors) == 0 {
		o.Doors = []Door{{Name: KindTCP, Kind: KindTCP, Address: ":1883"}}
	}
	for i := range o.Doors {
		if o.Doors[i].Name == "" {
			o.Doors[i].Name = o.Doors[i].Kind
		}
		if o.Doors[i].Kind == KindUnix && o.Doors[i].Mode == 0 {
			o.Doors[i].Mode = defaultUnixMode
		}
	}
	if o.MinProtocolVersion == 0 {
		o.MinProtocolVersion = 4
	}
	o.Clock = clock.Or(o.Clock)
	if o.MaxConnections == 0 {
		o.MaxConnections = defaults.MaxConnections
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = defaults.ConnectTimeout
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = defaults.MaxMessageSize
	}
	if o.MaxConnectSize == 0 {
		o.MaxConnectSize = defaults.ConnectSizeFor(o.MaxMessageSize)
	}
	if o.MaxClientIDLength == 0 {
		o.MaxClientIDLength = defaults.MaxClientIDLength
	}
	if o.MaxSessionExpiry == 0 {
		o.MaxSessionExpiry = defaults.MaxSessionExpiry
	}
	if o.SessionQueueBytes == 0 {
		o.SessionQueueBytes = defaults.SessionQueueBytesFor(o.MaxMessageSize)
	}
	if o.ReceiveMaximum == 0 {
		o.ReceiveMaximum = DefaultReceiveMaximum
	}
	if o.EventLoops == 0 {
		o.EventLoops = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// validate refuses options no configuration that passed config's checks can
// produce; it guards callers that fill Options by hand.
func (o Options) validate() error {
	var errs []error
	if o.Handler == nil {
		errs = append(errs, errors.New("no Handler"))
	}
	if o.MinProtocolVersion != 4 && o.MinProtocolVersion != 5 {
		errs = append(errs, fmt.Errorf("min protocol version %d: it is 4 (3.1.1) or 5", o.MinProtocolVersion))
	}
	if o.MaxConnections < 1 {
		errs = append(errs, fmt.Errorf("max_connections %d: at least 1", o.MaxConnections))
	}
	if o.MaxConnectSize > o.MaxMessageSize {
		errs = append(errs, fmt.Errorf("max_connect_size %d is larger than max_message_size %d", o.MaxConnectSize, o.MaxMessageSize))
	}
	if o.ReceiveMaximum < 1 || o.ReceiveMaximum > 65535 {
		errs = append(errs, fmt.Errorf("receive maximum %d: from 1 to 65535", o.ReceiveMaximum))
	}
	names := map[string]bool{}
	for _, d := range o.Doors {
		if names[d.Name] {
			errs = append(errs, fmt.Errorf("two doors named %q", d.Name))
		}
		names[d.Name] = true
		switch d.Kind {
		case KindTCP, KindWS:
			if d.Address == "" {
				errs = append(errs, fmt.Errorf("door %s: no address", d.Name))
			}
			if d.ProxyProtocol {
				errs = append(errs, fmt.Errorf("door %s: a PROXY header is read on unix doors only", d.Name))
			}
		case KindUnix:
			if d.Path == "" {
				errs = append(errs, fmt.Errorf("door %s: no path", d.Name))
			}
			if d.TLS != nil {
				errs = append(errs, fmt.Errorf("door %s: a unix door takes no TLS", d.Name))
			}
		default:
			errs = append(errs, fmt.Errorf("door %s: kind %q is not served by netloop", d.Name, d.Kind))
		}
	}
	return errors.Join(errs...)
}
