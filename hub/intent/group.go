package intent

import (
	"sync"
	"time"
)

// groupWriter batches writes to one place (a ConfigMap of the ConfigMap
// store, the applied bucket of the state file): one flush at a time; writes
// that arrive meanwhile wait and go into the next flush, led by the first of
// them. It starts no goroutine: the leader is a caller. The zero value is
// ready to use.
//
// While writes come concurrently, a leader first waits linger for more of
// them (a group commit's delay, as PostgreSQL's commit_delay, which also
// waits only when other transactions are active): a flush costs about the
// same for one write as for ten, and the hub's workers, each recording an
// object ahead of its first apply, arrive a few milliseconds apart, so
// without the wait nearly every flush carried one write (a cold sync of
// 10,000 objects: about as many fsyncs, BenchmarkPutAppliedStream). A
// lone writer never waits: concurrency is seen as a flush that carried
// more than one write, or writes that arrived while one ran.
type groupWriter struct {
	mu      sync.Mutex
	busy    bool                 // a leader is flushing
	pending map[string]*string   // the next batch
	waiters []chan<- groupResult // the writers of the next batch, in order
	// linger is how long a leader waits for more writes while writes
	// come concurrently; 0 never waits.
	linger time.Duration
	// lastBatch is how many writes the last flush carried; flushes
	// counts the flushes done.
	lastBatch, flushes int
}

// groupLinger is the linger of the stores' group writers: short beside
// an apply (tens to hundreds of milliseconds on a busy apiserver), which
// the recorded write precedes, and long enough to gather the writes of a
// worker pool (64 workers creating 450 objects a second: about 5 a flush
// instead of 1).
const groupLinger = 10 * time.Millisecond

// groupResult tells a waiting writer its write's result, or that it leads
// the next flush.
type groupResult struct {
	err  error
	lead bool
}

// do queues key=val and returns when a flush that included it returned.
func (w *groupWriter) do(key string, val *string, flush func(map[string]*string) error) error {
	me := make(chan groupResult, 1)
	w.mu.Lock()
	if w.pending == nil {
		w.pending = make(map[string]*string)
	}
	w.pending[key] = val
	w.waiters = append(w.waiters, me)
	lead := !w.busy
	w.busy = true
	concurrent := w.lastBatch > 1
	w.mu.Unlock()
	if !lead {
		r := <-me
		if !r.lead {
			return r.err
		}
		concurrent = true // it arrived while a flush ran
	}
	if concurrent && w.linger > 0 {
		time.Sleep(w.linger)
	}
	w.mu.Lock()
	batch, waiters := w.pending, w.waiters
	w.pending, w.waiters = make(map[string]*string), nil
	w.lastBatch = len(waiters)
	w.flushes++
	w.mu.Unlock()
	err := flush(batch)
	for _, c := range waiters {
		c <- groupResult{err: err}
	}
	w.mu.Lock()
	if len(w.waiters) > 0 {
		w.waiters[0] <- groupResult{lead: true}
	} else {
		w.busy = false
	}
	w.mu.Unlock()
	return (<-me).err
}
