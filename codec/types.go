package codec

// Type is an MQTT control packet type, the high nibble of the first byte.
type Type uint8

// The control packet types of MQTT 3.1.1 and 5. Type 0 is reserved in both;
// AUTH exists only in MQTT 5 (in 3.1.1 the value 15 is reserved).
const (
	TypeConnect     Type = 1
	TypeConnack     Type = 2
	TypePublish     Type = 3
	TypePuback      Type = 4
	TypePubrec      Type = 5
	TypePubrel      Type = 6
	TypePubcomp     Type = 7
	TypeSubscribe   Type = 8
	TypeSuback      Type = 9
	TypeUnsubscribe Type = 10
	TypeUnsuback    Type = 11
	TypePingreq     Type = 12
	TypePingresp    Type = 13
	TypeDisconnect  Type = 14
	TypeAuth        Type = 15
)

var typeNames = [16]string{
	"RESERVED", "CONNECT", "CONNACK", "PUBLISH", "PUBACK", "PUBREC", "PUBREL", "PUBCOMP",
	"SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK", "PINGREQ", "PINGRESP", "DISCONNECT", "AUTH",
}

// String returns the packet name MQTT uses ("PUBLISH").
func (t Type) String() string {
	if t < 16 {
		return typeNames[t]
	}
	return "INVALID"
}

// Protocol levels as carried in CONNECT. MQTT 3.1 (level 3, protocol name
// "MQIsdp") is recognised only so that it can be refused in its own words.
const (
	Version31  = 3
	Version311 = 4
	Version5   = 5
)

// fixedFlags is the flag nibble MQTT requires for every type but PUBLISH,
// whose flags carry DUP, QoS and RETAIN (MQTT-2.1.3-1 / MQTT 5 2.1.3).
var fixedFlags = [16]uint8{
	TypePubrel: 0x02, TypeSubscribe: 0x02, TypeUnsubscribe: 0x02,
}
