package clusters

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// TestEnvSourceRepair proves, against a real kube-apiserver and through the
// whole loop (watch, hub, Kubernetes backend), that an env var whose source
// someone else switched is repaired to exactly the desired one. The value
// and valueFrom of an env var, and the sources inside valueFrom, cannot
// coexist, so server-side apply of the desired source alone is refused or
// leaves the other source behind. Starting from a Deployment compiled from
// an application with DB_PASSWORD from secretKeyRef db/password and a plain
// MODE, another field manager (kubectl-edit) replaces, in turn,
// DB_PASSWORD's valueFrom with a plain value, its secretKeyRef with a
// configMapKeyRef, and MODE's value with a valueFrom.fieldRef. Each time the
// hub must report the foreign member as an added field with its JSON
// pointer, repair it with remove+apply, and see its repair verified; a fresh
// GET must then show the container env equal to the desired env, with no
// trace of the foreign source.
func TestEnvSourceRepair(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	const hubID, ns, app = "hub-env", "apps", "api"
	cfg := &config.Config{
		Hub: config.Hub{ID: hubID},
		Applications: []config.Application{{
			ID: app, Namespace: ns, Clusters: []string{lc.Name}, Image: "registry.example/api:1", Replicas: 1,
			Env:       map[string]string{"MODE": "production"},
			SecretEnv: map[string]config.SecretKeyRef{"DB_PASSWORD": {Name: "db", Key: "password"}},
		}},
	}
	specs, err := config.CompileCluster(cfg, config.ClusterInfo{ID: lc.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 || specs[0].Kind != hub.KindDeployment {
		t.Fatalf("compiled %d specs, want one Deployment: %+v", len(specs), specs)
	}
	spec := specs[0]
	// The desired env, as the compiler writes it: secret references first.
	wantEnv := []any{
		map[string]any{"name": "DB_PASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "password"}}},
		map[string]any{"name": "MODE", "value": "production"},
	}
	if got := containerEnv(t, desiredOf(t, spec).Object); !reflect.DeepEqual(got, wantEnv) {
		t.Fatalf("desired env = %s, want %s", jsonText(got), jsonText(wantEnv))
	}

	// Every drift record the hub makes (classified, then applied).
	var (
		recMu   sync.Mutex
		records []hub.Repair
	)
	h := hub.New(hub.Options{
		ID:     hubID,
		Logger: testLogger(t),
		// Three repairs of one Deployment within a minute are this test's
		// own edits, not a fight with another controller.
		FightThreshold: 100,
		OnRecord: func(r hub.Repair) {
			recMu.Lock()
			records = append(records, r)
			recMu.Unlock()
		},
	})
	h.SetDesired(specs)
	r := NewRegistry(h, RegistryOptions{Logger: testLogger(t), Health: fastHealth, MinBackoff: 200 * time.Millisecond, MaxBackoff: time.Second})
	h.SetBackends(r)
	cc := clusterConfig(lc, ns)
	cc.HubID = hubID
	if err := r.Add(cc); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = r.Run(runCtx) })
	wg.Go(func() { _ = h.Run(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	c := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	liveEnv := func(t *testing.T) []any {
		t.Helper()
		d, err := c.AppsV1().Deployments(ns).Get(t.Context(), app, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		obj, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(d)
		if err != nil {
			t.Fatal(err)
		}
		return containerEnv(t, obj)
	}
	node := func() (hub.NodeStatus, bool) { return h.Snapshot().Node(spec.ID) }

	// The hub creates the Deployment (and its namespace) and sees it in sync.
	testwait.For(t, 60*time.Second, "the Deployment created and in sync", func() error {
		n, ok := node()
		return testwait.Check(ok && n.Status == hub.StatusInSync, "node %+v", n)
	})
	if got := liveEnv(t); !reflect.DeepEqual(got, wantEnv) {
		t.Fatalf("env after create = %s, want %s", jsonText(got), jsonText(wantEnv))
	}

	const envPath = "spec.template.spec.containers[app].env"
	const envPointer = "/spec/template/spec/containers/0/env"
	tests := []struct {
		name string
		// edit changes the live Deployment as another field manager.
		edit func(t *testing.T)
		// added is the foreign member the hub must report as added, and
		// pointer the JSON pointer it must give for its removal.
		added, pointer string
	}{
		{
			name: "secretKeyRef to plain value",
			edit: func(t *testing.T) {
				jsonPatchEnv(t, c, ns, app, 0, map[string]any{"name": "DB_PASSWORD", "value": "hunter2"})
			},
			added:   envPath + "[DB_PASSWORD].value",
			pointer: envPointer + "/0/value",
		},
		{
			name: "secretKeyRef to configMapKeyRef",
			edit: func(t *testing.T) {
				// A read-modify-write update, as kubectl edit does.
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					d, err := c.AppsV1().Deployments(ns).Get(t.Context(), app, metav1.GetOptions{})
					if err != nil {
						return err
					}
					env := d.Spec.Template.Spec.Containers[0].Env
					if len(env) == 0 || env[0].Name != "DB_PASSWORD" {
						return fmt.Errorf("unexpected env %+v", env)
					}
					env[0] = corev1.EnvVar{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}
					_, err = c.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			},
			// The apiserver refuses an empty valueFrom, so the pointer is
			// the whole valueFrom map's: the apply puts ours back.
			added:   envPath + "[DB_PASSWORD].valueFrom.configMapKeyRef",
			pointer: envPointer + "/0/valueFrom",
		},
		{
			name: "plain value to fieldRef",
			edit: func(t *testing.T) {
				jsonPatchEnv(t, c, ns, app, 1, map[string]any{"name": "MODE", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}})
			},
			added:   envPath + "[MODE].valueFrom",
			pointer: envPointer + "/1/valueFrom",
		},
	}
	for _, tt := range tests {
		ok := t.Run(tt.name, func(t *testing.T) {
			before, ok := node()
			if !ok || before.Status != hub.StatusInSync && before.Status != hub.StatusRepaired {
				t.Fatalf("node before the edit: %v, status %s (%s)", ok, before.Status, before.Reason)
			}
			recMu.Lock()
			start := len(records)
			recMu.Unlock()

			tt.edit(t)

			// The hub reports the foreign member as added, with its
			// pointer, and repairs with remove+apply.
			var applied hub.Repair
			testwait.For(t, 30*time.Second, "the drift reported and repaired", func() error {
				recMu.Lock()
				defer recMu.Unlock()
				for _, rec := range records[start:] {
					if rec.AppliedAt.IsZero() || !hasAdded(rec.Drift, tt.added, tt.pointer) {
						continue
					}
					applied = rec
					return nil
				}
				return fmt.Errorf("records since the edit: %s", recordsText(records[start:]))
			})
			t.Logf("repair: %s, action %s, attribution %+v", applied.Drift.Summary(), applied.Action, applied.Attribution)
			if applied.Action != actionRemoveApply || applied.Err != "" {
				t.Fatalf("repair action %q (err %q), want %q", applied.Action, applied.Err, actionRemoveApply)
			}
			// And sees its repair verified by the watch.
			testwait.For(t, 30*time.Second, "the repair verified", func() error {
				n, ok := node()
				if !ok || n.LastRepair == nil {
					return fmt.Errorf("node %+v", n)
				}
				lr := n.LastRepair
				return testwait.Check(!lr.AppliedAt.Before(applied.AppliedAt) && !lr.VerifiedAt.IsZero() &&
					(n.Status == hub.StatusRepaired || n.Status == hub.StatusInSync),
					"status %s (%s), last repair %s applied %v verified %v", n.Status, n.Reason, lr.Drift.Summary(), lr.AppliedAt, lr.VerifiedAt)
			})
			// A fresh GET shows exactly the desired env.
			if got := liveEnv(t); !reflect.DeepEqual(got, wantEnv) {
				t.Fatalf("live env after the repair = %s, want %s", jsonText(got), jsonText(wantEnv))
			}
		})
		if !ok {
			// The later cases start from the desired env: they would only
			// repeat this failure.
			break
		}
	}
}

// jsonPatchEnv replaces the env entry at index i of the first container with
// entry, as field manager kubectl-edit, after testing that the entry there
// has entry's name.
func jsonPatchEnv(t *testing.T, c kubernetes.Interface, ns, name string, i int, entry map[string]any) {
	t.Helper()
	path := fmt.Sprintf("/spec/template/spec/containers/0/env/%d", i)
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": path + "/name", "value": entry["name"]},
		{"op": "replace", "path": path, "value": entry},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppsV1().Deployments(ns).Patch(t.Context(), name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
}

// containerEnv returns the env list of a Deployment's first container.
func containerEnv(t *testing.T, obj map[string]any) []any {
	t.Helper()
	ctrs, _, err := unstructured.NestedSlice(obj, "spec", "template", "spec", "containers")
	if err != nil || len(ctrs) == 0 {
		t.Fatalf("containers: %v (%d)", err, len(ctrs))
	}
	ctr, ok := ctrs[0].(map[string]any)
	if !ok {
		t.Fatalf("container is %T", ctrs[0])
	}
	env, _, err := unstructured.NestedSlice(ctr, "env")
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// hasAdded reports whether d lists path as an added field with pointer.
func hasAdded(d hub.Drift, path, pointer string) bool {
	for _, f := range d.Fields {
		if f.Path == path && f.Added && f.Pointer == pointer {
			return true
		}
	}
	return false
}

func recordsText(recs []hub.Repair) string {
	out := ""
	for _, r := range recs {
		out += fmt.Sprintf("\n  %s action=%q applied=%v fields=%+v", r.Drift.Summary(), r.Action, !r.AppliedAt.IsZero(), r.Drift.Fields)
	}
	return out
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// desiredOf decodes a spec's desired object.
func desiredOf(t *testing.T, s hub.NodeSpec) *unstructured.Unstructured {
	t.Helper()
	u, err := kubeobj.Object(s)
	if err != nil || u == nil {
		t.Fatalf("%s: desired object: %v (nil %t)", s.ID, err, u == nil)
	}
	return u
}
