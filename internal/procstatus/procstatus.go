// Package procstatus reads the "kB" fields of Linux's /proc/self/status
// (VmHWM, VmRSS, VmData, RssAnon, ...) in bytes: the bench's memory
// figures and the render worker's memory limit read them.
package procstatus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// Field reads one "kB" field of /proc/self/status, in bytes.
func Field(field string) (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", field, err)
	}
	return Parse(b, field)
}

// Parse reads one "kB" field of the text of /proc/self/status, in bytes.
func Parse(b []byte, field string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	prefix := []byte(field + ":")
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, prefix) {
			continue
		}
		f := bytes.Fields(line[len(prefix):])
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", field, err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("read " + field + ": not in /proc/self/status")
}
