package tui

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// waitFor waits until the program has drawn s (since the previous wait).
func waitFor(t *testing.T, tm *teatest.TestModel, s string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(s)) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

// waitCalls waits until the source has recorded want.
func waitCalls(t *testing.T, src *fakeSource, want []string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Equal(src.Calls(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("source calls = %q, want %q", src.Calls(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFlowRepairFromDetail drives a real program: overview -> enter a
// cluster -> filter -> open a node -> r -> y -> the source got RepairNow ->
// esc back -> quit.
func TestFlowRepairFromDetail(t *testing.T) {
	src := newFakeSource(fixture())
	m := New(src, Options{Now: fixedClock})
	t.Cleanup(m.Close)
	tm := teatest.NewTestModel(t, m,
		teatest.WithInitialTermSize(100, 30),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))

	waitFor(t, tm, "LIVE FEED") // the snapshot arrived through the subscription
	tm.Send(keyPress("enter"))
	waitFor(t, tm, "sort name")
	tm.Type("/orders-conf")
	waitFor(t, tm, "1/11 shown")
	tm.Send(keyPress("enter"))
	tm.Send(keyPress("enter"))
	waitFor(t, tm, "denied the request")
	tm.Type("r")
	waitFor(t, tm, "now? [y/N]")
	tm.Type("y")
	waitCalls(t, src, []string{"repair prod-eu:casehub/orders-config:configmap"})
	waitFor(t, tm, "queued")
	tm.Send(keyPress("esc"))
	waitFor(t, tm, "RESOURCE")
	tm.Send(keyPress("esc")) // clears the filter
	waitFor(t, tm, "11/11 shown")
	tm.Send(keyPress("esc"))
	waitFor(t, tm, "LIVE FEED")
	tm.Type("q")

	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	final, ok := tm.FinalModel(t).(*Model)
	if !ok {
		t.Fatalf("final model is %T", tm.FinalModel(t))
	}
	if final.Screen() != ScreenOverview {
		t.Errorf("final screen = %v, want overview", final.Screen())
	}
	if got := final.StatusMessage(); got != "repair queued: prod-eu:casehub/orders-config:configmap" {
		t.Errorf("final status = %q", got)
	}
}

// Run returns nil when its context ends.
func TestRunStopsWithContext(t *testing.T) {
	src := newFakeSource(fixture())
	ctx, cancel := context.WithCancel(t.Context())
	var in bytes.Buffer
	var out safeBuffer
	errc := make(chan error, 1)
	go func() {
		errc <- Run(ctx, src, Options{NoColor: true, Now: fixedClock},
			tea.WithInput(&in), tea.WithOutput(&out), tea.WithoutSignals(), tea.WithWindowSize(80, 24))
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !bytes.Contains(out.Bytes(), []byte("LIVE FEED")) {
		if time.Now().After(deadline) {
			t.Fatal("no frame drawn")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if !src.cancelled {
		t.Error("Run did not end the subscription")
	}
}

// safeBuffer is a bytes.Buffer safe for one writer and one reader.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.b.Bytes())
}
