package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/saguin-edge/saguin/store"
)

// emptyBlob is bound for an empty payload: the driver binds a nil slice as
// NULL, and payload is NOT NULL.
var emptyBlob = []byte{}

// recordArgs are r's values for recordCols. headers is the record's headers
// already encoded (nil for none).
func recordArgs(r *store.Record, headers any, size int64) [11]any {
	payload := r.Payload
	if payload == nil {
		payload = emptyBlob
	}
	var props any
	if len(r.Props) > 0 {
		props = r.Props
	}
	return [11]any{r.MessageID, store.UnixNanos(r.Time), r.Topic, headers, props, payload, r.ClientID, r.Bridge, int64(r.QoS), boolInt(r.Retain), size}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// encodeHeaders writes the headers as an ordered JSON array of [name, value]
// pairs - repeats and order kept, readable from the sqlite3 shell - into buf.
// A record with no headers stores NULL.
func encodeHeaders(buf []byte, hs []store.Header) ([]byte, any) {
	if len(hs) == 0 {
		return buf, nil
	}
	buf = append(buf[:0], '[')
	for i := range hs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		buf = appendJSONString(buf, hs[i].Key)
		buf = append(buf, ',')
		buf = appendJSONString(buf, hs[i].Value)
		buf = append(buf, ']')
	}
	buf = append(buf, ']')
	return buf, string(buf)
}

// appendJSONString quotes s as a JSON string. MQTT strings are well-formed
// UTF-8 (the codec refuses others); a malformed byte is written as U+FFFD, as
// encoding/json does.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c == '\n':
				buf = append(buf, '\\', 'n')
			case c == '\r':
				buf = append(buf, '\\', 'r')
			case c == '\t':
				buf = append(buf, '\\', 't')
			case c < 0x20:
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			buf = append(buf, `\ufffd`...)
		} else {
			buf = append(buf, s[i:i+n]...)
		}
		i += n
	}
	return append(buf, '"')
}

func decodeHeaders(s sql.NullString) ([]store.Header, error) {
	if !s.Valid {
		return nil, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal([]byte(s.String), &pairs); err != nil {
		return nil, fmt.Errorf("headers %q: %w", s.String, err)
	}
	hs := make([]store.Header, len(pairs))
	for i, p := range pairs {
		hs[i] = store.Header{Key: p[0], Value: p[1]}
	}
	return hs, nil
}

// recordScan holds the scan targets for recordCols.
type recordScan struct {
	messageID, topic, clientID, bridge string
	ts, qos, retain, size              int64
	headers                            sql.NullString
	props, payload                     []byte
}

func (s *recordScan) dest() []any {
	return []any{&s.messageID, &s.ts, &s.topic, &s.headers, &s.props, &s.payload, &s.clientID, &s.bridge, &s.qos, &s.retain, &s.size}
}

func (s *recordScan) record(offset uint64) (store.Record, error) {
	hs, err := decodeHeaders(s.headers)
	if err != nil {
		return store.Record{}, err
	}
	r := store.Record{
		Offset:    offset,
		MessageID: s.messageID,
		Time:      store.FromUnixNanos(s.ts),
		Topic:     s.topic,
		Headers:   hs,
		Props:     s.props,
		Payload:   s.payload,
		ClientID:  s.clientID,
		Bridge:    s.bridge,
		QoS:       uint8(s.qos),
		Retain:    s.retain != 0,
	}
	if len(r.Props) == 0 {
		r.Props = nil
	}
	if len(r.Payload) == 0 {
		r.Payload = nil
	}
	// The scanned slices are the driver's copies and owned by r.
	s.props, s.payload = nil, nil
	return r, nil
}
