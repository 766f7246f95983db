package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// MaxConfigSize is the largest config Load, ReadFile and Read accept, in
// bytes: 16 MiB. The generated config of 10,000 applications that
// BenchmarkParse reads is 3.3 MB.
const MaxConfigSize = 16 << 20

// ReadFile reads the config file at path. A file larger than MaxConfigSize
// is refused before it is read, with an ErrorList of one Error that names
// the file, its size and the limit; other errors are the file system's.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return Read(path, f)
	}
	if fi.Size() > MaxConfigSize {
		return nil, tooLarge(path, fmt.Sprintf("config file is %s: the limit is %s", size(fi.Size()), size(MaxConfigSize)))
	}
	// Read into a buffer of the file's size and room to see its end (or
	// that it grew), not in doubling steps.
	return read(path, f, int(fi.Size())+bytes.MinRead)
}

// Read reads a config from r, such as standard input, reading at most
// MaxConfigSize bytes: a longer config is refused with an ErrorList of one
// Error. name names the config in errors.
func Read(name string, r io.Reader) ([]byte, error) {
	return read(name, r, bytes.MinRead)
}

// read is Read into a buffer of capacity hint at first.
func read(name string, r io.Reader, hint int) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, hint))
	_, err := buf.ReadFrom(io.LimitReader(r, MaxConfigSize+1))
	data := buf.Bytes()
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", name, err)
	}
	if len(data) > MaxConfigSize {
		return nil, tooLarge(name, fmt.Sprintf("config is more than %s, the limit", size(MaxConfigSize)))
	}
	return data, nil
}

// tooLarge is the error of a config over MaxConfigSize.
func tooLarge(name, msg string) error {
	return ErrorList{{File: name, Msg: msg}}
}

// size formats a number of bytes in MiB, with the exact number.
func size(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	}
	return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
}
