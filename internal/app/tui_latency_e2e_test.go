package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/sourcegraph/conc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/benchconfig"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/tui"
)

// BenchmarkTUIControlPlane5k measures what an on-call engineer sees in the
// terminal UI of a hub managing 5,000 ConfigMaps on one real local
// control plane (kube-apiserver and etcd on loopback), through the real UI
// program (bubbletea, 160x48, output discarded). The objects exist before
// each run (a relaunch); per run:
//
//   - load-ms: the config loaded and compiled (the 5,000 manifests
//     parsed) and the hub made, before it starts;
//   - first-rows-ms: from the start of the hub and the UI to the overview
//     showing the cluster's row (its watch manager listed the objects);
//   - in-sync-ms: from the same start to the header saying every object is
//     in sync;
//   - delete-on-screen-ms: with the cluster drill-down open, from a client
//     deleting one object (as kubectl delete does; timed from the call)
//     to the frame that shows its row out of sync.
//
// Medians over the runs (-benchtime 3x). The in-memory variant without a
// control plane is tui's BenchmarkLatency5k.
func BenchmarkTUIControlPlane5k(b *testing.B) {
	set := lctest.Start(b, localcluster.Options{Count: 1})
	path := tuiBenchConfig(b, set, 5000)
	prime(b, path, 5000)
	var loads, first, synced, deleted []time.Duration
	for b.Loop() {
		l, f, s, d := tuiControlPlaneRun(b, set, path, 5000)
		loads, first, synced, deleted = append(loads, l), append(first, f), append(synced, s), append(deleted, d)
	}
	b.ReportMetric(medianMillis(loads), "load-ms")
	b.ReportMetric(medianMillis(first), "first-rows-ms")
	b.ReportMetric(medianMillis(synced), "in-sync-ms")
	b.ReportMetric(medianMillis(deleted), "delete-on-screen-ms")
}

// TestTUIControlPlaneLatency runs the benchmark's measurement once on a
// small source: the UI must show the rows, the sync and the deletion.
func TestTUIControlPlaneLatency(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	path := tuiBenchConfig(t, set, 30)
	prime(t, path, 30)
	l, f, s, d := tuiControlPlaneRun(t, set, path, 30)
	t.Logf("load %s, first rows %s, in sync %s, deletion on screen %s", l, f, s, d)
	if l <= 0 || f <= 0 || s < f || d <= 0 {
		t.Errorf("first rows %s, in sync %s, deletion %s", f, s, d)
	}
}

// tuiBenchConfig writes a source of n ConfigMaps (and their Namespace) for
// the one cluster of set, and the config naming it.
func tuiBenchConfig(tb testing.TB, set *localcluster.Set, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "all.yaml"), []byte(benchconfig.ConfigMaps("tuibench", n)), 0o600); err != nil {
		tb.Fatal(err)
	}
	cfg := fmt.Sprintf("hub: {id: tuibench, stateFile: none}\nclusters:\n  - {id: %s, kubeconfig: %s}\nsources:\n  - {id: cms, path: manifests, clusters: [%s]}\n",
		set.Clusters[0].Name, set.Clusters[0].Kubeconfig, set.Clusters[0].Name)
	path := filepath.Join(dir, "driftwatch.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// prime runs the hub once until the n ConfigMaps and their Namespace
// exist and are in sync, so that each measured run is a relaunch.
func prime(tb testing.TB, path string, n int) {
	tb.Helper()
	a := startApp(tb, path, nil)
	a.waitSnap(tb, 10*time.Minute, "the objects created", allInSync(n+1))
	a.stop()
}

// tuiControlPlaneRun launches the hub and the UI program over the config
// at path, and returns the four figures BenchmarkTUIControlPlane5k
// reports.
func tuiControlPlaneRun(tb testing.TB, set *localcluster.Set, path string, n int) (load, firstRows, inSync, deleteOnScreen time.Duration) {
	tb.Helper()
	cluster := set.Clusters[0].Name
	target := "cm-00000" // first by name: the drill-down's top row
	frames := &frameWatch{check: func(content string) []string {
		var hit []string
		if strings.Contains(content, "\n> "+cluster+" ") {
			hit = append(hit, "first")
		}
		if strings.Contains(content, fmt.Sprintf("all %d objects in sync", n+1)) {
			hit = append(hit, "synced")
		}
		for line := range strings.SplitSeq(content, "\n") {
			if strings.Contains(line, target) && !strings.Contains(line, string(hub.StatusInSync)) && !strings.Contains(line, string(hub.StatusUnknown)) {
				hit = append(hit, "deleted")
			}
		}
		return hit
	}, marks: map[string]chan time.Time{"first": make(chan time.Time, 1), "synced": make(chan time.Time, 1), "deleted": make(chan time.Time, 1)}}

	t0 := time.Now()
	made := newApp(tb, path, nil)
	load = time.Since(t0)
	start := time.Now()
	a := runApp(tb, made)
	defer a.stop()
	frames.m = tui.New(tui.HubSource(a.hub), tui.Options{NoColor: true})
	defer frames.m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	p := tea.NewProgram(frames, tea.WithContext(ctx), tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithWindowSize(160, 48),
		tea.WithoutSignals(), tea.WithColorProfile(colorprofile.Ascii))
	var wg conc.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _, _ = p.Run() })

	wait := func(mark string) time.Time {
		select {
		case at := <-frames.marks[mark]:
			return at
		case <-time.After(5 * time.Minute):
			tb.Fatalf("the screen never showed %s; last frame:\n%s", mark, frames.lastFrame())
			return time.Time{}
		}
	}
	firstRows = wait("first").Sub(start)
	inSync = wait("synced").Sub(start)
	p.Send(tea.KeyPressMsg{Code: tea.KeyEnter}) // open the cluster
	// Deleted only once the drill-down shows the row in sync, so the mark
	// can only come from the deletion.
	for !frames.showsInSync(target) {
		time.Sleep(time.Millisecond)
	}
	frames.arm("deleted")
	c := kubernetes.NewForConfigOrDie(set.Clusters[0].RESTConfig())
	at := time.Now()
	if err := c.CoreV1().ConfigMaps("tuibench").Delete(context.Background(), target, metav1.DeleteOptions{}); err != nil {
		tb.Fatal(err)
	}
	deleteOnScreen = wait("deleted").Sub(at)
	// The hub repairs it before the next run.
	a.waitSnap(tb, time.Minute, "the deleted object repaired", allInSync(n+1))
	return load, firstRows, inSync, deleteOnScreen
}

// frameWatch wraps the UI's model: every frame it renders is checked for
// the marks not yet seen, each sent once with the time of the frame.
type frameWatch struct {
	m     *tui.Model
	check func(content string) []string
	marks map[string]chan time.Time

	mu    sync.Mutex
	seen  map[string]bool
	armed map[string]bool
	last  string
}

func (w *frameWatch) Init() tea.Cmd { return w.m.Init() }

func (w *frameWatch) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := w.m.Update(msg)
	return w, cmd
}

func (w *frameWatch) View() tea.View {
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

func (w *frameWatch) arm(mark string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed[mark] = true
}

func (w *frameWatch) lastFrame() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// showsInSync reports whether the last frame shows resource's row in sync.
func (w *frameWatch) showsInSync(resource string) bool {
	for line := range strings.SplitSeq(w.lastFrame(), "\n") {
		if strings.Contains(line, resource) && strings.Contains(line, string(hub.StatusInSync)) {
			return true
		}
	}
	return false
}

// medianMillis is the median of ds in milliseconds.
func medianMillis(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}
