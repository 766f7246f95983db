package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
)

// This file keeps the compiler's first way of building an application's
// objects, as the reference the direct JSON writer of compile.go must match
// byte for byte (TestCompileMatchesTypedObjects): typed Kubernetes objects,
// converted to unstructured content by reflection, pruned of the
// conversion's artefacts and encoded with encoding/json.

// typedCompileApp is compileApp through typed objects.
func typedCompileApp(c *Config, a Application, info ClusterInfo) []hub.NodeSpec {
	b := appBuilder{cfg: c, app: &a, cluster: info.ID, policy: c.PolicyFor(a, info), ignore: c.IgnoreFor(a)}
	b.resource = hub.NewNodeID(info.ID, a.Namespace, a.ID, hub.KindDeployment).Resource
	specs := []hub.NodeSpec{b.typedDeployment()}
	if a.Service != nil {
		specs = append(specs, b.typedService())
	}
	if len(a.Config) > 0 {
		specs = append(specs, b.typedConfigMap())
	}
	return specs
}

// meta returns the object metadata every kind shares, for the given NodeID.
func (b appBuilder) typedMeta(id hub.NodeID) metav1.ObjectMeta {
	a := b.app
	managedBy := b.cfg.Hub.ManagedBy
	if managedBy == "" {
		managedBy = kubeobj.DefaultManagedBy
	}
	labels := maps.Clone(a.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[kubeobj.ManagedByLabel] = managedBy
	labels[kubeobj.AppLabel] = a.ID
	labels[kubeobj.ApplicationLabel] = a.ID
	annotations := maps.Clone(a.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[kubeobj.NodeIDAnnotation] = id.String()
	annotations[kubeobj.HubAnnotation] = b.hubID()
	if a.Tenancy != "" {
		labels[kubeobj.TenancyLabel] = TenancyLabelValue(a.Tenancy)
		annotations[kubeobj.TenancyLabel] = a.Tenancy
	}
	return metav1.ObjectMeta{Name: a.ID, Namespace: a.Namespace, Labels: labels, Annotations: annotations}
}

// spec wraps a typed object into a NodeSpec.
func (b appBuilder) typedSpec(kind hub.Kind, obj runtime.Object, deadline time.Duration) hub.NodeSpec {
	a := b.app
	body := kubeobj.MustEncodeBody(typedToUnstructured(obj))
	return hub.NodeSpec{
		ID:               b.id(kind),
		Namespace:        a.Namespace,
		Name:             a.ID,
		Kind:             kind,
		Application:      a.ID,
		Tenancy:          a.Tenancy,
		Policy:           b.policy,
		ProgressDeadline: deadline,
		Body:             body,
		Hash:             hashBody(body),
		Ignore:           b.ignore,
	}
}

func (b appBuilder) typedDeployment() hub.NodeSpec {
	a := b.app
	id := b.id(hub.KindDeployment)
	selector := map[string]string{kubeobj.AppLabel: a.ID}

	podLabels := maps.Clone(a.Labels)
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	podLabels[kubeobj.AppLabel] = a.ID
	var podAnnotations map[string]string
	if len(a.Config) > 0 {
		podAnnotations = map[string]string{kubeobj.ConfigHashAnnotation: configHash(a.Config)}
	}

	ctr := corev1.Container{Name: ContainerName, Image: a.Image}
	if a.Port != 0 {
		ctr.Ports = []corev1.ContainerPort{{Name: PortName, ContainerPort: a.Port, Protocol: corev1.ProtocolTCP}}
	}
	// Secret references come first, sorted, then plain values, sorted: a
	// plain value can then use a secret one, as in $(DB_PASSWORD), since
	// Kubernetes expands only variables defined earlier in the list.
	for _, name := range slices.Sorted(maps.Keys(a.SecretEnv)) {
		ref := a.SecretEnv[name]
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name},
				Key:                  ref.Key,
			},
		}})
	}
	for _, name := range slices.Sorted(maps.Keys(a.Env)) {
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: name, Value: a.Env[name]})
	}
	if len(a.Config) > 0 {
		ctr.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: a.ID},
		}}}
	}
	ctr.Resources = corev1.ResourceRequirements{
		Requests: typedResourceList(a.Resources.Requests),
		Limits:   typedResourceList(a.Resources.Limits),
	}

	replicas := a.Replicas
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: b.typedMeta(id),
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
				Spec: corev1.PodSpec{
					Containers:   []corev1.Container{ctr},
					NodeSelector: maps.Clone(a.NodeSelector),
				},
			},
		},
	}
	deadline := DefaultProgressDeadline
	if a.ProgressDeadlineSeconds > 0 {
		s := a.ProgressDeadlineSeconds
		d.Spec.ProgressDeadlineSeconds = &s
		deadline = time.Duration(s) * time.Second
	}
	return b.typedSpec(hub.KindDeployment, d, deadline)
}

func (b appBuilder) typedService() hub.NodeSpec {
	a := b.app
	id := b.id(hub.KindService)
	s := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: b.typedMeta(id),
		Spec: corev1.ServiceSpec{
			// The minimal selector: changing other labels must never
			// disconnect the Service from its pods.
			Selector: map[string]string{kubeobj.AppLabel: a.ID},
			Ports: []corev1.ServicePort{{
				Name:       PortName,
				Port:       a.Service.Port,
				TargetPort: intstr.FromInt32(a.Service.TargetPort),
				Protocol:   corev1.ProtocolTCP,
			}},
			Type: a.Service.Type,
		},
	}
	return b.typedSpec(hub.KindService, s, 0)
}

func (b appBuilder) typedConfigMap() hub.NodeSpec {
	a := b.app
	id := b.id(hub.KindConfigMap)
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: b.typedMeta(id),
		Data:       maps.Clone(a.Config),
	}
	return b.typedSpec(hub.KindConfigMap, cm, 0)
}

// resourceList converts canonical quantity strings; nil when empty.
func typedResourceList(m map[string]string) corev1.ResourceList {
	if len(m) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(m))
	for name, v := range m {
		// Quantities serialise in canonical form, as the apiserver stores
		// them; Load has validated them already.
		out[corev1.ResourceName(name)] = resource.MustParse(v)
	}
	return out
}

// toUnstructured converts a typed object and removes the artefacts of the
// conversion (null creationTimestamp, empty status, strategy or resources):
// the desired object holds only fields driftwatch manages, because drift
// classification compares each of its leaves with the live object.
func typedToUnstructured(obj runtime.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		// Only reachable with a type the converter cannot handle: a bug.
		panic(fmt.Sprintf("config: convert %T: %v", obj, err))
	}
	typedPrune(m)
	u := &unstructured.Unstructured{Object: m}
	gvk := obj.GetObjectKind().GroupVersionKind()
	u.SetAPIVersion(gvk.GroupVersion().String())
	u.SetKind(gvk.Kind)
	return u
}

// prune deletes nil values, empty maps and empty lists, innermost first, and
// reports whether m is empty afterwards.
func typedPrune(m map[string]any) bool {
	for k, v := range m {
		if typedPruneValue(v) {
			delete(m, k)
		}
	}
	return len(m) == 0
}

// pruneValue prunes v in place and reports whether it should be removed.
func typedPruneValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return typedPrune(x)
	case []any:
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				typedPrune(m)
			}
		}
		return len(x) == 0
	}
	return false
}

// TestCompileMatchesTypedObjects compiles a varied set of applications,
// with every optional field set and unset and strings encoding/json
// escapes, both ways: the direct JSON writer must give the bodies, hashes
// and specs of the typed objects exactly.
func TestCompileMatchesTypedObjects(t *testing.T) {
	strs := []string{"", "plain", "a<b>&c", `q"uote\back`, "tab\tnl\n\x01\x7f", "ünïcødé ✓", "line\u2028sep\u2029", "bad\xffutf8", "$(DB_PASSWORD)"}
	quantities := []string{"100m", "0.5", "1Gi", "1e3", "128974848", "1.5Gi", "2"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	strMap := func(reserved ...string) map[string]string {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return map[string]string{}
		}
		m := map[string]string{}
		for range 1 + rng.IntN(4) {
			m[pick(strs)+fmt.Sprint(rng.IntN(3))] = pick(strs)
		}
		if len(reserved) > 0 && rng.IntN(2) == 0 {
			m[reserved[rng.IntN(len(reserved))]] = pick(strs) // replaced by the compiler's
		}
		return m
	}
	quantityMap := func() map[string]string {
		if rng.IntN(3) == 0 {
			return nil
		}
		m := map[string]string{}
		for _, name := range []string{"cpu", "memory", "ephemeral-storage"}[:1+rng.IntN(3)] {
			m[name] = pick(quantities)
		}
		return m
	}
	reservedLabels := []string{kubeobj.AppLabel, kubeobj.ManagedByLabel, kubeobj.ApplicationLabel, kubeobj.TenancyLabel}
	reservedAnnotations := []string{kubeobj.NodeIDAnnotation, kubeobj.HubAnnotation, kubeobj.TenancyLabel}
	hubs := []Hub{{}, {ID: "h1", ManagedBy: "custom"}, {ID: "h<2>", Policy: hub.PolicyWarn}}
	var n int
	for i := range 600 {
		a := Application{
			ID:                      []string{"app", "web-1", "x", "a&b"}[i%4],
			Namespace:               []string{"ns", "", "team-a"}[i%3],
			Tenancy:                 []string{"", "acme:eu", "t<1>"}[rng.IntN(3)],
			Image:                   []string{"", "img:1", "reg.example/a<b>:2"}[rng.IntN(3)],
			Replicas:                int32(rng.IntN(4)),
			Port:                    []int32{0, 8080}[rng.IntN(2)],
			Env:                     strMap(),
			Config:                  strMap(),
			Labels:                  strMap(reservedLabels...),
			Annotations:             strMap(reservedAnnotations...),
			NodeSelector:            strMap(),
			ProgressDeadlineSeconds: []int32{0, 0, 120}[rng.IntN(3)],
			Resources:               Resources{Requests: quantityMap(), Limits: quantityMap()},
			Policy:                  []hub.Policy{"", hub.PolicyRepair}[rng.IntN(2)],
		}
		if rng.IntN(2) == 0 {
			a.SecretEnv = map[string]SecretKeyRef{}
			for range rng.IntN(3) {
				a.SecretEnv["S"+pick(strs)] = SecretKeyRef{Name: pick(strs), Key: pick(strs)}
			}
			for name := range a.SecretEnv {
				delete(a.Env, name)
			}
		}
		if rng.IntN(3) > 0 {
			a.Service = &Service{Port: []int32{0, 80}[rng.IntN(2)], TargetPort: []int32{0, 8080}[rng.IntN(2)], Type: []corev1.ServiceType{"", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort}[rng.IntN(3)]}
		}
		if rng.IntN(4) == 0 {
			a.Ignore = []IgnoreRule{{Paths: []string{"/spec/replicas"}}}
		}
		cfg := &Config{Hub: hubs[i%len(hubs)]}
		info := ClusterInfo{ID: []string{"dev", "prod-eu"}[i%2], Policy: []hub.Policy{"", hub.PolicyWarn}[rng.IntN(2)]}
		want := typedCompileApp(cfg, a, info)
		got := compileApp(nil, cfg, &a, info, &bodyWriter{})
		if len(got) != len(want) {
			t.Fatalf("app %d: %d specs, want %d", i, len(got), len(want))
		}
		for j := range want {
			if string(got[j].Body) != string(want[j].Body) {
				t.Errorf("app %d %s: body\n got %s\nwant %s", i, want[j].ID, got[j].Body, want[j].Body)
			}
			if !reflect.DeepEqual(got[j], want[j]) {
				t.Errorf("app %d: spec\n got %+v\nwant %+v", i, got[j], want[j])
			}
			n++
		}
	}
	if n < 1000 {
		t.Errorf("compared %d objects, want at least 1000", n)
	}
}

// TestAppendJSONString checks that strings are written as encoding/json
// writes them.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "a", "a<b", "&", ">", `"`, `\`, "\x00", "\x1f", "\x7f", "\x80", "é", "\u2028", "\u2029", "\xff\xfe", "a\tb\nc\rd\be\ff", "plain text: with/slashes+sym=bols~"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := kubeobj.AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("appendJSONString(%q) = %s, want x%s", s, got, want)
		}
	}
	for c := range 256 {
		s := "k" + string([]byte{byte(c)}) + "v"
		want, _ := json.Marshal(s)
		if got := kubeobj.AppendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}
