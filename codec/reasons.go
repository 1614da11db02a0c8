package codec

// ReasonCode is an MQTT 5 reason code (MQTT 5 section 2.4). 3.1.1 CONNACK
// return codes share the type so one field can hold either protocol's answer.
type ReasonCode uint8

// Every MQTT 5 reason code. Some values have several names in MQTT 5 (0x00 is
// Success, Normal disconnection and Granted QoS 0); each name is given.
const (
	Success                             ReasonCode = 0x00
	NormalDisconnection                 ReasonCode = 0x00
	GrantedQoS0                         ReasonCode = 0x00
	GrantedQoS1                         ReasonCode = 0x01
	GrantedQoS2                         ReasonCode = 0x02
	DisconnectWithWillMessage           ReasonCode = 0x04
	NoMatchingSubscribers               ReasonCode = 0x10
	NoSubscriptionExisted               ReasonCode = 0x11
	ContinueAuthentication              ReasonCode = 0x18
	ReAuthenticate                      ReasonCode = 0x19
	UnspecifiedError                    ReasonCode = 0x80
	MalformedPacket                     ReasonCode = 0x81
	ProtocolError                       ReasonCode = 0x82
	ImplementationSpecificError         ReasonCode = 0x83
	UnsupportedProtocolVersion          ReasonCode = 0x84
	ClientIdentifierNotValid            ReasonCode = 0x85
	BadUserNameOrPassword               ReasonCode = 0x86
	NotAuthorized                       ReasonCode = 0x87
	ServerUnavailable                   ReasonCode = 0x88
	ServerBusy                          ReasonCode = 0x89
	Banned                              ReasonCode = 0x8A
	ServerShuttingDown                  ReasonCode = 0x8B
	BadAuthenticationMethod             ReasonCode = 0x8C
	KeepAliveTimeout                    ReasonCode = 0x8D
	SessionTakenOver                    ReasonCode = 0x8E
	TopicFilterInvalid                  ReasonCode = 0x8F
	TopicNameInvalid                    ReasonCode = 0x90
	PacketIdentifierInUse               ReasonCode = 0x91
	PacketIdentifierNotFound            ReasonCode = 0x92
	ReceiveMaximumExceeded              ReasonCode = 0x93
	TopicAliasInvalid                   ReasonCode = 0x94
	PacketTooLarge                      ReasonCode = 0x95
	MessageRateTooHigh                  ReasonCode = 0x96
	QuotaExceeded                       ReasonCode = 0x97
	AdministrativeAction                ReasonCode = 0x98
	PayloadFormatInvalid                ReasonCode = 0x99
	RetainNotSupported                  ReasonCode = 0x9A
	QoSNotSupported                     ReasonCode = 0x9B
	UseAnotherServer                    ReasonCode = 0x9C
	ServerMoved                         ReasonCode = 0x9D
	SharedSubscriptionsNotSupported     ReasonCode = 0x9E
	ConnectionRateExceeded              ReasonCode = 0x9F
	MaximumConnectTime                  ReasonCode = 0xA0
	SubscriptionIdentifiersNotSupported ReasonCode = 0xA1
	WildcardSubscriptionsNotSupported   ReasonCode = 0xA2
)

// The MQTT 3.1.1 CONNACK return codes (MQTT 3.1.1 section 3.2.2.3). A 3.1.1
// SUBACK refuses with 0x80 (UnspecifiedError's value) and grants 0..2.
const (
	ConnAccepted311                ReasonCode = 0x00
	ConnRefusedProtocolVersion311  ReasonCode = 0x01
	ConnRefusedIdentifier311       ReasonCode = 0x02
	ConnRefusedServerUnavailable   ReasonCode = 0x03
	ConnRefusedBadUserNamePassword ReasonCode = 0x04
	ConnRefusedNotAuthorized311    ReasonCode = 0x05
	SubackFailure311               ReasonCode = 0x80
)

var reasonNames = map[ReasonCode]string{
	0x00: "Success", 0x01: "Granted QoS 1", 0x02: "Granted QoS 2", 0x04: "Disconnect with Will Message",
	0x10: "No matching subscribers", 0x11: "No subscription existed", 0x18: "Continue authentication",
	0x19: "Re-authenticate", 0x80: "Unspecified error", 0x81: "Malformed Packet", 0x82: "Protocol Error",
	0x83: "Implementation specific error", 0x84: "Unsupported Protocol Version",
	0x85: "Client Identifier not valid", 0x86: "Bad User Name or Password", 0x87: "Not authorized",
	0x88: "Server unavailable", 0x89: "Server busy", 0x8A: "Banned", 0x8B: "Server shutting down",
	0x8C: "Bad authentication method", 0x8D: "Keep Alive timeout", 0x8E: "Session taken over",
	0x8F: "Topic Filter invalid", 0x90: "Topic Name invalid", 0x91: "Packet Identifier in use",
	0x92: "Packet Identifier not found", 0x93: "Receive Maximum exceeded", 0x94: "Topic Alias invalid",
	0x95: "Packet too large", 0x96: "Message rate too high", 0x97: "Quota exceeded",
	0x98: "Administrative action", 0x99: "Payload format invalid", 0x9A: "Retain not supported",
	0x9B: "QoS not supported", 0x9C: "Use another server", 0x9D: "Server moved",
	0x9E: "Shared Subscriptions not supported", 0x9F: "Connection rate exceeded",
	0xA0: "Maximum connect time", 0xA1: "Subscription Identifiers not supported",
	0xA2: "Wildcard Subscriptions not supported",
}

// String returns the MQTT 5 name of the code (the first, where several share it).
func (c ReasonCode) String() string {
	if s, ok := reasonNames[c]; ok {
		return s
	}
	return "reason code 0x" + hex2(uint8(c))
}

func hex2(b uint8) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[b>>4], digits[b&0x0F]})
}

// IsError reports whether the code is a failure: MQTT 5 makes every code of
// 0x80 and above one (section 2.4).
func (c ReasonCode) IsError() bool { return c >= 0x80 }

// Which reason codes each packet may carry (MQTT 5 sections 3.2.2.2, 3.4.2.1,
// 3.5.2.1, 3.6.2.1, 3.7.2.1, 3.9.3, 3.11.3, 3.14.2.1, 3.15.2.1). A code outside
// its packet's set is a value the definition forbids.
var (
	connackCodes = codeSet(0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A,
		0x8C, 0x90, 0x95, 0x97, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F)
	pubackCodes     = codeSet(0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99)
	pubrelCodes     = codeSet(0x00, 0x92)
	subackCodes     = codeSet(0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2)
	subackCodes311  = codeSet(0x00, 0x01, 0x02, 0x80)
	unsubackCodes   = codeSet(0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91)
	disconnectCodes = codeSet(0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8D, 0x8E, 0x8F,
		0x90, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA2)
	authCodes = codeSet(0x00, 0x18, 0x19)
)

// reasonSet is a 256-bit membership set of reason codes.
type reasonSet [4]uint64

func codeSet(codes ...ReasonCode) reasonSet {
	var s reasonSet
	for _, c := range codes {
		s[c>>6] |= 1 << (c & 63)
	}
	return s
}

func (s *reasonSet) has(c ReasonCode) bool { return s[c>>6]&(1<<(c&63)) != 0 }
