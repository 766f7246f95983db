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

	"github.com/driftwatch/driftwatch/internal/testwait"
)

// screenWait bounds each wait for a frame.
const screenWait = 5 * time.Second

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

	testwait.Screen(t, tm, "LIVE FEED", screenWait) // the snapshot arrived through the subscription
	tm.Send(keyPress("enter"))
	testwait.Screen(t, tm, "sort name", screenWait)
	tm.Type("/orders-conf")
	testwait.Screen(t, tm, "1/11 shown", screenWait)
	tm.Send(keyPress("enter"))
	tm.Send(keyPress("enter"))
	testwait.Screen(t, tm, "denied the request", screenWait)
	tm.Type("r")
	testwait.Screen(t, tm, "now? [y/N]", screenWait)
	tm.Type("y")
	want := []string{"repair prod-eu:casehub/orders-config:configmap"}
	testwait.For(t, 5*time.Second, "the repair call", func() error {
		got := src.Calls()
		return testwait.Check(slices.Equal(got, want), "source calls = %q, want %q", got, want)
	})
	testwait.Screen(t, tm, "queued", screenWait)
	tm.Send(keyPress("esc"))
	testwait.Screen(t, tm, "RESOURCE", screenWait)
	tm.Send(keyPress("esc")) // clears the filter
	testwait.Screen(t, tm, "11/11 shown", screenWait)
	tm.Send(keyPress("esc"))
	testwait.Screen(t, tm, "LIVE FEED", screenWait)
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
	testwait.For(t, 5*time.Second, "a frame", func() error {
		return testwait.Check(bytes.Contains(out.Bytes(), []byte("LIVE FEED")), "no frame drawn")
	})
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
