package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/driftwatch/driftwatch/hub"
)

// Names the compiler gives inside the objects it builds.
const (
	// ContainerName is the name of an application's only container.
	ContainerName = "app"
	// PortName names the container port and the Service port.
	PortName = "http"
	// configHashLen is how many hex digits of the config data's SHA-256 the
	// pod template annotation keeps.
	configHashLen = 16
)

// WithoutDesired returns a copy of c without what only compiling its
// desired state reads: the applications, the sources and the objects they
// rendered to, a large part of a loaded config at scale. The copy compiles
// to nothing; its other sections are c's, and c is not changed.
func (c *Config) WithoutDesired() *Config {
	kept := *c
	kept.Applications, kept.Sources, kept.sources = nil, nil, nil
	return &kept
}

// Compile returns the desired state of every cluster in the file: one
// NodeSpec per Deployment, Service and ConfigMap of the applications and
// one per source object, sorted by NodeID string. The result is
// deterministic.
//
// Load has rendered the sources for the file's clusters and refused a
// config where that fails, so Compile cannot fail for a Config it made. A
// Config built by hand is rendered here, and Compile panics when one of
// its sources does not render: use CompileCluster, which returns the
// error.
func Compile(c *Config) []hub.NodeSpec {
	var out []hub.NodeSpec
	for _, cl := range c.Clusters {
		specs, err := compileCluster(c, cl.Info())
		if err != nil {
			panic(fmt.Sprintf("config: Compile: %v", err))
		}
		out = append(out, specs...)
	}
	sortSpecs(out)
	return out
}

// CompileCluster returns the desired state of one cluster, which need not be
// in the file (a cluster discovered at runtime), sorted by NodeID string.
// The sources targeting a cluster that is not in the file are rendered on
// first use (once per distinct path): the error says when one of them
// does not render, names a label the cluster lacks, or gives the cluster
// an object that another source or an application has too.
func CompileCluster(c *Config, info ClusterInfo) ([]hub.NodeSpec, error) {
	out, err := compileCluster(c, info)
	if err != nil {
		return nil, err
	}
	sortSpecs(out)
	return out, nil
}

func compileCluster(c *Config, info ClusterInfo) ([]hub.NodeSpec, error) {
	var out []hub.NodeSpec
	for _, a := range c.AppsFor(info) {
		out = append(out, compileApp(c, a, info)...)
	}
	specs, err := c.compileSources(info)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", info.ID, err)
	}
	return append(out, specs...), nil
}

func sortSpecs(specs []hub.NodeSpec) {
	slices.SortFunc(specs, func(a, b hub.NodeSpec) int { return strings.Compare(a.ID.String(), b.ID.String()) })
}

// compileApp builds the objects of one application on one cluster.
func compileApp(c *Config, a Application, info ClusterInfo) []hub.NodeSpec {
	b := appBuilder{cfg: c, app: a, cluster: info.ID, policy: c.PolicyFor(a, info), ignore: c.IgnoreFor(a)}
	b.resource = hub.NewNodeID(info.ID, a.Namespace, a.ID, hub.KindDeployment).Resource
	specs := []hub.NodeSpec{b.deployment()}
	if a.Service != nil {
		specs = append(specs, b.service())
	}
	if len(a.Config) > 0 {
		specs = append(specs, b.configMap())
	}
	return specs
}

// appBuilder builds the objects of one application on one cluster.
type appBuilder struct {
	cfg     *Config
	app     Application
	cluster string
	policy  hub.Policy
	ignore  *hub.IgnoreSet
	// resource is the NodeID resource (namespace/name) the app's specs
	// share: one string per app, not one per kind, in every NodeID the
	// hub keeps.
	resource string
}

// id returns the NodeID of the app's object of the given kind.
func (b appBuilder) id(kind hub.Kind) hub.NodeID {
	return hub.NodeID{Cluster: b.cluster, Resource: b.resource, Kind: kind}
}

// meta returns the object metadata every kind shares, for the given NodeID.
func (b appBuilder) meta(id hub.NodeID) metav1.ObjectMeta {
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

// hubID is the id of the hub that owns the objects.
func (b appBuilder) hubID() string {
	if b.cfg.Hub.ID == "" {
		return DefaultHubID
	}
	return b.cfg.Hub.ID
}

// spec wraps a typed object into a NodeSpec.
func (b appBuilder) spec(kind hub.Kind, obj runtime.Object, deadline time.Duration) hub.NodeSpec {
	a := b.app
	body := kubeobj.MustEncodeBody(toUnstructured(obj))
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

func (b appBuilder) deployment() hub.NodeSpec {
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
		Requests: resourceList(a.Resources.Requests),
		Limits:   resourceList(a.Resources.Limits),
	}

	replicas := a.Replicas
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: b.meta(id),
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
	return b.spec(hub.KindDeployment, d, deadline)
}

func (b appBuilder) service() hub.NodeSpec {
	a := b.app
	id := b.id(hub.KindService)
	s := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: b.meta(id),
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
	return b.spec(hub.KindService, s, 0)
}

func (b appBuilder) configMap() hub.NodeSpec {
	a := b.app
	id := b.id(hub.KindConfigMap)
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: b.meta(id),
		Data:       maps.Clone(a.Config),
	}
	return b.spec(hub.KindConfigMap, cm, 0)
}

// resourceList converts canonical quantity strings; nil when empty.
func resourceList(m map[string]string) corev1.ResourceList {
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
func toUnstructured(obj runtime.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		// Only reachable with a type the converter cannot handle: a bug.
		panic(fmt.Sprintf("config: convert %T: %v", obj, err))
	}
	prune(m)
	u := &unstructured.Unstructured{Object: m}
	gvk := obj.GetObjectKind().GroupVersionKind()
	u.SetAPIVersion(gvk.GroupVersion().String())
	u.SetKind(gvk.Kind)
	return u
}

// prune deletes nil values, empty maps and empty lists, innermost first, and
// reports whether m is empty afterwards.
func prune(m map[string]any) bool {
	for k, v := range m {
		if pruneValue(v) {
			delete(m, k)
		}
	}
	return len(m) == 0
}

// pruneValue prunes v in place and reports whether it should be removed.
func pruneValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return prune(x)
	case []any:
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				prune(m)
			}
		}
		return len(x) == 0
	}
	return false
}

// hashBody is the SHA-256 (hex) of the object's JSON, whose map keys
// encoding/json writes sorted.
func hashBody(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// configHash is a short SHA-256 of config data with sorted keys.
func configHash(data map[string]string) string {
	b, err := json.Marshal(data) // keys sorted
	if err != nil {
		panic(fmt.Sprintf("config: marshal config data: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:configHashLen]
}
