package diff

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// fixture is a config with two applications on two real clusters, compiled
// and applied as the hub applies it.
type fixture struct {
	specs   []hub.NodeSpec
	cls     []clusters.ClusterConfig
	set     *localcluster.Set
	ns      string
	clients map[string]kubernetes.Interface
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	set := lctest.Start(t, localcluster.Options{Count: 2})
	ns := fmt.Sprintf("diff-%d", time.Now().UnixNano()%1e6)
	src := fmt.Sprintf(`hub:
  id: diff-test
clusters:
  - id: c1
    kubeconfig: %s
  - id: c2
    kubeconfig: %s
applications:
  - id: web
    namespace: %s
    clusters: [c1, c2]
    image: nginx:1.27
    replicas: 2
    port: 8080
    config: {mode: prod}
  - id: other
    namespace: %s
    clusters: [c1]
    image: busybox:1.37
    config: {level: info}
`, set.Clusters[0].Kubeconfig, set.Clusters[1].Kubeconfig, ns, ns)
	path := filepath.Join(t.TempDir(), "driftwatch.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, config.LoadOptions{})
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	f := &fixture{specs: config.Compile(cfg), set: set, ns: ns, clients: make(map[string]kubernetes.Interface)}
	for i, c := range cfg.Clusters {
		f.cls = append(f.cls, clusters.ClusterConfig{
			ID: c.ID, Kubeconfig: c.Kubeconfig, Context: c.Context, InCluster: c.InCluster,
			Namespaces: cfg.Namespaces(c.ID), ManagedBy: cfg.Hub.ManagedBy, HubID: cfg.Hub.ID,
		})
		cs, err := kubernetes.NewForConfig(set.Clusters[i].RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		f.clients[c.ID] = cs
	}
	// Create every object as the hub does: a server-side apply by the
	// driftwatch field manager.
	for _, cc := range f.cls {
		m, release, err := clusters.Connect(t.Context(), cc, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range f.specs {
			if s.ID.Cluster != cc.ID {
				continue
			}
			if _, err := m.Repair(t.Context(), s, hub.State{Fresh: true}, hub.Drift{Class: hub.DriftMissing}); err != nil {
				t.Fatalf("apply %s: %v", s.ID, err)
			}
		}
		release()
	}
	return f
}

func (f *fixture) run(t *testing.T, cls []clusters.ClusterConfig, opts Options) *Report {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	rep, err := Run(t.Context(), f.specs, cls, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func text(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func object(r *Report, id string) (Object, bool) {
	for _, o := range r.Objects {
		if o.ID.String() == id {
			return o, true
		}
	}
	return Object{}, false
}

// TestRunRealClusters diffs real control planes: in sync, filtered, drifted
// (a scaled Deployment, an added ConfigMap key, a deleted ConfigMap) with
// the field managers named, and with one cluster's apiserver stopped.
func TestRunRealClusters(t *testing.T) {
	f := newFixture(t)
	ns := f.ns
	id := func(cluster, name, kind string) string { return fmt.Sprintf("%s:%s/%s:%s", cluster, ns, name, kind) }

	t.Run("in sync", func(t *testing.T) {
		base := connGoroutines()
		rep := f.run(t, f.cls, Options{})
		// Run closed its connections: their goroutines end.
		testwait.For(t, 10*time.Second, "the connection goroutines to end", func() error {
			n := connGoroutines()
			return testwait.Check(n <= base, "%d connection goroutines after Run, %d before", n, base)
		})
		if got := rep.ExitCode(); got != ExitInSync {
			t.Errorf("exit code %d, want 0\n%s", got, text(t, rep))
		}
		// web: Deployment, Service, ConfigMap on c1 and c2; other:
		// Deployment and ConfigMap on c1.
		if len(rep.Objects) != 8 || len(rep.Unreachable) != 0 {
			t.Errorf("%d objects and %d unreachable, want 8 and 0", len(rep.Objects), len(rep.Unreachable))
		}
		for _, o := range rep.Objects {
			if o.Class != hub.DriftNone || o.Diff != "" || o.Err != nil {
				t.Errorf("%s: class %s, err %v, diff %q; want in sync", o.ID, o.Class, o.Err, o.Diff)
			}
		}
		if got, want := text(t, rep), "summary: 8 objects on 2 clusters: all in sync\n"; got != want {
			t.Errorf("text %q, want %q", got, want)
		}
	})

	// Drift on c1: scale web, add a key to web's ConfigMap, delete other's.
	ctx := t.Context()
	c1 := f.clients["c1"]
	if _, err := c1.AppsV1().Deployments(ns).UpdateScale(ctx, "web",
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}},
		metav1.UpdateOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.CoreV1().ConfigMaps(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"data":{"drift":"x"}}`),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if err := c1.CoreV1().ConfigMaps(ns).Delete(ctx, "other", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("drift", func(t *testing.T) {
		rep := f.run(t, f.cls, Options{})
		out := text(t, rep)
		t.Logf("diff output:\n%s", out)
		if got := rep.ExitCode(); got != ExitDrift {
			t.Errorf("exit code %d, want 1", got)
		}
		// The apiserver records no time for an update through the scale
		// subresource: kubectl-scale's entry has none.
		tests := []struct {
			id       string
			class    hub.DriftClass
			field    string
			manager  string
			withTime bool
		}{
			{id("c1", "web", "deployment"), hub.DriftModified, "spec.replicas: 2 -> 5", "kubectl-scale", false},
			{id("c1", "web", "configmap"), hub.DriftAdded, "+data.drift=x", "kubectl-edit", true},
			{id("c1", "other", "configmap"), hub.DriftMissing, "", "", false},
			{id("c2", "web", "deployment"), hub.DriftNone, "", "", false},
			{id("c1", "web", "service"), hub.DriftNone, "", "", false},
		}
		for _, tt := range tests {
			o, ok := object(rep, tt.id)
			if !ok {
				t.Errorf("%s: not in the report", tt.id)
				continue
			}
			if o.Class != tt.class {
				t.Errorf("%s: class %s, want %s", tt.id, o.Class, tt.class)
			}
			if tt.field != "" && (len(o.Fields) != 1 || o.Fields[0].String() != tt.field) {
				t.Errorf("%s: fields %v, want [%s]", tt.id, o.Fields, tt.field)
			}
			switch {
			case tt.manager == "" && o.Attribution != nil:
				t.Errorf("%s: attribution %v, want none", tt.id, o.Attribution)
			case tt.manager != "" && (o.Attribution == nil || o.Attribution.Manager != tt.manager || o.Attribution.At.IsZero() == tt.withTime):
				t.Errorf("%s: attribution %v, want %s (with a time: %v)", tt.id, o.Attribution, tt.manager, tt.withTime)
			}
		}
		for _, want := range []string{
			"--- desired " + id("c1", "web", "deployment") + "\n",
			"+++ live " + id("c1", "web", "deployment") + " (modified, changed by kubectl-scale)\n",
			"-  replicas: 2\n+  replicas: 5\n",
			"+++ live " + id("c1", "web", "configmap") + " (added, changed by kubectl-edit ",
			"+  drift: x\n",
			"+++ live " + id("c1", "other", "configmap") + " (missing)\n",
			"-  level: info\n",
			"summary: 8 objects on 2 clusters: 5 in sync, 3 drifted (1 missing, 1 modified, 1 added)\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("text lacks %q", want)
			}
		}
		if !regexp.MustCompile(`\(added, changed by kubectl-edit [0-9a-z]+ ago\)\n`).MatchString(out) {
			t.Error("text lacks when kubectl-edit changed the ConfigMap")
		}
		if strings.Contains(out, "c2:") || strings.Contains(out, "resourceVersion") || strings.Contains(out, "status") {
			t.Error("text shows in-sync objects or fields driftwatch does not manage")
		}
		var js bytes.Buffer
		if err := rep.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			ExitCode int `json:"exitCode"`
			Objects  []struct {
				NodeID      string `json:"nodeId"`
				Class       string `json:"class"`
				Attribution *struct {
					Manager string `json:"manager"`
				} `json:"attribution"`
			} `json:"objects"`
		}
		if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.ExitCode != ExitDrift || len(doc.Objects) != 8 {
			t.Errorf("json: exit code %d, %d objects; want 1 and 8", doc.ExitCode, len(doc.Objects))
		}
	})

	t.Run("filters", func(t *testing.T) {
		tests := []struct {
			name     string
			opts     Options
			objects  int
			exitCode int
		}{
			{"cluster c2 is in sync", Options{Clusters: []string{"c2"}}, 3, ExitInSync},
			{"cluster c1 drifted", Options{Clusters: []string{"c1"}}, 5, ExitDrift},
			{"application other", Options{Applications: []string{"other"}}, 2, ExitDrift},
			{"application web on c2", Options{Applications: []string{"web"}, Clusters: []string{"c2"}}, 3, ExitInSync},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				rep := f.run(t, f.cls, tt.opts)
				if len(rep.Objects) != tt.objects || rep.ExitCode() != tt.exitCode {
					t.Errorf("%d objects, exit code %d; want %d and %d\n%s", len(rep.Objects), rep.ExitCode(), tt.objects, tt.exitCode, text(t, rep))
				}
				for _, o := range rep.Objects {
					if len(tt.opts.Clusters) > 0 && o.ID.Cluster != tt.opts.Clusters[0] ||
						len(tt.opts.Applications) > 0 && o.Application != tt.opts.Applications[0] {
						t.Errorf("%s (application %s) is not filtered out", o.ID, o.Application)
					}
				}
			})
		}
		for _, opts := range []Options{{Clusters: []string{"c3"}}, {Applications: []string{"nope"}}} {
			_, err := Run(t.Context(), f.specs, f.cls, opts)
			if err == nil || !strings.Contains(err.Error(), "unknown") {
				t.Errorf("filter %v %v: err %v, want an unknown cluster or application", opts.Clusters, opts.Applications, err)
			}
		}
	})

	t.Run("starter config through $KUBECONFIG", func(t *testing.T) {
		// init's path: the contexts of a merged $KUBECONFIG become a
		// starter config without kubeconfig keys, whose clusters diff
		// reaches through the same $KUBECONFIG. Its example is not
		// applied: every object of it is missing.
		dir := t.TempDir()
		var files []string
		for _, lc := range f.set.Clusters {
			kc, err := clientcmd.LoadFromFile(lc.Kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			for old, ai := range kc.AuthInfos { // unique user names, as kind writes them
				delete(kc.AuthInfos, old)
				kc.AuthInfos[lc.Name+"-admin"] = ai
			}
			kc.Contexts[lc.Name].AuthInfo = lc.Name + "-admin"
			path := filepath.Join(dir, lc.Name+".yaml")
			if err := clientcmd.WriteToFile(*kc, path); err != nil {
				t.Fatal(err)
			}
			files = append(files, path)
		}
		getenv := func(k string) string {
			if k == "KUBECONFIG" {
				return strings.Join(files, string(filepath.ListSeparator))
			}
			return ""
		}
		kc, err := clusters.LoadKubeconfig("", getenv)
		if err != nil {
			t.Fatal(err)
		}
		out, err := config.Starter(kc, config.StarterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "driftwatch.yaml")
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path, config.LoadOptions{Getenv: getenv})
		if err != nil {
			t.Fatal(err)
		}
		var cls []clusters.ClusterConfig
		for _, c := range cfg.Clusters {
			if c.Kubeconfig != "" {
				t.Errorf("cluster %s: kubeconfig %q, want none", c.ID, c.Kubeconfig)
			}
			cls = append(cls, clusters.ClusterConfig{ID: c.ID, Context: c.Context, Getenv: getenv,
				Namespaces: cfg.Namespaces(c.ID), ManagedBy: cfg.Hub.ManagedBy, HubID: cfg.Hub.ID})
		}
		rep, err := Run(t.Context(), config.Compile(cfg), cls, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.ExitCode() != ExitDrift || len(rep.Objects) != 6 || len(rep.Unreachable) != 0 {
			t.Errorf("exit code %d, %d objects, %d unreachable; want 1, 6 and 0\n%s", rep.ExitCode(), len(rep.Objects), len(rep.Unreachable), text(t, rep))
		}
		for _, o := range rep.Objects {
			if o.Class != hub.DriftMissing || o.Application != config.StarterApplication {
				t.Errorf("%s: %s of %s, want the missing example", o.ID, o.Class, o.Application)
			}
		}
	})

	t.Run("unauthorized", func(t *testing.T) {
		// c2's kubeconfig with a token its apiserver does not know (an
		// expired or revoked one): 401.
		kc, err := clientcmd.LoadFromFile(f.cls[1].Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range kc.AuthInfos {
			u.Token = "expired-" + u.Token
		}
		stale := filepath.Join(t.TempDir(), "stale.yaml")
		if err := clientcmd.WriteToFile(*kc, stale); err != nil {
			t.Fatal(err)
		}
		broken := []clusters.ClusterConfig{f.cls[0], f.cls[1]}
		broken[1].Kubeconfig = stale
		rep := f.run(t, broken, Options{Timeout: 10 * time.Second})
		out := text(t, rep)
		t.Logf("diff output:\n%s", out)
		if got := rep.ExitCode(); got != ExitUnauthorized {
			t.Errorf("exit code %d, want %d", got, ExitUnauthorized)
		}
		if len(rep.Unauthorized) != 1 || rep.Unauthorized[0].Cluster != "c2" || rep.Unauthorized[0].Objects != 3 || len(rep.Unreachable) != 0 {
			t.Fatalf("unauthorized %v, unreachable %v; want c2 (3 objects) and none", rep.Unauthorized, rep.Unreachable)
		}
		if err := rep.Unauthorized[0].Err; !errors.Is(err, hub.ErrUnauthorized) || !strings.Contains(err.Error(), `cluster "c2": unauthorized`) {
			t.Errorf("error %v: want hub.ErrUnauthorized, naming the cluster", err)
		}
		for _, o := range rep.Objects {
			if o.ID.Cluster != "c1" {
				t.Errorf("%s is in the report", o.ID)
			}
		}
		if !strings.Contains(out, "unauthorized c2: ") || !strings.Contains(out, "; 1 cluster unauthorized (3 objects not checked)") {
			t.Errorf("text does not call c2 unauthorized")
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		// A kubeconfig to a closed port, and c2's apiserver stopped.
		closed := filepath.Join(t.TempDir(), "closed.yaml")
		if err := os.WriteFile(closed, []byte(`apiVersion: v1
kind: Config
clusters: [{name: x, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: x, user: {token: t}}]
contexts: [{name: x, context: {cluster: x, user: x}}]
current-context: x
`), 0o600); err != nil {
			t.Fatal(err)
		}
		broken := []clusters.ClusterConfig{f.cls[0], f.cls[1]}
		broken[1].Kubeconfig = closed
		rep := f.run(t, broken, Options{Timeout: 10 * time.Second})
		checkUnreachable(t, rep, "c2", "127.0.0.1:1")

		if err := f.set.Clusters[1].StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		rep = f.run(t, f.cls, Options{Timeout: 10 * time.Second})
		checkUnreachable(t, rep, "c2", f.set.Clusters[1].Server[len("https://"):])
	})
}

// checkUnreachable checks a report where cluster is unreachable (its error
// mentioning addr) and c1 is still diffed.
func checkUnreachable(t *testing.T, rep *Report, cluster, addr string) {
	t.Helper()
	out := text(t, rep)
	t.Logf("diff output:\n%s", out)
	if got := rep.ExitCode(); got != ExitUnreachable {
		t.Errorf("exit code %d, want 3\n%s", got, out)
	}
	if len(rep.Unreachable) != 1 || rep.Unreachable[0].Cluster != cluster || rep.Unreachable[0].Objects != 3 ||
		!strings.Contains(rep.Unreachable[0].Error(), addr) || !strings.Contains(rep.Unreachable[0].Error(), `cluster "`+cluster+`"`) {
		t.Errorf("unreachable %v, want %s (3 objects) naming %s", rep.Unreachable, cluster, addr)
	}
	if len(rep.Objects) != 5 {
		t.Errorf("%d objects, want c1's 5 still diffed", len(rep.Objects))
	}
	for _, o := range rep.Objects {
		if o.ID.Cluster != "c1" {
			t.Errorf("%s of an unreachable cluster is reported", o.ID)
		}
	}
	for _, want := range []string{"unreachable " + cluster + ": ", "(3 objects not checked)", "3 drifted", "; 1 cluster unreachable"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// connGoroutines counts the goroutines of HTTP connections.
func connGoroutines() int {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "golang.org/x/net/http2") || strings.Contains(g, "net/http.(*persistConn)") {
			n++
		}
	}
	return n
}

// TestRunCancelled: a cancelled context is an error, not an empty report.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Run(ctx, nil, nil, Options{})
	if err == nil {
		t.Error("Run with a cancelled context: want an error")
	}
}
