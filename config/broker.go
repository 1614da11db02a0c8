package config

import (
	"time"

	"github.com/saguin-edge/saguin/config/defaults"
)

// MQTT's own ceilings, which several keys are held to.
const (
	mqttMaxPacketSize    = 268435455 + 5 // the largest Remaining Length and its fixed header
	mqttMaxTwoByte       = 65535
	mqttMaxSessionExpiry = 4294967295 * time.Second // about 136 years
	maxChannelNameBytes  = 128
	snapshotSuffix       = ".snapshot"
	maxFileNameBytes     = 255
	sqliteEmptyDatabase  = 88 << 10
)

func (l *loader) limits(o *obj) Limits {
	var lim Limits
	lim.MaxMessageSize = o.size("max_message_size", defaults.MaxMessageSize, sizeSpec{min: 1, max: mqttMaxPacketSize,
		why: "MQTT cannot carry a packet larger than 256MiB, and none would let a client choose how much memory one packet takes"})
	lim.MaxTopicLength = int(o.integer("max_topic_length", defaults.MaxTopicLength, intSpec{min: 1, max: mqttMaxTwoByte,
		why: "a topic is an MQTT string of at most 65535 bytes"}))
	lim.MaxClientIDLength = int(o.integer("max_client_id_length", defaults.MaxClientIDLength, intSpec{min: 23, max: mqttMaxTwoByte,
		why: "MQTT requires a server to accept any client id up to 23 bytes, and an id is an MQTT string of at most 65535"}))
	lim.MaxHeaderCount = int(o.integer("max_header_count", defaults.MaxHeaderCount, intSpec{min: 1, max: 1 << 20}))
	lim.MaxHeaderBytes = o.size("max_header_bytes", defaults.MaxHeaderBytes, sizeSpec{min: 1, max: mqttMaxPacketSize})
	lim.MaxConnections = int(o.integer("max_connections", defaults.MaxConnections, intSpec{min: 1, max: 1 << 24,
		why: "it counts every socket the broker holds, and none would be no bound on descriptors"}))
	lim.MaxSubscriptions = int(o.integer("max_subscriptions", defaults.MaxSubscriptions, intSpec{min: 1, max: 1 << 24,
		why: "a value below 1 would refuse every SUBSCRIBE"}))
	lim.MaxTopicLevels = int(o.integer("max_topic_levels", defaults.MaxTopicLevels, intSpec{min: 1, max: mqttMaxTwoByte,
		why: "a value below 1 would refuse every publish and every SUBSCRIBE, and there is no none"}))
	lim.MaxSessionExpiry = o.duration("max_session_expiry", defaults.MaxSessionExpiry, durSpec{min: time.Second, max: mqttMaxSessionExpiry,
		why: "a session that never expires is the unbounded table this key exists to close; write a duration such as 30d"})
	if s, _, ok := o.scalar("max_keepalive"); ok {
		// The ceiling is said in two bytes of seconds, so it is refused past
		// 65535 s rather than truncated (RFC 0002 "How long a client may go quiet").
		if d, err := ParseDuration(s); err == nil && d > 65535*time.Second {
			o.at("max_keepalive", " %q is longer than MQTT can express, which is 65535 seconds or about 18 hours; write `none` for no ceiling", s)
		} else {
			lim.MaxKeepalive = o.duration("max_keepalive", 0, durSpec{min: time.Second, none: true})
		}
	}
	lim.PublishRate = int(o.integer("publish_rate", 0, intSpec{min: 1, max: 1 << 30, none: true,
		why: "a written 0 would refuse every publish; leave the key out for no bound"}))
	lim.PublishBytes = o.size("publish_bytes", 0, sizeSpec{min: 1, none: true,
		why: "leave the key out for no bound"})
	lim.WriteTimeout = o.duration("write_timeout", defaults.WriteTimeout, durSpec{min: time.Millisecond, none: true, subSecond: true})
	lim.ConnectTimeout = o.duration("connect_timeout", defaults.ConnectTimeout, durSpec{min: time.Second,
		why: "this bound is the only thing between an idle socket and the broker's descriptors; write a whole number of seconds, 1s or longer"})
	lim.MaxConnectRate = int(o.integer("max_connect_rate", defaults.MaxConnectRate, intSpec{min: 1, max: 1 << 30, none: true,
		why: "write none for no limit"}))
	lim.MaxConnectSize = o.size("max_connect_size", 0, sizeSpec{min: 1, max: mqttMaxPacketSize})
	if lim.MaxConnectSize == 0 {
		lim.MaxConnectSize = defaults.ConnectSizeFor(lim.MaxMessageSize)
	} else if lim.MaxConnectSize > lim.MaxMessageSize {
		o.at("max_connect_size", " %s is larger than limits.max_message_size (%s); a CONNECT is a packet like any other, so raise max_message_size or lower this",
			FormatSize(lim.MaxConnectSize), FormatSize(lim.MaxMessageSize))
	}
	lim.SessionQueueBytes = o.size("session_queue_bytes", 0, sizeSpec{min: 1,
		why: "a session that stops reading would hold everything it is sent, the unbounded buffer invariant 13 refuses"})
	if lim.SessionQueueBytes == 0 {
		lim.SessionQueueBytes = defaults.SessionQueueBytesFor(lim.MaxMessageSize)
	} else if lim.SessionQueueBytes < lim.MaxMessageSize {
		o.at("session_queue_bytes", " %s is below limits.max_message_size (%s), so a session could never queue the largest message a client may publish; write at least %s",
			FormatSize(lim.SessionQueueBytes), FormatSize(lim.MaxMessageSize), FormatSize(lim.MaxMessageSize))
	}
	o.done()
	return lim
}

func (l *loader) broker(b *obj) {
	br := &l.cfg.Broker
	if id, ok := b.str("id"); ok {
		if hasControl(id) {
			b.at("id", " %q holds a control character; it names this broker in every log line", id)
		}
		br.ID = id
	} else if !b.has("id") {
		b.at("id", " is missing; it names this broker in its log lines and on saguin_build_info, and an invented name would answer which machine said a line with something nobody can look up")
	}
	br.LogLevel = "info"
	if s, _, ok := b.scalar("log_level"); ok {
		switch s {
		case "debug", "info", "warn", "error":
			br.LogLevel = s
		default:
			b.at("log_level", " %q: it is one of debug, info, warn or error; omit the key for info", s)
		}
	}
	b.refuse("log_file", " is not a key: Sagüin writes its log to standard output only, and whatever starts it keeps and bounds it (journald's SystemMaxUse, Docker's max-size and max-file, svlogd)")
	if p, ok := b.absPath("pid_file", "the file the process writes its id to", false); ok {
		br.PIDFile = p
	}
	l.mqtt(b.child("mqtt"))
	if b.has("operations") {
		l.operations(b.child("operations"))
	} else {
		b.get("operations")
	}
	l.storage(b.child("storage"), b)
	l.retained(b.child("retained"))
	l.qos2(b.child("qos2"))
	l.share(b.child("share"))
	l.session(b.child("session"))
	b.get("limits") // read first, by load
	b.done()
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r >= 0x7f && r <= 0x9f {
			return true
		}
	}
	return false
}

func (l *loader) mqtt(o *obj) {
	m := &l.cfg.Broker.MQTT
	if p, ok := o.absPath("password_file", "the MQTT password file", false); ok {
		m.PasswordFile = p
	}
	if v, ok := o.boolean("allow_anonymous"); ok {
		m.AllowAnonymous = &v
	}
	if p, ok := o.absPath("acl_file", "the authorization file", false); ok {
		m.ACLFile = p
	}
	m.MinProtocolVersion = 4
	if s, n, ok := o.scalar("min_protocol_version"); ok {
		// Accepted quoted or not: YAML reads 3.1.1 as text and a bare 5 as
		// an integer, and both mean the same here.
		switch s {
		case "3.1.1":
			m.MinProtocolVersion = 4
		case "5":
			m.MinProtocolVersion = 5
		default:
			l.c.at(n, "broker.mqtt.min_protocol_version", " %q: it is \"3.1.1\" (the default, admitting 3.1.1 and 5) or \"5\" (MQTT 5 only); MQTT 3.1 is never admitted", s)
		}
	}
	m.Listeners = l.listeners(o, "broker.mqtt.listen", false)
	o.done()
}

func (l *loader) operations(o *obj) {
	ops := &Operations{MinScrapeInterval: 60 * time.Second}
	if p, ok := o.absPath("password_file", "the operators' password file", false); ok {
		ops.PasswordFile = p
	}
	ops.MinScrapeInterval = o.duration("min_scrape_interval", 60*time.Second, durSpec{min: 60 * time.Second,
		why: "a scrape sooner than a minute is answered from the last one anyway, and a figure the broker accepted and did not honour would be worse than a refusal"})
	l.cfg.Broker.Operations = ops
	ops.Listeners = l.listeners(o, "broker.operations.listen", true)
	if len(ops.Listeners) == 0 && !hasDoor(o.get("listen")) {
		// A block that opens nothing asks for /metrics and serves it nowhere.
		o.at("listen", " names no listener: a block that opens nothing asks for /metrics and then serves it nowhere; name a tcp or unix listener, or remove broker.operations")
	}
	o.done()
}

// hasDoor reports whether a listen: block writes any door at all, valid or not.
func hasDoor(n *node) bool {
	if n == nil || n.kind != mapNode {
		return false
	}
	for _, v := range n.vals {
		if v.kind != nullNode {
			return true
		}
	}
	return false
}

func (l *loader) retained(o *obj) {
	r := &l.cfg.Broker.Retained
	r.Storage, _ = o.str("storage")
	r.RetentionPeriod = o.duration("retention_period", 0, durSpec{min: time.Second, none: true})
	o.refuse("retention_bytes", " is not accepted on the retained store: it holds one value per topic, bounded by its provider's max_bytes")
	o.refuse("max_bytes", " is not accepted on the retained store: its provider's max_bytes bounds it")
	o.done()
}

func (l *loader) qos2(o *obj) {
	q := &l.cfg.Broker.QoS2
	q.MaxInflightPerClient = int(o.integer("max_inflight_per_client", defaults.QoS2MaxInflight, intSpec{min: 1, max: mqttMaxTwoByte,
		why: "it counts one client's unreleased exactly-once publishes"}))
	q.ExpiresAfter = o.duration("expires_after", defaults.QoS2ExpiresAfter, durSpec{min: time.Second, none: true})
	o.refuse("max_bytes", " is not a key of broker.qos2: a held message counts against its channel's provider's max_bytes, and max_inflight_per_client bounds one client")
	o.done()
}

func (l *loader) share(o *obj) {
	l.cfg.Broker.Share.ExpiresAfter = o.duration("expires_after", 0, durSpec{min: time.Second, none: true})
	o.done()
}

func (l *loader) session(o *obj) {
	s := &l.cfg.Broker.Session
	s.Storage, _ = o.str("storage")
	s.AckCommitInterval = o.duration("ack_commit_interval", defaults.AckCommitInterval, durSpec{min: 10 * time.Millisecond, max: time.Second, subSecond: true,
		why: "nothing is gained below 10ms, and past a second an unclean stop sends seconds of duplicates; none is refused since nothing else stores acknowledgements"})
	o.refuse("max_bytes", " is not accepted on broker.session: the provider's max_bytes bounds the store, and limits.session_queue_bytes bounds one session")
	o.done()
}
