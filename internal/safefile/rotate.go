package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
)

// RotatingWriter is an append-only log file that is rotated by size: when a
// write would make the file larger than its limit, path is renamed to
// path.1 (path.1 to path.2, and so on, the oldest beyond keep deleted) and a
// new file is started. The file is opened with OpenPrivate, so it is 0600 in
// a private folder and a symbolic link at path is refused, at the first open
// and at every rotation. It is safe for concurrent use; each Write goes
// whole into one file.
//
// It exists because natefinch/lumberjack, the usual rotating writer, does
// not fit private files: it creates its folder 0755, opens an existing log
// with os.OpenFile without O_NOFOLLOW (following a symbolic link planted at
// the path), and keeps an existing log's loose mode (0644, say), copying it
// to every new file it rotates to.
type RotatingWriter struct {
	path     string
	maxBytes int64
	keep     int

	mu     sync.Mutex
	f      *os.File // nil after a failed rotation, or once closed
	size   int64
	closed bool
}

// NewRotatingWriter opens (or creates) the log file at path for appending.
// maxBytes is the size the file may reach before it is rotated, at least 1;
// a single write larger than that still goes whole into a new file. keep is
// how many rotated files to keep, path.1 (the newest) to path.<keep>; 0
// keeps none (the file is started afresh). The file's current size counts
// towards maxBytes.
func NewRotatingWriter(path string, maxBytes int64, keep int) (*RotatingWriter, error) {
	switch {
	case maxBytes < 1:
		return nil, fmt.Errorf("log %s: maximum size %d must be at least 1 byte", path, maxBytes)
	case keep < 0:
		return nil, fmt.Errorf("log %s: keep %d rotated files: must not be negative", path, keep)
	}
	w := &RotatingWriter{path: path, maxBytes: maxBytes, keep: keep}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// open opens the log file and reads its size. Callers hold mu (or own w).
func (w *RotatingWriter) open() error {
	f, err := OpenPrivate(w.path, os.O_APPEND|os.O_WRONLY|os.O_CREATE)
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("log %s: %w", w.path, err)
	}
	w.f, w.size = f, fi.Size()
	return nil
}

// Write appends p to the log file, rotating first when the file is not
// empty and p would take it past maxBytes. After a failed rotation the next
// Write tries to open the file again.
func (w *RotatingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, fmt.Errorf("log %s: %w", w.path, os.ErrClosed)
	}
	if w.f != nil && w.size > 0 && w.size+int64(len(p)) > w.maxBytes {
		if err := w.rotate(); err != nil {
			return 0, err
		}
	}
	if w.f == nil {
		if err := w.open(); err != nil {
			return 0, err
		}
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	if err != nil {
		return n, fmt.Errorf("log %s: %w", w.path, err)
	}
	return n, nil
}

// rotate closes the file, shifts the rotated files by one and opens a new
// file. Callers hold mu.
func (w *RotatingWriter) rotate() error {
	err := w.f.Close()
	w.f, w.size = nil, 0
	if err != nil {
		return fmt.Errorf("log %s: close for rotation: %w", w.path, err)
	}
	// Renames replace (and never follow) a symbolic link at the target.
	if err := w.removeMissingOK(w.backup(w.keep)); err != nil {
		return err
	}
	for i := w.keep - 1; i >= 1; i-- {
		if err := w.renameMissingOK(w.backup(i), w.backup(i+1)); err != nil {
			return err
		}
	}
	if w.keep > 0 {
		if err := w.renameMissingOK(w.path, w.backup(1)); err != nil {
			return err
		}
	} else if err := w.removeMissingOK(w.path); err != nil {
		return err
	}
	return w.open()
}

// backup returns the name of the i-th rotated file; i == 0 is the log
// itself.
func (w *RotatingWriter) backup(i int) string {
	if i == 0 {
		return w.path
	}
	return w.path + "." + strconv.Itoa(i)
}

// renameMissingOK renames from to to; a missing from is fine.
func (w *RotatingWriter) renameMissingOK(from, to string) error {
	if err := os.Rename(from, to); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log %s: rotate: %w", w.path, err)
	}
	return nil
}

// removeMissingOK removes name; a missing one is fine.
func (w *RotatingWriter) removeMissingOK(name string) error {
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log %s: rotate: %w", w.path, err)
	}
	return nil
}

// Close closes the log file. Writes after Close fail with an error wrapping
// os.ErrClosed; a second Close returns nil.
func (w *RotatingWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	if err != nil {
		return fmt.Errorf("log %s: %w", w.path, err)
	}
	return nil
}
