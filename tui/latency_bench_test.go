package tui

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
)

// latencyObjects is how many objects the latency benchmark's hub manages
// on its one cluster.
const latencyObjects = 5000

// BenchmarkLatency5k measures what a user sees of a real hub (running, its
// reconcile workers and snapshot publisher included) managing 5,000
// objects on one cluster, through the real UI program (bubbletea, 160x48,
// output discarded) over HubSource. The cluster is an in-memory backend
// (memBackend), so the figures are the hub's and the UI's alone: with a
// control plane add its watch delivery (a few ms on loopback) to the
// deletion, and its list of the 5,000 objects to the start. Per run:
//
//   - first-rows-ms: the hub and the program starting to the overview
//     showing the cluster's row;
//   - in-sync-ms: the same start to the header saying all objects are in
//     sync;
//   - delete-on-screen-ms: with the cluster drill-down open, a deletion
//     event reaching the hub (Sink.Observe, as the watch delivers it) to
//     the deleted object's row showing a status other than in-sync.
//
// Each is taken when the program renders the frame (Model.View): the
// terminal receives the frame at the renderer's next tick (at most 1/60 s
// later). The metrics are medians over the runs (-benchtime 5x).
func BenchmarkLatency5k(b *testing.B) {
	var first, inSync, deleted []time.Duration
	for b.Loop() {
		f, s, d := latencyRun(b, latencyObjects)
		first, inSync, deleted = append(first, f), append(inSync, s), append(deleted, d)
	}
	b.ReportMetric(medianMs(first), "first-rows-ms")
	b.ReportMetric(medianMs(inSync), "in-sync-ms")
	b.ReportMetric(medianMs(deleted), "delete-on-screen-ms")
}

// TestLatencyRun runs the latency benchmark's measurement once on a small
// hub: it must see the rows, the sync and the deletion on screen.
func TestLatencyRun(t *testing.T) {
	f, s, d := latencyRun(t, 50)
	if f <= 0 || s < f || d <= 0 {
		t.Errorf("first rows %s, in sync %s, deletion %s", f, s, d)
	}
}

func medianMs(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

// latencyRun starts a hub over n objects and the UI program on it, and
// returns the three latencies BenchmarkLatency5k reports.
func latencyRun(tb testing.TB, n int) (firstRows, allInSync, deleteOnScreen time.Duration) {
	tb.Helper()
	be := newMemBackend()
	specs := make([]hub.NodeSpec, n)
	for i := range specs {
		name := fmt.Sprintf("app-%05d", i)
		specs[i] = hub.NodeSpec{ID: hub.NewNodeID("c1", "bench", name, hub.KindDeployment), Namespace: "bench", Name: name,
			Kind: hub.KindDeployment, Application: name, Policy: hub.PolicyRepair,
			Body: kubeobj.MustEncodeBody(deploymentObject("bench", name, "registry.example/bench:1", 2))}
		be.put(specs[i].ID)
	}
	target := specs[0] // first by name: the drill-down's top row
	h := hub.New(hub.Options{ID: "bench", Workers: 8, Resync: -1})
	be.sink = h
	h.SetBackends(be)
	h.SetDesired(specs)

	w := &watchedModel{marks: map[string]chan time.Time{
		"first": make(chan time.Time, 1), "synced": make(chan time.Time, 1), "deleted": make(chan time.Time, 1)}}
	w.m = New(HubSource(h), Options{NoColor: true})
	defer w.m.Close()
	w.check = func(content string) []string {
		var hit []string
		if strings.Contains(content, "\n> c1 ") {
			hit = append(hit, "first")
		}
		if strings.Contains(content, "all "+plural(n, "object")+" in sync") {
			hit = append(hit, "synced")
		}
		for line := range strings.SplitSeq(content, "\n") {
			if strings.Contains(line, target.ID.Resource) && strings.Contains(line, "deployment") && !strings.Contains(line, string(hub.StatusInSync)) &&
				!strings.Contains(line, string(hub.StatusUnknown)) {
				hit = append(hit, "deleted")
			}
		}
		return hit
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := tea.NewProgram(w, tea.WithContext(ctx), tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithWindowSize(160, 48),
		tea.WithoutSignals(), tea.WithColorProfile(colorprofile.Ascii))
	var wg conc.WaitGroup
	defer wg.Wait()
	defer cancel()
	start := time.Now()
	wg.Go(func() { _ = h.Run(ctx) })
	wg.Go(func() { _, _ = p.Run() })
	// The cluster is listed (its cache full) once the hub runs, as a
	// watch manager reports it synced after its lists.
	h.ClusterChanged(hub.ClusterHealth{Cluster: "c1", State: hub.ClusterSynced, Source: "config"})

	wait := func(mark string) time.Time {
		select {
		case at := <-w.marks[mark]:
			return at
		case <-time.After(time.Minute):
			tb.Fatalf("the screen never showed %s", mark)
			return time.Time{}
		}
	}
	firstRows = wait("first").Sub(start)
	allInSync = wait("synced").Sub(start)
	p.Send(tea.KeyPressMsg{Code: tea.KeyEnter}) // open c1
	// Deleted only once the drill-down shows the row in sync, so the
	// mark can only come from the deletion.
	for !w.showsInSync(target.ID.Resource) {
		time.Sleep(time.Millisecond)
	}
	w.arm("deleted")
	at := be.remove(target.ID)
	deleteOnScreen = wait("deleted").Sub(at)

	return firstRows, allInSync, deleteOnScreen
}

// watchedModel wraps the UI's model: every frame it renders is checked for
// the marks not yet seen, each sent once with the time of the frame.
type watchedModel struct {
	m     *Model
	check func(content string) []string
	marks map[string]chan time.Time

	mu    sync.Mutex
	seen  map[string]bool
	armed map[string]bool
	last  string
}

func (w *watchedModel) Init() tea.Cmd { return w.m.Init() }

func (w *watchedModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := w.m.Update(msg)
	return w, cmd
}

func (w *watchedModel) View() tea.View {
	v := w.m.View()
	at := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen, w.armed = map[string]bool{}, map[string]bool{"first": true, "synced": true}
	}
	w.last = v.Content
	for _, mark := range w.check(v.Content) {
		if w.armed[mark] && !w.seen[mark] {
			w.seen[mark] = true
			w.marks[mark] <- at
		}
	}
	return v
}

// arm lets a mark be sent from the next frame on.
func (w *watchedModel) arm(mark string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed[mark] = true
}

// showsInSync reports whether the last frame shows resource's row in sync.
func (w *watchedModel) showsInSync(resource string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for line := range strings.SplitSeq(w.last, "\n") {
		if strings.Contains(line, resource) && strings.Contains(line, string(hub.StatusInSync)) {
			return true
		}
	}
	return false
}

// memBackend is an in-memory cluster for the latency benchmark: objects
// exist or not, with a version; reads answer at once, a repair recreates
// the object and delivers its watch event, as an informer on a fast
// loopback would.
type memBackend struct {
	sink hub.Sink

	mu   sync.Mutex
	objs map[hub.NodeID]int
	ver  int
}

func newMemBackend() *memBackend { return &memBackend{objs: map[hub.NodeID]int{}} }

func (b *memBackend) Backend(string) (hub.Backend, bool) { return b, true }

// put creates or updates an object (no event: the objects exist before the
// hub starts).
func (b *memBackend) put(id hub.NodeID) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ver++
	b.objs[id] = b.ver
	return b.ver
}

// remove deletes an object and delivers the deletion to the hub; it
// returns when the event reached the hub.
func (b *memBackend) remove(id hub.NodeID) time.Time {
	b.mu.Lock()
	delete(b.objs, id)
	b.mu.Unlock()
	at := time.Now()
	b.sink.Observe(hub.Event{ID: id, Type: hub.EventDeleted, ObservedAt: at})
	return at
}

func (b *memBackend) ReadState(_ context.Context, spec hub.NodeSpec, fresh bool) (hub.State, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.objs[spec.ID]
	if !ok {
		return hub.State{Fresh: fresh}, nil
	}
	return hub.State{Exists: true, Fresh: fresh, Owned: true, Version: strconv.Itoa(v)}, nil
}

func (b *memBackend) DetectDrift(_ context.Context, _ hub.NodeSpec, st hub.State) (hub.Drift, error) {
	if !st.Exists {
		return hub.Drift{Class: hub.DriftMissing}, nil
	}
	return hub.Drift{Class: hub.DriftNone}, nil
}

func (b *memBackend) Attribute(context.Context, hub.NodeSpec, hub.State, hub.Drift) (*hub.Attribution, error) {
	return nil, nil
}

func (b *memBackend) Repair(_ context.Context, spec hub.NodeSpec, _ hub.State, _ hub.Drift) (hub.RepairResult, error) {
	v := b.put(spec.ID)
	b.sink.Observe(hub.Event{ID: spec.ID, Type: hub.EventAdded, ResourceVersion: strconv.Itoa(v), ObservedAt: time.Now()})
	return hub.RepairResult{Version: strconv.Itoa(v), Action: "apply"}, nil
}

func (b *memBackend) Delete(_ context.Context, spec hub.NodeSpec, _ hub.State) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objs, spec.ID)
	return nil
}
