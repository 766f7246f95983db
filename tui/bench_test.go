package tui

import (
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwatch/driftwatch/hub"
)

// BenchmarkUpdateView10k measures, per op, what one frame costs in the
// cluster drill-down of a 10,000-NodeID cluster at 160x48: a snapshot
// Update (filter and sort the cluster's rows, restore the cursor), a cursor
// move and a View.
func BenchmarkUpdateView10k(b *testing.B) {
	snaps := []*hub.Snapshot{bigSnapshot(10_000, 1), bigSnapshot(10_000, 2)}
	for _, bc := range []struct {
		name string
		keys []string
	}{
		{"name", nil},
		{"status-sort", []string{"s"}},
		{"filter", []string{"/", "a", "p", "p", "-", "0", "enter"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := New(newFakeSource(), Options{Now: fixedClock})
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
			m.Update(snapshotMsg{snap: snaps[0]})
			press(b, m, "enter")
			press(b, m, bc.keys...)
			down, up := keyPress("down"), keyPress("up")
			b.ReportAllocs()
			defer reportCPU(b)()
			i := 0
			for b.Loop() {
				m.Update(snapshotMsg{snap: snaps[i%2]})
				if i%100 < 50 {
					m.Update(down)
				} else {
					m.Update(up)
				}
				_ = m.View()
				i++
			}
		})
	}
}

// BenchmarkOverview measures a snapshot Update, a cursor move in the feed and
// a View of the overview at 160x48 while a 10,000-NodeID cluster is in the
// snapshot.
func BenchmarkOverview(b *testing.B) {
	snaps := []*hub.Snapshot{bigSnapshot(10_000, 1), bigSnapshot(10_000, 2)}
	m := New(newFakeSource(), Options{Now: fixedClock})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m.Update(snapshotMsg{snap: snaps[0]})
	press(b, m, "tab")
	down, up := keyPress("down"), keyPress("up")
	b.ReportAllocs()
	defer reportCPU(b)()
	i := 0
	for b.Loop() {
		m.Update(snapshotMsg{snap: snaps[i%2]})
		if i%100 < 50 {
			m.Update(down)
		} else {
			m.Update(up)
		}
		_ = m.View()
		i++
	}
}

// reportCPU adds a cpu-ns/op metric: process CPU time per op, which (unlike
// ns/op) does not grow when other processes compete for the cores. Call the
// returned function after the loop.
func reportCPU(b *testing.B) func() {
	start := processCPU(b)
	return func() {
		if used := processCPU(b) - start; used > 0 && b.N > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}
