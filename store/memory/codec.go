package memory

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sort"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// The snapshot format (docs/storage.md has the full layout). Our own magic and
// version: byte compatibility with any other implementation is not claimed,
// so the original's format number 21 is deliberately not reused - a check
// that said "21" here would lie about what it reads.
const (
	snapshotMagic   = "SAGUIN\x00M"
	snapshotVersion = uint32(1)
	headerSize      = 45 // magic 8, version 4, kind 1, writer 24, written-at 8
	trailerSize     = 4  // CRC32C of every byte before it
	writerSize      = 24
)

// fileKind is the header's kind byte: no file can be parsed as another kind.
type fileKind uint8

const (
	fileChannel   fileKind = 1
	fileManifest  fileKind = 2
	fileSessions  fileKind = 3
	fileBroadcast fileKind = 4
	fileRetained  fileKind = 5
)

func (k fileKind) String() string {
	switch k {
	case fileChannel:
		return "channel"
	case fileManifest:
		return "manifest"
	case fileSessions:
		return "sessions"
	case fileBroadcast:
		return "broadcast log"
	case fileRetained:
		return "retained store"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is a snapshot file's fixed header.
type header struct {
	version   uint32
	kind      fileKind
	writer    string
	writtenAt time.Time
}

// enc appends little-endian fields to a buffer.
type enc struct{ b []byte }

func newEnc(kind fileKind, writer string, at time.Time) *enc {
	e := &enc{b: make([]byte, 0, 4096)}
	e.b = append(e.b, snapshotMagic...)
	e.b = binary.LittleEndian.AppendUint32(e.b, snapshotVersion)
	e.b = append(e.b, byte(kind))
	var w [writerSize]byte
	copy(w[:], writer)
	e.b = append(e.b, w[:]...)
	e.b = binary.LittleEndian.AppendUint64(e.b, uint64(store.UnixNanos(at)))
	return e
}

// finish appends the CRC32C trailer and returns the file's bytes.
func (e *enc) finish() []byte {
	return binary.LittleEndian.AppendUint32(e.b, crc32.Checksum(e.b, castagnoli))
}

func (e *enc) u8(v uint8)       { e.b = append(e.b, v) }
func (e *enc) u16(v uint16)     { e.b = binary.LittleEndian.AppendUint16(e.b, v) }
func (e *enc) u32(v uint32)     { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64)     { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *enc) i64(v int64)      { e.u64(uint64(v)) }
func (e *enc) n(v int)          { e.b = binary.AppendUvarint(e.b, uint64(v)) }
func (e *enc) str(s string)     { e.n(len(s)); e.b = append(e.b, s...) }
func (e *enc) bytes(p []byte)   { e.n(len(p)); e.b = append(e.b, p...) }
func (e *enc) time(t time.Time) { e.i64(store.UnixNanos(t)) }
func (e *enc) flag(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// optBytes keeps nil apart from empty (length+1, 0 for nil): a record with no
// properties is not one with empty properties.
func (e *enc) optBytes(p []byte) {
	if p == nil {
		e.n(0)
		return
	}
	e.n(len(p) + 1)
	e.b = append(e.b, p...)
}

func (e *enc) record(r *store.Record) {
	e.u64(r.Offset)
	e.str(r.MessageID)
	e.time(r.Time)
	e.str(r.Topic)
	e.headers(r.Headers)
	e.optBytes(r.Props)
	e.bytes(r.Payload)
	e.str(r.ClientID)
	e.str(r.Bridge)
	e.u8(r.QoS)
	e.flag(r.Retain)
}

func (e *enc) headers(h []store.Header) {
	e.n(len(h))
	for i := range h {
		e.str(h[i].Key)
		e.str(h[i].Value)
	}
}

// dec reads what enc wrote, checking every declared length against the bytes
// present and every count against the smallest size its elements can take
// before allocating for it: a damaged count must not summon the OOM killer.
type dec struct {
	b   []byte
	off int
	err error
}

var errShort = errors.New("truncated field")

func (d *dec) fail(err error) {
	if d.err == nil {
		d.err = fmt.Errorf("at byte %d: %w", d.off, err)
	}
}

func (d *dec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail(errShort)
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *dec) u8() uint8 {
	p := d.take(1)
	if p == nil {
		return 0
	}
	return p[0]
}

func (d *dec) u16() uint16 {
	p := d.take(2)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(p)
}

func (d *dec) u32() uint32 {
	p := d.take(4)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(p)
}

func (d *dec) u64() uint64 {
	p := d.take(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

func (d *dec) i64() int64         { return int64(d.u64()) }
func (d *dec) time() time.Time    { return store.FromUnixNanos(d.i64()) }
func (d *dec) dur() time.Duration { return time.Duration(d.i64()) }
func (d *dec) remaining() int     { return len(d.b) - d.off }
func (d *dec) flag() bool         { return d.u8() == 1 }
func (d *dec) str() string        { return string(d.take(d.count(1))) }
func (d *dec) bytesField() []byte { return clone(d.take(d.count(1))) }
func (d *dec) done() bool         { return d.err == nil && d.off == len(d.b) }
func clone(p []byte) []byte       { return append([]byte(nil), p...) }

func (d *dec) uvarintRaw() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.off += n
	return v
}

// count reads an element count and refuses one the remaining bytes cannot
// hold at minEach bytes an element.
func (d *dec) count(minEach int) int {
	v := d.uvarintRaw()
	if d.err != nil {
		return 0
	}
	if minEach < 1 {
		minEach = 1
	}
	if v > math.MaxInt32 || int(v) > d.remaining()/minEach {
		d.fail(fmt.Errorf("count %d does not fit the %d bytes left", v, d.remaining()))
		return 0
	}
	return int(v)
}

func (d *dec) optBytes() []byte {
	v := d.uvarintRaw()
	if v == 0 || d.err != nil {
		return nil
	}
	// v is length+1: 0 was nil, 1 is empty but present.
	if v-1 > uint64(d.remaining()) {
		d.fail(errShort)
		return nil
	}
	p := d.take(int(v - 1))
	if p == nil {
		return nil
	}
	return append(make([]byte, 0, len(p)), p...)
}

// minRecord is the fewest bytes an encoded record takes.
const minRecord = 8 + 1 + 8 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1

func (d *dec) record() store.Record {
	var r store.Record
	r.Offset = d.u64()
	r.MessageID = d.str()
	r.Time = d.time()
	r.Topic = d.str()
	r.Headers = d.headers()
	r.Props = d.optBytes()
	r.Payload = d.bytesField()
	r.ClientID = d.str()
	r.Bridge = d.str()
	r.QoS = d.u8()
	r.Retain = d.flag()
	return r
}

func (d *dec) headers() []store.Header {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	h := make([]store.Header, n)
	for i := range h {
		h[i].Key = d.str()
		h[i].Value = d.str()
	}
	return h
}

// decodeHeader checks the fixed header and the trailer, returning the header
// and a decoder over the body. The version is reported before the checksum is
// judged, so a file of another format is named as one rather than as damage.
func decodeHeader(b []byte, want fileKind) (header, *dec, error) {
	var h header
	if len(b) < headerSize+trailerSize {
		return h, nil, fmt.Errorf("%d bytes, shorter than any snapshot (truncated): %w", len(b), store.ErrCorrupt)
	}
	if string(b[:8]) != snapshotMagic {
		return h, nil, fmt.Errorf("not a Sagüin memory snapshot (magic %q): %w", b[:8], store.ErrCorrupt)
	}
	h.version = binary.LittleEndian.Uint32(b[8:12])
	h.kind = fileKind(b[12])
	w := b[13 : 13+writerSize]
	for i, c := range w {
		if c == 0 {
			w = w[:i]
			break
		}
	}
	h.writer = string(w)
	h.writtenAt = store.FromUnixNanos(int64(binary.LittleEndian.Uint64(b[37:45])))
	if h.version != snapshotVersion {
		return h, nil, fmt.Errorf("snapshot format %d (written by %s at %s); this broker reads format %d: %w",
			h.version, h.writer, h.writtenAt.UTC().Format(time.RFC3339), snapshotVersion, store.ErrCorrupt)
	}
	body := b[:len(b)-trailerSize]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(b[len(b)-trailerSize:]); got != want {
		return h, nil, fmt.Errorf("checksum mismatch (CRC32C %08x, trailer says %08x): damaged or truncated (written by %s at %s): %w",
			got, want, h.writer, h.writtenAt.UTC().Format(time.RFC3339), store.ErrCorrupt)
	}
	if h.kind != want {
		return h, nil, fmt.Errorf("holds a %s, expected a %s: %w", h.kind, want, store.ErrCorrupt)
	}
	return h, &dec{b: body, off: headerSize}, nil
}

// finishDecode turns a decoder's state into the file's verdict.
func finishDecode(d *dec) error {
	if d.err != nil {
		return fmt.Errorf("%w: %w", store.ErrCorrupt, d.err)
	}
	if !d.done() {
		return fmt.Errorf("%d bytes left over after the body: %w", d.remaining(), store.ErrCorrupt)
	}
	return nil
}

// --- channel files ---

func encodeChannel(name string, kind channelKind, log *channelData, dlq *channelData, writer string, at time.Time) []byte {
	e := newEnc(fileChannel, writer, at)
	e.str(name)
	e.u8(uint8(kind))
	e.section(kind, log)
	if kind == kindQueue {
		e.section(kindAppend, dlq)
	}
	return e.finish()
}

func (e *enc) section(kind channelKind, c *channelData) {
	e.u64(c.next)
	e.u64(c.floor)
	e.n(len(c.records))
	for i := range c.records {
		e.record(&c.records[i])
		switch kind {
		case kindLatest:
			e.flag(c.deleted[i])
		case kindQueue:
			e.u32(c.jobs[i].attempts)
			e.time(c.jobs[i].first)
			e.time(c.jobs[i].last)
		}
	}
	e.n(len(c.positions))
	for _, p := range c.positions {
		e.str(p.Reader)
		e.u64(p.Offset)
		e.i64(int64(p.SessionExpiry))
		e.time(p.SavedAt)
	}
	e.holds(c.holds)
}

func (e *enc) holds(hs []store.Held) {
	e.n(len(hs))
	for i := range hs {
		e.str(hs[i].ClientID)
		e.u16(hs[i].PacketID)
		e.time(hs[i].HeldAt)
		e.record(&hs[i].Record)
	}
}

func decodeChannel(b []byte, name string) (header, *channelFile, error) {
	h, d, err := decodeHeader(b, fileChannel)
	if err != nil {
		return h, nil, err
	}
	f := &channelFile{}
	stored := d.str()
	f.kind = channelKind(d.u8())
	if d.err == nil && stored != name {
		return h, nil, fmt.Errorf("holds channel %q, not %q: %w", stored, name, store.ErrCorrupt)
	}
	if d.err == nil && (f.kind < kindAppend || f.kind > kindQueue) {
		return h, nil, fmt.Errorf("unknown channel kind %d: %w", f.kind, store.ErrCorrupt)
	}
	f.log = d.section(f.kind)
	if f.kind == kindQueue {
		dl := d.section(kindAppend)
		f.dlq = &dl
	}
	if err := finishDecode(d); err != nil {
		return h, nil, err
	}
	if err := validateSection(f.kind, &f.log); err != nil {
		return h, nil, err
	}
	if f.dlq != nil {
		if err := validateSection(kindAppend, f.dlq); err != nil {
			return h, nil, fmt.Errorf("dead-letter channel: %w", err)
		}
	}
	return h, f, nil
}

func (d *dec) section(kind channelKind) channelData {
	var c channelData
	c.next = d.u64()
	c.floor = d.u64()
	min := minRecord
	switch kind {
	case kindLatest:
		min++
	case kindQueue:
		min += 4 + 16
	}
	n := d.count(min)
	if n > 0 {
		c.records = make([]store.Record, n)
		switch kind {
		case kindLatest:
			c.deleted = make([]bool, n)
		case kindQueue:
			c.jobs = make([]jobMeta, n)
		}
	}
	for i := 0; i < n && d.err == nil; i++ {
		c.records[i] = d.record()
		switch kind {
		case kindLatest:
			c.deleted[i] = d.flag()
		case kindQueue:
			c.jobs[i] = jobMeta{attempts: d.u32(), first: d.time(), last: d.time()}
		}
	}
	np := d.count(1 + 8 + 8 + 8)
	for i := 0; i < np && d.err == nil; i++ {
		c.positions = append(c.positions, store.Position{Reader: d.str(), Offset: d.u64(), SessionExpiry: d.dur(), SavedAt: d.time()})
	}
	c.holds = d.holdList()
	return c
}

func (d *dec) holdList() []store.Held {
	n := d.count(1 + 2 + 8 + minRecord)
	var out []store.Held
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, store.Held{ClientID: d.str(), PacketID: d.u16(), HeldAt: d.time(), Record: d.record()})
	}
	return out
}

// validateSection is the check after the checksum: a checksum proves the
// bytes, not that the writer was right. Offsets strictly ascend, lie in
// [floor, next), and an append log's are contiguous from its floor (removal
// is only ever from the front); no position is beyond next.
func validateSection(kind channelKind, c *channelData) error {
	if c.floor < 1 || c.floor > c.next {
		return fmt.Errorf("floor %d and next %d are inconsistent: %w", c.floor, c.next, store.ErrCorrupt)
	}
	for i := range c.records {
		o := c.records[i].Offset
		// A latest channel's floor is one past the highest offset retention
		// removed; a value set earlier and still current sits below it.
		if (o < c.floor && kind != kindLatest) || o < 1 || o >= c.next {
			return fmt.Errorf("record offset %d outside [floor %d, next %d): %w", o, c.floor, c.next, store.ErrCorrupt)
		}
		if i > 0 && o <= c.records[i-1].Offset {
			return fmt.Errorf("record offset %d follows %d: offsets must ascend: %w", o, c.records[i-1].Offset, store.ErrCorrupt)
		}
		if kind == kindAppend && o != c.floor+uint64(i) {
			return fmt.Errorf("append record offset %d where %d was due: %w", o, c.floor+uint64(i), store.ErrCorrupt)
		}
	}
	if kind == kindAppend && uint64(len(c.records)) != c.next-c.floor {
		return fmt.Errorf("%d records between floor %d and next %d: %w", len(c.records), c.floor, c.next, store.ErrCorrupt)
	}
	for _, p := range c.positions {
		if p.Offset > c.next {
			return fmt.Errorf("position %d of %s is beyond next %d: %w", p.Offset, p.Reader, c.next, store.ErrCorrupt)
		}
	}
	for _, h := range c.holds {
		if h.Record.Offset != 0 {
			return fmt.Errorf("held publish %s/%d carries offset %d: %w", h.ClientID, h.PacketID, h.Record.Offset, store.ErrCorrupt)
		}
	}
	return nil
}

// --- manifest ---

type manifest struct {
	began time.Time
	files []string
}

func encodeManifest(m *manifest, writer string) []byte {
	e := newEnc(fileManifest, writer, m.began)
	e.n(len(m.files))
	for _, f := range m.files {
		e.str(f)
	}
	return e.finish()
}

func decodeManifest(b []byte) (*manifest, error) {
	h, d, err := decodeHeader(b, fileManifest)
	if err != nil {
		return nil, err
	}
	m := &manifest{began: h.writtenAt}
	n := d.count(1)
	for i := 0; i < n && d.err == nil; i++ {
		m.files = append(m.files, d.str())
	}
	return m, finishDecode(d)
}

// --- retained ---

func encodeRetained(recs []store.Record, writer string, at time.Time) []byte {
	e := newEnc(fileRetained, writer, at)
	e.n(len(recs))
	for i := range recs {
		e.record(&recs[i])
	}
	return e.finish()
}

func decodeRetained(b []byte) ([]store.Record, error) {
	_, d, err := decodeHeader(b, fileRetained)
	if err != nil {
		return nil, err
	}
	n := d.count(minRecord)
	out := make([]store.Record, 0, n)
	seen := map[string]bool{}
	for i := 0; i < n && d.err == nil; i++ {
		r := d.record()
		if d.err == nil && seen[r.Topic] {
			return nil, fmt.Errorf("topic %q stored twice: %w", r.Topic, store.ErrCorrupt)
		}
		seen[r.Topic] = true
		out = append(out, r)
	}
	return out, finishDecode(d)
}

// --- broadcast log and sessions ---

func encodeBroadcast(st *sessionsState, writer string, at time.Time) []byte {
	e := newEnc(fileBroadcast, writer, at)
	e.u64(st.log.next)
	e.u64(st.log.floor)
	e.n(len(st.log.records))
	for i := range st.log.records {
		e.record(&st.log.records[i])
		e.flag(st.meta[i].forShares)
		e.str(st.meta[i].owedTo)
	}
	ids := sortedKeys(st.cursors)
	e.n(len(ids))
	for _, id := range ids {
		e.str(id)
		e.u64(st.cursors[id])
	}
	e.holds(st.log.holds)
	return e.finish()
}

func decodeBroadcast(b []byte, st *sessionsState) error {
	h, d, err := decodeHeader(b, fileBroadcast)
	if err != nil {
		return err
	}
	st.writtenAt = h.writtenAt
	st.log.next = d.u64()
	st.log.floor = d.u64()
	n := d.count(minRecord + 2)
	for i := 0; i < n && d.err == nil; i++ {
		st.log.records = append(st.log.records, d.record())
		st.meta = append(st.meta, bcastMeta{forShares: d.flag(), owedTo: d.str()})
	}
	nc := d.count(1 + 8)
	st.cursors = make(map[string]uint64, nc)
	for i := 0; i < nc && d.err == nil; i++ {
		st.cursors[d.str()] = d.u64()
	}
	st.log.holds = d.holdList()
	if err := finishDecode(d); err != nil {
		return err
	}
	// Released messages leave gaps, so only ascent and range are checked.
	if st.log.floor < 1 || st.log.floor > st.log.next {
		return fmt.Errorf("floor %d and next %d are inconsistent: %w", st.log.floor, st.log.next, store.ErrCorrupt)
	}
	for i, r := range st.log.records {
		if r.Offset < st.log.floor || r.Offset >= st.log.next || (i > 0 && r.Offset <= st.log.records[i-1].Offset) {
			return fmt.Errorf("broadcast offset %d out of order or outside [%d, %d): %w", r.Offset, st.log.floor, st.log.next, store.ErrCorrupt)
		}
	}
	for id, c := range st.cursors {
		if c > st.log.next {
			return fmt.Errorf("cursor %d of %q is beyond next %d: %w", c, id, st.log.next, store.ErrCorrupt)
		}
	}
	return nil
}

func encodeSessions(st *sessionsState, writer string, at time.Time) []byte {
	e := newEnc(fileSessions, writer, at)
	e.n(len(st.sessions))
	for i := range st.sessions {
		s := &st.sessions[i].s
		e.str(s.ClientID)
		e.i64(int64(s.Expiry))
		e.time(s.DisconnectedAt)
		e.u16(s.ReceiveMaximum)
		e.n(len(s.Subscriptions))
		for _, sub := range s.Subscriptions {
			e.str(sub.Filter)
			e.str(sub.ShareGroup)
			e.u8(sub.QoS)
			e.flag(sub.NoLocal)
			e.flag(sub.RetainAsPublished)
			e.u8(sub.RetainHandling)
			e.u32(sub.SubscriptionID)
			e.optBytes(sub.Partition)
			e.u64(sub.LogOffset)
		}
		e.flag(s.Will != nil)
		if w := s.Will; w != nil {
			e.str(w.Topic)
			e.bytes(w.Payload)
			e.optBytes(w.Props)
			e.headers(w.Headers)
			e.u8(w.QoS)
			e.flag(w.Retain)
			e.i64(int64(w.Delay))
			e.time(w.DueAt)
			e.str(w.AuthName)
		}
		e.n(len(st.sessions[i].inflight))
		for _, f := range st.sessions[i].inflight {
			e.u64(f.Offset)
			e.u16(f.PacketID)
			e.u8(f.QoS)
			e.flag(f.Released)
			e.str(f.ShareGroup)
		}
	}
	groups := sortedKeys(st.groups)
	e.n(len(groups))
	for _, g := range groups {
		gs := st.groups[g]
		e.str(g)
		e.u64(gs.cursor)
		e.n(len(gs.returned))
		for _, o := range gs.returned {
			e.u64(o)
		}
	}
	return e.finish()
}

func decodeSessions(b []byte, st *sessionsState) error {
	_, d, err := decodeHeader(b, fileSessions)
	if err != nil {
		return err
	}
	n := d.count(1 + 8 + 8 + 2 + 1 + 1 + 1)
	for i := 0; i < n && d.err == nil; i++ {
		var s store.Session
		s.ClientID = d.str()
		s.Expiry = d.dur()
		s.DisconnectedAt = d.time()
		s.ReceiveMaximum = d.u16()
		ns := d.count(1 + 1 + 1 + 1 + 1 + 1 + 4 + 1 + 8)
		for j := 0; j < ns && d.err == nil; j++ {
			s.Subscriptions = append(s.Subscriptions, store.Subscription{
				Filter: d.str(), ShareGroup: d.str(), QoS: d.u8(), NoLocal: d.flag(), RetainAsPublished: d.flag(),
				RetainHandling: d.u8(), SubscriptionID: d.u32(), Partition: d.optBytes(), LogOffset: d.u64(),
			})
		}
		if d.flag() {
			s.Will = &store.Will{Topic: d.str(), Payload: d.bytesField(), Props: d.optBytes(), Headers: d.headers(),
				QoS: d.u8(), Retain: d.flag(), Delay: d.dur(), DueAt: d.time(), AuthName: d.str()}
		}
		nf := d.count(8 + 2 + 1 + 1 + 1)
		var inflight []store.InFlight
		for j := 0; j < nf && d.err == nil; j++ {
			inflight = append(inflight, store.InFlight{Offset: d.u64(), PacketID: d.u16(), QoS: d.u8(), Released: d.flag(), ShareGroup: d.str()})
		}
		st.sessions = append(st.sessions, sessionData{s: s, inflight: inflight})
	}
	ng := d.count(1 + 8 + 1)
	st.groups = make(map[string]*groupState, ng)
	for i := 0; i < ng && d.err == nil; i++ {
		g := d.str()
		gs := &groupState{cursor: d.u64()}
		nr := d.count(8)
		for j := 0; j < nr && d.err == nil; j++ {
			gs.returned = append(gs.returned, d.u64())
		}
		st.groups[g] = gs
	}
	return finishDecode(d)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
