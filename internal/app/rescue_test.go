package app

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/hub"
)

// logBuffer is a log sink goroutines may write while a test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// panickingIntent is a shared intent store whose first read panics (a bug
// reading what another replica wrote); it counts the reads.
type panickingIntent struct {
	recordingStore
	loads atomic.Int32
}

func (s *panickingIntent) Load() (hub.Intent, error) {
	if s.loads.Add(1) == 1 {
		panic("read the shared intent: boom (test)")
	}
	return hub.Intent{}, nil
}

// TestReplicasTickSurvivesPanic: a panic in the replicas' periodic work
// (here the shared intent's refresh) is recovered and logged with its
// stack; the intent is read again a lease duration later, and again after
// that, and the loop ends without a panic.
func TestReplicasTickSurvivesPanic(t *testing.T) {
	store := &panickingIntent{}
	logs := &logBuffer{}
	a := &App{log: slog.New(slog.NewTextHandler(logs, nil)), hub: hub.New(hub.Options{ID: "h", Intent: store})}
	synctest.Test(t, func(t *testing.T) {
		const lease = 10 * time.Second
		r := &replicas{a: a, lease: lease, wanted: map[string]clusters.ClusterConfig{}, owned: map[string]bool{}, pending: map[string]string{}}
		ctx, cancel := context.WithCancel(t.Context())
		var wg conc.WaitGroup
		wg.Go(func() { r.run(ctx) })
		time.Sleep(3*lease + lease/10) // reads at 1, 2 and 3 lease durations
		synctest.Wait()
		if n := store.loads.Load(); n != 3 {
			t.Errorf("%d reads of the shared intent, want 3 (the first panicked)", n)
		}
		cancel()
		wg.Wait() // re-panics if the loop died of the panic
	})
	if out := logs.String(); !strings.Contains(out, "panic recovered") || !strings.Contains(out, "rescue_test.go") {
		t.Errorf("the panic is not logged with its stack:\n%s", out)
	}
}
