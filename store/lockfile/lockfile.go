// Package lockfile takes the lock that lets one broker at a time hold a
// storage provider (notes-0004 "One broker at a time: the lock"). The lock is
// a tiny SQLite database of its own beside what it guards - saguin.lock in a
// memory provider's snapshot_dir, <file_path>.lock beside a sqlite database -
// claimed by an unconditional write on a connection in exclusive locking
// mode, so the kernel releases it when the process ends and a killed broker
// leaves nothing to clean.
package lockfile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/saguin-edge/saguin/store"
)

// Lock is a held provider lock.
type Lock struct {
	path string
	db   *sql.DB
	conn *sql.Conn
}

// Acquire takes the lock at path for the provider named provider, waiting at
// most wait for a holder to let go (0 refuses at once). A lock held by a live
// process is refused with an error wrapping store.ErrLocked that names the
// provider and the lock file.
func Acquire(path, provider string, wait time.Duration) (*Lock, error) {
	// The file is created 0600 before SQLite opens it, like a database.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("storage %s: lock %s: %w", provider, path, err)
	}
	f.Close()
	q := url.Values{}
	q.Set("_locking_mode", "EXCLUSIVE")
	q.Set("_busy_timeout", fmt.Sprint(wait.Milliseconds()))
	db, err := sql.Open("sqlite3", "file:"+url.PathEscape(path)+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("storage %s: lock %s: %w", provider, path, err)
	}
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, refusal(provider, path, err)
	}
	// The write is unconditional on purpose: a conditional one writes nothing
	// once the table exists, and two brokers would both take shared locks.
	_, err = conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS holder (id INTEGER PRIMARY KEY, pid INTEGER, since INTEGER)`)
	if err == nil {
		_, err = conn.ExecContext(ctx, `INSERT OR REPLACE INTO holder (id, pid, since) VALUES (1, ?, ?)`, os.Getpid(), time.Now().UnixNano())
	}
	if err != nil {
		conn.Close()
		db.Close()
		return nil, refusal(provider, path, err)
	}
	return &Lock{path: path, db: db, conn: conn}, nil
}

// refusal names a held lock as such and any other failure as itself.
func refusal(provider, path string, err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
		return fmt.Errorf("storage %s: lock %s is held by another broker: %w", provider, path, store.ErrLocked)
	}
	return fmt.Errorf("storage %s: lock %s: %w", provider, path, err)
}

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }

// Release lets the lock go. The file stays: a lock file whose holder is gone
// is just a file.
func (l *Lock) Release() error {
	err := errors.Join(l.conn.Close(), l.db.Close())
	if err != nil {
		return fmt.Errorf("releasing lock %s: %w", l.path, err)
	}
	return nil
}
