package safefile

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxCredentialBytes bounds a credentials file ReadCredential reads.
const MaxCredentialBytes = 64 << 10

// ReadLimited reads the regular file at path (following links), refusing
// one larger than limit bytes before reading it, and one that grows past
// limit while it is read.
func ReadLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}

// ReadCredential reads one credential (a token, user name or password)
// from the file at path, trimmed: at most MaxCredentialBytes, not empty,
// one line. what names the field in errors ("auth.tokenFile").
func ReadCredential(what, path string) (string, error) {
	b, err := ReadLimited(path, MaxCredentialBytes)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s: %s is empty", what, path)
	}
	if strings.ContainsAny(s, "\r\n\x00") {
		return "", fmt.Errorf("%s: %s holds more than one line", what, path)
	}
	return s, nil
}
