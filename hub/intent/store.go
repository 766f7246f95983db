package intent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/safefile"
)

// Errors wrapped by Open and the store's methods, for errors.Is.
var (
	// ErrLocked means another driftwatch (another process, or another Open
	// in this one) holds the state file.
	ErrLocked = errors.New("locked by another driftwatch")
	// ErrCorrupt means the state file or a record in it cannot be read. The
	// file is never reset: move it away to start with an empty state.
	ErrCorrupt = errors.New("corrupt or unreadable")
	// ErrNewerSchema means the state file was written by a newer driftwatch
	// whose schema version this code does not know.
	ErrNewerSchema = errors.New("written by a newer driftwatch")
)

// Options configure Open. The zero value is ready to use.
type Options struct {
	// Timeout is how long Open waits for the file lock when another
	// driftwatch holds it. Zero or negative means 1s.
	Timeout time.Duration
	// Now returns the current time, written as the start time in the owner
	// sidecar. Default time.Now.
	Now func() time.Time
}

// Store is a hub.IntentStore backed by one bbolt file. It is safe for
// concurrent use.
type Store struct {
	db        *bolt.DB
	path      string
	ownerPath string

	// applied group-commits applied-ref writes: the workers record every
	// object they apply, and one durable transaction per record would
	// serialise them on fsync (25,000 objects: 25,000 commits). It
	// lingers (groupLinger) while the writes come concurrently.
	applied groupWriter

	closeOnce sync.Once
	closeErr  error
}

var _ hub.IntentStore = (*Store)(nil)

// Open opens the state file at path, creating it (mode 0600) and its folder
// (mode 0700) when missing, and migrates an older schema. The file and its
// folder are private (see package safefile): an existing file open to group
// or others is tightened to 0600; an existing folder is never changed, and
// refused when it belongs to another user or group or others may write to
// it; a symbolic link at the path or as the folder is refused, never
// followed. See the package documentation for the errors it returns.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("state file: empty path")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := safefile.MkdirPrivate(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("state file %s: %w", path, err)
	}
	if err := preflight(path); err != nil {
		return nil, err
	}
	db, err := openBolt(path, opts.Timeout)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path, ownerPath: path + ".owner", applied: groupWriter{linger: groupLinger}}
	if err := s.init(opts.Now()); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// openBolt opens the bbolt file and classifies its errors.
func openBolt(path string, timeout time.Duration) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(path, &err)
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, OpenFile: openPrivate})
	var oerr *openError
	switch {
	case err == nil:
		return db, nil
	case errors.As(err, &oerr):
		return nil, fmt.Errorf("state file %s: %w", path, oerr.err)
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("state file %s: %w (%s)", path, ErrLocked, readOwner(path+".owner"))
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("state file %s: %w", path, err)
	default:
		return nil, corrupt(path, err)
	}
}

// openPrivate is bbolt's OpenFile: it opens the state file with
// safefile.OpenPrivate (O_NOFOLLOW, mode 0600) instead of os.OpenFile. Its
// errors are marked as openError, so that openBolt does not mistake them
// for a corrupt file.
func openPrivate(name string, flag int, _ os.FileMode) (*os.File, error) {
	f, err := safefile.OpenPrivate(name, flag)
	if err != nil {
		return nil, &openError{err: err}
	}
	return f, nil
}

// openError is an error of opening the state file (a symbolic link at its
// path, say), not of reading it.
type openError struct{ err error }

// Error returns the open error's text.
func (e *openError) Error() string { return e.err.Error() }

// Unwrap returns the open error.
func (e *openError) Unwrap() error { return e.err }

// maxCheckErrors bounds how many page errors an error message lists.
const maxCheckErrors = 3

// init checks every page, brings the schema to the current version and
// writes the owner sidecar.
func (s *Store) init(start time.Time) error {
	err := s.view(func(tx *bolt.Tx) error {
		var msgs []string
		n := 0
		for err := range tx.Check() {
			if n++; n <= maxCheckErrors {
				msgs = append(msgs, err.Error())
			}
		}
		if n > maxCheckErrors {
			msgs = append(msgs, fmt.Sprintf("%d more", n-maxCheckErrors))
		}
		if n > 0 {
			return fmt.Errorf("consistency check: %s", strings.Join(msgs, "; "))
		}
		return nil
	})
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			err = corrupt(s.path, err)
		}
		return err
	}
	if err := s.upgrade(migrations()); err != nil {
		return err
	}
	return writeOwner(s.ownerPath, start)
}

// corrupt wraps err as a corrupt state file.
func corrupt(path string, err error) error {
	return fmt.Errorf("state file %s: %w: %w; it was not reset, move it away to start with an empty state", path, ErrCorrupt, err)
}

// recoverCorrupt turns a panic into a corrupt-file error: bbolt panics on
// some corrupt pages instead of returning an error. It must be deferred
// directly.
func recoverCorrupt(path string, err *error) {
	if r := recover(); r != nil {
		*err = corrupt(path, fmt.Errorf("bbolt: %v", r))
	}
}

// guard runs fn, which uses the database, turning a panic or a memory fault
// on the mapped file into a corrupt-file error.
func (s *Store) guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverCorrupt(s.path, &err)
	return fn()
}

// view runs fn in a read transaction.
func (s *Store) view(fn func(*bolt.Tx) error) error {
	return s.guard(func() error { return s.db.View(fn) })
}

// update runs fn in one durable write transaction; what names the operation
// in errors.
func (s *Store) update(what string, fn func(*bolt.Tx) error) error {
	err := s.guard(func() error { return s.db.Update(fn) })
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("state file %s: %s: %w", s.path, what, err)
	}
	return err
}

// Path returns the state file's path.
func (s *Store) Path() string { return s.path }

// Close removes the owner sidecar and releases the file. It is idempotent:
// later calls return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		// Remove the sidecar while still holding the lock, so that it never
		// removes the sidecar of the next owner.
		var errs []error
		if err := os.Remove(s.ownerPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("state file %s: remove owner: %w", s.path, err))
		}
		if err := s.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("state file %s: close: %w", s.path, err))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// writeOwner writes the owner sidecar atomically and privately (see
// safefile.WritePrivate: mode 0600, a symbolic link at path is refused).
func writeOwner(path string, start time.Time) error {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown host"
	}
	line := fmt.Sprintf("pid %d on %s since %s\n", os.Getpid(), host, start.UTC().Format(time.RFC3339))
	if err := safefile.WritePrivate(path, []byte(line)); err != nil {
		return fmt.Errorf("owner file %s: %w", path, err)
	}
	return nil
}

// maxOwner bounds how much of an owner sidecar goes into a message.
const maxOwner = 512

// readOwner returns the owner sidecar's content for an error message. The
// sidecar is read with safefile.ReadPrivate, so a symbolic link or a file
// others could have written is never quoted.
func readOwner(path string) string {
	b, err := safefile.ReadPrivate(path)
	line := strings.TrimSpace(string(b[:min(len(b), maxOwner)]))
	if err != nil || line == "" {
		return "owner unknown"
	}
	return line
}
