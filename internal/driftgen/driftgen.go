// Package driftgen makes drift on purpose: from a client of its own, with
// its own field manager, it deletes, scales, edits the image of, or removes
// the managed-by label from managed objects; it edits or deletes the files
// of a Terraform workspace's local_file resources. The demo runs it every few
// seconds so drift and repair are visible live; the benchmark uses it on a
// seeded schedule.
package driftgen

import (
	"context"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
)

// FieldManager is the field manager of every change the generator makes.
const FieldManager = "drift-generator"

// Action is one kind of drift.
type Action string

// Drift actions.
const (
	ActionDelete  Action = "delete"
	ActionScale   Action = "scale"
	ActionImage   Action = "image"
	ActionUnlabel Action = "unlabel"
	ActionEnv     Action = "env"
	ActionData    Action = "data"
	// ActionEdit rewrites a Target's File.
	ActionEdit Action = "edit"
)

// EditedContent is what ActionEdit writes into a file.
const EditedContent = "edited by " + FieldManager + "\n"

// Target is a managed object the generator may break.
type Target struct {
	ID   hub.NodeID
	Kind hub.Kind
	// File is the file a Terraform local_file resource manages; when set,
	// the generator edits it (and now and then deletes it) instead of
	// calling a cluster.
	File string
}

// Drift is one change the generator made.
type Drift struct {
	At     time.Time
	ID     hub.NodeID
	Action Action
	Err    error
}

// Generator breaks objects on the clusters it has clients for.
type Generator struct {
	clients map[string]kubernetes.Interface
	rng     *rand.Rand
	// dyn break the objects of other kinds (SetDynamic).
	dyn map[string]Dynamic

	mu      sync.Mutex
	enabled bool
}

// New returns a generator with one client per cluster id and a seeded
// random source (the same seed gives the same choices).
func New(clients map[string]kubernetes.Interface, seed uint64) *Generator {
	return &Generator{clients: clients, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), enabled: true}
}

// Dynamic is a cluster's dynamic client with the REST mapper that finds a
// kind's resource: the generator breaks objects of kinds other than the
// three it knows with it.
type Dynamic struct {
	Client dynamic.Interface
	Mapper meta.RESTMapper
}

// SetDynamic gives the generator a dynamic client per cluster id, for
// objects of any kind (manifest sources). Call it before Run.
func (g *Generator) SetDynamic(dyn map[string]Dynamic) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dyn = dyn
}

// SetEnabled turns the periodic generator on or off.
func (g *Generator) SetEnabled(on bool) {
	g.mu.Lock()
	g.enabled = on
	g.mu.Unlock()
}

// Enabled reports whether the periodic generator is on.
func (g *Generator) Enabled() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.enabled
}

// Toggle flips Enabled and returns the new value.
func (g *Generator) Toggle() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.enabled = !g.enabled
	return g.enabled
}

// actionsFor lists the drifts that make sense for a kind.
func actionsFor(k hub.Kind) []Action {
	switch k {
	case hub.KindDeployment:
		return []Action{ActionDelete, ActionScale, ActionImage, ActionUnlabel, ActionEnv}
	case hub.KindConfigMap:
		return []Action{ActionDelete, ActionUnlabel, ActionData}
	}
	if _, ok := genericEdits[k]; ok {
		return []Action{ActionDelete, ActionUnlabel, ActionEdit, ActionEdit}
	}
	return []Action{ActionDelete, ActionUnlabel}
}

// genericEdits are the field edits (merge patches) the generator makes on
// kinds beyond the three it knows, by slug: what an on-call engineer or a
// script changes by hand.
var genericEdits = map[hub.Kind]string{
	"statefulset.apps":                    `{"spec":{"template":{"spec":{"containers":[{"name":"db","image":"registry.example/tampered:latest"}]}}}}`,
	"cronjob.batch":                       `{"spec":{"suspend":true}}`,
	"horizontalpodautoscaler.autoscaling": `{"spec":{"maxReplicas":50}}`,
	"role.rbac.authorization.k8s.io":      `{"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`,
}

// fileActions are the drifts of a file: mostly edits, now and then a
// delete.
func fileActions() []Action { return []Action{ActionEdit, ActionEdit, ActionEdit, ActionDelete} }

// Pick chooses a target and an action (deterministic for a seed).
func (g *Generator) Pick(targets []Target) (Target, Action) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := targets[g.rng.IntN(len(targets))]
	acts := actionsFor(t.Kind)
	if t.File != "" {
		acts = fileActions()
	}
	return t, acts[g.rng.IntN(len(acts))]
}

// Do makes one drift.
func (g *Generator) Do(ctx context.Context, t Target, a Action) Drift {
	d := Drift{At: time.Now(), ID: t.ID, Action: a}
	if t.File != "" {
		d.Err = doFile(t.File, a)
		if d.Err != nil {
			d.Err = fmt.Errorf("%s %s: %w", a, t.ID, d.Err)
		}
		return d
	}
	c, ok := g.clients[t.ID.Cluster]
	if !ok {
		d.Err = fmt.Errorf("cluster %q: no client", t.ID.Cluster)
		return d
	}
	ns, name := t.ID.Namespace(), t.ID.Name()
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	unlabel := []byte(`{"metadata":{"labels":{"` + kubeobj.ManagedByLabel + `":null}}}`)
	var err error
	switch t.Kind {
	default:
		err = g.doGeneric(ctx, t, a, unlabel)
	case hub.KindDeployment:
		dc := c.AppsV1().Deployments(ns)
		switch a {
		case ActionDelete:
			err = dc.Delete(ctx, name, metav1.DeleteOptions{})
		case ActionScale:
			_, err = dc.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), opts, "scale")
		case ActionImage:
			_, err = dc.Patch(ctx, name, types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/tampered:latest"}]}}}}`), opts)
		case ActionEnv:
			_, err = dc.Patch(ctx, name, types.StrategicMergePatchType, []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"DEBUG","value":"true"}]}]}}}}`), opts)
		case ActionUnlabel:
			_, err = dc.Patch(ctx, name, types.MergePatchType, unlabel, opts)
		}
	case hub.KindService:
		sc := c.CoreV1().Services(ns)
		switch a {
		case ActionDelete:
			err = sc.Delete(ctx, name, metav1.DeleteOptions{})
		default:
			_, err = sc.Patch(ctx, name, types.MergePatchType, unlabel, opts)
		}
	case hub.KindConfigMap:
		cc := c.CoreV1().ConfigMaps(ns)
		switch a {
		case ActionDelete:
			err = cc.Delete(ctx, name, metav1.DeleteOptions{})
		case ActionData:
			_, err = cc.Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"injected":"by-drift-generator"}}`), opts)
		default:
			_, err = cc.Patch(ctx, name, types.MergePatchType, unlabel, opts)
		}
	}
	if err != nil {
		d.Err = fmt.Errorf("%s %s: %w", a, t.ID, err)
	}
	return d
}

// doGeneric makes a drift on an object of a kind beyond the three, through
// the cluster's dynamic client.
func (g *Generator) doGeneric(ctx context.Context, t Target, a Action, unlabel []byte) error {
	g.mu.Lock()
	d, ok := g.dyn[t.ID.Cluster]
	g.mu.Unlock()
	if !ok {
		return fmt.Errorf("cluster %q: no dynamic client for kind %s", t.ID.Cluster, t.Kind)
	}
	group, kind := t.Kind.GroupKind()
	gvk, err := d.Mapper.KindFor(schema.GroupVersionResource{Group: group, Resource: kind})
	if err != nil {
		return err
	}
	m, err := d.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	var rc dynamic.ResourceInterface = d.Client.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		rc = d.Client.Resource(m.Resource).Namespace(t.ID.Namespace())
	}
	name := t.ID.Name()
	opts := metav1.PatchOptions{FieldManager: FieldManager}
	switch a {
	case ActionDelete:
		return rc.Delete(ctx, name, metav1.DeleteOptions{})
	case ActionEdit:
		if patch, ok := genericEdits[t.Kind]; ok {
			pt := types.MergePatchType
			if t.Kind == "statefulset.apps" {
				pt = types.StrategicMergePatchType
			}
			_, err = rc.Patch(ctx, name, pt, []byte(patch), opts)
			return err
		}
	}
	_, err = rc.Patch(ctx, name, types.MergePatchType, unlabel, opts)
	return err
}

// Run makes one random drift every interval while enabled, reporting each
// to report (which must not block for long), until ctx ends.
func (g *Generator) Run(ctx context.Context, interval time.Duration, targets func() []Target, report func(Drift)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !g.Enabled() {
			continue
		}
		ts := targets()
		if len(ts) == 0 {
			continue
		}
		tgt, act := g.Pick(ts)
		report(g.Do(ctx, tgt, act))
	}
}

// doFile edits or deletes a file.
func doFile(path string, a Action) error {
	switch a {
	case ActionEdit:
		return os.WriteFile(path, []byte(EditedContent), 0o644)
	case ActionDelete:
		return os.Remove(path)
	}
	return fmt.Errorf("file %s: action %q does not apply to a file", path, a)
}
