package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/saguin-edge/saguin/store"
)

// Channel is one channel's whole stored state as a snapshot file holds it:
// the form the offline migration commands carry between providers
// (notes-0004 "Moving the records with the channel"), offsets, counters,
// attempts and positions included.
type Channel struct {
	Name string
	// Kind is "append", "latest" or "queue".
	Kind        string
	Next, Floor uint64
	// Records are an append channel's records, or a latest channel's values
	// and tombstones (Deleted parallel to them).
	Records []store.Record
	Deleted []bool
	// Jobs are a queue's unresolved records with their attempts.
	Jobs      []store.Job
	Positions []store.Position
	Held      []store.Held
	// DeadLetters is a queue's dead-letter channel, in the same file.
	DeadLetters *Channel
}

// HasSnapshots reports whether dir holds any channel snapshot or a
// manifest: a migration destination must hold neither.
func HasSnapshots(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("snapshot directory %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() == manifestName || strings.HasSuffix(e.Name(), snapshotExt) {
			return true, nil
		}
	}
	return false, nil
}

// ChannelFiles lists the channel snapshot files in dir, by name (the
// retained store's file is not a channel's).
func ChannelFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot directory %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, snapshotExt) && n != FileName(store.RetainedName) && !strings.HasPrefix(n, ".") {
			out = append(out, filepath.Join(dir, n))
		}
	}
	sort.Strings(out)
	return out, nil
}

// ReadChannelFile decodes one channel file with every check a starting
// broker makes; an error names the file.
func ReadChannelFile(path string) (*Channel, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	_, d, err := decodeHeader(b, fileChannel)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	name := d.str()
	if d.err != nil {
		return nil, fmt.Errorf("snapshot %s: %w: %w", path, store.ErrCorrupt, d.err)
	}
	_, f, err := decodeChannel(b, name)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return exportChannel(name, f.kind, &f.log, f.dlq), nil
}

func exportChannel(name string, kind channelKind, d *channelData, dlq *channelData) *Channel {
	c := &Channel{Name: name, Kind: kind.String(), Next: d.next, Floor: d.floor, Positions: d.positions, Held: d.holds}
	switch kind {
	case kindQueue:
		for i, r := range d.records {
			c.Jobs = append(c.Jobs, store.Job{Record: r, Attempts: d.jobs[i].attempts, FirstDelivery: d.jobs[i].first, LastDelivery: d.jobs[i].last})
		}
		if dlq != nil {
			c.DeadLetters = exportChannel(name+store.DLQSuffix, kindAppend, dlq, nil)
		}
	case kindLatest:
		c.Records, c.Deleted = d.records, d.deleted
	default:
		c.Records = d.records
	}
	return c
}

// WriteChannelFile writes c as dir/<encoded name>.snapshot the way a stop
// does (temporary file, fsync, rename, directory fsync), after the checks a
// load would make, so a migration never writes a file a broker would refuse.
func WriteChannelFile(dir string, c *Channel, writer string) error {
	kind, log, err := importChannel(c)
	if err != nil {
		return fmt.Errorf("channel %s: %w", c.Name, err)
	}
	var dlq *channelData
	if kind == kindQueue {
		if c.DeadLetters == nil {
			dlq = &channelData{next: 1, floor: 1}
		} else {
			_, d, err := importChannel(c.DeadLetters)
			if err != nil {
				return fmt.Errorf("channel %s: %w", c.DeadLetters.Name, err)
			}
			dlq = d
		}
		if err := validateSection(kindAppend, dlq); err != nil {
			return fmt.Errorf("channel %s: %w", c.Name+store.DLQSuffix, err)
		}
	}
	if err := validateSection(kind, log); err != nil {
		return fmt.Errorf("channel %s: %w", c.Name, err)
	}
	sd := &snapshotDir{dir: dir, writer: writerName(writer)}
	if err := sd.writeFile(FileName(c.Name), encodeChannel(c.Name, kind, log, dlq, sd.writer, time.Now())); err != nil {
		return err
	}
	return sd.syncDir()
}

func importChannel(c *Channel) (channelKind, *channelData, error) {
	d := &channelData{next: c.Next, floor: c.Floor, positions: c.Positions, holds: c.Held}
	switch c.Kind {
	case "append":
		d.records = c.Records
		return kindAppend, d, nil
	case "latest":
		if len(c.Deleted) != len(c.Records) {
			return 0, nil, fmt.Errorf("%d deletion flags for %d values", len(c.Deleted), len(c.Records))
		}
		d.records, d.deleted = c.Records, c.Deleted
		return kindLatest, d, nil
	case "queue":
		for _, j := range c.Jobs {
			d.records = append(d.records, j.Record)
			d.jobs = append(d.jobs, jobMeta{attempts: j.Attempts, first: j.FirstDelivery, last: j.LastDelivery})
		}
		return kindQueue, d, nil
	}
	return 0, nil, fmt.Errorf("unknown channel kind %q", c.Kind)
}
