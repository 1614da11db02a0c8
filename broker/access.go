package broker

import (
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/saguin-edge/saguin/broker/acl"
	"github.com/saguin-edge/saguin/broker/auth"
	"github.com/saguin-edge/saguin/codec"
	"github.com/saguin-edge/saguin/codec/topic"
	"github.com/saguin-edge/saguin/netloop"
	"github.com/saguin-edge/saguin/netloop/delivery"
)

// Access is what the broker authenticates and authorizes against: each MQTT
// door's password file and anonymous answer, and the acl_file. It is built
// whole from the files and swapped whole (SetAccess), so a SIGUSR1 re-read
// is all or nothing and a CONNECT or a publish reads one consistent copy.
type Access struct {
	// Doors is by listener name. A door not named here admits everybody
	// with the empty identity, as a broker with no password file does.
	Doors map[string]DoorAccess
	// ACL is the compiled acl_file; nil is none: every authenticated
	// client may do anything.
	ACL *acl.ACL
}

// DoorAccess is one door's authentication, inheritance already resolved by
// the configuration (RFC 0002 "Who may connect").
type DoorAccess struct {
	// Users is the door's password file, nil where none is in effect.
	Users *auth.Users
	// AllowAnonymous is whether a client offering no user name is admitted.
	AllowAnonymous bool
}

// verifies reports whether any door checks passwords: a CONNECT then runs off
// the event loop, since a $7$ verify costs a third of a millisecond.
func (a *Access) verifies() bool {
	if a == nil {
		return false
	}
	for _, d := range a.Doors {
		if d.Users != nil {
			return true
		}
	}
	return false
}

// Access is the Access in force now, nil for none: what
// /v1/operations/acl answers from, so that route follows a SIGUSR1 re-read.
func (b *Broker) Access() *Access { return b.access.Load() }

// SetAccess puts a new Access in force. Open connections keep the identity
// their CONNECT proved; their grants are the new file's from their next
// publish, subscription and delivery on.
func (b *Broker) SetAccess(a *Access) {
	b.access.Store(a)
	b.verifying.Store(a.verifies())
	if a != nil && a.ACL != nil {
		// A consumer refused mid-channel is woken by the grant returning,
		// not by the next publish (RFC 0002 "What a refused client sees").
		for _, wake := range b.onGrantsChanged {
			wake()
		}
	}
}

// OnGrantsChanged registers what an engine does when the acl_file is re-read:
// a stalled consumer it holds for a refused delivery asks again. Called
// before the broker serves.
func (b *Broker) OnGrantsChanged(f func()) { b.onGrantsChanged = append(b.onGrantsChanged, f) }

// publishFigures is what c is held to per second: the limits: of the
// acl_file entry applying to its user name where that entry carries them
// (entry true), else limits.publish_rate and publish_bytes - for anonymous
// and unmatched clients too (RFC 0002 "How fast one client may publish").
// The grants are looked up only under a file with limits somewhere.
func (b *Broker) publishFigures(c delivery.Client) (f figures, entry bool) {
	wide := acl.Bounds{PublishRate: b.opts.PublishRate, PublishBytes: b.opts.PublishBytes}
	if a := b.access.Load(); a != nil && a.ACL != nil && a.ACL.UsesLimits {
		g := grantsIn(a.ACL, b.whoOf(c), c.ClientID())
		entry = g.Limits() != nil
		wide = g.Figures(wide)
	}
	return figures{float64(wide.PublishRate), float64(wide.PublishBytes)}, entry
}

// identity is who a connection authenticated as: the name its CONNECT
// proved ("" for an anonymous client, and for a name nothing checked), and
// the grants the acl_file gave that name and client id.
type identity struct {
	user   string
	grants atomic.Pointer[acl.Grants]
}

// unchecked is the identity of a client nobody named while the broker has
// no acl_file (no password_file either, or a door that admits anonymous
// clients): shared by all of them.
var unchecked = &identity{}

// nobody is the identity of an anonymous client under a: the shared one when
// no acl_file would cache grants in it, else one of its own.
func nobody(a *Access) *identity {
	if a.ACL == nil {
		return unchecked
	}
	return &identity{}
}

// grantsIn is grantsFor against an ACL the caller loaded once for a whole
// fan-out. It allocates only the first time after a re-read.
func grantsIn(a *acl.ACL, who *identity, clientID string) *acl.Grants {
	if who == nil {
		// A session restored from the store carries no proved name until
		// it reconnects: under an acl_file it is granted nothing meanwhile.
		return a.Nobody()
	}
	if who == unchecked {
		// Shared by every client admitted with no access configuration:
		// its grants, which depend on the client id, are never cached.
		return a.Grants("", clientID)
	}
	g := who.grants.Load()
	if g == nil || g.ACL != a {
		g = a.Grants(who.user, clientID)
		who.grants.Store(g)
	}
	return g
}

// grantsFor returns the grants of who under the acl_file in force now,
// resolving them again when the file was re-read since they were made. A
// nil result is no acl_file: everything is allowed.
func (b *Broker) grantsFor(who *identity, clientID string) *acl.Grants {
	a := b.access.Load()
	if a == nil || a.ACL == nil {
		return nil
	}
	return grantsIn(a.ACL, who, clientID)
}

// readGrant remembers, for one plain subscription, whether its whole filter
// is readable by the connection holding it under the acl_file in force, so a
// fan-out asks the acl_file once per subscription and re-read rather than
// once per delivery. A grant covering the whole filter covers every topic it
// matches (AllowsFilter is granted whole or not at all), so a hit answers
// what Allows would; a miss asks per topic, as a filter granted only in part
// after a re-read must be.
type readGrant struct {
	filter string
	last   atomic.Pointer[readAnswer]
}

// readAnswer is one answer, made for one identity (one CONNECT) under one
// acl_file: a re-read or a new connection on the session makes it stale, and
// it is asked again once.
type readAnswer struct {
	who   *identity
	rules *acl.ACL
	whole bool
}

// newReadGrant is the cache of a plain filter's subscription; a shared
// group's deliveries are asked per member, and a queue's form is not
// delivered by broadcast, so those carry none.
func newReadGrant(filter string) *readGrant {
	if strings.HasPrefix(filter, topic.SharePrefix) || strings.HasPrefix(filter, topic.QueuePrefix) {
		return nil
	}
	return &readGrant{filter: filter}
}

// covered is the fan-out's question, small enough to be inlined there: the
// answer remembered for this identity under these rules, when it is yes.
func (r *readGrant) covered(who *identity, rules *acl.ACL) bool {
	if r == nil {
		return false
	}
	a := r.last.Load()
	return a != nil && a.whole && a.who == who && a.rules == rules
}

// remember answers for g (who's grants under rules) and keeps the answer.
// AllowsFilter allocates in its walk, so it runs once per identity and
// re-read, never per delivery.
func (r *readGrant) remember(who *identity, rules *acl.ACL, g *acl.Grants) bool {
	if r == nil {
		return false
	}
	if a := r.last.Load(); a != nil && a.who == who && a.rules == rules {
		return a.whole
	}
	whole := g.AllowsFilter(r.filter, acl.Read)
	r.last.Store(&readAnswer{who: who, rules: rules, whole: whole})
	return whole
}

// bytesString views b as a string for a call that keeps nothing: the
// per-delivery check must not allocate.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// whoOf is the identity of the connection c, nil when it no longer owns its
// session (taken over between packets).
func (b *Broker) whoOf(c delivery.Client) *identity {
	id := c.ClientID()
	sh := b.shard(id)
	sh.mu.Lock()
	s := sh.sessions[id]
	owned := s.ownedBy(c)
	sh.mu.Unlock()
	if !owned {
		return nil
	}
	return s.who.Load()
}

// authorizePublish asks the acl_file about a client's publish: the feature
// denials that end the connection, then write on the topic's channel or
// broadcast topic. 0x87 is counted where the acl_file answers (RFC 0005).
func (b *Broker) authorizePublish(c delivery.Client, p *codec.Publish) (codec.ReasonCode, string) {
	a := b.access.Load()
	if a == nil || a.ACL == nil {
		return codec.Success, ""
	}
	id := c.ClientID()
	who := b.whoOf(c)
	if who == nil {
		return codec.UnspecifiedError, "the session was taken over"
	}
	g := grantsIn(a.ACL, who, id)
	t := bytesString(p.Topic)
	ch := a.ACL.Channel(t)
	switch {
	case p.QoS == 2 && g.Denied(acl.QoS2):
		// Told Maximum QoS 1 at CONNECT (MQTT-3.2.2-11).
		b.log.Warn("disconnected: a QoS 2 publish from a client denied qos2", "client_id", id, "topic", t)
		c.Kick(codec.QoSNotSupported)
		return codec.QoSNotSupported, "broker: features denies this client qos2"
	case p.Retain && ch == "" && g.Denied(acl.Retained):
		b.log.Warn("disconnected: a retained broadcast publish from a client denied retained", "client_id", id, "topic", t)
		c.Kick(codec.RetainNotSupported)
		return codec.RetainNotSupported, "broker: features denies this client retained"
	case !g.Allows(ch, t, acl.Write):
		return b.refusePublish(id, p, codec.NotAuthorized, "the acl_file grants this client no write on the topic")
	}
	return codec.Success, ""
}

// authenticate answers a CONNECT's credentials on its door: the identity
// it proved, or the refusal with what the log says about it (wrong and
// missing are the same 0x86 on the wire).
func (b *Broker) authenticate(req *netloop.ConnectRequest) (*identity, codec.ReasonCode) {
	if req.Certified {
		// A name its door vouched for - a client certificate it verified,
		// or a proxy's verified CN - is the identity; no password file is
		// consulted for it (RFC 0002 "Client certificates").
		return &identity{user: string(req.Username)}, codec.Success
	}
	a := b.access.Load()
	if a == nil {
		// No password or acl file: every anonymous client shares one
		// identity rather than allocating its own (24 bytes a connection).
		return unchecked, codec.Success
	}
	d, ok := a.Doors[req.Door]
	user := string(req.Username)
	switch {
	case !ok || d.Users == nil:
		// Nothing checks a name here, so a name typed is not an identity.
		if !ok || d.AllowAnonymous {
			return nobody(a), codec.Success
		}
		b.refuseConnect(req, codec.BadUserNameOrPassword, "the door admits nobody")
		return nil, codec.BadUserNameOrPassword
	case user == "":
		// An MQTT 5 password without a user name is offering no user
		// name: the password is not read.
		if d.AllowAnonymous {
			return nobody(a), codec.Success
		}
		b.refuseConnect(req, codec.BadUserNameOrPassword, "no user name: this door admits only the users its password file names")
		return nil, codec.BadUserNameOrPassword
	}
	switch d.Users.Check(user, req.Password) {
	case auth.OK:
		return &identity{user: user}, codec.Success
	case auth.Unknown:
		b.refuseConnect(req, codec.BadUserNameOrPassword, "no such user in "+d.Users.Path)
	default:
		if req.Password == nil {
			b.refuseConnect(req, codec.BadUserNameOrPassword, "no password given")
		} else {
			b.refuseConnect(req, codec.BadUserNameOrPassword, "wrong password")
		}
	}
	return nil, codec.BadUserNameOrPassword
}

func (b *Broker) refuseConnect(req *netloop.ConnectRequest, code codec.ReasonCode, why string) {
	b.log.Warn("connection refused", "client_id", req.ClientID, "user", string(req.Username), "listener", req.Door, "code", code.String(), "why", why)
}

// admit applies what the acl_file says at CONNECT, once the name is proved:
// client_ids, then the feature denials, then the Will's grant. A refusal
// touches no session; persistent is not refused but shortened.
func (b *Broker) admit(req *netloop.ConnectRequest, who *identity) codec.ReasonCode {
	a := b.access.Load()
	if a == nil || a.ACL == nil {
		return codec.Success
	}
	g := b.grantsFor(who, req.ClientID)
	if !g.ClientIDAllowed {
		b.refuseConnect(req, codec.BadUserNameOrPassword, "the client id is not one the acl_file's client_ids admits for this user")
		return codec.BadUserNameOrPassword
	}
	for _, w := range g.Withheld {
		b.log.Warn("an acl_file rule grants this client nothing: the name it would put in holds +, # or /",
			"client_id", req.ClientID, "user", who.user, "role", w.Role, "rule", w.Rule.Filter, "line", w.Rule.Line)
	}
	if w := req.Will; w != nil {
		wt := string(w.Topic)
		ch := a.ACL.Channel(wt)
		switch {
		case g.Denied(acl.Will):
			b.refuseConnect(req, codec.NotAuthorized, "broker: features denies this user a Will")
			return codec.NotAuthorized
		case w.QoS == 2 && g.Denied(acl.QoS2):
			b.refuseConnect(req, codec.QoSNotSupported, "broker: features denies this user qos2, and the Will is QoS 2")
			return codec.QoSNotSupported
		case w.Retain && ch == "" && g.Denied(acl.Retained):
			b.refuseConnect(req, codec.RetainNotSupported, "broker: features denies this user retained, and the Will is retained on a broadcast topic")
			return codec.RetainNotSupported
		case !g.Allows(ch, wt, acl.Write):
			b.refuseConnect(req, codec.NotAuthorized, "the acl_file grants this user no write on the Will's topic")
			return codec.NotAuthorized
		}
	}
	req.MaximumQoS1, req.NoSharedSubscriptions = g.Denied(acl.QoS2), g.Denied(acl.Share)
	if g.Denied(acl.Persistent) && req.SessionExpiry > 0 {
		// Accepted, and told its session ends with its connection; a 3.1.1
		// session is made clean.
		req.SessionExpiry, req.SessionExpiryShortened = 0, true
		if req.Version != codec.Version5 {
			req.CleanStart = true
		}
	}
	return codec.Success
}

// mayWrite asks the acl_file whether a publish to t is granted to the
// connection's identity; the topic is resolved to its channel first, so a
// channel topic never reaches a topic: rule.
func (b *Broker) mayWrite(who *identity, clientID string, t string) bool {
	g := b.grantsFor(who, clientID)
	if g == nil {
		return true
	}
	return g.Allows(g.ACL.Channel(t), t, acl.Write)
}

// sharedInner returns a $share/ filter's topic filter.
func sharedInner(filter string) string {
	if !strings.HasPrefix(filter, topic.SharePrefix) {
		return filter
	}
	_, inner, _, _ := topic.SplitShared(filter)
	return inner
}
