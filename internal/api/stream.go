package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
	"github.com/driftwatch/driftwatch/internal/rescue"
)

// The watch stream.
//
// One broadcaster goroutine per streamer subscribes to the hub once and, for
// every snapshot the hub publishes, computes the delta from the previous
// one (apiv1.Diff) and appends it to a ring of recent deltas. Each event is
// marshalled at most once per view (operator, redacted), the first time a
// client needs it, and the bytes are shared by every client. Clients never
// hold up the broadcaster: each keeps a cursor (the Seq it has) and, when
// woken, writes the deltas after its cursor; a client whose cursor has left
// the ring (too far behind, or reconnecting with an old Last-Event-ID) is
// sent the latest full snapshot instead.
//
// The broadcaster runs only while streams are open: the first stream starts
// it, the last one to end stops it and waits for it (as does Close). The
// ring and the latest snapshot outlive it, so a client reconnecting after
// the last stream ended still resumes with deltas.
//
// A panic while publishing a snapshot is recovered and logged (with its
// stack), and the broadcaster goes on with the next one: a snapshot whose
// delta cannot be computed is sent to every stream in full, so the streams
// never freeze on it, and nothing is left to re-panic when the broadcaster
// is waited for.

// Watch stream defaults.
const (
	defaultMaxStreams   = 64
	defaultMaxPerCaller = 8
	defaultRingSize     = 64
	keepaliveInterval   = 15 * time.Second
	streamWriteTimeout  = 30 * time.Second
	retryAfterSeconds   = "5"
	eventSnapshot       = "snapshot"
	eventDelta          = "delta"
	lastEventIDHeader   = "Last-Event-ID"
	eventStreamMIMEType = "text/event-stream"
)

// snapshotSource is what the stream needs of a hub.
type snapshotSource interface {
	// Subscribe returns a channel holding the latest snapshot and a
	// function that ends the subscription.
	Subscribe() (<-chan *hub.Snapshot, func())
}

// streamConfig tunes a streamer (tests shrink the ring).
type streamConfig struct {
	maxStreams   int
	maxPerCaller int
	ringSize     int
	keepalive    time.Duration
	log          *slog.Logger
	// diff computes the delta between two snapshots: apiv1.Diff (tests
	// make it panic).
	diff func(prev, next *hub.Snapshot) *apiv1.Delta
}

// streamer serves GET /api/v1/watch.
type streamer struct {
	src   snapshotSource
	cfg   streamConfig
	epoch string        // tells this streamer's event ids from another's
	slots chan struct{} // one per open stream (cfg.maxStreams)
	done  chan struct{} // closed by close: every stream ends

	mu     sync.Mutex
	closed bool
	// open counts the open streams of each caller (cfg.maxPerCaller).
	open   map[Caller]int
	latest *hub.Snapshot
	full   *event   // the snapshot event of latest
	ring   []*event // recent deltas, oldest first; each starts where the previous ends
	notify chan struct{}
	refs   int        // open streams
	run    *broadcast // the running broadcaster, nil when none
}

// broadcast is one run of the broadcaster goroutine.
type broadcast struct {
	cancel context.CancelFunc
	wg     conc.WaitGroup
}

func (b *broadcast) stop() {
	b.cancel()
	b.wg.Wait()
}

func newStreamer(src snapshotSource, cfg streamConfig) *streamer {
	if cfg.maxStreams <= 0 {
		cfg.maxStreams = defaultMaxStreams
	}
	if cfg.maxPerCaller <= 0 {
		cfg.maxPerCaller = defaultMaxPerCaller
	}
	cfg.maxPerCaller = min(cfg.maxPerCaller, cfg.maxStreams)
	if cfg.ringSize <= 0 {
		cfg.ringSize = defaultRingSize
	}
	if cfg.keepalive <= 0 {
		cfg.keepalive = keepaliveInterval
	}
	if cfg.log == nil {
		cfg.log = slog.New(slog.DiscardHandler)
	}
	if cfg.diff == nil {
		cfg.diff = apiv1.Diff
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &streamer{
		src:    src,
		cfg:    cfg,
		epoch:  hex.EncodeToString(b[:]),
		slots:  make(chan struct{}, cfg.maxStreams),
		done:   make(chan struct{}),
		open:   make(map[Caller]int),
		notify: make(chan struct{}),
	}
}

// event is one server-sent event, a delta or a full snapshot, marshalled
// lazily and at most once per view.
type event struct {
	kind   string // eventSnapshot or eventDelta
	id     string // the SSE id: epoch-seq
	since  uint64 // delta: the Seq it applies to
	seq    uint64
	delta  *apiv1.Delta  // delta: the operator's view
	snap   *hub.Snapshot // snapshot
	log    *slog.Logger
	frames [numViews]struct {
		once sync.Once
		b    []byte
	}
}

// frame returns the event's bytes on the wire for view v ("id: …\nevent:
// …\ndata: {json}\n\n"); nil if it could not be encoded (logged).
func (e *event) frame(v view) []byte {
	f := &e.frames[v]
	f.once.Do(func() {
		var doc any
		switch {
		case e.delta != nil && v == viewRedacted:
			doc = redactDelta(e.delta)
		case e.delta != nil:
			doc = e.delta
		case v == viewRedacted:
			doc = redactSnapshot(apiv1.FromSnapshot(e.snap))
		default:
			doc = apiv1.FromSnapshot(e.snap)
		}
		data, err := json.Marshal(doc)
		if err != nil {
			e.log.Error("encode watch event", "event", e.kind, "seq", e.seq, "err", err)
			return
		}
		b := make([]byte, 0, len(data)+len(e.id)+len(e.kind)+24)
		b = fmt.Appendf(b, "id: %s\nevent: %s\ndata: ", e.id, e.kind)
		b = append(b, data...)
		f.b = append(b, '\n', '\n')
	})
	return f.b
}

func (st *streamer) eventID(seq uint64) string { return st.epoch + "-" + strconv.FormatUint(seq, 10) }

// parseEventID returns the Seq of one of this streamer's event ids.
func (st *streamer) parseEventID(id string) (uint64, bool) {
	epoch, seq, ok := strings.Cut(id, "-")
	if !ok || epoch != st.epoch {
		return 0, false
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	return n, err == nil
}

// acquire counts a stream of caller c; false when c has its cap of open
// streams already.
func (st *streamer) acquire(c Caller) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.open[c] >= st.cfg.maxPerCaller {
		return false
	}
	st.open[c]++
	return true
}

// release uncounts a stream of caller c.
func (st *streamer) release(c Caller) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.open[c]--; st.open[c] <= 0 {
		delete(st.open, c)
	}
}

// join counts a new stream and starts the broadcaster if it is the first;
// false once the streamer is closed.
func (st *streamer) join() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return false
	}
	st.refs++
	if st.run == nil {
		ctx, cancel := context.WithCancel(context.Background())
		b := &broadcast{cancel: cancel}
		b.wg.Go(func() { st.broadcast(ctx) })
		st.run = b
	}
	return true
}

// leave uncounts a stream; the last one stops the broadcaster and waits
// for it.
func (st *streamer) leave() {
	st.mu.Lock()
	st.refs--
	var b *broadcast
	if st.refs == 0 {
		b, st.run = st.run, nil
	}
	st.mu.Unlock()
	if b != nil {
		b.stop()
	}
}

// close ends every stream, refuses new ones and stops the broadcaster,
// waiting for it. Idempotent.
func (st *streamer) close() {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return
	}
	st.closed = true
	close(st.done)
	b := st.run
	st.run = nil
	st.mu.Unlock()
	if b != nil {
		b.stop()
	}
}

// broadcast subscribes to the hub and publishes every snapshot until ctx
// ends. A panic in a publish is recovered and logged, and the snapshot
// skipped (the next one's delta covers it): one bad snapshot neither
// freezes every stream nor re-panics when the broadcaster is stopped.
func (st *streamer) broadcast(ctx context.Context) {
	ch, cancel := st.src.Subscribe()
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-ch:
			_ = rescue.Call(st.cfg.log, "the watch stream's publish", func() { st.publish(s) })
		}
	}
}

// publish records a snapshot: the delta from the previous one joins the
// ring (the oldest drops out past its size), and every stream is woken.
// Nothing is marshalled here: the events do it once per view when a stream
// first writes them. A panic computing the delta is recovered and logged,
// and the ring emptied: every stream is then sent the snapshot in full.
func (st *streamer) publish(s *hub.Snapshot) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.latest != nil && s.Seq <= st.latest.Seq {
		return // a stopping broadcaster's late copy
	}
	if st.latest != nil {
		var d *apiv1.Delta
		if err := rescue.Call(st.cfg.log, "the watch stream's delta", func() { d = st.cfg.diff(st.latest, s) }); err != nil {
			st.ring = nil // no delta leads to s: every stream is sent it in full
		} else {
			ev := &event{kind: eventDelta, id: st.eventID(s.Seq), since: st.latest.Seq, seq: s.Seq, delta: d, log: st.cfg.log}
			if len(st.ring) == st.cfg.ringSize {
				st.ring = slices.Delete(st.ring, 0, 1)
			}
			st.ring = append(st.ring, ev)
		}
	}
	st.latest = s
	st.full = &event{kind: eventSnapshot, id: st.eventID(s.Seq), seq: s.Seq, snap: s, log: st.cfg.log}
	close(st.notify)
	st.notify = make(chan struct{})
}

// pending returns what a stream at Seq cursor (have false: none yet) must
// write next: the deltas after cursor when the ring still starts there,
// else the latest full snapshot; and a channel closed at the next publish.
func (st *streamer) pending(cursor uint64, have bool) ([]*event, <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.latest == nil:
		return nil, st.notify
	case have && cursor == st.latest.Seq:
		return nil, st.notify
	case have:
		for i, e := range st.ring {
			if e.since == cursor {
				return slices.Clone(st.ring[i:]), st.notify
			}
		}
	}
	return []*event{st.full}, st.notify
}

// ServeHTTP streams snapshots as server-sent events: "snapshot" (a full
// apiv1.Snapshot) at connect, then "delta" (an apiv1.Delta) per published
// snapshot. Every event has an id; a client reconnecting with
// Last-Event-ID resumes with the deltas since that event when the server
// still has them, else gets a full snapshot. ": keepalive" comments keep
// idle connections open. Past the cap of one caller's open streams it
// answers 429, past the cap of all open streams 503, both with
// Retry-After.
func (st *streamer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v := viewOf(r)
	c := callerOf(r)
	if !st.acquire(c) {
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeError(w, http.StatusTooManyRequests, fmt.Errorf("too many watch streams for %s token %q (at most %d per token): close one of them, or retry later", c.Role, c.Name, st.cfg.maxPerCaller))
		return
	}
	defer st.release(c)
	select {
	case st.slots <- struct{}{}:
		defer func() { <-st.slots }()
	default:
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeError(w, http.StatusServiceUnavailable, fmt.Errorf("too many watch streams (at most %d): retry later", st.cfg.maxStreams))
		return
	}
	if !st.join() {
		w.Header().Set("Retry-After", retryAfterSeconds)
		writeError(w, http.StatusServiceUnavailable, errors.New("the hub is shutting down"))
		return
	}
	defer st.leave()
	rc := http.NewResponseController(w)
	// The server's WriteTimeout would end the stream: each write gets its
	// own deadline instead (a client that stops reading is dropped), and
	// none is left set in between (over HTTP/2 an expired deadline resets
	// the stream even when idle).
	_ = rc.SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", eventStreamMIMEType)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		st.cfg.log.Error("watch stream", "err", fmt.Errorf("flush: %w", err))
		return
	}
	cursor, have := st.parseEventID(r.Header.Get(lastEventIDHeader))
	keepalive := time.NewTicker(st.cfg.keepalive)
	defer keepalive.Stop()
	write := func(frames ...[]byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
		for _, f := range frames {
			if _, err := w.Write(f); err != nil {
				return false
			}
		}
		return rc.Flush() == nil
	}
	for {
		evs, notify := st.pending(cursor, have)
		if len(evs) > 0 {
			frames := make([][]byte, 0, len(evs))
			for _, e := range evs {
				if f := e.frame(v); f != nil {
					frames = append(frames, f)
				}
			}
			if !write(frames...) {
				return
			}
			cursor, have = evs[len(evs)-1].seq, true
			continue // more may have been published meanwhile
		}
		select {
		case <-r.Context().Done():
			return
		case <-st.done:
			return
		case <-keepalive.C:
			if !write([]byte(": keepalive\n\n")) {
				return
			}
		case <-notify:
		}
	}
}
