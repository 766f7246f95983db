package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/config/gitsource"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// TestGitConfigCompiles: the generated source, at a tree of gitFiles,
// loads through config.Load and compiles to every object on every
// cluster, in the git namespace, labelled with the commit's number, the
// three kinds in turn.
func TestGitConfigCompiles(t *testing.T) {
	dir := t.TempDir()
	set := &localcluster.Set{Clusters: []*localcluster.Cluster{
		{Name: "c1", Kubeconfig: "/tmp/c1.kubeconfig"}, {Name: "c2", Kubeconfig: "/tmp/c2.kubeconfig"},
	}}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "git.yaml")
	text := gitConfig(set, "http://127.0.0.1:1/bench.git", "secret", 100, 8)
	if !strings.Contains(text, "webhookSecretFile: secret") || !strings.Contains(text, "interval: 10s") {
		t.Fatalf("config:\n%s", text)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(dir, "tree")
	if err := writeTree(tree, gitFiles(10, "7")); err != nil {
		t.Fatal(err)
	}
	specs, err := compileAt(path, tree)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 20 {
		t.Fatalf("%d objects, want 10 on each of 2 clusters", len(specs))
	}
	kinds := map[hub.Kind]int{}
	for _, s := range specs {
		kinds[s.ID.Kind]++
		obj, err := kubeobj.Object(s)
		if err != nil || s.Namespace != gitNamespace || obj.GetLabels()[gitRevLabel] != "7" || obj.GetLabels()["app"] != s.Name {
			t.Errorf("%s: namespace %q, object %v (%v)", s.ID, s.Namespace, obj, err)
		}
	}
	if want := map[hub.Kind]int{hub.KindConfigMap: 8, hub.KindDeployment: 6, hub.KindService: 6}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if _, err := compileAt(path, filepath.Join(dir, "missing")); err == nil {
		t.Error("a checkout without the manifests compiled")
	}
}

// TestRevTracker: the tracker counts the objects carrying the awaited
// label, takes back one that loses it or is deleted, and tells when all
// carry it, with the first and last times.
func TestRevTracker(t *testing.T) {
	tr := newRevTracker()
	at := time.Unix(1000, 0)
	ev := func(typ watch.EventType, name, rev string, d time.Duration) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{gitRevLabel: rev}}}
		tr.event("c1", hub.KindConfigMap, watch.Event{Type: typ, Object: cm}, at.Add(d))
	}
	ev(watch.Added, "a", "1", 0) // before any wait: only remembered
	done := tr.expect("1", 3)
	if _, _, have := tr.times(); have != 1 {
		t.Fatalf("have %d, want the 1 object already at rev 1", have)
	}
	ev(watch.Modified, "b", "1", time.Second)
	ev(watch.Modified, "b", "0", 2*time.Second) // lost it again
	ev(watch.Modified, "b", "1", 3*time.Second)
	ev(watch.Deleted, "a", "1", 4*time.Second)
	ev(watch.Added, "a", "1", 5*time.Second)
	select {
	case <-done:
		t.Fatal("done with 2 of 3 objects")
	default:
	}
	ev(watch.Modified, "c", "1", 6*time.Second)
	select {
	case <-done:
	default:
		t.Fatal("not done with 3 of 3 objects")
	}
	first, last, have := tr.times()
	if have != 3 || !first.Equal(at.Add(time.Second)) || !last.Equal(at.Add(6*time.Second)) {
		t.Errorf("first %s last %s have %d", first.Sub(at), last.Sub(at), have)
	}
	ev(watch.Modified, "c", "1", 7*time.Second) // after done: no second close
	if d := tr.expect("1", 3); d == nil {
		t.Fatal("nil channel")
	} else {
		select {
		case <-d:
		default:
			t.Error("a wait for what is already there does not end at once")
		}
	}
}

// TestPushHookAccepted: the bench's webhook is a push the product's
// parser authenticates with the secret and matches to the repository.
func TestPushHookAccepted(t *testing.T) {
	const repoURL = "http://127.0.0.1:9/bench.git"
	secret := []byte("0123456789abcdef")
	var got gitsource.Push
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := gitsource.ParsePush(r, secret)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		got = p
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	h := pushHook{endpoint: srv.URL, repoURL: repoURL, secret: secret, client: srv.Client()}
	commit := strings.Repeat("a", 40)
	if err := h.post(t.Context(), commit); err != nil {
		t.Fatal(err)
	}
	if got.Ref != "refs/heads/main" || got.After != commit || !got.Matches(repoURL) {
		t.Errorf("push %+v", got)
	}
	h.secret = []byte("wrong")
	if err := h.post(t.Context(), commit); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong secret: %v", err)
	}
}

func TestGitValidate(t *testing.T) {
	base := Options{Mode: ModeGit, Clusters: 3, Objects: 100, Drifts: 1, Rate: 1, Interval: time.Second, Burst: 1, Output: "text", Idle: time.Second, Pushes: 5}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Options){
		"two objects":   func(o *Options) { o.Objects = 2 },
		"over the cap":  func(o *Options) { o.Objects = GitMaxObjects + 1 },
		"no pushes":     func(o *Options) { o.Pushes = 0 },
		"chart":         func(o *Options) { o.Chart = "x.svg" },
		"idle profile ": func(o *Options) { o.IdleCPUProfile = "idle.pprof" },
	} {
		o := base
		mod(&o)
		if err := o.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
	o := Options{Mode: ModeGit, Objects: 300, Idle: time.Second}
	GitDefaults(&o, func(string) bool { return false })
	if o.Objects != GitObjects || o.Idle != GitIdle {
		t.Errorf("defaults %+v", o)
	}
	o = Options{Mode: ModeGit, Objects: 30, Idle: time.Second}
	GitDefaults(&o, func(string) bool { return true })
	if o.Objects != 30 || o.Idle != time.Second {
		t.Errorf("given flags overridden: %+v", o)
	}
}

// testGitReport is a --mode git report with every figure set, as Run
// builds it (finish included).
func testGitReport() *benchReport {
	o := Options{Mode: ModeGit, Clusters: 3, Objects: 100, Pushes: 5, Output: "json", Idle: 25 * time.Second}
	rep := &benchReport{Mode: ModeGit, Clusters: 3, ObjectsPerCluster: 100, Seed: 1, Workers: 8, CPUs: 2, LoadBefore: "1.00 2.00 3.00"}
	g := &gitReport{URL: "http://127.0.0.1:4000/bench.git", Objects: 100, Applied: 300, InitialSync: msDuration(2100 * time.Millisecond),
		Floor: msDuration(400 * time.Millisecond), FloorConcurrency: 8, FloorRuns: 3,
		Poll: gitPollCost{Interval: msDuration(10 * time.Second), Fetches: 20, CPU: msDuration(4 * time.Millisecond), Allocated: 150 << 10,
			HeapGrowth: -2048, Sent: 204, Received: 0, Requests: 1, HubWindow: msDuration(25 * time.Second), HubPolls: 2, HubSent: 204,
			HubCPU: msDuration(60 * time.Millisecond)},
		Big: gitBigRepo{Objects: 1000, Runs: 3, Files: 1000, Rendered: 3000, Sent: 126000, Pack: 125700,
			Clone:  latencyOf([]time.Duration{800 * time.Millisecond, 900 * time.Millisecond, time.Second}),
			Render: latencyOf([]time.Duration{300 * time.Millisecond, 350 * time.Millisecond, 400 * time.Millisecond})}}
	var applied, first, inForce []time.Duration
	for i := range 5 {
		p := gitPush{Commit: strings.Repeat(string(rune('a'+i)), 40), Webhook: msDuration(time.Millisecond), InForce: msDuration(time.Duration(40+i) * time.Millisecond),
			First: msDuration(time.Duration(50+i) * time.Millisecond), Applied: msDuration(time.Duration(600+100*i) * time.Millisecond), Sent: 9000}
		g.Pushes = append(g.Pushes, p)
		applied, first, inForce = append(applied, p.Applied.dur()), append(first, p.First.dur()), append(inForce, p.InForce.dur())
	}
	g.PushToApplied, g.PushToFirst, g.PushToInForce = latencyOf(applied), latencyOf(first), latencyOf(inForce)
	rep.Git = g
	rep.finish(o)
	return rep
}

// TestGitReport: the table has the push latencies beside the floor, the
// poll's cost per poll and per source-hour, the large repository's clone
// and render, the ratio and the bars; the JSON carries all of it.
func TestGitReport(t *testing.T) {
	rep := testGitReport()
	var out bytes.Buffer
	if err := rep.writeTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"driftwatch bench --mode git: 3 cluster(s) x 100 objects (ConfigMaps, Deployments and Services in turn, from a Git source)",
		"git source http://127.0.0.1:4000/bench.git: 100 objects per cluster, 300 over all clusters; initial sync 2.10s",
		"webhook to all objects applied 5 800.0ms 1.00s 1.00s 1.00s",
		"webhook to first object applied 5 52.0ms",
		"webhook to the commit in force (the hub's view) 5 42.0ms",
		"raw apply floor (a plain client, 8 at a time; median) 3 400.0ms (2.00x the floor: push p50)",
		"bytes the git server sent per push 8.79 KiB",
		"git push to all applied p50 / raw apply floor 2.00x",
		"cpu (fetcher and server, 20 fetches) 4.00ms 1.44s",
		"heap allocated 150.00 KiB 52.7 MiB",
		"bytes from the server 204 B 71.72 KiB",
		"request body bytes to the server 0 B 0 B",
		"requests 1.0 360",
		"heap growth over the 20 fetches (after GC) -2.00 KiB",
		"running hub: polls in 25.00s 2",
		"running hub: process cpu (upper bound) 60.0ms 21.60s",
		"git 1000-object repository (1000 files) runs p50 max",
		"clone (first fetch into an empty cache) 3 900.0ms 1.00s",
		"render (load and compile, 3000 objects) 3 350.0ms 400.0ms",
		"git push (webhook) to all 300 objects applied on 3 cluster(s), p99 under 2.00s met 1.00s over 5/5 pushes (2.00x the raw apply floor, p50)",
		"1000-object repository cloned and rendered in under 10.00s (slowest clone + slowest render) met 1.00s + 400.0ms",
		"note: git: the repository is served over smart HTTP",
		"fetches take the whole history (6 commits at the end)",
	} {
		if !strings.Contains(squash(out.String()), squash(s)) {
			t.Errorf("table lacks %q:\n%s", s, &out)
		}
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back benchReport
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, rep) {
		t.Errorf("the JSON does not carry the whole report:\n got %+v\nwant %+v", back.Git, rep.Git)
	}
}

// TestFinishGit checks the git bars against the figures.
func TestFinishGit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mod        func(*gitReport)
		push, big  bool
		wantTarget int
	}{
		{"as built", func(*gitReport) {}, true, true, 2},
		{"slow push", func(g *gitReport) { g.PushToApplied.P99 = msDuration(2 * time.Second) }, false, true, 2},
		{"a push timed out", func(g *gitReport) {
			g.Pushes = append(g.Pushes, gitPush{TimedOut: true})
			g.Error = "push 6: 10 of 300 objects applied after 1m0s"
		}, false, true, 2},
		{"slow clone", func(g *gitReport) { g.Big.Clone.Max = msDuration(9700 * time.Millisecond) }, true, false, 2},
		{"no large repository", func(g *gitReport) { g.Big = gitBigRepo{} }, true, false, 1},
	} {
		rep := testGitReport()
		tc.mod(rep.Git)
		rep.Targets, rep.Notes, rep.Ratios = nil, nil, nil
		rep.finishGit(Options{})
		if len(rep.Targets) != tc.wantTarget {
			t.Fatalf("%s: targets %+v", tc.name, rep.Targets)
		}
		if rep.Targets[0].Met != tc.push {
			t.Errorf("%s: push target %+v", tc.name, rep.Targets[0])
		}
		if len(rep.Targets) > 1 && rep.Targets[1].Met != tc.big {
			t.Errorf("%s: clone target %+v", tc.name, rep.Targets[1])
		}
	}
}

// TestCompareGit: compare shows the git figures.
func TestCompareGit(t *testing.T) {
	old, cur := testGitReport(), testGitReport()
	cur.Git.PushToApplied.P50 = msDuration(1600 * time.Millisecond)
	var out bytes.Buffer
	if err := Compare(&out, "old.json", old, "new.json", cur); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"git push to all applied p50", "git push to first applied p99", "git push to in force p50", "git raw apply floor", "git push p50 / raw apply floor",
		"git poll cpu per poll", "git poll allocated per poll", "git poll bytes from the server per poll", "git running hub process cpu per poll",
		"git 1000-object clone p50", "git 1000-object render max", "git 1000-object bytes per clone", "git initial sync"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("compare lacks %q:\n%s", s, &out)
		}
	}
	if !strings.Contains(out.String(), "worse") {
		t.Errorf("a doubled push p50 is not marked worse:\n%s", &out)
	}
}

// TestBenchGitRealCluster runs a tiny --mode git on one real local
// cluster: the source's objects created and in sync, every push seen
// applied by the raw watch, the floor, the poll cost and the large
// repository measured. With $DRIFTWATCH_BIN_DIR set, a control plane that
// cannot start fails the test.
func TestBenchGitRealCluster(t *testing.T) {
	bins := lctest.BinDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	env := app.Env{Getenv: func(k string) string {
		if k == app.EnvBinDir {
			return bins
		}
		return ""
	}, Stdout: &out, Stderr: &errOut}
	o := Options{Mode: ModeGit, Clusters: 1, Objects: 9, Drifts: 1, Rate: 1, Interval: time.Second, Burst: 1,
		Seed: 1, Output: "json", Idle: time.Second, Dir: t.TempDir(), Pushes: 2}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := Run(ctx, o, env); err != nil {
		t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s", err, &out, &errOut)
	}
	var rep benchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	g := rep.Git
	if g == nil || g.Applied != 9 || g.InitialSync <= 0 || len(g.Pushes) != 2 || g.PushToApplied.N != 2 || g.PushToFirst.N != 2 || g.Error != "" {
		t.Fatalf("git report %+v\nstderr:\n%s", g, &errOut)
	}
	if g.PushToInForce.N != 2 {
		t.Errorf("the hub showed %d of 2 commits in force", g.PushToInForce.N)
	}
	for i, p := range g.Pushes {
		if len(p.Commit) != 40 || p.Applied <= 0 || p.First <= 0 || p.First > p.Applied || p.Sent <= 0 || p.InForce <= 0 || p.InForce > p.Applied {
			t.Errorf("push %d: %+v", i+1, p)
		}
	}
	if g.Floor <= 0 || g.FloorRuns != gitFloorRuns || g.FloorError != "" {
		t.Errorf("floor %s (%s)", g.Floor.dur(), g.FloorError)
	}
	if p := g.Poll; p.Fetches != gitPollFetches || p.CPU <= 0 || p.Allocated == 0 || p.Sent <= 0 || p.Requests != 1 {
		t.Errorf("poll cost %+v", p)
	}
	if b := g.Big; b.Runs != gitBigRuns || b.Clone.N != gitBigRuns || b.Render.N != gitBigRuns || b.Rendered != gitBigObjects || b.Pack <= 0 || b.Sent < b.Pack {
		t.Errorf("large repository %+v", b)
	}
	if len(rep.Targets) != 2 {
		t.Errorf("targets %+v", rep.Targets)
	}
	// The hub's Git cache is under the bench's folder, not the user's.
	if _, err := os.Stat(filepath.Join(o.Dir, "git-state", "driftwatch", "git")); err != nil {
		t.Errorf("git cache: %v", err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("timed out")
	}
}
