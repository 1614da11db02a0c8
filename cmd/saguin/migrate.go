package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/saguin-edge/saguin/store/lockfile"
	"github.com/saguin-edge/saguin/store/memory"
	"github.com/saguin-edge/saguin/store/sqlite"
)

// The offline migration commands (notes-0004 "Moving the records with the
// channel"): with the broker stopped, carry every channel of a memory
// provider's snapshot directory into a new sqlite database, or back, with
// next and floor as they are, every record at its offset, queue jobs with
// their attempts and delivery times, every consumer position and the
// exactly-once publishes held. Sessions, and with them the broadcast log and
// the shared groups, stay behind; so does the retained store.
//
// Neither command reads a configuration, so both work on a copy, on another
// machine, on a directory restored from backup; --config with them is
// refused rather than ignored.
func init() {
	registerMode("--snapshots-to-sqlite", modeDoc{
		usage:   "--snapshots-to-sqlite SNAPSHOT_DIR DB_FILE",
		summary: "with the broker stopped, carry a memory provider's channels into a new sqlite database",
	}, func(args []string, stdout, stderr io.Writer) int {
		return runMigration("--snapshots-to-sqlite", args, stdout, stderr, snapshotsToSQLite)
	})
	registerMode("--sqlite-to-snapshots", modeDoc{
		usage:   "--sqlite-to-snapshots DB_FILE SNAPSHOT_DIR",
		summary: "with the broker stopped, carry a sqlite database's channels into a new snapshot directory",
	}, func(args []string, stdout, stderr io.Writer) int {
		return runMigration("--sqlite-to-snapshots", args, stdout, stderr, sqliteToSnapshots)
	})
}

type migration func(src, dst string, stdout, stderr io.Writer) int

// runMigration parses "<flag> <source> <destination>" (or "<flag>=<source>
// <destination>"); anything else on the line is refused, --config first.
func runMigration(flag string, args []string, stdout, stderr io.Writer, run migration) int {
	var paths []string
	for _, a := range args {
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case name == flag:
			if hasValue {
				paths = append(paths, value)
			}
		case name == "--config":
			fmt.Fprintf(stderr, "saguin: %s takes no --config: a migration works only on the paths it is given\n", flag)
			return 2
		case strings.HasPrefix(a, "-"):
			fmt.Fprintf(stderr, "saguin: %s: unknown argument %s%s\n", flag, a, didYouMean(name, []string{flag, "--config"}))
			return 2
		default:
			paths = append(paths, a)
		}
	}
	if len(paths) != 2 || paths[0] == "" || paths[1] == "" {
		if flag == "--snapshots-to-sqlite" {
			fmt.Fprintf(stderr, "usage: saguin --snapshots-to-sqlite <snapshot_dir> <db file>\n")
		} else {
			fmt.Fprintf(stderr, "usage: saguin --sqlite-to-snapshots <db file> <snapshot_dir>\n")
		}
		return 2
	}
	return run(paths[0], paths[1], stdout, stderr)
}

// snapshotsToSQLite converts one snapshot file at a time into its own
// transaction, reporting every failure and going on, so a disk-full operator
// learns every channel that failed, not just the first.
func snapshotsToSQLite(dir, db string, stdout, stderr io.Writer) int {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		fmt.Fprintf(stderr, "saguin: snapshot directory %s: not a directory (%v)\n", dir, err)
		return 1
	}
	if _, err := os.Lstat(db); err == nil {
		fmt.Fprintf(stderr, "saguin: %s exists; the destination must not exist (writing beside existing channels is how two histories end up under one name)\n", db)
		return 1
	}
	lock, err := lockfile.Acquire(filepath.Join(dir, memory.LockName), dir, 0)
	if err != nil {
		fmt.Fprintf(stderr, "saguin: %v (stop the broker first)\n", err)
		return 1
	}
	defer lock.Release()
	files, err := memory.ChannelFiles(dir)
	if err != nil {
		fmt.Fprintf(stderr, "saguin: %v\n", err)
		return 1
	}
	var im *sqlite.Importer
	failed, carried := 0, 0
	for _, f := range files {
		c, err := memory.ReadChannelFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "saguin: %v\n", err)
			failed++
			continue
		}
		// The database is created only once there is something to put in
		// it: an empty one would satisfy "must not exist" on the next try.
		if im == nil {
			if im, err = sqlite.CreateImport(db, ""); err != nil {
				fmt.Fprintf(stderr, "saguin: %v\n", err)
				return 1
			}
		}
		if err := im.Write(toSQLite(c)); err != nil {
			fmt.Fprintf(stderr, "saguin: %s: %v\n", f, err)
			failed++
			continue
		}
		carried++
		describe(stdout, c.Name, c.Kind, c.Next, c.Floor, len(c.Records)+len(c.Jobs), len(c.Positions))
	}
	if im != nil {
		if err := im.Close(); err != nil {
			fmt.Fprintf(stderr, "saguin: %v\n", err)
			failed++
		}
	}
	return finish(stdout, stderr, dir, db, carried, failed)
}

// sqliteToSnapshots writes one snapshot file per channel, a queue and its
// dead-letter channel in one file, the way a stop writes them.
func sqliteToSnapshots(db, dir string, stdout, stderr io.Writer) int {
	has, err := memory.HasSnapshots(dir)
	if err != nil {
		fmt.Fprintf(stderr, "saguin: %v\n", err)
		return 1
	}
	if has {
		fmt.Fprintf(stderr, "saguin: %s holds snapshots or a manifest; the destination must not exist or hold neither\n", dir)
		return 1
	}
	if info, err := os.Stat(dir); err == nil && !info.IsDir() {
		fmt.Fprintf(stderr, "saguin: %s exists and is not a directory\n", dir)
		return 1
	}
	ex, err := sqlite.OpenExport(db)
	if err != nil {
		fmt.Fprintf(stderr, "saguin: %v\n", err)
		return 1
	}
	defer ex.Close()
	names, err := ex.Names()
	if err != nil {
		fmt.Fprintf(stderr, "saguin: %v\n", err)
		return 1
	}
	var lock *lockfile.Lock
	defer func() {
		if lock != nil {
			lock.Release()
		}
	}()
	failed, carried := 0, 0
	for _, name := range names {
		c, err := ex.Read(name)
		if err != nil {
			fmt.Fprintf(stderr, "saguin: %s: %v\n", db, err)
			failed++
			continue
		}
		// Nothing is created until there is a channel to write.
		if lock == nil {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				fmt.Fprintf(stderr, "saguin: %v\n", err)
				return 1
			}
			if lock, err = lockfile.Acquire(filepath.Join(dir, memory.LockName), dir, 0); err != nil {
				fmt.Fprintf(stderr, "saguin: %v\n", err)
				return 1
			}
		}
		if err := memory.WriteChannelFile(dir, toMemory(c), ""); err != nil {
			fmt.Fprintf(stderr, "saguin: %v\n", err)
			failed++
			continue
		}
		carried++
		describe(stdout, c.Name, c.Kind, c.Next, c.Floor, len(c.Records)+len(c.Jobs), len(c.Positions))
	}
	return finish(stdout, stderr, db, dir, carried, failed)
}

func describe(w io.Writer, name, kind string, next, floor uint64, records, positions int) {
	fmt.Fprintf(w, "%s (%s): %d records, floor %d, next %d, %d positions\n", name, kind, records, floor, next, positions)
}

func finish(stdout, stderr io.Writer, src, dst string, carried, failed int) int {
	switch {
	case carried == 0 && failed == 0:
		fmt.Fprintf(stderr, "saguin: %s holds no channel: nothing to migrate, nothing created\n", src)
		return 1
	case failed > 0:
		fmt.Fprintf(stderr, "saguin: %d channels carried to %s, %d failed (above); the source is unchanged\n", carried, dst, failed)
		return 1
	}
	fmt.Fprintf(stdout, "%d channels carried to %s; the source is unchanged - verify the channels before deleting it\n", carried, dst)
	return 0
}

// toSQLite and toMemory move one channel between the two providers' export
// forms, which hold the same fields.
func toSQLite(c *memory.Channel) *sqlite.Channel {
	if c == nil {
		return nil
	}
	return &sqlite.Channel{Name: c.Name, Kind: c.Kind, Next: c.Next, Floor: c.Floor, Records: c.Records, Deleted: c.Deleted,
		Jobs: c.Jobs, Positions: c.Positions, Held: c.Held, DeadLetters: toSQLite(c.DeadLetters)}
}

func toMemory(c *sqlite.Channel) *memory.Channel {
	if c == nil {
		return nil
	}
	return &memory.Channel{Name: c.Name, Kind: c.Kind, Next: c.Next, Floor: c.Floor, Records: c.Records, Deleted: c.Deleted,
		Jobs: c.Jobs, Positions: c.Positions, Held: c.Held, DeadLetters: toMemory(c.DeadLetters)}
}
