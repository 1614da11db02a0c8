package codec

// PropID is an MQTT 5 property identifier (MQTT 5 section 2.2.2.2).
type PropID uint8

// Every MQTT 5 property.
const (
	PropPayloadFormat        PropID = 0x01
	PropMessageExpiry        PropID = 0x02
	PropContentType          PropID = 0x03
	PropResponseTopic        PropID = 0x08
	PropCorrelationData      PropID = 0x09
	PropSubscriptionID       PropID = 0x0B
	PropSessionExpiry        PropID = 0x11
	PropAssignedClientID     PropID = 0x12
	PropServerKeepAlive      PropID = 0x13
	PropAuthMethod           PropID = 0x15
	PropAuthData             PropID = 0x16
	PropRequestProblemInfo   PropID = 0x17
	PropWillDelay            PropID = 0x18
	PropRequestResponseInfo  PropID = 0x19
	PropResponseInfo         PropID = 0x1A
	PropServerReference      PropID = 0x1C
	PropReasonString         PropID = 0x1F
	PropReceiveMaximum       PropID = 0x21
	PropTopicAliasMaximum    PropID = 0x22
	PropTopicAlias           PropID = 0x23
	PropMaximumQoS           PropID = 0x24
	PropRetainAvailable      PropID = 0x25
	PropUserProperty         PropID = 0x26
	PropMaximumPacketSize    PropID = 0x27
	PropWildcardSubAvailable PropID = 0x28
	PropSubIDAvailable       PropID = 0x29
	PropSharedSubAvailable   PropID = 0x2A
)

// PropSet is a set of property identifiers (all are below 64).
type PropSet uint64

// Has reports whether id is in the set.
func (s PropSet) Has(id PropID) bool { return s&(1<<id) != 0 }

// Set adds id to the set.
func (s *PropSet) Set(id PropID) { *s |= 1 << id }

func propSet(ids ...PropID) PropSet {
	var s PropSet
	for _, id := range ids {
		s.Set(id)
	}
	return s
}

// UserProperty is one User Property name/value pair; both alias the packet.
type UserProperty struct {
	Key, Value []byte
}

// Properties holds every MQTT 5 property. Decode resets it and fills what the
// packet carries, reusing the capacity of User and SubscriptionIDs; byte
// slices alias the packet body (copy what outlives the next read).
//
// Present records which properties were carried. Append writes a property
// when its field is non-zero (non-empty) or its bit is in Present, so setting
// a field is enough to send it; set the bit too to send a zero value whose
// meaning differs from absence (Maximum QoS 0, Retain Available 0, Session
// Expiry Interval 0 on a DISCONNECT, Server Keep Alive 0, Request Problem
// Information 0, the three "available" flags at 0, Payload Format Indicator 0).
type Properties struct {
	Present PropSet

	PayloadFormat        byte   // 0x01: 0 unspecified bytes, 1 UTF-8
	MessageExpiry        uint32 // 0x02: seconds
	ContentType          []byte // 0x03
	ResponseTopic        []byte // 0x08: a topic name, never a filter
	CorrelationData      []byte // 0x09
	SubscriptionIDs      []uint32
	SessionExpiry        uint32 // 0x11: seconds
	AssignedClientID     []byte // 0x12
	ServerKeepAlive      uint16 // 0x13: seconds
	AuthMethod           []byte // 0x15
	AuthData             []byte // 0x16
	RequestProblemInfo   byte   // 0x17: absent means 1
	WillDelay            uint32 // 0x18: seconds
	RequestResponseInfo  byte   // 0x19
	ResponseInfo         []byte // 0x1A
	ServerReference      []byte // 0x1C
	ReasonString         []byte // 0x1F
	ReceiveMaximum       uint16 // 0x21: absent means 65,535; 0 is forbidden
	TopicAliasMaximum    uint16 // 0x22
	TopicAlias           uint16 // 0x23: 0 is forbidden
	MaximumQoS           byte   // 0x24: 0 or 1; absent means 2
	RetainAvailable      byte   // 0x25: absent means 1
	User                 []UserProperty
	MaximumPacketSize    uint32 // 0x27: absent means no limit; 0 is forbidden
	WildcardSubAvailable byte   // 0x28: absent means 1
	SubIDAvailable       byte   // 0x29: absent means 1
	SharedSubAvailable   byte   // 0x2A: absent means 1
}

// Reset empties p, keeping the capacity of its slices.
func (p *Properties) Reset() {
	user, ids := reuse(p.User), reuse(p.SubscriptionIDs)
	*p = Properties{User: user, SubscriptionIDs: ids}
}

// AddUser appends a User Property.
func (p *Properties) AddUser(key, value []byte) {
	p.User = append(p.User, UserProperty{Key: key, Value: value})
}

// Which packet (or the Will, carried inside CONNECT) a property set belongs
// to, as an index into allowedProps.
type propContext uint8

const (
	ctxConnect propContext = iota
	ctxWill
	ctxConnack
	ctxPublish
	ctxPuback // PUBACK, PUBREC, PUBREL, PUBCOMP
	ctxSubscribe
	ctxSuback
	ctxUnsubscribe
	ctxUnsuback
	ctxDisconnect
	ctxAuth
)

var ctxNames = [...]string{"CONNECT", "Will", "CONNACK", "PUBLISH", "acknowledgement", "SUBSCRIBE",
	"SUBACK", "UNSUBSCRIBE", "UNSUBACK", "DISCONNECT", "AUTH"}

// allowedProps is MQTT 5 section 2.2.2.2's table: which packets may carry each
// property. User Property may appear in all of these.
var allowedProps = [...]PropSet{
	ctxConnect: propSet(PropSessionExpiry, PropAuthMethod, PropAuthData, PropRequestProblemInfo,
		PropRequestResponseInfo, PropReceiveMaximum, PropTopicAliasMaximum, PropUserProperty, PropMaximumPacketSize),
	ctxWill: propSet(PropPayloadFormat, PropMessageExpiry, PropContentType, PropResponseTopic,
		PropCorrelationData, PropWillDelay, PropUserProperty),
	ctxConnack: propSet(PropSessionExpiry, PropAssignedClientID, PropServerKeepAlive, PropAuthMethod,
		PropAuthData, PropResponseInfo, PropServerReference, PropReasonString, PropReceiveMaximum,
		PropTopicAliasMaximum, PropMaximumQoS, PropRetainAvailable, PropUserProperty, PropMaximumPacketSize,
		PropWildcardSubAvailable, PropSubIDAvailable, PropSharedSubAvailable),
	ctxPublish: propSet(PropPayloadFormat, PropMessageExpiry, PropContentType, PropResponseTopic,
		PropCorrelationData, PropSubscriptionID, PropTopicAlias, PropUserProperty),
	ctxPuback:      propSet(PropReasonString, PropUserProperty),
	ctxSubscribe:   propSet(PropSubscriptionID, PropUserProperty),
	ctxSuback:      propSet(PropReasonString, PropUserProperty),
	ctxUnsubscribe: propSet(PropUserProperty),
	ctxUnsuback:    propSet(PropReasonString, PropUserProperty),
	ctxDisconnect:  propSet(PropSessionExpiry, PropServerReference, PropReasonString, PropUserProperty),
	ctxAuth:        propSet(PropAuthMethod, PropAuthData, PropReasonString, PropUserProperty),
}

// maxVarint is the largest variable byte integer: Subscription Identifier's
// upper bound (MQTT 5 3.3.2.3.8).
const maxVarint = 268435455

// decode reads a property length and the properties it covers. A property
// the context may not carry, or an unknown identifier, is malformed (0x81,
// RFC 0002 "A DISCONNECT from the broker"); one carried twice where MQTT
// allows once, or with a value its definition forbids, is a protocol error
// (0x82) - except Topic Alias 0, which MQTT 5 3.3.4 answers 0x94.
func (p *Properties) decode(r *reader, ctx propContext) error {
	p.Reset()
	// Field names are joined with the packet's name only on a refusal, so
	// that reading properties allocates nothing.
	where := ctxNames[ctx]
	n, err := r.varint("property length")
	if err != nil {
		return prefixRule(where, err)
	}
	if int(n) > r.remaining() {
		return runsPast(where + " properties")
	}
	end := r.off + int(n)
	block := r.b[r.off:end]
	if users, ids := countRepeated(block); users > cap(p.User) || ids > cap(p.SubscriptionIDs) {
		// Sized once, so a block of thousands of tiny User Properties
		// allocates their slots once rather than every doubling of them.
		if users > cap(p.User) {
			p.User = make([]UserProperty, 0, users)
		}
		if ids > cap(p.SubscriptionIDs) {
			p.SubscriptionIDs = make([]uint32, 0, ids)
		}
	}
	pr := reader{b: r.b[:end], off: r.off}
	allowed := allowedProps[ctx]
	for pr.off < end {
		idv, err := pr.varint("property identifier")
		if err != nil {
			return prefixRule(where, err)
		}
		if idv > 0x3F || !allowed.Has(PropID(idv)) {
			if idv <= 0x3F && allKnown.Has(PropID(idv)) {
				return malformed(where + " may not carry property " + PropID(idv).String() + " (MQTT 5 2.2.2.2)")
			}
			return malformed(where + " carries unknown property identifier 0x" + hex2(uint8(idv)))
		}
		id := PropID(idv)
		repeatable := id == PropUserProperty || (id == PropSubscriptionID && ctx == ctxPublish)
		if p.Present.Has(id) && !repeatable {
			return protocol(where + " carries " + id.String() + " more than once (MQTT 5 2.2.2.2)")
		}
		p.Present.Set(id)
		if err := p.decodeOne(&pr, id); err != nil {
			return prefixRule(where, err)
		}
	}
	r.off = end
	return nil
}

func (p *Properties) decodeOne(r *reader, id PropID) error {
	field := id.String()
	var err error
	switch id {
	case PropPayloadFormat:
		p.PayloadFormat, err = r.byte1(field)
		if err == nil && p.PayloadFormat > 1 {
			return protocol(field + " must be 0 or 1 (MQTT 5 3.3.2.3.2)")
		}
	case PropMessageExpiry:
		p.MessageExpiry, err = r.uint32(field)
	case PropContentType:
		p.ContentType, err = r.utf8(field)
	case PropResponseTopic:
		p.ResponseTopic, err = r.utf8(field)
		if err == nil && hasWildcard(p.ResponseTopic) {
			return protocol(field + " is a topic name and may not hold a wildcard (MQTT-3.3.2-14)")
		}
	case PropCorrelationData:
		p.CorrelationData, err = r.binary(field)
	case PropSubscriptionID:
		var v uint32
		v, err = r.varint(field)
		if err == nil && v == 0 {
			return protocol(field + " of 0 is forbidden (MQTT 5 3.3.2.3.8)")
		}
		p.SubscriptionIDs = append(p.SubscriptionIDs, v)
	case PropSessionExpiry:
		p.SessionExpiry, err = r.uint32(field)
	case PropAssignedClientID:
		p.AssignedClientID, err = r.utf8(field)
	case PropServerKeepAlive:
		p.ServerKeepAlive, err = r.uint16(field)
	case PropAuthMethod:
		p.AuthMethod, err = r.utf8(field)
	case PropAuthData:
		p.AuthData, err = r.binary(field)
	case PropRequestProblemInfo:
		p.RequestProblemInfo, err = r.byte1(field)
		if err == nil && p.RequestProblemInfo > 1 {
			return protocol(field + " must be 0 or 1 (MQTT 5 3.1.2.11.7)")
		}
	case PropWillDelay:
		p.WillDelay, err = r.uint32(field)
	case PropRequestResponseInfo:
		p.RequestResponseInfo, err = r.byte1(field)
		if err == nil && p.RequestResponseInfo > 1 {
			return protocol(field + " must be 0 or 1 (MQTT 5 3.1.2.11.6)")
		}
	case PropResponseInfo:
		p.ResponseInfo, err = r.utf8(field)
	case PropServerReference:
		p.ServerReference, err = r.utf8(field)
	case PropReasonString:
		p.ReasonString, err = r.utf8(field)
	case PropReceiveMaximum:
		p.ReceiveMaximum, err = r.uint16(field)
		if err == nil && p.ReceiveMaximum == 0 {
			return protocol(field + " of 0 is forbidden (MQTT 5 3.1.2.11.3)")
		}
	case PropTopicAliasMaximum:
		p.TopicAliasMaximum, err = r.uint16(field)
	case PropTopicAlias:
		p.TopicAlias, err = r.uint16(field)
		if err == nil && p.TopicAlias == 0 {
			// MQTT 5 3.3.4 names the code: an alias of 0, like one above
			// the maximum, is answered 0x94 Topic Alias invalid.
			return &Error{Code: TopicAliasInvalid, Rule: field + " of 0 is forbidden (MQTT-3.3.2-8)"}
		}
	case PropMaximumQoS:
		p.MaximumQoS, err = r.byte1(field)
		if err == nil && p.MaximumQoS > 1 {
			return protocol(field + " must be 0 or 1 (MQTT 5 3.2.2.3.4)")
		}
	case PropRetainAvailable:
		p.RetainAvailable, err = r.byte1(field)
		if err == nil && p.RetainAvailable > 1 {
			return protocol(field + " must be 0 or 1 (MQTT 5 3.2.2.3.5)")
		}
	case PropUserProperty:
		var k, v []byte
		if k, err = r.utf8("User Property name"); err != nil {
			return err
		}
		if v, err = r.utf8("User Property value"); err != nil {
			return err
		}
		p.User = append(p.User, UserProperty{Key: k, Value: v})
	case PropMaximumPacketSize:
		p.MaximumPacketSize, err = r.uint32(field)
		if err == nil && p.MaximumPacketSize == 0 {
			return protocol(field + " of 0 is forbidden (MQTT 5 3.1.2.11.4)")
		}
	case PropWildcardSubAvailable:
		p.WildcardSubAvailable, err = r.byte1(field)
		if err == nil && p.WildcardSubAvailable > 1 {
			return protocol(field + " must be 0 or 1 (MQTT 5 3.2.2.3.11)")
		}
	case PropSubIDAvailable:
		p.SubIDAvailable, err = r.byte1(field)
		if err == nil && p.SubIDAvailable > 1 {
			return protocol(field + " must be 0 or 1 (MQTT 5 3.2.2.3.12)")
		}
	case PropSharedSubAvailable:
		p.SharedSubAvailable, err = r.byte1(field)
		if err == nil && p.SharedSubAvailable > 1 {
			return protocol(field + " must be 0 or 1 (MQTT 5 3.2.2.3.13)")
		}
	}
	return err
}

var allKnown = propSet(PropPayloadFormat, PropMessageExpiry, PropContentType, PropResponseTopic,
	PropCorrelationData, PropSubscriptionID, PropSessionExpiry, PropAssignedClientID, PropServerKeepAlive,
	PropAuthMethod, PropAuthData, PropRequestProblemInfo, PropWillDelay, PropRequestResponseInfo,
	PropResponseInfo, PropServerReference, PropReasonString, PropReceiveMaximum, PropTopicAliasMaximum,
	PropTopicAlias, PropMaximumQoS, PropRetainAvailable, PropUserProperty, PropMaximumPacketSize,
	PropWildcardSubAvailable, PropSubIDAvailable, PropSharedSubAvailable)

var propNames = [64]string{
	PropPayloadFormat: "Payload Format Indicator", PropMessageExpiry: "Message Expiry Interval",
	PropContentType: "Content Type", PropResponseTopic: "Response Topic", PropCorrelationData: "Correlation Data",
	PropSubscriptionID: "Subscription Identifier", PropSessionExpiry: "Session Expiry Interval",
	PropAssignedClientID: "Assigned Client Identifier", PropServerKeepAlive: "Server Keep Alive",
	PropAuthMethod: "Authentication Method", PropAuthData: "Authentication Data",
	PropRequestProblemInfo: "Request Problem Information", PropWillDelay: "Will Delay Interval",
	PropRequestResponseInfo: "Request Response Information", PropResponseInfo: "Response Information",
	PropServerReference: "Server Reference", PropReasonString: "Reason String",
	PropReceiveMaximum: "Receive Maximum", PropTopicAliasMaximum: "Topic Alias Maximum",
	PropTopicAlias: "Topic Alias", PropMaximumQoS: "Maximum QoS", PropRetainAvailable: "Retain Available",
	PropUserProperty: "User Property", PropMaximumPacketSize: "Maximum Packet Size",
	PropWildcardSubAvailable: "Wildcard Subscription Available",
	PropSubIDAvailable:       "Subscription Identifier Available",
	PropSharedSubAvailable:   "Shared Subscription Available",
}

// String returns the property's MQTT 5 name.
func (id PropID) String() string {
	if id < 64 && propNames[id] != "" {
		return propNames[id]
	}
	return "property 0x" + hex2(uint8(id))
}

// send reports whether Append writes the property: present, or non-zero.
func (p *Properties) send(id PropID, nonZero bool) bool { return nonZero || p.Present.Has(id) }

// size is the encoded length of the properties, without their length prefix.
// Only the properties ctx may carry are counted, so a struct reused across
// packet types never leaks one packet's properties into another's encoding.
func (p *Properties) size(ctx propContext) int {
	a := allowedProps[ctx]
	n := p.fixed(a, PropPayloadFormat, p.PayloadFormat != 0, 1) +
		p.fixed(a, PropMessageExpiry, p.MessageExpiry != 0, 4) +
		p.bin(a, PropContentType, p.ContentType) +
		p.bin(a, PropResponseTopic, p.ResponseTopic) +
		p.bin(a, PropCorrelationData, p.CorrelationData) +
		p.fixed(a, PropSessionExpiry, p.SessionExpiry != 0, 4) +
		p.bin(a, PropAssignedClientID, p.AssignedClientID) +
		p.fixed(a, PropServerKeepAlive, p.ServerKeepAlive != 0, 2) +
		p.bin(a, PropAuthMethod, p.AuthMethod) +
		p.bin(a, PropAuthData, p.AuthData) +
		p.fixed(a, PropRequestProblemInfo, p.RequestProblemInfo != 0, 1) +
		p.fixed(a, PropWillDelay, p.WillDelay != 0, 4) +
		p.fixed(a, PropRequestResponseInfo, p.RequestResponseInfo != 0, 1) +
		p.bin(a, PropResponseInfo, p.ResponseInfo) +
		p.bin(a, PropServerReference, p.ServerReference) +
		p.bin(a, PropReasonString, p.ReasonString) +
		p.fixed(a, PropReceiveMaximum, p.ReceiveMaximum != 0, 2) +
		p.fixed(a, PropTopicAliasMaximum, p.TopicAliasMaximum != 0, 2) +
		p.fixed(a, PropTopicAlias, p.TopicAlias != 0, 2) +
		p.fixed(a, PropMaximumQoS, p.MaximumQoS != 0, 1) +
		p.fixed(a, PropRetainAvailable, p.RetainAvailable != 0, 1) +
		p.fixed(a, PropMaximumPacketSize, p.MaximumPacketSize != 0, 4) +
		p.fixed(a, PropWildcardSubAvailable, p.WildcardSubAvailable != 0, 1) +
		p.fixed(a, PropSubIDAvailable, p.SubIDAvailable != 0, 1) +
		p.fixed(a, PropSharedSubAvailable, p.SharedSubAvailable != 0, 1)
	if a.Has(PropSubscriptionID) {
		for _, v := range p.SubscriptionIDs {
			n += 1 + varintLen(v)
		}
	}
	for _, u := range p.User {
		n += 5 + len(u.Key) + len(u.Value)
	}
	return n
}

// fixed is the encoded length of a fixed-width property if it is sent.
func (p *Properties) fixed(a PropSet, id PropID, nonZero bool, width int) int {
	if a.Has(id) && p.send(id, nonZero) {
		return 1 + width
	}
	return 0
}

// bin is the encoded length of a string or binary property if it is sent.
func (p *Properties) bin(a PropSet, id PropID, v []byte) int {
	if a.Has(id) && p.send(id, len(v) != 0) {
		return 3 + len(v)
	}
	return 0
}

// prefixed is a property block's length with its length prefix.
func prefixed(size int) int { return varintLen(uint32(size)) + size }

// appendTo writes the property length (size, as size(ctx) computed it) and
// the properties ctx may carry, in identifier order (User Properties in
// their own order).
func (p *Properties) appendTo(dst []byte, ctx propContext, size int) []byte {
	dst = appendVarint(dst, uint32(size))
	if size == 0 {
		return dst
	}
	a := allowedProps[ctx]
	if a.Has(PropPayloadFormat) && p.send(PropPayloadFormat, p.PayloadFormat != 0) {
		dst = append(dst, byte(PropPayloadFormat), p.PayloadFormat)
	}
	if a.Has(PropMessageExpiry) && p.send(PropMessageExpiry, p.MessageExpiry != 0) {
		dst = appendUint32(append(dst, byte(PropMessageExpiry)), p.MessageExpiry)
	}
	dst = p.appendBin(dst, a, PropContentType, p.ContentType)
	dst = p.appendBin(dst, a, PropResponseTopic, p.ResponseTopic)
	dst = p.appendBin(dst, a, PropCorrelationData, p.CorrelationData)
	if a.Has(PropSubscriptionID) {
		for _, v := range p.SubscriptionIDs {
			dst = appendVarint(append(dst, byte(PropSubscriptionID)), v)
		}
	}
	dst = p.appendU32(dst, a, PropSessionExpiry, p.SessionExpiry)
	dst = p.appendBin(dst, a, PropAssignedClientID, p.AssignedClientID)
	dst = p.appendU16(dst, a, PropServerKeepAlive, p.ServerKeepAlive)
	dst = p.appendBin(dst, a, PropAuthMethod, p.AuthMethod)
	dst = p.appendBin(dst, a, PropAuthData, p.AuthData)
	dst = p.appendByte(dst, a, PropRequestProblemInfo, p.RequestProblemInfo)
	dst = p.appendU32(dst, a, PropWillDelay, p.WillDelay)
	dst = p.appendByte(dst, a, PropRequestResponseInfo, p.RequestResponseInfo)
	dst = p.appendBin(dst, a, PropResponseInfo, p.ResponseInfo)
	dst = p.appendBin(dst, a, PropServerReference, p.ServerReference)
	dst = p.appendBin(dst, a, PropReasonString, p.ReasonString)
	dst = p.appendU16(dst, a, PropReceiveMaximum, p.ReceiveMaximum)
	dst = p.appendU16(dst, a, PropTopicAliasMaximum, p.TopicAliasMaximum)
	dst = p.appendU16(dst, a, PropTopicAlias, p.TopicAlias)
	dst = p.appendByte(dst, a, PropMaximumQoS, p.MaximumQoS)
	dst = p.appendByte(dst, a, PropRetainAvailable, p.RetainAvailable)
	for _, u := range p.User {
		dst = append(dst, byte(PropUserProperty))
		dst = appendBytes(dst, u.Key)
		dst = appendBytes(dst, u.Value)
	}
	dst = p.appendU32(dst, a, PropMaximumPacketSize, p.MaximumPacketSize)
	dst = p.appendByte(dst, a, PropWildcardSubAvailable, p.WildcardSubAvailable)
	dst = p.appendByte(dst, a, PropSubIDAvailable, p.SubIDAvailable)
	dst = p.appendByte(dst, a, PropSharedSubAvailable, p.SharedSubAvailable)
	return dst
}

func (p *Properties) appendByte(dst []byte, a PropSet, id PropID, v byte) []byte {
	if a.Has(id) && p.send(id, v != 0) {
		dst = append(dst, byte(id), v)
	}
	return dst
}

func (p *Properties) appendU16(dst []byte, a PropSet, id PropID, v uint16) []byte {
	if a.Has(id) && p.send(id, v != 0) {
		dst = appendUint16(append(dst, byte(id)), v)
	}
	return dst
}

func (p *Properties) appendU32(dst []byte, a PropSet, id PropID, v uint32) []byte {
	if a.Has(id) && p.send(id, v != 0) {
		dst = appendUint32(append(dst, byte(id)), v)
	}
	return dst
}

func (p *Properties) appendBin(dst []byte, a PropSet, id PropID, v []byte) []byte {
	if a.Has(id) && p.send(id, len(v) != 0) {
		dst = appendBytes(append(dst, byte(id)), v)
	}
	return dst
}

// propWidth is the fixed width of each property's value, or 0 for variable
// ones (strings, binary data, the User Property pair, the varint).
var propWidth = [64]int8{
	PropPayloadFormat: 1, PropMessageExpiry: 4, PropSessionExpiry: 4, PropServerKeepAlive: 2,
	PropRequestProblemInfo: 1, PropWillDelay: 4, PropRequestResponseInfo: 1, PropReceiveMaximum: 2,
	PropTopicAliasMaximum: 2, PropTopicAlias: 2, PropMaximumQoS: 1, PropRetainAvailable: 1,
	PropMaximumPacketSize: 4, PropWildcardSubAvailable: 1, PropSubIDAvailable: 1, PropSharedSubAvailable: 1,
}

// countRepeated counts the User Properties and Subscription Identifiers in a
// property block without validating it (decode does that), stopping at the
// first thing it cannot step over.
func countRepeated(b []byte) (users, ids int) {
	for i := 0; i < len(b); {
		id := PropID(b[i])
		i++
		switch {
		case id == PropUserProperty:
			users++
			for k := 0; k < 2; k++ {
				if i+2 > len(b) {
					return
				}
				i += 2 + (int(b[i])<<8 | int(b[i+1]))
			}
		case id == PropSubscriptionID:
			ids++
			for i < len(b) && b[i]&0x80 != 0 {
				i++
			}
			i++
		case id < 64 && propWidth[id] > 0:
			i += int(propWidth[id])
		case id < 64 && allKnown.Has(id):
			if i+2 > len(b) {
				return
			}
			i += 2 + (int(b[i])<<8 | int(b[i+1]))
		default:
			return
		}
	}
	return
}
