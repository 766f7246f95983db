package intent

import "sync"

// groupWriter batches writes to one place (a ConfigMap of the ConfigMap
// store, the applied bucket of the state file): one flush at a time; writes
// that arrive meanwhile wait and go into the next flush, led by the first of
// them. It starts no goroutine: the leader is a caller. The zero value is
// ready to use.
type groupWriter struct {
	mu      sync.Mutex
	busy    bool                 // a leader is flushing
	pending map[string]*string   // the next batch
	waiters []chan<- groupResult // the writers of the next batch, in order
}

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
	w.mu.Unlock()
	if !lead {
		r := <-me
		if !r.lead {
			return r.err
		}
	}
	w.mu.Lock()
	batch, waiters := w.pending, w.waiters
	w.pending, w.waiters = make(map[string]*string), nil
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
