package hub

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"
)

// walkStore returns a store tracking n ConfigMaps a00, a01, ... of cluster
// c1, reported synced, and their specs in the walk's order.
func walkStore(n int, now time.Time) (*store, []NodeSpec) {
	s := newStore(Options{FeedLength: 10}, newMetrics(), func() int { return 0 })
	s.health(ClusterHealth{Cluster: "c1", State: ClusterSynced, Generation: 1})
	specs := make([]NodeSpec, n)
	for i := range specs {
		specs[i] = spec("c1", fmt.Sprintf("a%05d", i), "v1")
		s.track(&specs[i], false, now)
		s.setStatus(specs[i].ID, StatusInSync, "", now)
	}
	return s, specs
}

// snapshotIDs returns the NodeIDs of a snapshot, and its in-sync and
// drifted counts for c1.
func snapshotIDs(snap *Snapshot) (ids []NodeID, inSync, drifted int) {
	for _, n := range snap.Nodes {
		ids = append(ids, n.ID)
	}
	for _, c := range snap.Clusters {
		if c.Cluster == "c1" {
			inSync, drifted = c.Counts[StatusInSync], c.Counts[StatusDrifted]
		}
	}
	return ids, inSync, drifted
}

// TestWalkLetsWritersInBetweenChunks: a walk lets go of the store's lock
// after each chunk of records, and what the workers record meanwhile is
// read as it stands when the walk gets to it: a later record's new status
// shows, a record untracked before its chunk is left out, one tracked
// during the walk waits for the next, and the counts agree with the rows.
// A nested walk that sorts the records again meanwhile leaves the first
// walk's order alone.
func TestWalkLetsWritersInBetweenChunks(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, full := range []bool{true, false} {
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) {
			s, specs := walkStore(10, now)
			s.walkChunk = 3
			added := spec("c1", "a00003b", "v1")
			yields, nested := 0, false
			s.walkYield = func() {
				if nested {
					return // the snapshot taken below
				}
				if !s.mu.TryLock() {
					t.Error("the store's lock is held between two chunks")
				} else {
					s.mu.Unlock()
				}
				yields++
				if yields != 1 {
					return
				}
				nested = true
				defer func() { nested = false }()
				// After the first chunk (a00000-a00002).
				s.setStatus(specs[7].ID, StatusDrifted, "edited", now)
				s.setStatus(specs[1].ID, StatusDrifted, "edited", now) // already read
				s.untrack(specs[8].ID)
				s.track(&added, false, now)
				s.setStatus(added.ID, StatusInSync, "", now)
				if got := len(s.snapshot(now).Nodes); got != 10 {
					t.Errorf("a snapshot taken during the walk has %d rows, want 10", got)
				}
			}
			snap := s.walk(now, full)
			if yields != 3 {
				t.Errorf("the walk let go of the lock %d times, want 3 (10 records, chunks of 3)", yields)
			}
			s.walkYield = nil
			if full {
				ids, inSync, drifted := snapshotIDs(snap)
				want := []NodeID{}
				for i, sp := range specs {
					if i != 8 {
						want = append(want, sp.ID)
					}
				}
				if !slices.Equal(ids, want) {
					t.Errorf("snapshot rows %v, want %v (a00008 untracked, a00003b tracked during the walk)", ids, want)
				}
				for _, n := range snap.Nodes {
					wantSt := StatusInSync
					if n.ID == specs[7].ID {
						wantSt = StatusDrifted
					}
					if n.Status != wantSt {
						t.Errorf("%s: %s, want %s", n.ID, n.Status, wantSt)
					}
				}
				if inSync+drifted != len(snap.Nodes) || drifted != 1 {
					t.Errorf("counts in sync %d, drifted %d, for %d rows with one drifted", inSync, drifted, len(snap.Nodes))
				}
			} else if snap != nil {
				t.Errorf("a gauges walk returned a snapshot")
			}
			// The next walk has the record tracked meanwhile, not the one
			// untracked, and both drifts.
			ids, inSync, drifted := snapshotIDs(s.snapshot(now))
			if len(ids) != 10 || !slices.Contains(ids, added.ID) || slices.Contains(ids, specs[8].ID) || inSync != 8 || drifted != 2 {
				t.Errorf("the next snapshot: %v, in sync %d, drifted %d; want 10 rows with a00003b, without a00008, 8 in sync, 2 drifted", ids, inSync, drifted)
			}
		})
	}
}

// TestWalkSortsWithoutTheLock: a walk that has to sort the records again
// (a NodeID tracked or untracked since the last) lets go of the store's
// lock while it sorts: a worker records meanwhile, and a record untracked
// during the sort is left out of the walk. A walk with nothing new to sort
// keeps the order it has.
func TestWalkSortsWithoutTheLock(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, specs := walkStore(5, now)
	sorts := 0
	s.sortYield = func() {
		sorts++
		if !s.mu.TryLock() {
			t.Error("the store's lock is held while the records are sorted")
			return
		}
		s.mu.Unlock()
		s.untrack(specs[2].ID)
		s.setStatus(specs[4].ID, StatusDrifted, "edited", now)
	}
	ids, inSync, drifted := snapshotIDs(s.snapshot(now))
	if sorts != 1 {
		t.Fatalf("sorted %d times, want 1", sorts)
	}
	want := []NodeID{specs[0].ID, specs[1].ID, specs[3].ID, specs[4].ID}
	if !slices.Equal(ids, want) || inSync != 3 || drifted != 1 {
		t.Errorf("snapshot %v, in sync %d, drifted %d; want %v, 3 in sync, 1 drifted", ids, inSync, drifted, want)
	}
	// Untracked during that sort: the next walk sorts again, once; the
	// one after it not at all.
	s.sortYield = func() { sorts++ }
	for range 2 {
		if got := len(s.snapshot(now).Nodes); got != 4 {
			t.Errorf("snapshot has %d rows, want 4", got)
		}
	}
	if sorts != 2 {
		t.Errorf("sorted %d times in all, want 2", sorts)
	}
}

// TestWalkInOneChunk: a store smaller than a chunk is walked under one hold
// of the lock, as before chunks existed.
func TestWalkInOneChunk(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, _ := walkStore(defaultWalkChunk, now)
	s.walkYield = func() { t.Error("the walk let go of the lock within one chunk") }
	if got := len(s.snapshot(now).Nodes); got != defaultWalkChunk {
		t.Fatalf("snapshot has %d rows, want %d", got, defaultWalkChunk)
	}
}

// BenchmarkStatusDuringWalk100k measures how long a worker waits to record
// a status (setStatus, what a pass does on each drift it sees) while the
// publisher builds snapshots of 100,000 NodeIDs back to back: with the
// walk in chunks (chunk=1024, the default) and with the whole walk under
// one hold of the lock (chunk=all, as before chunks), in the same run, and
// in chunks with the records sorted again before every walk (resort: a
// NodeID tracked or untracked each time, as a config reload or an orphan
// does). It reports the wait's p50, p99 and max in microseconds, and the
// snapshot's time.
func BenchmarkStatusDuringWalk100k(b *testing.B) {
	const nodes = 100_000
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, bc := range []struct {
		name   string
		chunk  int
		resort bool
	}{{"chunk=all", nodes + 1, false}, {"chunk=1024", defaultWalkChunk, false}, {"chunk=1024,resort", defaultWalkChunk, true}} {
		b.Run(bc.name, func(b *testing.B) {
			s, specs := walkStore(nodes, now)
			s.walkChunk = bc.chunk
			s.snapshot(now) // the records sorted once, as in a hub that has run
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var walks int
			var walked time.Duration
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if bc.resort {
						s.mu.Lock()
						s.orderGen++
						s.mu.Unlock()
					}
					began := time.Now()
					s.snapshot(now)
					walked += time.Since(began)
					walks++
				}
			}()
			waits := make([]time.Duration, 0, b.N)
			i := 0
			for b.Loop() {
				id := specs[(i*7919)%nodes].ID
				i++
				began := time.Now()
				s.setStatus(id, StatusDrifted, "edited", now)
				waits = append(waits, time.Since(began))
				time.Sleep(50 * time.Microsecond) // workers record now and then, not back to back
			}
			close(stop)
			wg.Wait()
			sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
			q := func(p float64) float64 {
				return float64(waits[int(p*float64(len(waits)-1))].Nanoseconds()) / 1e3
			}
			b.ReportMetric(q(0.5), "wait-p50-µs")
			b.ReportMetric(q(0.99), "wait-p99-µs")
			b.ReportMetric(q(1), "wait-max-µs")
			if walks > 0 {
				b.ReportMetric(float64(walked.Microseconds())/float64(walks)/1e3, "snapshot-ms")
			}
		})
	}
}
