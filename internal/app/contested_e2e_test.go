package app

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/driftgen"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/tui"
)

// TestContestedEndToEnd: a second field manager (server-side apply with
// force) keeps undoing the hub's repairs of spec.replicas of a managed
// Deployment. The snapshot shows the NodeID contested with that manager;
// the proposed ignore rule (the node detail's i key) names the manager and
// spec.replicas; once that very rule is added to the application and the
// config reloaded, the contest clears and the hub stops repairing.
func TestContestedEndToEnd(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	const ns = "fight"
	path := e2eConfig(t, set, ns, "", "web", "worker")
	a := startApp(t, path, nil)
	a.waitSnap(t, 60*time.Second, "created", allInSync(2)) // api: Deployment and Service
	lc := set.Clusters[0]
	client := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	id := hub.NewNodeID(lc.Name, ns, "api", hub.KindDeployment)
	const manager = "fake-hpa"

	replicas := func(ctx context.Context) (int32, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		return *d.Spec.Replicas, nil
	}
	applyReplicas := func(ctx context.Context, n int) error {
		body := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"` + ns +
			`"},"spec":{"replicas":` + strconv.Itoa(n) + `}}`)
		force := true
		_, err := client.AppsV1().Deployments(ns).Patch(ctx, "api", types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: manager, Force: &force})
		return err
	}

	// The autoscaler: whenever spec.replicas is not 5, it applies 5.
	fightCtx, stopFight := context.WithCancel(t.Context())
	var fighter conc.WaitGroup
	fightErr := make(chan error, 1)
	fighter.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-fightCtx.Done():
				return
			case <-tick.C:
			}
			r, err := replicas(fightCtx)
			if err == nil && r != 5 {
				err = applyReplicas(fightCtx, 5)
			}
			if err != nil && fightCtx.Err() == nil {
				fightErr <- err
				return
			}
		}
	})
	defer func() {
		stopFight()
		fighter.Wait()
	}()

	snap := a.waitSnap(t, 90*time.Second, "contested with "+manager, func(s *hub.Snapshot) bool {
		n, ok := s.Node(id)
		return ok && n.Status == hub.StatusContested && n.Contested != nil && n.Contested.Manager == manager
	})
	select {
	case err := <-fightErr:
		t.Fatalf("the autoscaler's apply: %v", err)
	default:
	}
	node, _ := snap.Node(id)
	if !strings.Contains(node.Reason, manager) || node.Contested.Undone < 1 || node.Contested.Backoff <= 0 {
		t.Fatalf("contested node: reason %q, contest %+v; want the manager named, repairs undone and a backoff", node.Reason, *node.Contested)
	}
	rule := tui.ProposeIgnoreRule(node)
	for _, want := range []string{`managers: ["` + manager + `"]`, `"spec.replicas"`, "kinds: [Deployment]"} {
		if !strings.Contains(rule, want) {
			t.Fatalf("proposed rule lacks %s:\n%s", want, rule)
		}
	}

	// W in the node detail (--write-config): the proposed rule goes into
	// application api's ignore list in the file, which is reloaded. A
	// comment in the file survives the edit.
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before = append([]byte("# fleet config, edited by hand and by driftwatch\n"), before...)
	if err := os.WriteFile(path, before, 0o600); err != nil {
		t.Fatal(err)
	}
	msg, err := a.WriteIgnoreRule("api", rule)
	if err != nil {
		t.Fatalf("write the proposed rule: %v", err)
	}
	if !strings.Contains(msg, "reloaded") {
		t.Fatalf("WriteIgnoreRule message %q, want it to say the config was reloaded", msg)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(after), string(before[:strings.Index(string(before), "applications:")])) ||
		!strings.Contains(string(after), `managers: ["`+manager+`"]`) {
		t.Fatalf("config after the write:\n%s", after)
	}
	snap = a.waitSnap(t, 30*time.Second, "in sync with spec.replicas ignored", func(s *hub.Snapshot) bool {
		n, ok := s.Node(id)
		return ok && inSync(n.Status) && n.Contested == nil && ignoredBy(n, "spec.replicas", manager)
	})
	node, _ = snap.Node(id)
	lastRepair := node.LastRepair

	// Repairs stopped: the autoscaler's next change is seen and ignored.
	stopFight()
	fighter.Wait()
	ctx := t.Context()
	if err := applyReplicas(ctx, 7); err != nil {
		t.Fatal(err)
	}
	snap = a.waitSnap(t, 30*time.Second, "replicas 7 seen and ignored", func(s *hub.Snapshot) bool {
		n, ok := s.Node(id)
		if !ok || !inSync(n.Status) {
			return false
		}
		for _, f := range n.Ignored {
			if f.Path == "spec.replicas" && f.Actual == "7" {
				return true
			}
		}
		return false
	})
	node, _ = snap.Node(id)
	if r, err := replicas(ctx); err != nil || r != 7 {
		t.Fatalf("after the rule: replicas %d (%v), want 7 (the autoscaler's, not repaired)", r, err)
	}
	if (lastRepair == nil) != (node.LastRepair == nil) || (lastRepair != nil && !node.LastRepair.ObservedAt.Equal(lastRepair.ObservedAt)) {
		t.Fatalf("a repair was made after the rule was added: before %+v, now %+v", lastRepair, node.LastRepair)
	}
}

// ignoredBy reports whether the node's ignored differences hold path, owned
// by manager.
func ignoredBy(n hub.NodeStatus, path, manager string) bool {
	for _, f := range n.Ignored {
		if f.Path == path && f.Manager == manager {
			return true
		}
	}
	return false
}

// inSync holds for in sync and repaired.
func inSync(s hub.Status) bool { return s == hub.StatusInSync || s == hub.StatusRepaired }

// TestDemoAutoscalerOnARealControlPlane: the demo's fake autoscaler scales
// two Deployments back and forth; the one whose application ignores its
// field manager stays in sync with spec.replicas ignored, the other becomes
// contested with the autoscaler.
func TestDemoAutoscalerOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	const ns = "autoscaled"
	extra := `  - id: front
    namespace: ` + ns + `
    clusters: [c1]
    image: registry.example/front:1
    replicas: 3
    ignore:
      - name: autoscaler
        managers: [` + driftgen.AutoscalerManager + `]
        paths: ["/spec/replicas"]
`
	path := e2eConfig(t, set, ns, extra, "web", "worker")
	a := startApp(t, path, nil)
	a.waitSnap(t, 60*time.Second, "created", allInSync(3)) // api Deployment and Service, front Deployment
	lc := set.Clusters[0]
	front := hub.NewNodeID(lc.Name, ns, "front", hub.KindDeployment)
	api := hub.NewNodeID(lc.Name, ns, "api", hub.KindDeployment)
	client := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	scaler := driftgen.NewAutoscaler(map[string]kubernetes.Interface{lc.Name: client}, []hub.NodeID{front, api}, 4, 5)

	ctx, stop := context.WithCancel(t.Context())
	var wg conc.WaitGroup
	errs := make(chan error, 1)
	wg.Go(func() {
		scaler.Run(ctx, 100*time.Millisecond, func(err error) {
			select {
			case errs <- err:
			default:
			}
		})
	})
	defer func() {
		stop()
		wg.Wait()
	}()
	a.waitSnap(t, 90*time.Second, "api contested, front ignoring the autoscaler", func(s *hub.Snapshot) bool {
		f, ok1 := s.Node(front)
		n, ok2 := s.Node(api)
		return ok1 && ok2 && inSync(f.Status) && ignoredBy(f, "spec.replicas", driftgen.AutoscalerManager) &&
			n.Status == hub.StatusContested && n.Contested != nil && n.Contested.Manager == driftgen.AutoscalerManager
	})
	select {
	case err := <-errs:
		t.Fatalf("autoscaler: %v", err)
	default:
	}
	d, err := client.AppsV1().Deployments(ns).Get(t.Context(), "front", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := *d.Spec.Replicas; r != 4 && r != 5 {
		t.Fatalf("front replicas %d, want the autoscaler's 4 or 5 (never repaired to 3)", r)
	}
}
