package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// File names in a snapshot directory (docs/storage.md).
const (
	manifestName     = "saguin.manifest"
	sessionsName     = "saguin.sessions"
	broadcastName    = "saguin.broadcast"
	snapshotExt      = ".snapshot"
	writeConcurrency = 4 // files written at a time: 15 channels must not be 15 simultaneous fsyncs
)

// FileName is the snapshot file of a channel (or of the reserved retained
// store): its name percent-encoded, then ".snapshot". Only ASCII letters,
// digits, '-' and '_' pass through; every other byte - '.', '%' and '/'
// included - becomes %XX, so the encoding is injective and can never produce
// "." or "..".
func FileName(channel string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(channel); i++ {
		c := channel[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String() + snapshotExt
}

// writerName is the build's revision for the header's writer field, read
// from the binary itself, never a hand-kept constant.
func writerName(given string) string {
	if given != "" {
		return given
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "saguin " + info.Main.Version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return "saguin " + rev
}

// snapshotDir is a memory provider's snapshot directory.
type snapshotDir struct {
	dir      string
	writer   string
	log      *slog.Logger
	manifest *manifest // nil when there is none (first start) or it was unreadable
}

// openSnapshotDir reads the manifest. Manifest problems are warnings: it holds
// no records, only what lets a damaged shutdown be described.
func openSnapshotDir(dir, writer string, log *slog.Logger) (*snapshotDir, error) {
	sd := &snapshotDir{dir: dir, writer: writer, log: log}
	path := filepath.Join(dir, manifestName)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sd, nil
	case err != nil:
		log.Warn("snapshot manifest unreadable", "file", path, "error", err)
		return sd, nil
	}
	m, err := decodeManifest(b)
	if err != nil {
		log.Warn("snapshot manifest damaged; channel files load without it", "file", path, "error", err)
		return sd, nil
	}
	sd.manifest = m
	for _, f := range m.files {
		if _, err := os.Stat(filepath.Join(dir, f)); errors.Is(err, fs.ErrNotExist) {
			log.Warn("snapshot missing: the manifest lists it, its records are gone", "file", filepath.Join(dir, f))
		}
	}
	return sd, nil
}

// read returns a file's bytes, nil when it does not exist.
func (sd *snapshotDir) read(name string) ([]byte, string, error) {
	path := filepath.Join(sd.dir, name)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, path, nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return b, path, nil
}

// loadChannel decodes a channel's file; nil when it has none.
func (sd *snapshotDir) loadChannel(name string) (*channelFile, error) {
	b, path, err := sd.read(FileName(name))
	if err != nil || b == nil {
		return nil, err
	}
	h, f, err := decodeChannel(b, name)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	f.path = path
	if sd.manifest != nil && h.writtenAt.Before(sd.manifest.began) {
		f.stale = true
		sd.log.Warn("snapshot predates the last shutdown: everything published after it was written is lost for this channel",
			"file", path, "written", h.writtenAt, "shutdown", sd.manifest.began)
	}
	return f, nil
}

func (sd *snapshotDir) loadRetained() ([]store.Record, error) {
	b, path, err := sd.read(FileName(store.RetainedName))
	if err != nil || b == nil {
		return nil, err
	}
	recs, err := decodeRetained(b)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return recs, nil
}

// loadSessions reads saguin.broadcast and saguin.sessions together: a
// cursor is worthless without its log, so sessions without a log refuse.
func (sd *snapshotDir) loadSessions() (*sessionsState, error) {
	sb, spath, err := sd.read(sessionsName)
	if err != nil {
		return nil, err
	}
	bb, bpath, err := sd.read(broadcastName)
	if err != nil {
		return nil, err
	}
	if sb == nil && bb == nil {
		return nil, nil
	}
	if bb == nil {
		return nil, fmt.Errorf("snapshot %s: the broadcast log %s beside it is missing: %w", spath, bpath, store.ErrCorrupt)
	}
	st := &sessionsState{}
	if err := decodeBroadcast(bb, st); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", bpath, err)
	}
	if sd.manifest != nil && st.writtenAt.Before(sd.manifest.began) {
		// The last shutdown did not rewrite the log: it answered these
		// holds' releases without them (as for a stale channel file).
		st.staleHolds = len(st.log.holds)
		st.log.holds = nil
		sd.log.Warn("broadcast log predates the last shutdown: sessions load as that file left them", "file", bpath, "written", st.writtenAt, "shutdown", sd.manifest.began)
	}
	if sb != nil {
		if err := decodeSessions(sb, st); err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", spath, err)
		}
	}
	return st, nil
}

// writeFile writes one file the only way that survives a power cut: a
// temporary name in the same directory, fsync, rename over the predecessor.
// The caller syncs the directory. On failure the predecessor is untouched.
func (sd *snapshotDir) writeFile(name string, data []byte) error {
	f, err := os.CreateTemp(sd.dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", filepath.Join(sd.dir, name), err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("snapshot %s: %w", filepath.Join(sd.dir, name), err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("snapshot %s: %w", filepath.Join(sd.dir, name), err)
	}
	if err := os.Rename(tmp, filepath.Join(sd.dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("snapshot %s: %w", filepath.Join(sd.dir, name), err)
	}
	return nil
}

// syncDir makes renames in the directory durable: without it the contents
// survive a power cut but the entry naming them may not.
func (sd *snapshotDir) syncDir() error {
	d, err := os.Open(sd.dir)
	if err != nil {
		return fmt.Errorf("snapshot directory %s: %w", sd.dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("snapshot directory %s: sync: %w", sd.dir, err)
	}
	return nil
}

// pendingFile is one file of a snapshot, encoded after the copy under lock.
type pendingFile struct {
	name   string
	encode func(at time.Time) []byte
}

// snapshotState is everything a graceful stop writes, copied out of the
// stores (phase 1: each store's lock held only for its own copy).
type snapshotState struct {
	files    []pendingFile
	sessions *sessionsState
}

// copyOut is phase 1 of a shutdown: copy the state out of every store.
func (p *Provider) copyOut() *snapshotState {
	logs, latests, queues := p.stores()
	st := &snapshotState{}
	writer := p.snap.writer
	dlqs := map[string]bool{}
	for _, q := range queues {
		dlqs[q.dlq.name] = true
		name, log, dlq := q.name, q.copyOut(), q.dlq.copyOut()
		st.files = append(st.files, pendingFile{FileName(name), func(at time.Time) []byte {
			return encodeChannel(name, kindQueue, &log, &dlq, writer, at)
		}})
	}
	for _, l := range logs {
		if dlqs[l.name] {
			continue // written with its queue, in one file
		}
		name, d := l.name, l.copyOut()
		st.files = append(st.files, pendingFile{FileName(name), func(at time.Time) []byte {
			return encodeChannel(name, kindAppend, &d, nil, writer, at)
		}})
	}
	for _, l := range latests {
		name, d := l.name, l.copyOut()
		st.files = append(st.files, pendingFile{FileName(name), func(at time.Time) []byte {
			return encodeChannel(name, kindLatest, &d, nil, writer, at)
		}})
	}
	p.mu.Lock()
	r, s := p.retained, p.sessions
	p.mu.Unlock()
	if r != nil {
		recs := r.list(nil)
		st.files = append(st.files, pendingFile{FileName(store.RetainedName), func(at time.Time) []byte {
			return encodeRetained(recs, writer, at)
		}})
	}
	if s != nil {
		st.sessions = s.copyOut()
	}
	sort.Slice(st.files, func(i, j int) bool { return st.files[i].name < st.files[j].name })
	return st
}

// writeSnapshot is the graceful stop's write, in notes-0004's order: the
// manifest first and durable; the broadcast log durable before the sessions
// file; channel files four at a time, each temp -> fsync -> rename; the
// directory synced after. Every failure is reported, not only the first; a
// file that fails leaves its last good snapshot untouched.
func (p *Provider) writeSnapshot() error {
	st := p.copyOut()
	sd := p.snap
	began := p.now()
	names := make([]string, 0, len(st.files)+2)
	for _, f := range st.files {
		names = append(names, f.name)
	}
	if st.sessions != nil {
		names = append(names, broadcastName, sessionsName)
	}
	var errs []error
	if err := sd.writeFile(manifestName, encodeManifest(&manifest{began: began, files: names}, sd.writer)); err != nil {
		errs = append(errs, err)
	} else if err := sd.syncDir(); err != nil {
		errs = append(errs, err)
	}
	files := st.files
	if ss := st.sessions; ss != nil {
		// The log first, made durable before the sessions that point into it.
		err := sd.writeFile(broadcastName, encodeBroadcast(ss, sd.writer, p.now()))
		if err == nil {
			err = sd.syncDir()
		}
		if err != nil {
			errs = append(errs, err, fmt.Errorf("snapshot %s: not written, its broadcast log failed", filepath.Join(sd.dir, sessionsName)))
		} else {
			files = append(files, pendingFile{sessionsName, func(at time.Time) []byte { return encodeSessions(ss, sd.writer, at) }})
		}
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		sema = make(chan struct{}, writeConcurrency)
	)
	for _, f := range files {
		wg.Add(1)
		sema <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sema }()
			if err := sd.writeFile(f.name, f.encode(p.now())); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := sd.syncDir(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
