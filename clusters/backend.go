package clusters

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
)

// errNotConnected is returned by backend calls before the manager connected.
type notConnectedError struct{ cluster string }

func (e notConnectedError) Error() string {
	return fmt.Sprintf("cluster %q: not connected", e.cluster)
}

var _ hub.Backend = (*Manager)(nil)

// Read returns the live object of spec, or nil when it does not exist. With
// confirm false it reads the informer cache when that is synced; otherwise it
// GETs from the apiserver.
func (m *Manager) Read(ctx context.Context, spec hub.NodeSpec, confirm bool) (*unstructured.Unstructured, error) {
	if !confirm {
		if inf := m.informerFor(spec.Namespace, spec.Kind); inf != nil {
			obj, ok, err := inf.GetIndexer().GetByKey(spec.Namespace + "/" + spec.Name)
			if err != nil {
				return nil, fmt.Errorf("cluster %q: read %s from cache: %w", m.cfg.ID, spec.ID, err)
			}
			if !ok {
				return nil, nil
			}
			return toUnstructured(spec.Kind, obj.(runtime.Object))
		}
	}
	c := m.clientset()
	if c == nil {
		return nil, notConnectedError{m.cfg.ID}
	}
	obj, err := get(ctx, c, spec)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s", describe(m.cfg.ID, "get", resourceOf(spec.Kind)+" "+spec.Name, spec.Namespace, err))
	}
	obj.(interface {
		SetManagedFields([]metav1.ManagedFieldsEntry)
	}).SetManagedFields(nil)
	return toUnstructured(spec.Kind, obj)
}

// Apply server-side applies spec.Object with field manager driftwatch. It
// first applies without force; on a conflict it applies with force and
// returns the conflicts it overrode. A missing namespace is created.
func (m *Manager) Apply(ctx context.Context, spec hub.NodeSpec) (hub.ApplyResult, error) {
	c := m.clientset()
	if c == nil {
		return hub.ApplyResult{}, notConnectedError{m.cfg.ID}
	}
	body, err := json.Marshal(spec.Object.Object)
	if err != nil {
		return hub.ApplyResult{}, fmt.Errorf("cluster %q: apply %s: encode: %w", m.cfg.ID, spec.ID, err)
	}
	var res hub.ApplyResult
	out, err := patchApply(ctx, c, spec, body, false)
	if apierrors.IsConflict(err) {
		res.Conflicts = conflictsOf(err)
		out, err = patchApply(ctx, c, spec, body, true)
	}
	if apierrors.IsNotFound(err) && spec.Namespace != "" && strings.Contains(err.Error(), "namespaces") {
		_, cerr := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.Namespace}}, metav1.CreateOptions{FieldManager: hub.FieldManager})
		if cerr != nil && !apierrors.IsAlreadyExists(cerr) {
			return res, fmt.Errorf("%s", describe(m.cfg.ID, "create", "namespace "+spec.Namespace, "", cerr))
		}
		out, err = patchApply(ctx, c, spec, body, true)
	}
	if err != nil {
		return res, fmt.Errorf("%s", describe(m.cfg.ID, "apply", resourceOf(spec.Kind)+" "+spec.Name, spec.Namespace, err))
	}
	out.(interface {
		SetManagedFields([]metav1.ManagedFieldsEntry)
	}).SetManagedFields(nil)
	u, err := toUnstructured(spec.Kind, out)
	if err != nil {
		return res, err
	}
	res.Object = u
	return res, nil
}

// RemoveFields removes the entries at the JSON pointers with a JSON patch
// guarded by a resourceVersion test.
func (m *Manager) RemoveFields(ctx context.Context, spec hub.NodeSpec, resourceVersion string, pointers []string) error {
	c := m.clientset()
	if c == nil {
		return notConnectedError{m.cfg.ID}
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	ops := []op{{Op: "test", Path: "/metadata/resourceVersion", Value: resourceVersion}}
	// Remove list items from the highest index down so earlier removals do
	// not shift later pointers.
	ps := append([]string(nil), pointers...)
	sort.SliceStable(ps, func(i, j int) bool { return pointerLess(ps[j], ps[i]) })
	for _, p := range ps {
		ops = append(ops, op{Op: "remove", Path: p})
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("cluster %q: remove fields of %s: %w", m.cfg.ID, spec.ID, err)
	}
	opts := metav1.PatchOptions{FieldManager: hub.FieldManager}
	switch spec.Kind {
	case hub.KindDeployment:
		_, err = c.AppsV1().Deployments(spec.Namespace).Patch(ctx, spec.Name, types.JSONPatchType, body, opts)
	case hub.KindService:
		_, err = c.CoreV1().Services(spec.Namespace).Patch(ctx, spec.Name, types.JSONPatchType, body, opts)
	case hub.KindConfigMap:
		_, err = c.CoreV1().ConfigMaps(spec.Namespace).Patch(ctx, spec.Name, types.JSONPatchType, body, opts)
	default:
		return fmt.Errorf("cluster %q: remove fields of %s: unsupported kind %q", m.cfg.ID, spec.ID, spec.Kind)
	}
	if err != nil {
		return fmt.Errorf("%s", describe(m.cfg.ID, "patch", resourceOf(spec.Kind)+" "+spec.Name, spec.Namespace, err))
	}
	return nil
}

// pointerLess orders JSON pointers so that numeric segments compare as
// numbers.
func pointerLess(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		ai, aerr := strconv.Atoi(as[i])
		bi, berr := strconv.Atoi(bs[i])
		if aerr == nil && berr == nil {
			return ai < bi
		}
		return as[i] < bs[i]
	}
	return len(as) < len(bs)
}

// Delete deletes spec's object with the given propagation. A missing object
// is not an error.
func (m *Manager) Delete(ctx context.Context, spec hub.NodeSpec, p hub.Propagation) error {
	c := m.clientset()
	if c == nil {
		return notConnectedError{m.cfg.ID}
	}
	prop := metav1.DeletionPropagation(p)
	if prop == "" {
		prop = metav1.DeletePropagationBackground
	}
	opts := metav1.DeleteOptions{PropagationPolicy: &prop}
	var err error
	switch spec.Kind {
	case hub.KindDeployment:
		err = c.AppsV1().Deployments(spec.Namespace).Delete(ctx, spec.Name, opts)
	case hub.KindService:
		err = c.CoreV1().Services(spec.Namespace).Delete(ctx, spec.Name, opts)
	case hub.KindConfigMap:
		err = c.CoreV1().ConfigMaps(spec.Namespace).Delete(ctx, spec.Name, opts)
	default:
		return fmt.Errorf("cluster %q: delete %s: unsupported kind %q", m.cfg.ID, spec.ID, spec.Kind)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s", describe(m.cfg.ID, "delete", resourceOf(spec.Kind)+" "+spec.Name, spec.Namespace, err))
	}
	return nil
}

// ManagedFields GETs the live object and reports which manager owns which
// fields, with times. A missing object has no owners.
func (m *Manager) ManagedFields(ctx context.Context, spec hub.NodeSpec) ([]hub.FieldOwner, error) {
	c := m.clientset()
	if c == nil {
		return nil, notConnectedError{m.cfg.ID}
	}
	obj, err := get(ctx, c, spec)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s", describe(m.cfg.ID, "get", resourceOf(spec.Kind)+" "+spec.Name, spec.Namespace, err))
	}
	entries := obj.(metav1.Object).GetManagedFields()
	owners := make([]hub.FieldOwner, 0, len(entries))
	for _, e := range entries {
		o := hub.FieldOwner{Manager: e.Manager, Operation: string(e.Operation)}
		if e.Time != nil {
			o.Time = e.Time.Time
		}
		if e.FieldsV1 != nil {
			paths, err := hub.FieldsV1Paths(e.FieldsV1.Raw)
			if err != nil {
				return nil, fmt.Errorf("cluster %q: managedFields of %s: %w", m.cfg.ID, spec.ID, err)
			}
			o.Fields = paths
		}
		owners = append(owners, o)
	}
	return owners, nil
}

func get(ctx context.Context, c kubernetes.Interface, spec hub.NodeSpec) (runtime.Object, error) {
	switch spec.Kind {
	case hub.KindDeployment:
		return c.AppsV1().Deployments(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	case hub.KindService:
		return c.CoreV1().Services(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	case hub.KindConfigMap:
		return c.CoreV1().ConfigMaps(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	}
	return nil, fmt.Errorf("unsupported kind %q", spec.Kind)
}

func patchApply(ctx context.Context, c kubernetes.Interface, spec hub.NodeSpec, body []byte, force bool) (runtime.Object, error) {
	opts := metav1.PatchOptions{FieldManager: hub.FieldManager, Force: &force}
	switch spec.Kind {
	case hub.KindDeployment:
		return c.AppsV1().Deployments(spec.Namespace).Patch(ctx, spec.Name, types.ApplyPatchType, body, opts)
	case hub.KindService:
		return c.CoreV1().Services(spec.Namespace).Patch(ctx, spec.Name, types.ApplyPatchType, body, opts)
	case hub.KindConfigMap:
		return c.CoreV1().ConfigMaps(spec.Namespace).Patch(ctx, spec.Name, types.ApplyPatchType, body, opts)
	}
	return nil, fmt.Errorf("unsupported kind %q", spec.Kind)
}

// conflictsOf extracts the conflicting fields and managers from an apply
// conflict error.
func conflictsOf(err error) []hub.Conflict {
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Details == nil {
		return []hub.Conflict{{Field: "", Manager: err.Error()}}
	}
	var out []hub.Conflict
	for _, c := range st.Status().Details.Causes {
		mgr := c.Message
		if i := strings.Index(mgr, `"`); i >= 0 {
			if j := strings.Index(mgr[i+1:], `"`); j >= 0 {
				mgr = mgr[i+1 : i+1+j]
			}
		}
		out = append(out, hub.Conflict{Manager: mgr, Field: strings.TrimPrefix(c.Field, ".")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

func resourceOf(k hub.Kind) string { return informerKey{kind: k}.resource() }

// toUnstructured converts a typed object to unstructured content with its
// apiVersion and kind set. The input is not modified.
func toUnstructured(kind hub.Kind, obj runtime.Object) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	switch kind {
	case hub.KindDeployment:
		u.SetAPIVersion("apps/v1")
		u.SetKind("Deployment")
	case hub.KindService:
		u.SetAPIVersion("v1")
		u.SetKind("Service")
	case hub.KindConfigMap:
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
	}
	return u, nil
}
