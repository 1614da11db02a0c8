package queue

import (
	"encoding/base64"
	"encoding/binary"
)

// idRaw is what a Delivery ID names: the engine's nonce, the job's offset
// and the store's epoch, 8 bytes each.
const idRaw = 24

// idLen is a Delivery ID's length: idRaw in unpadded base64url, 32 bytes -
// what notes-0003 "Delivery" allows at most. Printable, so a worker written
// as a shell script (mosquitto_pub -D publish correlation-data) can echo it.
const idLen = 32

var idEnc = base64.RawURLEncoding.Strict()

// deliveryID is the Correlation Data of one offer (notes-0003 "Delivery"):
// unique per attempt because the store mints a new epoch for every offer,
// and unique across restarts because the nonce is drawn at every start, so
// an answer to a delivery made before a restart names nothing now
// (invariant 15). Workers echo it and never parse it.
type deliveryID [idLen]byte

func makeID(nonce, offset, epoch uint64) deliveryID {
	var raw [idRaw]byte
	binary.BigEndian.PutUint64(raw[0:], nonce)
	binary.BigEndian.PutUint64(raw[8:], offset)
	binary.BigEndian.PutUint64(raw[16:], epoch)
	var id deliveryID
	idEnc.Encode(id[:], raw[:])
	return id
}

// parseID reads what makeID wrote; ok is false for anything else.
func parseID(b []byte) (nonce, offset, epoch uint64, ok bool) {
	var raw [idRaw]byte
	if len(b) != idLen {
		return 0, 0, 0, false
	}
	if n, err := idEnc.Decode(raw[:], b); err != nil || n != idRaw {
		return 0, 0, 0, false
	}
	return binary.BigEndian.Uint64(raw[0:]), binary.BigEndian.Uint64(raw[8:]), binary.BigEndian.Uint64(raw[16:]), true
}
