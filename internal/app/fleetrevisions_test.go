package app

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/coord"
	"github.com/driftwatch/driftwatch/internal/e2etest"
)

// TestBehindFleet: revisions are behind the fleet's record when a source's
// commit differs from the recorded one and no fetch after the record
// found it at the head of its ref; another repository or ref does not
// count.
func TestBehindFleet(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rec := map[string]coord.AppliedRevision{
		"web": {Source: "web", URL: "u", Ref: "main", Commit: "c2c2c2c2c2", Replica: "r2", At: at},
	}
	rev := func(commit string, seen time.Time) []gitRevision {
		return []gitRevision{{ID: "web", URL: "u", Ref: "main", Commit: commit, Seen: seen}}
	}
	for _, tc := range []struct {
		name   string
		revs   []gitRevision
		behind bool
	}{
		{"same commit, never fetched", rev("c2c2c2c2c2", time.Time{}), false},
		{"other commit from the cache", rev("c1c1c1c1c1", time.Time{}), true},
		{"other commit fetched before the record", rev("c1c1c1c1c1", at.Add(-time.Second)), true},
		{"other commit fetched after the record (newer, or the ref moved back)", rev("c1c1c1c1c1", at), false},
		{"another ref", []gitRevision{{ID: "web", URL: "u", Ref: "v2", Commit: "c1"}}, false},
		{"another repository", []gitRevision{{ID: "web", URL: "v", Ref: "main", Commit: "c1"}}, false},
		{"a source never recorded", []gitRevision{{ID: "docs", URL: "u", Ref: "main", Commit: "c1"}}, false},
	} {
		why := behindFleet(rec, tc.revs)
		if (why != "") != tc.behind {
			t.Errorf("%s: behindFleet = %q, want behind %v", tc.name, why, tc.behind)
		}
		if tc.behind && (!strings.Contains(why, "c1c1c1c") || !strings.Contains(why, "r2 applied c2c2c2c")) {
			t.Errorf("%s: %q names neither commit nor replica", tc.name, why)
		}
	}
}

// fleetReplica is one replica of a hub with a Git source, as far as the
// applied revisions go: its Git sources (cache under state), its
// coordinator on a shared coordination cluster, and its share of the
// clusters.
type fleetReplica struct {
	g     *GitSources
	r     *replicas
	reg   *clusters.Registry
	path  string
	state string
}

// newFleetReplica starts a replica whose Git source web reads url, with
// its cache under state.
func newFleetReplica(t *testing.T, cs *fake.Clientset, id, url, state string) *fleetReplica {
	t.Helper()
	g := NewGitSources(nil, nil)
	h := hub.New(hub.Options{ID: "hub", Intent: &recordingStore{}})
	reg := clusters.NewRegistry(h, clusters.RegistryOptions{})
	a := &App{log: slog.New(slog.DiscardHandler), hub: h, reg: reg, git: g}
	c, err := coord.New(coord.Options{Client: cs, Namespace: "driftwatch", HubID: "hub", ReplicaID: id, Handler: &nopHandler{}})
	if err != nil {
		t.Fatal(err)
	}
	r := &replicas{a: a, coord: c, lease: time.Second, owned: map[string]bool{}, pending: map[string]string{},
		wanted: map[string]clusters.ClusterConfig{"c1": {ID: "c1", Kubeconfig: "/nonexistent"}}}
	a.rep = r
	p := filepath.Join(t.TempDir(), "driftwatch.yaml")
	text := "hub: {id: hub, stateFile: " + filepath.Join(state, "state.db") + "}\nclusters:\n  - {id: c1, kubeconfig: /k}\nsources:\n  - id: web\n    git: {url: '" + url + "'}\n    path: deploy\n    clusters: [c1]\n"
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fleetReplica{g: g, r: r, reg: reg, path: p, state: state}
	// The first load of a hub: nothing is recorded before it takes a
	// cluster over.
	cfg, err := config.Load(p, g.LoadOptions(config.LoadOptions{IsolateSources: true}))
	if err != nil {
		t.Fatal(err)
	}
	g.loaded(cfg)
	return f
}

// loadErr reloads the config with the commit its Git source fetched last
// and puts it in force (as the App does, without a hub: the write ahead
// and the sources' bookkeeping), or returns the write ahead's refusal.
func (f *fleetReplica) loadErr(t *testing.T) error {
	t.Helper()
	cfg, err := config.Load(f.path, f.g.LoadOptions(config.LoadOptions{IsolateSources: true}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.recordRevisions(f.g.revisionsOf(cfg)); err != nil {
		return err
	}
	f.g.loaded(cfg)
	return nil
}

// load is loadErr, failing the test on a refusal.
func (f *fleetReplica) load(t *testing.T) {
	t.Helper()
	if err := f.loadErr(t); err != nil {
		t.Fatal(err)
	}
}

// fetch fetches the source once, as its poller does.
func (f *fleetReplica) fetch(t *testing.T) {
	t.Helper()
	f.g.mu.Lock()
	r := f.g.repos["web"]
	f.g.mu.Unlock()
	if _, err := f.g.fetch(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// kicked reports whether a fetch was asked of the source's poller (and
// takes the ask).
func (f *fleetReplica) kicked() bool {
	f.g.mu.Lock()
	r := f.g.repos["web"]
	f.g.mu.Unlock()
	select {
	case <-r.kick:
		return true
	default:
		return false
	}
}

// commit is the source's commit in force.
func (f *fleetReplica) commit() string {
	revs := f.g.inForce()
	if len(revs) != 1 {
		return ""
	}
	return revs[0].Commit
}

type nopHandler struct{}

func (nopHandler) Own(string)    {}
func (nopHandler) Disown(string) {}

// TestTakeOverBehindFleet: a replica that restarts from an old cache while
// the repository is unreachable holds a cluster's claim but does not
// manage it while another replica applied a newer commit (it says why and
// asks for a fetch); once a fetch brings the newer commit it takes the
// cluster over. A branch moved back on purpose (a force-push) is followed:
// a fetch after the record finds it at the head.
func TestTakeOverBehindFleet(t *testing.T) {
	repo := e2etest.NewGitRepo(t)
	c1 := repo.Commit("first", map[string]string{"deploy/web.yaml": configMapYAML("web", "1")})
	cs := fake.NewClientset()
	oldState := t.TempDir()
	old := newFleetReplica(t, cs, "r1", repo.FileURL(), oldState)
	if old.commit() != c1 {
		t.Fatalf("r1 at %s, want %s", old.commit(), c1)
	}
	old.r.Own("c1")
	if rec, err := old.r.coord.AppliedRevisions(context.Background()); err != nil || rec["web"].Commit != c1 || !old.r.owns("c1") {
		t.Fatalf("after r1 took c1 over: record %+v, %v, owns %v; want c1 by r1", rec, err, old.r.owns("c1"))
	}

	// r1 gone, r2 starts at c2 and takes c1 over: c2 is recorded first.
	c2 := repo.Commit("second", map[string]string{"deploy/web.yaml": configMapYAML("web", "2")})
	r2 := newFleetReplica(t, cs, "r2", repo.FileURL(), t.TempDir())
	r2.r.Own("c1")
	rec, err := r2.r.coord.AppliedRevisions(context.Background())
	if err != nil || rec["web"].Commit != c2 || rec["web"].Replica != "r2" {
		t.Fatalf("after r2's load: record %+v, %v; want c2 by r2", rec, err)
	}

	// r1 restarts from its cache, the repository unreachable: at c1.
	bare := strings.TrimPrefix(repo.FileURL(), "file://")
	if err := os.Rename(bare, bare+".away"); err != nil {
		t.Fatal(err)
	}
	restarted := newFleetReplica(t, cs, "r1", repo.FileURL(), oldState)
	if restarted.commit() != c1 {
		t.Fatalf("restarted r1 at %s, want c1 from its cache", restarted.commit())
	}
	restarted.r.Own("c1")
	if restarted.r.owns("c1") || len(restarted.reg.IDs()) > 0 {
		t.Fatal("r1 took c1 over at c1 although r2 applied c2")
	}
	err = restarted.r.pendingErr()
	if err == nil || !strings.Contains(err.Error(), "c1: ") || !strings.Contains(err.Error(), "r2 applied "+c2[:7]) {
		t.Errorf("pending: %v; want c1 pending, naming r2's commit", err)
	}
	if !restarted.kicked() {
		t.Error("no fetch asked while behind")
	}
	restarted.r.retryTakeOvers()
	if restarted.kicked() {
		t.Error("a fetch asked again within the lease duration")
	}
	if restarted.r.owns("c1") {
		t.Fatal("took over at the retry while still behind")
	}

	// The repository back: the fetch brings c2, the reload puts it in
	// force, the retry takes the cluster over.
	if err := os.Rename(bare+".away", bare); err != nil {
		t.Fatal(err)
	}
	restarted.fetch(t)
	restarted.load(t)
	restarted.r.retryTakeOvers()
	if !restarted.r.owns("c1") || !slices.Equal(restarted.reg.IDs(), []string{"c1"}) {
		t.Fatalf("at c2: owns c1 %v, registered %v", restarted.r.owns("c1"), restarted.reg.IDs())
	}
	if err := restarted.r.pendingErr(); err != nil {
		t.Errorf("ready after the takeover: %v", err)
	}

	// main forced back to c1: r2's next fetch finds c1 at the head after
	// the record of c2, so its reload goes through and is recorded.
	repo.ForcePush(c1)
	r2.fetch(t)
	r2.load(t)
	if r2.commit() != c1 {
		t.Fatalf("r2 after the force-push at %s, want c1", r2.commit())
	}
	if rec, _ := r2.r.coord.AppliedRevisions(context.Background()); rec["web"].Commit != c1 {
		t.Errorf("record after the force-push: %+v, want c1", rec["web"])
	}
}

// TestRecordRevisionsRefusesBehind: a load whose Git commit is behind the
// fleet's record is refused before anything is recorded, and the next
// fetch reloads even if the commit did not move; when the coordination
// cluster cannot be reached the load is refused and no fetch is asked at
// once (the next poll tries again). A load the prune guard refuses takes
// its record back.
func TestRecordRevisionsRefusesBehind(t *testing.T) {
	repo := e2etest.NewGitRepo(t)
	repo.Commit("first", map[string]string{"deploy/web.yaml": configMapYAML("web", "1")})
	cs := fake.NewClientset()
	r1 := newFleetReplica(t, cs, "r1", repo.FileURL(), t.TempDir())
	r1.r.Own("c1")
	c2 := repo.Commit("second", map[string]string{"deploy/web.yaml": configMapYAML("web", "2")})
	r2 := newFleetReplica(t, cs, "r2", repo.FileURL(), t.TempDir())
	r2.r.Own("c1")
	_ = r1.kicked()

	// r1's config reloaded (SIGHUP) with the commit it fetched before r2's
	// record: refused, a fetch asked, the next fetch reloads.
	err := r1.loadErr(t)
	if !errors.Is(err, errBehindFleet) {
		t.Fatalf("r1's reload at c1: %v, want behind the fleet", err)
	}
	if !r1.kicked() {
		t.Error("no fetch asked")
	}
	r1.g.mu.Lock()
	offered := r1.g.repos["web"].offered
	r1.g.mu.Unlock()
	if offered != "" {
		t.Errorf("offered %q: the next fetch would not reload", offered)
	}
	r1.fetch(t)
	r1.load(t)
	if r1.commit() != c2 {
		t.Errorf("r1 at %s after the fetch, want c2", r1.commit())
	}

	// The prune guard refuses r2's next commit: its record is taken back.
	c3 := repo.Commit("third", map[string]string{"deploy/web.yaml": configMapYAML("web", "3")})
	r2.fetch(t)
	cfg, err := config.Load(r2.path, r2.g.LoadOptions(config.LoadOptions{IsolateSources: true}))
	if err != nil {
		t.Fatal(err)
	}
	undo, err := r2.r.recordRevisions(r2.g.revisionsOf(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := r2.r.coord.AppliedRevisions(context.Background()); rec["web"].Commit != c3 {
		t.Fatalf("record before the write: %+v, want c3", rec["web"])
	}
	undo()
	if rec, _ := r2.r.coord.AppliedRevisions(context.Background()); rec["web"].Commit != c2 {
		t.Errorf("record after undo: %+v, want c2 back", rec["web"])
	}

	// The coordination cluster unreachable: refused, no fetch at once.
	cs.PrependReactor("*", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused (test)")
	})
	_ = r2.kicked()
	if err := r2.loadErr(t); err == nil || errors.Is(err, errBehindFleet) || !strings.Contains(err.Error(), "hub-revisions") {
		t.Errorf("coordination down: %v; want an error naming the Lease", err)
	}
	if r2.kicked() {
		t.Error("a fetch asked at once while the coordination cluster is down")
	}
}
