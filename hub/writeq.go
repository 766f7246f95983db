package hub

import (
	"context"
	"sync"
)

// A pass that must write (a repair or a first apply) hands its write to the
// hub's writers and its worker goes on classifying: during a burst every
// drift is classified and published as it arrives, while the writes run as
// fast as each cluster's apiserver takes them. The NodeID stays in the
// workqueue's processing set until its write has returned (the writer calls
// Done), so one NodeID still has one pass, and one write, at a time.

// writeJob is one handed-off write: it runs on a writer with the writers'
// context.
type writeJob func(ctx context.Context)

// queuedWrite is a write in its cluster's FIFO: job is nil while its place
// is reserved (see reserve) and the job not given yet.
type queuedWrite struct {
	job writeJob
}

// writeQueue holds the handed-off writes, one FIFO per cluster, served
// round-robin across clusters so one cluster's burst never delays another
// cluster's repairs, and no cluster runs more than perCluster writes at
// once, so a cluster whose writes hang (until CallTimeout) leaves writers
// for the others. It is bounded by the workqueue: a NodeID has at most one
// write waiting. A write may hold its place in its cluster's FIFO before
// it can run (reserve): the cluster's later writes wait behind it (a
// cluster's writes keep the order they were handed off in: namespaces and
// CRDs before what needs them), other clusters' writes do not.
type writeQueue struct {
	perCluster int

	mu      sync.Mutex
	wake    *sync.Cond
	jobs    map[string][]*queuedWrite
	order   []string // clusters with jobs, in turn order
	running map[string]int
	closed  bool
}

// newWriteQueue returns a queue for writers writers: a cluster may run all
// but one of them at once (one writer stays for the other clusters).
func newWriteQueue(writers int) *writeQueue {
	q := &writeQueue{perCluster: max(1, writers-1), jobs: make(map[string][]*queuedWrite), running: make(map[string]int)}
	q.wake = sync.NewCond(&q.mu)
	return q
}

// submit queues a cluster's write.
func (q *writeQueue) submit(cluster string, j writeJob) {
	q.reserve(cluster)(j)
}

// reserve holds a place at the end of a cluster's FIFO for a write given
// later: the returned func gives it (exactly once, never nil; a write that
// has nothing to do gives a job that does nothing). Until then the
// cluster's later writes wait.
func (q *writeQueue) reserve(cluster string) func(writeJob) {
	w := &queuedWrite{}
	q.mu.Lock()
	if len(q.jobs[cluster]) == 0 {
		q.order = append(q.order, cluster)
	}
	q.jobs[cluster] = append(q.jobs[cluster], w)
	q.mu.Unlock()
	return func(j writeJob) {
		q.mu.Lock()
		w.job = j
		q.mu.Unlock()
		q.wake.Broadcast()
	}
}

// next blocks until a write may run and returns it, from the first cluster
// in turn order below its limit, with its cluster (pass it to done once the
// write returned); false once the queue is closed and drained.
func (q *writeQueue) next() (writeJob, string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for i, c := range q.order {
			js := q.jobs[c]
			if q.running[c] >= q.perCluster || js[0].job == nil {
				continue
			}
			q.order = append(q.order[:i], q.order[i+1:]...)
			j := js[0].job
			js[0] = nil
			if js = js[1:]; len(js) > 0 {
				q.jobs[c] = js
				q.order = append(q.order, c) // its next write waits for the others' turn
			} else {
				delete(q.jobs, c)
			}
			q.running[c]++
			return j, c, true
		}
		if q.closed && len(q.order) == 0 {
			return nil, "", false
		}
		q.wake.Wait()
	}
}

// done records that a write of cluster returned.
func (q *writeQueue) done(cluster string) {
	q.mu.Lock()
	if q.running[cluster]--; q.running[cluster] <= 0 {
		delete(q.running, cluster)
	}
	q.mu.Unlock()
	q.wake.Broadcast()
}

// close lets next return false once the waiting writes are taken.
func (q *writeQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake.Broadcast()
}
