package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/driftwatch/driftwatch/internal/startheap"
)

// fakeAdvice records when End was called.
type fakeAdvice struct {
	ended []time.Duration
	start time.Time
	err   error
}

func (f *fakeAdvice) End() error {
	f.ended = append(f.ended, time.Since(f.start))
	return f.err
}

// The start-up heap's huge pages are withdrawn once the window has passed,
// or as soon as the app stops; a failure is logged.
func TestEndStartHeap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			name string
			stop time.Duration // when ctx ends (0: never)
			err  error
			at   time.Duration
			log  string
		}{
			{"window", 0, nil, startHeapWindow, "huge pages withdrawn"},
			{"stopped", 3 * time.Second, nil, 3 * time.Second, "huge pages withdrawn"},
			{"failed", 0, errors.New("madvise: invalid argument"), startHeapWindow, "not withdrawn"},
		} {
			var out bytes.Buffer
			log := slog.New(slog.NewTextHandler(&out, nil))
			ctx, cancel := context.WithCancel(t.Context())
			if c.stop > 0 {
				time.AfterFunc(c.stop, cancel)
			}
			f := &fakeAdvice{start: time.Now(), err: c.err}
			endStartHeap(ctx, log, f, startHeapWindow)
			if len(f.ended) != 1 || f.ended[0] != c.at {
				t.Errorf("%s: ended %v, want once after %v", c.name, f.ended, c.at)
			}
			if !strings.Contains(out.String(), c.log) || (c.err != nil) != strings.Contains(out.String(), "invalid argument") {
				t.Errorf("%s: log %q, want %q", c.name, out.String(), c.log)
			}
			cancel()
			synctest.Wait()
		}
	})
}

// DRIFTWATCH_HUGEPAGES=off, and GODEBUG=disablethp=1 (the runtime's own
// switch), ask for no huge pages.
func TestStartHeapOff(t *testing.T) {
	for _, c := range []struct{ key, value, why string }{
		{"DRIFTWATCH_HUGEPAGES", "off", "DRIFTWATCH_HUGEPAGES=off"},
		{"DRIFTWATCH_HUGEPAGES", "0", "DRIFTWATCH_HUGEPAGES=0"},
		{"DRIFTWATCH_HUGEPAGES", "False", "DRIFTWATCH_HUGEPAGES=False"},
		{"DRIFTWATCH_HUGEPAGES", "no", "DRIFTWATCH_HUGEPAGES=no"},
		{"GODEBUG", "madvdontneed=1, disablethp=1", "GODEBUG=disablethp=1"},
	} {
		a, why := startHeap(func(k string) string {
			if k == c.key {
				return c.value
			}
			return ""
		})
		if a != nil || why != c.why {
			t.Errorf("startHeap with %s=%s: %v, %q; want nil, %q", c.key, c.value, a, why, c.why)
			_ = a.End()
		}
	}
	// Anything else leaves the choice to startheap.Advise.
	for _, env := range []map[string]string{{"DRIFTWATCH_HUGEPAGES": "on"}, {"GODEBUG": "disablethp=0"}} {
		a, why := startHeap(func(k string) string { return env[k] })
		_, avail := startheap.Available()
		if (a != nil) != (avail == "") || (a == nil && why == "") {
			t.Errorf("startHeap with %v: %v, %q; startheap says %q", env, a, why, avail)
		}
		if err := a.End(); err != nil {
			t.Error(err)
		}
	}
}
