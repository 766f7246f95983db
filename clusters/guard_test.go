package clusters

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/driftwatch/driftwatch/internal/rescue"
)

// TestGuardFailsTheRunOnAPanic: a panic in a watch cache's transform (run
// by client-go, whose crash handler would panic again and end the hub) or
// in another piece of the manager's work is recovered, logged with its
// stack and ends that manager's run with the panic as its error (its
// registry restarts it with backoff); the transform returns the error
// instead of an object. Without a panic the transform's own answer passes.
func TestGuardFailsTheRunOnAPanic(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	var failed []error
	m := &Manager{cfg: ClusterConfig{ID: "c1"}, log: slog.New(slog.NewTextHandler(&buf, nil))}
	m.fail = func(err error) {
		mu.Lock()
		defer mu.Unlock()
		failed = append(failed, err)
	}
	transform := m.guardTransform("configmap watch cache's transform", func(obj any) (any, error) {
		if obj == "odd" {
			panic("index out of range")
		}
		if obj == "bad" {
			return nil, errors.New("not an object")
		}
		return obj.(string) + "!", nil
	})
	if out, err := transform("fine"); err != nil || out != "fine!" {
		t.Errorf("no panic: %v, %v", out, err)
	}
	if _, err := transform("bad"); err == nil || err.Error() != "not an object" {
		t.Errorf("the transform's own error: %v", err)
	}
	if len(failed) != 0 {
		t.Fatalf("the run failed without a panic: %v", failed)
	}
	out, err := transform("odd")
	var pe *rescue.PanicError
	if out != nil || !errors.As(err, &pe) {
		t.Fatalf("panic: %v, %v (%T)", out, err, err)
	}
	if want := `panic in cluster "c1": the configmap watch cache's transform: index out of range`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if len(failed) != 1 || failed[0] != err {
		t.Errorf("the run failed with %v, want the panic's error once", failed)
	}
	if log := buf.String(); !strings.Contains(log, "panic recovered") || !strings.Contains(log, "guard_test.go") {
		t.Errorf("the panic is not logged with its stack:\n%s", log)
	}
	// Any other piece of work, e.g. the watch error handler.
	if err := m.guard("watch error handler", func() { panic("nil map") }); err == nil || len(failed) != 2 {
		t.Errorf("guard: %v, failed %d times", err, len(failed))
	}
	if err := m.guard("health probe", func() {}); err != nil || len(failed) != 2 {
		t.Errorf("guard without a panic: %v, failed %d times", err, len(failed))
	}
}
