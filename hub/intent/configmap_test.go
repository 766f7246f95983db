package intent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

func TestDataKey(t *testing.T) {
	long := strings.Repeat("n", 254)
	tests := []struct {
		id, want string
	}{
		{"prod-eu", "prod-eu"},
		{"prod-eu:shop/api:deployment", "prod-eu_3Ashop_2Fapi_3Adeployment"},
		{"node/prod:acme:eu/api:service", "node_2Fprod_3Aacme_3Aeu_2Fapi_3Aservice"},
		{"a_b.c", "a_5Fb_2Ec"},
		{"..", "_2E_2E"},
		{long, ""}, // hashed: checked below
	}
	for _, tt := range tests {
		got := dataKey(tt.id)
		if tt.id == long {
			if !strings.HasPrefix(got, "sha256.") || len(got) != len("sha256.")+64 {
				t.Errorf("dataKey(long) = %q, want sha256.<64 hex>", got)
			}
			if _, err := unescapeKey(got); err == nil {
				t.Errorf("unescapeKey(%q) accepted a hashed key", got)
			}
			continue
		}
		if got != tt.want {
			t.Errorf("dataKey(%q) = %q, want %q", tt.id, got, tt.want)
		}
		back, err := unescapeKey(got)
		if err != nil || back != tt.id {
			t.Errorf("unescapeKey(%q) = %q, %v; want %q", got, back, err, tt.id)
		}
	}
	for _, bad := range []string{"a_3", "a_ZZ", "a_3a", "prod_2Deu"} { // truncated, not hex, lower case, '-' escaped
		if id, err := unescapeKey(bad); err == nil {
			t.Errorf("unescapeKey(%q) = %q, want an error", bad, id)
		}
	}
}

// TestGroupWriter: writes that arrive while a flush is in flight go into
// one next flush, led by the first of them, and each writer gets the
// result of the flush that carried its write.
func TestGroupWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &groupWriter{pending: make(map[string]*string)}
		release := make(chan struct{})
		var mu sync.Mutex
		var batches [][]string
		flush := func(b map[string]*string) error {
			mu.Lock()
			batches = append(batches, slices.Sorted(maps.Keys(b)))
			n := len(batches)
			mu.Unlock()
			if n == 1 {
				<-release
				return nil
			}
			if _, ok := b["k3"]; ok {
				return errors.New("boom")
			}
			return nil
		}
		errs := make([]error, 6)
		var wg sync.WaitGroup
		v := "v"
		wg.Go(func() { errs[0] = w.do("k0", &v, flush) })
		synctest.Wait() // k0 flushing
		for i := 1; i < 6; i++ {
			wg.Go(func() { errs[i] = w.do(fmt.Sprintf("k%d", i), &v, flush) })
		}
		synctest.Wait() // k1..k5 queued
		close(release)
		wg.Wait()
		want := [][]string{{"k0"}, {"k1", "k2", "k3", "k4", "k5"}}
		if !reflect.DeepEqual(batches, want) {
			t.Errorf("batches = %v, want %v", batches, want)
		}
		if errs[0] != nil {
			t.Errorf("k0: %v", errs[0])
		}
		for i := 1; i < 6; i++ {
			if errs[i] == nil || errs[i].Error() != "boom" {
				t.Errorf("k%d: err = %v, want boom (its batch failed)", i, errs[i])
			}
		}
		if w.busy || len(w.pending) != 0 || len(w.waiters) != 0 {
			t.Errorf("writer not idle: busy %v, %d pending, %d waiters", w.busy, len(w.pending), len(w.waiters))
		}
	})
}

// cmEnv is a real control plane for the ConfigMap store tests.
type cmEnv struct {
	cfg   *rest.Config
	admin kubernetes.Interface
}

// newNamespace creates a fresh namespace.
func (e cmEnv) newNamespace(t *testing.T, name string) string {
	t.Helper()
	_, err := e.admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	must(t, err)
	return name
}

func newCMStore(t *testing.T, cs kubernetes.Interface, ns string) *ConfigMapStore {
	t.Helper()
	s, err := NewConfigMapStore(t.Context(), cs, ns, "hub-a", ConfigMapOptions{})
	if err != nil {
		t.Fatalf("NewConfigMapStore: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestConfigMapStore runs the ConfigMap store against one real control
// plane, each case in its own namespace.
func TestConfigMapStore(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	cfg := set.Clusters[0].RESTConfig()
	env := cmEnv{cfg: cfg, admin: kubernetes.NewForConfigOrDie(cfg)}
	t.Run("round trip", func(t *testing.T) { testCMRoundTrip(t, env) })
	t.Run("concurrent replicas", func(t *testing.T) { testCMConcurrent(t, env) })
	t.Run("corrupt records", func(t *testing.T) { testCMCorrupt(t, env) })
	t.Run("namespace rbac", func(t *testing.T) { testCMRBAC(t, env) })
	t.Run("expired hold", func(t *testing.T) { testCMExpiredHold(t, env) })
}

// testCMExpiredHold: a replica that saw a hold expire deletes it only while
// the store still has that hold; one renewed on the target since (through
// another replica) stays.
func testCMExpiredHold(t *testing.T, env cmEnv) {
	ns := env.newNamespace(t, "expired-hold")
	a, b := newCMStore(t, env.admin, ns), newCMStore(t, env.admin, ns)
	target := hub.HoldTarget{Scope: hub.HoldCluster, Name: "prod-eu"}
	other := hub.Hold{Target: hub.HoldTarget{Scope: hub.HoldApplication, Name: "shop"}, Reason: "other", Since: t0(), Until: t0().Add(time.Hour)}
	old := hub.Hold{Target: target, Reason: "incident", By: "alice", Since: t0(), Until: t0().Add(time.Minute)}
	renewed := hub.Hold{Target: target, Reason: "incident, still", By: "bob", Since: t0().Add(2 * time.Minute), Until: t0().Add(time.Hour)}
	noteOf := func() (string, bool) {
		cm, err := env.admin.CoreV1().ConfigMaps(ns).Get(t.Context(), a.switchNotes("").name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "", false
		}
		must(t, err)
		v, ok := cm.Data[a.switchNotes(switchHold+target.String()).key]
		return v, ok
	}
	holdsOf := func() []hub.Hold {
		in, err := a.Load()
		must(t, err)
		return in.Holds
	}
	must(t, a.PutHold(other))
	must(t, a.PutHold(old))
	must(t, a.PutHold(renewed))
	must(t, b.DeleteExpiredHold(old)) // b still had the old one
	if got := holdsOf(); len(got) != 2 || !got[1].Until.Equal(renewed.Until) || got[1].By != "bob" {
		t.Fatalf("after deleting the expired hold: %+v, want %+v kept and the renewal %+v with its author", got, other, renewed)
	}
	must(t, b.DeleteExpiredHold(renewed))
	if got := holdsOf(); len(got) != 1 || got[0].Target != other.Target {
		t.Fatalf("after deleting the renewal once expired: %+v, want only %+v", got, other)
	}
	if v, ok := noteOf(); ok {
		t.Errorf("the expired hold's note stayed: %s", v)
	}
	must(t, b.DeleteExpiredHold(renewed)) // none: not an error
	if err := b.DeleteExpiredHold(hub.Hold{Target: hub.HoldTarget{Scope: "team", Name: "x"}}); err == nil {
		t.Error("an invalid target was accepted")
	}

	// The renewal lands between c's read and its delete: the delete's test
	// fails, c reads again and keeps the renewal.
	must(t, a.PutHold(old))
	cfg := rest.CopyConfig(env.cfg)
	var once sync.Once
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPatch && req.Header.Get("Content-Type") == string(types.JSONPatchType) {
				once.Do(func() { must(t, a.PutHold(renewed)) })
			}
			return rt.RoundTrip(req)
		})
	}
	c := newCMStore(t, kubernetes.NewForConfigOrDie(cfg), ns)
	must(t, c.DeleteExpiredHold(old))
	if got := holdsOf(); len(got) != 2 || !got[1].Until.Equal(renewed.Until) || got[1].By != "bob" {
		t.Fatalf("a renewal between the read and the delete: %+v, want %+v kept and the renewal %+v with its author", got, other, renewed)
	}

	// A note left by a hold whose record another way removed is not read
	// as the author of the next hold on the target, placed without one.
	must(t, a.PutHold(renewed))
	must(t, a.write("test", a.locate(kindHolds, "", target.String()), nil)) // the record alone
	anon := renewed
	anon.By, anon.Since = "", t0().Add(time.Hour)
	must(t, a.write("test", a.locate(kindHolds, "", target.String()), holdRecord{Scope: anon.Target.Scope, Name: anon.Target.Name,
		Reason: anon.Reason, Since: anon.Since, Until: anon.Until})) // as a replica of a version before notes places it
	if got := holdsOf(); len(got) != 2 || got[1].By != "" {
		t.Fatalf("a hold placed without a note: %+v, want no author", got)
	}
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// roundTrip writes one of every record kind with s, checks that a second
// store (another replica) loads them, deletes them and checks that no
// ConfigMap is left.
func roundTrip(t *testing.T, s *ConfigMapStore, other *ConfigMapStore, admin kubernetes.Interface) {
	t.Helper()
	colon := ref("prod-eu", "acme:eu", "api", hub.KindDeployment)
	svc := ref("prod-us", "shop", "front", hub.KindService)
	cm := ref("prod-us", "", "cluster-wide", hub.KindConfigMap)
	long := ref("prod-us", "shop", strings.Repeat("long-name.", 25), hub.KindConfigMap) // key hashed
	warn := svc
	warn.Policy = hub.PolicyWarn
	holds := []hub.Hold{
		{Target: hub.HoldTarget{Scope: hub.HoldApplication, Name: "shop"}, Reason: "incident 42", By: "carol", Since: t0(), Until: t0().Add(time.Hour)},
		{Target: hub.HoldTarget{Scope: hub.HoldCluster, Name: "prod-eu"}, Since: t0(), Until: t0().Add(2 * time.Hour)},
		{Target: hub.HoldTarget{Scope: hub.HoldNode, Name: colon.ID.String()}, Reason: "debugging", Since: t0(), Until: t0().Add(-time.Minute)},
	}
	want := hub.Intent{
		Paused:        map[string]bool{"prod-eu": true, "staging": true},
		PausedAt:      map[string]time.Time{"prod-eu": at0(), "staging": at0().Add(time.Second)},
		PauseNotes:    map[string]hub.SwitchNote{"prod-eu": {By: "alice", Reason: "INC-4211: failover to us-east"}},
		Policies:      map[string]hub.Policy{"shop": hub.PolicyWarn, "billing": hub.PolicyRepair},
		PolicySetAt:   map[string]time.Time{"shop": at0().Add(2 * time.Second), "billing": at0().Add(3 * time.Second)},
		PolicyNotes:   map[string]hub.SwitchNote{"shop": {By: "dave", Reason: "DB migration"}},
		Holds:         holds,
		Decommissions: []hub.DecommissionRecord{{Ref: colon, Since: t0()}, {Ref: cm, Since: t0().Add(time.Second), Orphan: true}, {Ref: long, Since: t0()}},
		Applied:       map[hub.NodeID]hub.SpecRef{colon.ID: colon, warn.ID: warn, cm.ID: cm, long.ID: long},
	}
	sortDecommissions(want.Decommissions)
	for c := range want.Paused {
		// staging's note is cleared by its second pause, without one.
		must(t, s.SetPaused(c, true, want.PausedAt[c].In(time.FixedZone("CET", 3600)), hub.SwitchNote{By: "bob", Reason: "first"}))
		must(t, s.SetPaused(c, true, want.PausedAt[c].In(time.FixedZone("CET", 3600)), want.PauseNotes[c]))
	}
	must(t, s.SetPaused("never", false, at0(), hub.SwitchNote{}))
	for a, p := range want.Policies {
		must(t, s.SetPolicy(a, p, want.PolicySetAt[a], want.PolicyNotes[a]))
	}
	for i := len(holds) - 1; i >= 0; i-- {
		must(t, s.PutHold(holds[i]))
	}
	for _, d := range want.Decommissions {
		must(t, s.PutDecommission(d))
	}
	must(t, s.PutApplied(svc)) // replaced below
	for _, r := range want.Applied {
		must(t, s.PutApplied(r))
	}
	got, err := other.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Load =\n%+v\nwant\n%+v", got, want)
	}
	// The overrides alone: no applied or decommission record read.
	over, err := other.LoadOverrides()
	if err != nil {
		t.Fatalf("LoadOverrides: %v", err)
	}
	wantOver := hub.Intent{Paused: want.Paused, PausedAt: want.PausedAt, PauseNotes: want.PauseNotes, Policies: want.Policies, PolicySetAt: want.PolicySetAt, PolicyNotes: want.PolicyNotes, Holds: want.Holds, Applied: map[hub.NodeID]hub.SpecRef{}}
	if !reflect.DeepEqual(over, wantOver) {
		t.Fatalf("LoadOverrides =\n%+v\nwant\n%+v", over, wantOver)
	}

	// Every ConfigMap carries the labels.
	list, err := admin.CoreV1().ConfigMaps(s.Namespace()).List(t.Context(), metav1.ListOptions{})
	must(t, err)
	times, notes := 0, 0
	for _, c := range list.Items {
		if c.Name == s.switchTimes().name {
			// Out of sight of older replicas' Load (see LabelSwitchTimesOf).
			times++
			if c.Labels[kubeobj.ManagedByLabel] != "driftwatch" || c.Labels[LabelSwitchTimesOf] != "hub-a" || c.Labels[LabelHub] != "" || c.Labels[LabelIntent] != "" {
				t.Errorf("configmap %s: labels %v", c.Name, c.Labels)
			}
			continue
		}
		if c.Name == s.switchNotes("").name {
			notes++
			if c.Labels[kubeobj.ManagedByLabel] != "driftwatch" || c.Labels[LabelSwitchNotesOf] != "hub-a" || c.Labels[LabelHub] != "" || c.Labels[LabelIntent] != "" {
				t.Errorf("configmap %s: labels %v", c.Name, c.Labels)
			}
			if len(c.Data) != 3 {
				t.Errorf("configmap %s: %v, want prod-eu's note, shop's override's and the application hold's", c.Name, c.Data)
			}
			continue
		}
		if c.Labels[kubeobj.ManagedByLabel] != "driftwatch" || c.Labels[LabelHub] != "hub-a" || c.Labels[LabelIntent] == "" {
			t.Errorf("configmap %s: labels %v", c.Name, c.Labels)
		}
	}
	if times != 1 || notes != 1 {
		t.Errorf("%d configmaps of switch times and %d of switch notes, want 1 each", times, notes)
	}

	for c := range want.Paused {
		must(t, other.SetPaused(c, false, at0(), hub.SwitchNote{}))
	}
	for a := range want.Policies {
		must(t, other.SetPolicy(a, "", at0(), hub.SwitchNote{}))
	}
	for _, h := range holds {
		must(t, other.DeleteHold(h.Target))
	}
	for _, d := range want.Decommissions {
		must(t, other.DeleteDecommission(d.Ref.ID))
	}
	for id := range want.Applied {
		must(t, other.DeleteApplied(id))
	}
	must(t, other.DeleteApplied(hub.NewNodeID("gone", "x", "y", hub.KindService))) // none: not an error
	got, err = s.Load()
	if err != nil {
		t.Fatalf("Load after deletes: %v", err)
	}
	empty := hub.Intent{Paused: map[string]bool{}, PausedAt: map[string]time.Time{}, PauseNotes: map[string]hub.SwitchNote{}, Policies: map[string]hub.Policy{}, PolicySetAt: map[string]time.Time{}, PolicyNotes: map[string]hub.SwitchNote{}, Applied: map[hub.NodeID]hub.SpecRef{}}
	if !reflect.DeepEqual(got, empty) {
		t.Errorf("Load after deletes = %+v, want empty", got)
	}
	if _, err := admin.CoreV1().ConfigMaps(s.Namespace()).Get(t.Context(), s.switchTimes().name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap of switch times after every resume and override removed: %v, want not found", err)
	}
	if _, err := admin.CoreV1().ConfigMaps(s.Namespace()).Get(t.Context(), s.switchNotes("").name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("configmap of switch notes after every resume and release: %v, want not found", err)
	}
	list, err = admin.CoreV1().ConfigMaps(s.Namespace()).List(t.Context(), metav1.ListOptions{LabelSelector: s.selector()})
	must(t, err)
	for _, c := range list.Items {
		t.Errorf("configmap %s left after its last record was deleted: %v", c.Name, c.Data)
	}
}

func testCMRoundTrip(t *testing.T, env cmEnv) {
	ns := env.newNamespace(t, "round-trip")
	roundTrip(t, newCMStore(t, env.admin, ns), newCMStore(t, env.admin, ns), env.admin)

	// Invalid input is refused before any request.
	s := newCMStore(t, env.admin, ns)
	for name, err := range map[string]error{
		"empty cluster":    s.SetPaused("", true, at0(), hub.SwitchNote{}),
		"empty app":        s.SetPolicy("", hub.PolicyWarn, at0(), hub.SwitchNote{}),
		"bad hold target":  s.PutHold(hub.Hold{Target: hub.HoldTarget{Scope: "team", Name: "x"}}),
		"bad node id":      s.PutApplied(hub.SpecRef{ID: hub.NodeID{Cluster: "c"}}),
		"bad decommission": s.DeleteDecommission(hub.NodeID{}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	for _, tt := range []struct{ ns, hub string }{{"", "hub-a"}, {ns, "Hub_A"}, {ns, ""}} {
		if _, err := NewConfigMapStore(t.Context(), env.admin, tt.ns, tt.hub, ConfigMapOptions{}); err == nil {
			t.Errorf("NewConfigMapStore(%q, %q): no error", tt.ns, tt.hub)
		}
	}
	must(t, s.Close())
	if err := s.SetPaused("prod", true, at0(), hub.SwitchNote{}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("write after Close = %v, want a closed error", err)
	}
}

// testCMConcurrent: two stores (two replicas) write and delete records of
// the same ConfigMaps at once, from several goroutines each; no write is
// lost.
func testCMConcurrent(t *testing.T, env cmEnv) {
	ns := env.newNamespace(t, "concurrent")
	replicas := []*ConfigMapStore{newCMStore(t, env.admin, ns), newCMStore(t, env.admin, ns)}
	const perWorker, workers = 40, 4
	want := make(map[hub.NodeID]hub.SpecRef)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(replicas)*workers)
	for ri, s := range replicas {
		for w := range workers {
			wg.Go(func() {
				for i := range perWorker {
					r := ref("prod", "shop", fmt.Sprintf("r%d-w%d-%d", ri, w, i), hub.KindConfigMap)
					if err := s.PutApplied(r); err != nil {
						errs <- err
						return
					}
					hold := hub.Hold{Target: hub.HoldTarget{Scope: hub.HoldApplication, Name: fmt.Sprintf("app-r%d-w%d-%d", ri, w, i)}, Since: t0(), Until: t0().Add(time.Hour)}
					if err := s.PutHold(hold); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					want[r.ID] = r
					mu.Unlock()
					if i%2 == 1 { // every other one is deleted again, by the other replica
						if err := replicas[1-ri].DeleteApplied(r.ID); err != nil {
							errs <- err
							return
						}
						if err := replicas[1-ri].DeleteHold(hold.Target); err != nil {
							errs <- err
							return
						}
						mu.Lock()
						delete(want, r.ID)
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := newCMStore(t, env.admin, ns).Load()
	must(t, err)
	if len(got.Applied) != len(want) || len(got.Holds) != len(want) {
		t.Errorf("loaded %d applied and %d holds, want %d of each", len(got.Applied), len(got.Holds), len(want))
	}
	for id, r := range want {
		if got.Applied[id] != r {
			t.Errorf("applied %s = %+v, want %+v", id, got.Applied[id], r)
		}
	}
	list, err := env.admin.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{LabelSelector: LabelIntent + "=" + kindApplied})
	must(t, err)
	if len(list.Items) < 2 || len(list.Items) > configMapShards {
		t.Errorf("%d applied configmaps for one cluster, want 2..%d", len(list.Items), configMapShards)
	}
}

// testCMCorrupt: hostile records fail Load with ErrCorrupt naming each
// ConfigMap and key; nothing is dropped, and writes to other keys keep them.
func testCMCorrupt(t *testing.T, env cmEnv) {
	ns := env.newNamespace(t, "corrupt")
	s := newCMStore(t, env.admin, ns)
	good := ref("prod", "shop", "api", hub.KindDeployment)
	must(t, s.PutApplied(good))
	must(t, s.SetPaused("prod", true, at0(), hub.SwitchNote{By: "alice"}))
	must(t, s.PutHold(hub.Hold{Target: hub.HoldTarget{Scope: hub.HoldCluster, Name: "prod"}, Since: t0(), Until: t0().Add(time.Hour)}))
	must(t, s.SetPolicy("shop", hub.PolicyWarn, at0(), hub.SwitchNote{}))
	appliedCM := s.locate(kindApplied, "prod", good.ID.String()).name
	var misplaced hub.SpecRef
	var misplacedKey string
	for i := 0; ; i++ {
		misplaced = ref("prod", "shop", fmt.Sprintf("misplaced-%d", i), hub.KindService)
		if loc := s.locate(kindApplied, "prod", misplaced.ID.String()); loc.name != appliedCM {
			misplacedKey = loc.key
			break
		}
	}
	other := ref("prod", "shop", "other", hub.KindService)
	patch := func(name string, data map[string]any) {
		t.Helper()
		body := fmt.Sprintf(`{"data":%s}`, mustJSON(t, data))
		_, err := env.admin.CoreV1().ConfigMaps(ns).Patch(t.Context(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		must(t, err)
	}
	patch(appliedCM, map[string]any{
		"not-json":   "{",
		"wrong-key":  `{"id":"prod:shop/x:service","name":"x","kind":"service"}`,
		misplacedKey: mustJSON(t, toRef(misplaced)),
		"extra-field": mustJSON(t, map[string]any{
			"id": "prod:shop/y:service", "name": "y", "kind": "service", "owner": "me",
		}),
	})
	patch("driftwatch-hub-a-policies", map[string]any{"billing": `"delete-everything"`})
	patch("driftwatch-hub-a-paused", map[string]any{"prod_2": "true"})
	patch(s.switchTimes().name, map[string]any{"paused_2Fprod": `"yesterday"`, "paused_2fprod": `"2026-12-01T09:00:00Z"`, "prod": `"2026-12-01T09:00:00Z"`})
	patch(s.switchNotes("").name, map[string]any{"dev": `{"switch":"paused/prod"}`})

	_, err := s.Load()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load = %v, want ErrCorrupt", err)
	}
	for _, want := range []string{
		"10 bad record(s)",
		ns + `/driftwatch-hub-a-switch-times key "paused_2Fprod": parsing time`,
		ns + `/driftwatch-hub-a-switch-times key "paused_2fprod": key is not the canonical key`,
		ns + `/driftwatch-hub-a-switch-times key "prod": "prod": not a switch`,
		ns + "/" + appliedCM + ` key "not-json"`,
		ns + "/" + appliedCM + ` key "wrong-key": record is for prod:shop/x:service`,
		ns + "/" + appliedCM + fmt.Sprintf(` key %q: record for %s belongs in configmap %s`, misplacedKey, misplaced.ID, s.locate(kindApplied, "prod", misplaced.ID.String()).name),
		ns + "/" + appliedCM + ` key "extra-field": json: unknown field "owner"`,
		ns + `/driftwatch-hub-a-policies key "billing": policy "delete-everything"`,
		ns + `/driftwatch-hub-a-paused key "prod_2"`,
		ns + `/driftwatch-hub-a-switch-notes key "dev": record is for "paused/prod", whose key is paused_2Fprod`,
		"nothing was changed",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load error does not contain %q:\n%v", want, err)
		}
	}

	// A write to the same ConfigMap keeps the bad records: they are never
	// dropped, only reported.
	must(t, s.PutApplied(other))
	must(t, s.DeleteApplied(good.ID))
	cm, err := env.admin.CoreV1().ConfigMaps(ns).Get(t.Context(), appliedCM, metav1.GetOptions{})
	must(t, err)
	for _, k := range []string{"not-json", "wrong-key", "extra-field", misplacedKey} {
		if _, ok := cm.Data[k]; !ok {
			t.Errorf("key %s dropped by a write to another key", k)
		}
	}

	// A ConfigMap with an unknown kind label is reported too.
	_, err = env.admin.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "stray", Labels: map[string]string{kubeobj.ManagedByLabel: "driftwatch", LabelHub: "hub-a", LabelIntent: "secrets"}},
	}, metav1.CreateOptions{})
	must(t, err)
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), `configmap `+ns+`/stray: label driftwatch.io/intent="secrets"`) {
		t.Errorf("Load = %v, want the stray configmap named", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return string(b)
}

// testCMRBAC: a service account whose Role grants configmaps in the store's
// namespace, and nothing else, can use the store; without the binding, or
// in another namespace, it cannot.
func testCMRBAC(t *testing.T, env cmEnv) {
	ns := env.newNamespace(t, "rbac")
	other := env.newNamespace(t, "rbac-other")
	ctx := t.Context()
	for _, sa := range []string{"driftwatch", "unbound"} {
		_, err := env.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		must(t, err)
	}
	_, err := env.admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "driftwatch-intent"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "create", "patch", "delete"},
		}},
	}, metav1.CreateOptions{})
	must(t, err)
	_, err = env.admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "driftwatch-intent"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "driftwatch-intent"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "driftwatch", Namespace: ns}},
	}, metav1.CreateOptions{})
	must(t, err)
	as := func(sa string) kubernetes.Interface {
		cfg := rest.CopyConfig(env.cfg)
		cfg.Impersonate = rest.ImpersonationConfig{
			UserName: "system:serviceaccount:" + ns + ":" + sa,
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	sa := as("driftwatch")
	// The apiserver's RBAC authorizer reads Roles and RoleBindings from
	// its informers: a binding just created takes a moment to hold.
	testwait.For(t, 10*time.Second, "the RoleBinding to hold", func() error {
		_, err := sa.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
	roundTrip(t, newCMStore(t, sa, ns), newCMStore(t, sa, ns), env.admin)

	for name, tt := range map[string]struct {
		cs kubernetes.Interface
		ns string
	}{
		"unbound account":   {as("unbound"), ns},
		"another namespace": {sa, other},
	} {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := NewConfigMapStore(ctx, tt.cs, tt.ns, "hub-a", ConfigMapOptions{})
		cancel()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: NewConfigMapStore = %v, want forbidden", name, err)
		}
	}
}

// TestGroupWriterLinger: a lone writer flushes at once, write after write;
// once writes come concurrently (one arrived while a flush ran, or a flush
// carried several), the leader waits linger for more before it flushes.
func TestGroupWriterLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const linger = 10 * time.Millisecond
		w := &groupWriter{pending: make(map[string]*string), linger: linger}
		var mu sync.Mutex
		var batches [][]string
		release := make(chan struct{}, 1)
		block := false
		flush := func(b map[string]*string) error {
			mu.Lock()
			batches = append(batches, slices.Sorted(maps.Keys(b)))
			wait := block
			block = false
			mu.Unlock()
			if wait {
				<-release
			}
			return nil
		}
		v := "v"
		start := time.Now()
		for _, k := range []string{"a", "b", "c"} {
			if err := w.do(k, &v, flush); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("a lone writer waited %v", d)
		}

		// d's flush runs while e and f arrive: e leads the next flush
		// and waits linger, during which g arrives.
		mu.Lock()
		block = true
		mu.Unlock()
		var wg sync.WaitGroup
		wg.Go(func() { _ = w.do("d", &v, flush) })
		synctest.Wait()
		wg.Go(func() { _ = w.do("e", &v, flush) })
		synctest.Wait()
		wg.Go(func() { _ = w.do("f", &v, flush) })
		synctest.Wait()
		start = time.Now()
		release <- struct{}{}
		synctest.Wait() // e lingers
		time.Sleep(linger / 2)
		wg.Go(func() { _ = w.do("g", &v, flush) })
		wg.Wait()
		if d := time.Since(start); d != linger {
			t.Errorf("the leader of a concurrent batch flushed after %v, want %v", d, linger)
		}

		// The last flush carried three writes: the next writer still
		// waits, alone, and the one after it no longer does.
		start = time.Now()
		_ = w.do("h", &v, flush)
		_ = w.do("i", &v, flush)
		if d := time.Since(start); d != linger {
			t.Errorf("after a batch of three: waited %v, want %v (once)", d, linger)
		}
		want := [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e", "f", "g"}, {"h"}, {"i"}}
		if !reflect.DeepEqual(batches, want) {
			t.Errorf("batches = %v, want %v", batches, want)
		}
		if w.flushes != len(want) {
			t.Errorf("flushes = %d, want %d", w.flushes, len(want))
		}
	})
}
