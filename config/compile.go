package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sourcegraph/conc/iter"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
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
// to nothing; its other sections are c's, and c is not changed. It keeps
// the file's text (Data) only for a config with Git sources, whose new
// commits parse it again.
func (c *Config) WithoutDesired() *Config {
	kept := *c
	kept.Applications, kept.Sources, kept.sources = nil, nil, nil
	if !c.HasGitSources() {
		// Only a Git source's new commit parses the content again
		// (Data); without one the file's text need not stay.
		kept.text = ""
	}
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
	perCluster, err := compileEach(c, c.ClusterInfos(), 0)
	if err != nil {
		panic(fmt.Sprintf("config: Compile: %v", err))
	}
	var out []hub.NodeSpec
	if len(perCluster) == 1 {
		out = perCluster[0] // not copied: a large cluster's are megabytes
	} else {
		out = slices.Concat(perCluster...)
	}
	sortSpecs(out) // once, over every cluster's
	return out
}

// CompileClusters is CompileCluster for each cluster of infos, the clusters
// compiled in parallel (one per core at most): the desired states in the
// order of infos, or the first cluster's error in that order.
func CompileClusters(c *Config, infos []ClusterInfo) ([][]hub.NodeSpec, error) {
	return compileEach(c, infos, compileSorted)
}

// OutlineClusters is CompileClusters without the bodies of the
// applications' objects: their NodeSpecs have no Body and no Hash, the
// rest is what CompileClusters gives. Writing and hashing the bodies is
// most of compiling a large config, and a plan of what would be managed
// (`driftwatch check`) reads none of them. The source objects are
// rendered, and their errors returned, as CompileClusters does.
func OutlineClusters(c *Config, infos []ClusterInfo) ([][]hub.NodeSpec, error) {
	return compileEach(c, infos, compileSorted|compileOutline)
}

// compileMode says how compileEach compiles.
type compileMode uint8

const (
	// compileSorted sorts each cluster's specs.
	compileSorted compileMode = 1 << iota
	// compileOutline leaves the applications' bodies out.
	compileOutline
)

// compileEach compiles each cluster of infos in parallel.
func compileEach(c *Config, infos []ClusterInfo, mode compileMode) ([][]hub.NodeSpec, error) {
	type result struct {
		specs []hub.NodeSpec
		err   error
	}
	// A panic in one is re-raised here, once every cluster is done.
	results := iter.Map(infos, func(info *ClusterInfo) result {
		specs, err := compileCluster(c, *info, mode&compileOutline != 0)
		if err == nil && mode&compileSorted != 0 {
			sortSpecs(specs)
		}
		return result{specs, err}
	})
	out := make([][]hub.NodeSpec, len(results))
	for i, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		out[i] = r.specs
	}
	return out, nil
}

// CompileCluster returns the desired state of one cluster, which need not be
// in the file (a cluster discovered at runtime), sorted by NodeID string.
// The sources targeting a cluster that is not in the file are rendered on
// first use (once per distinct path): the error says when one of them
// does not render, names a label the cluster lacks, or gives the cluster
// an object that another source or an application has too.
func CompileCluster(c *Config, info ClusterInfo) ([]hub.NodeSpec, error) {
	out, err := compileCluster(c, info, false)
	if err != nil {
		return nil, err
	}
	sortSpecs(out)
	return out, nil
}

// compileCluster compiles one cluster, unsorted; outline leaves the
// applications' bodies out.
func compileCluster(c *Config, info ClusterInfo, outline bool) ([]hub.NodeSpec, error) {
	apps := c.appIndexes(info)
	out := make([]hub.NodeSpec, 0, 3*len(apps)) // at most 3 objects an app
	w := &bodyWriter{}
	if outline {
		w = nil
	}
	for _, i := range apps {
		out = compileApp(out, c, &c.Applications[i], info, w)
	}
	specs, err := c.compileSources(info)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", info.ID, err)
	}
	if len(out) == 0 {
		return specs, nil // a cluster of sources alone: not copied
	}
	return append(out, specs...), nil
}

// sortSpecs sorts specs by NodeID string, without building the strings.
func sortSpecs(specs []hub.NodeSpec) {
	slices.SortFunc(specs, func(a, b hub.NodeSpec) int { return hub.CompareText(a.ID, b.ID) })
}

// compileApp appends the objects of one application on one cluster to out,
// writing their bodies with w, or none when w is nil.
func compileApp(out []hub.NodeSpec, c *Config, a *Application, info ClusterInfo, w *bodyWriter) []hub.NodeSpec {
	b := appBuilder{cfg: c, app: a, cluster: info.ID, policy: c.PolicyFor(*a, info), ignore: c.IgnoreFor(*a), w: w}
	b.resource = hub.NewNodeID(info.ID, a.Namespace, a.ID, hub.KindDeployment).Resource
	out = append(out, b.deployment())
	if a.Service != nil {
		out = append(out, b.service())
	}
	if len(a.Config) > 0 {
		out = append(out, b.configMap())
	}
	return out
}

// appBuilder builds the objects of one application on one cluster.
type appBuilder struct {
	cfg *Config
	// app is the application (in cfg, not copied: read only).
	app     *Application
	cluster string
	policy  hub.Policy
	ignore  *hub.IgnoreSet
	// resource is the NodeID resource (namespace/name) the app's specs
	// share: one string per app, not one per kind, in every NodeID the
	// hub keeps.
	resource string
	// w writes the objects' bodies, one at a time; nil leaves them out.
	w *bodyWriter
}

// id returns the NodeID of the app's object of the given kind.
func (b appBuilder) id(kind hub.Kind) hub.NodeID {
	return hub.NodeID{Cluster: b.cluster, Resource: b.resource, Kind: kind}
}

// hubID is the id of the hub that owns the objects.
func (b appBuilder) hubID() string {
	if b.cfg.Hub.ID == "" {
		return DefaultHubID
	}
	return b.cfg.Hub.ID
}

// spec wraps an object's JSON body into a NodeSpec (no body, no hash:
// an outline).
func (b appBuilder) spec(kind hub.Kind, body []byte, deadline time.Duration) hub.NodeSpec {
	a := b.app
	hash := ""
	if body != nil {
		hash = hashBody(body)
	}
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
		Hash:             hash,
		Ignore:           b.ignore,
	}
}

// The objects' bodies are written as JSON directly (bodyWriter), in the
// bytes encoding/json gives for the unstructured form of the typed
// Kubernetes object: keys sorted, a field tagged omitempty left out when
// empty, no null, no empty map or list (no creationTimestamp, status,
// strategy or empty resources). The desired object holds only fields
// driftwatch manages, because drift classification compares each of its
// leaves with the live object; and the bytes and their hash are those the
// applied records hold, so they must not change.
// TestCompileMatchesTypedObjects checks them against the typed objects.

// metadata writes the object metadata every kind shares, for the given
// NodeID.
func (b appBuilder) metadata(w *bodyWriter, id hub.NodeID) {
	a := b.app
	managedBy := b.cfg.Hub.ManagedBy
	if managedBy == "" {
		managedBy = kubeobj.DefaultManagedBy
	}
	w.key("metadata")
	w.open('{')
	w.key("annotations")
	if a.Tenancy != "" {
		w.strMap(a.Annotations, mapEntry{kubeobj.NodeIDAnnotation, id.String()}, mapEntry{kubeobj.HubAnnotation, b.hubID()}, mapEntry{kubeobj.TenancyLabel, a.Tenancy})
	} else {
		w.strMap(a.Annotations, mapEntry{kubeobj.NodeIDAnnotation, id.String()}, mapEntry{kubeobj.HubAnnotation, b.hubID()})
	}
	w.key("labels")
	if a.Tenancy != "" {
		w.strMap(a.Labels, mapEntry{kubeobj.ManagedByLabel, managedBy}, mapEntry{kubeobj.AppLabel, a.ID}, mapEntry{kubeobj.ApplicationLabel, a.ID}, mapEntry{kubeobj.TenancyLabel, TenancyLabelValue(a.Tenancy)})
	} else {
		w.strMap(a.Labels, mapEntry{kubeobj.ManagedByLabel, managedBy}, mapEntry{kubeobj.AppLabel, a.ID}, mapEntry{kubeobj.ApplicationLabel, a.ID})
	}
	w.optStr("name", a.ID)
	w.optStr("namespace", a.Namespace)
	w.close('}')
}

func (b appBuilder) deployment() hub.NodeSpec {
	a := b.app
	w := b.w
	if w == nil {
		return b.spec(hub.KindDeployment, nil, progressDeadline(a))
	}
	w.reset()
	w.open('{')
	w.key("apiVersion")
	w.str("apps/v1")
	w.key("kind")
	w.str("Deployment")
	b.metadata(w, b.id(hub.KindDeployment))
	w.key("spec")
	w.open('{')
	if s := a.ProgressDeadlineSeconds; s > 0 {
		w.key("progressDeadlineSeconds")
		w.int(int64(s))
	}
	w.key("replicas")
	w.int(int64(a.Replicas))
	w.key("selector")
	w.open('{')
	w.key("matchLabels")
	w.strMap(nil, mapEntry{kubeobj.AppLabel, a.ID})
	w.close('}')
	w.key("template")
	w.open('{')
	w.key("metadata")
	w.open('{')
	if len(a.Config) > 0 {
		w.key("annotations")
		w.strMap(nil, mapEntry{kubeobj.ConfigHashAnnotation, configHash(a.Config)})
	}
	w.key("labels")
	w.strMap(a.Labels, mapEntry{kubeobj.AppLabel, a.ID})
	w.close('}')
	w.key("spec")
	w.open('{')
	w.key("containers")
	w.open('[')
	b.container(w)
	w.close(']')
	if len(a.NodeSelector) > 0 {
		w.key("nodeSelector")
		w.strMap(a.NodeSelector)
	}
	w.close('}') // template.spec
	w.close('}') // template
	w.close('}') // spec
	w.close('}')
	return b.spec(hub.KindDeployment, w.body(), progressDeadline(a))
}

// progressDeadline is how long the application's rollout may take.
func progressDeadline(a *Application) time.Duration {
	if s := a.ProgressDeadlineSeconds; s > 0 {
		return time.Duration(s) * time.Second
	}
	return DefaultProgressDeadline
}

// container writes the application's only container.
func (b appBuilder) container(w *bodyWriter) {
	a := b.app
	w.open('{')
	// Secret references come first, sorted, then plain values, sorted: a
	// plain value can then use a secret one, as in $(DB_PASSWORD), since
	// Kubernetes expands only variables defined earlier in the list.
	if len(a.SecretEnv)+len(a.Env) > 0 {
		w.key("env")
		w.open('[')
		for _, name := range slices.Sorted(maps.Keys(a.SecretEnv)) {
			ref := a.SecretEnv[name]
			w.open('{')
			w.key("name")
			w.str(name)
			w.key("valueFrom")
			w.open('{')
			w.key("secretKeyRef")
			w.open('{')
			w.key("key")
			w.str(ref.Key)
			w.optStr("name", ref.Name)
			w.close('}')
			w.close('}')
			w.close('}')
		}
		for _, name := range slices.Sorted(maps.Keys(a.Env)) {
			w.open('{')
			w.key("name")
			w.str(name)
			w.optStr("value", a.Env[name])
			w.close('}')
		}
		w.close(']')
	}
	if len(a.Config) > 0 {
		w.key("envFrom")
		w.open('[')
		w.open('{')
		if a.ID != "" {
			w.key("configMapRef")
			w.open('{')
			w.key("name")
			w.str(a.ID)
			w.close('}')
		}
		w.close('}')
		w.close(']')
	}
	w.optStr("image", a.Image)
	w.key("name")
	w.str(ContainerName)
	if a.Port != 0 {
		w.key("ports")
		w.open('[')
		w.open('{')
		w.key("containerPort")
		w.int(int64(a.Port))
		w.key("name")
		w.str(PortName)
		w.key("protocol")
		w.str(string(corev1.ProtocolTCP))
		w.close('}')
		w.close(']')
	}
	if len(a.Resources.Limits)+len(a.Resources.Requests) > 0 {
		w.key("resources")
		w.open('{')
		if len(a.Resources.Limits) > 0 {
			w.key("limits")
			w.strMap(canonicalQuantities(a.Resources.Limits))
		}
		if len(a.Resources.Requests) > 0 {
			w.key("requests")
			w.strMap(canonicalQuantities(a.Resources.Requests))
		}
		w.close('}')
	}
	w.close('}')
}

func (b appBuilder) service() hub.NodeSpec {
	a := b.app
	w := b.w
	if w == nil {
		return b.spec(hub.KindService, nil, 0)
	}
	w.reset()
	w.open('{')
	w.key("apiVersion")
	w.str("v1")
	w.key("kind")
	w.str("Service")
	b.metadata(w, b.id(hub.KindService))
	w.key("spec")
	w.open('{')
	w.key("ports")
	w.open('[')
	w.open('{')
	w.key("name")
	w.str(PortName)
	w.key("port")
	w.int(int64(a.Service.Port))
	w.key("protocol")
	w.str(string(corev1.ProtocolTCP))
	w.key("targetPort")
	w.int(int64(a.Service.TargetPort))
	w.close('}')
	w.close(']')
	// The minimal selector: changing other labels must never disconnect
	// the Service from its pods.
	w.key("selector")
	w.strMap(nil, mapEntry{kubeobj.AppLabel, a.ID})
	w.optStr("type", string(a.Service.Type))
	w.close('}')
	w.close('}')
	return b.spec(hub.KindService, w.body(), 0)
}

func (b appBuilder) configMap() hub.NodeSpec {
	a := b.app
	w := b.w
	if w == nil {
		return b.spec(hub.KindConfigMap, nil, 0)
	}
	w.reset()
	w.open('{')
	w.key("apiVersion")
	w.str("v1")
	w.key("data")
	w.strMap(a.Config)
	w.key("kind")
	w.str("ConfigMap")
	b.metadata(w, b.id(hub.KindConfigMap))
	w.close('}')
	return b.spec(hub.KindConfigMap, w.body(), 0)
}

// canonicalQuantities returns the quantities in canonical form, as the
// apiserver stores them (Load has canonicalised and validated them
// already: this is for a Config built by hand).
func canonicalQuantities(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for name, v := range m {
		q := resource.MustParse(v)
		out[name] = q.String()
	}
	return out
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
