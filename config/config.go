package config

import (
	"maps"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/driftwatch/driftwatch/config/manifest"
	"github.com/driftwatch/driftwatch/hub"
)

// Defaults of the hub settings.
const (
	// DefaultHubID is the default Hub.ID.
	DefaultHubID = hub.DefaultHubID
	// DefaultResync is the default Hub.Resync.
	DefaultResync = 5 * time.Minute
	// DefaultPolicy is the default Hub.Policy.
	DefaultPolicy = hub.PolicyRepair
	// DefaultQPS and DefaultBurst are the token bucket a cluster's client
	// starts with while its rate limit is adaptive (qps and burst left
	// out), until the apiserver shows API Priority and Fairness; a fixed
	// limit that sets only one of them takes the other from here. The
	// clusters package applies them (clusters.DefaultQPS and DefaultBurst).
	DefaultQPS   float32 = 50
	DefaultBurst int     = 100
	// WorkersPerSource, MinWorkers and MaxAutoWorkers make the default
	// number of reconcile workers (Hub.Workers left out): WorkersPerSource
	// for each cluster entry, Terraform workspace and Cluster API source,
	// at least MinWorkers, at most MaxAutoWorkers. Workers mostly wait on
	// remote apiservers, so their number follows the count of clusters.
	WorkersPerSource = 4
	MinWorkers       = 8
	MaxAutoWorkers   = 64
	// DefaultDecommissionTimeout is the default Hub.DecommissionTimeout.
	DefaultDecommissionTimeout = 2 * time.Minute
	// DefaultPruneLimit is the default Hub.PruneLimit.
	DefaultPruneLimit = 50
	// StateFileNone as Hub.StateFile keeps no durable state: pauses,
	// overrides, holds and what the hub applied are forgotten at exit.
	StateFileNone = "none"
	// DefaultProgressDeadline is Kubernetes' default Deployment progress
	// deadline, used when an application sets none.
	DefaultProgressDeadline = 600 * time.Second
	// DefaultIDTemplate is the default ClusterAPISource.IDTemplate: a
	// discovered cluster's id is its Cluster object's namespace and name.
	DefaultIDTemplate = "{{.Namespace}}-{{.Name}}"
)

// Config is a loaded and validated driftwatch configuration. Load fills in
// every default, so the fields hold effective values unless documented
// otherwise. Treat a Config as immutable once loaded.
//
// The types of the file's sections double as its schema: the `yaml` tag of
// each field names its key, in schema order (see schema.go).
type Config struct {
	// Path is the config file's path as given to Load or Parse.
	Path string `yaml:"-"`
	// text is the file's content as parsed (see Data); the config's
	// strings read from the file share its memory.
	text string
	// Hub holds the hub-wide settings.
	Hub Hub `yaml:"hub"`
	// Clusters are the clusters named in the file, in file order. It may be
	// empty when ClusterAPI or Terraform is not.
	Clusters []Cluster `yaml:"clusters"`
	// ClusterAPI are the Cluster API management clusters to discover more
	// clusters from (the `clusterAPI:` section), in file order.
	ClusterAPI []ClusterAPISource `yaml:"clusterAPI"`
	// Applications are the applications, in file order.
	Applications []Application `yaml:"applications"`
	// Sources are the manifest sources, in file order: the users' own
	// manifests (plain files, kustomize, Helm charts) rendered into any
	// Kubernetes objects (see Source).
	Sources []Source `yaml:"sources"`
	// Notifications are the webhooks that receive the hub's notable
	// events (see notifications.go).
	Notifications Notifications `yaml:"notifications"`
	// Terraform are the Terraform/OpenTofu workspaces (the `terraform:`
	// section), in file order. A config may hold only workspaces.
	Terraform []Workspace `yaml:"terraform"`

	// sources holds the rendered sources (see sourceState); nil for a
	// Config that Load did not make.
	sources *sourceState
}

// Hub holds the hub-wide settings (the `hub:` section).
type Hub struct {
	// ID names this hub (a DNS label); default "driftwatch".
	ID string `yaml:"id"`
	// ManagedBy is the value of the kubeobj.ManagedByLabel label on every object
	// the hub applies; default kubeobj.DefaultManagedBy.
	ManagedBy string `yaml:"managedBy"`
	// Resync is the period of the safety-net resync; default 5m. A resync
	// that comes due while the reconcile queue is busy (a cold sync longer
	// than the period, a catch-up, a burst) waits until the queue is idle,
	// at most one more period, and then leaves out the clusters passed
	// over in full since the last resync (a first sync or a catch-up: all
	// their objects were just checked, and scanned for orphans), which the
	// next resync covers.
	Resync time.Duration `yaml:"resync"`
	// Policy is the default drift policy; default hub.PolicyRepair.
	Policy hub.Policy `yaml:"policy"`
	// QPS and Burst are the default client rate limit per cluster. 0 (the
	// key left out, the default): adaptive, APF-aware: a
	// DefaultQPS/DefaultBurst token bucket until the cluster's apiserver
	// answers with API Priority and Fairness headers, then no client-side
	// limit (see clusters.ClusterConfig.QPS). Set (qps a positive number,
	// burst at least 1): a fixed token bucket, the unset one taking its
	// default.
	QPS   float32 `yaml:"qps"`
	Burst int     `yaml:"burst,min=1"`
	// Workers is the number of reconcile workers shared by every cluster;
	// 0 (left out): Config.Workers picks it from the number of clusters.
	Workers int `yaml:"workers,min=1,max=1024"`
	// DecommissionTimeout is how long pruning an object may take before it
	// is reported stuck; default 2m.
	DecommissionTimeout time.Duration `yaml:"decommissionTimeout"`
	// PruneLimit is the most objects one config change may decommission at
	// once without --allow-prune (a change that would decommission every
	// object of a cluster is refused too); default 50, at least 1.
	PruneLimit int `yaml:"pruneLimit,min=1"`
	// PruneOrphans prunes orphans: objects carrying the managed-by label
	// and this hub's id that the hub has no record of (its state file was
	// lost, or an older run applied them). Default false: they are only
	// shown. Never more than PruneLimit at once.
	PruneOrphans bool `yaml:"pruneOrphans"`
	// StateFile is where the hub keeps what must survive a restart
	// (pauses, policy overrides, holds, pending decommissions, what it
	// applied): an absolute path with `~` and environment variables
	// expanded like Cluster.Kubeconfig; "" means the default path for the
	// hub id; StateFileNone keeps nothing.
	StateFile string `yaml:"stateFile"`
	// Coordination, when set, lets several replicas of this hub share its
	// clusters through Leases in a coordination cluster (see package
	// internal/coord); nil runs one process that manages every cluster.
	Coordination *Coordination `yaml:"coordination"`
	// Ignore are ignore rules for every application (before each
	// application's own): see IgnoreRule.
	Ignore []IgnoreRule `yaml:"ignore"`
}

// Coordination is the `hub.coordination` section: where the replicas of a
// hub keep their Leases (and, with it, their shared intent).
type Coordination struct {
	// Kubeconfig is the absolute path of the coordination cluster's
	// kubeconfig file, expanded like Cluster.Kubeconfig; "" (the key left
	// out) means the service account of the Pod the hub runs in.
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context to use; "" means its current
	// context. Only with Kubeconfig.
	Context string `yaml:"context"`
	// Namespace holds the Leases and the shared intent (required).
	Namespace string `yaml:"namespace,required"`
	// LeaseDuration is how long a replica that stopped renewing is still
	// taken for alive: its clusters move to the others after it. Default
	// DefaultLeaseDuration, at least MinLeaseDuration.
	LeaseDuration time.Duration `yaml:"leaseDuration"`
}

// DefaultLeaseDuration is the default Coordination.LeaseDuration.
const DefaultLeaseDuration = 10 * time.Second

// MinLeaseDuration is the shortest Coordination.LeaseDuration accepted.
const MinLeaseDuration = time.Second

// Cluster is one cluster named in the file (a `clusters:` entry). It is
// reached in one of three ways: through the kubeconfig file Kubeconfig;
// through the default kubeconfig, as kubectl does (Kubeconfig ""); or, with
// InCluster, through the service account of the Pod the hub runs in.
type Cluster struct {
	// ID is the cluster's DNS-label id, the first part of its NodeIDs.
	ID string `yaml:"id,required"`
	// Kubeconfig is the absolute path of the kubeconfig file, with `~` and
	// environment variables expanded; relative paths in the file are
	// relative to the config file's folder.
	//
	// "" (the key left out) means the default kubeconfig, resolved as
	// kubectl does when connecting, not by Load: the files listed in
	// $KUBECONFIG (separated by the OS list separator, filepath.ListSeparator,
	// and merged), else ~/.kube/config. Context then names the context to
	// use (Load requires it), unless InCluster is set.
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context to use; "" means the kubeconfig's
	// current context (resolved when connecting, not by Load). It is never
	// "" when Kubeconfig is "" and InCluster is false.
	Context string `yaml:"context"`
	// InCluster reaches the cluster through the service account of the Pod
	// the hub runs in (`inCluster: true`); Kubeconfig and Context are then
	// "". At most one cluster of a file is in-cluster.
	InCluster bool `yaml:"inCluster"`
	// Namespaces is the explicit list of managed namespaces, sorted; nil
	// means the namespaces of the applications targeting the cluster (see
	// Config.Namespaces).
	Namespaces []string `yaml:"namespaces"`
	// Labels are the cluster's labels, matched by application selectors.
	Labels map[string]string `yaml:"labels"`
	// Policy is the cluster's effective default policy (its override, or
	// the hub's).
	Policy hub.Policy `yaml:"policy"`
	// QPS and Burst are the effective client rate limit (each the
	// cluster's override, or the hub's); 0 means unset, both 0 adaptive
	// (see Hub.QPS).
	QPS   float32 `yaml:"qps"`
	Burst int     `yaml:"burst,min=1"`
}

// Info returns the part of the cluster that selects and compiles
// applications.
func (c Cluster) Info() ClusterInfo {
	return ClusterInfo{ID: c.ID, Labels: c.Labels, Policy: c.Policy}
}

// ClusterAPISource is a Cluster API management cluster whose Cluster
// objects become clusters at runtime (a `clusterAPI:` entry).
type ClusterAPISource struct {
	// Name is the source's DNS-label name, unique among the sources and
	// distinct from every cluster id; discovered clusters report their
	// source as "capi:<name>/<namespace>".
	Name string `yaml:"name,required"`
	// Kubeconfig is the absolute path of the management cluster's
	// kubeconfig file, expanded like Cluster.Kubeconfig; "" means the
	// default kubeconfig ($KUBECONFIG, else ~/.kube/config) with Context
	// naming the context, unless InCluster is set (as for Cluster).
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context to use; "" means the kubeconfig's
	// current context. It is never "" when Kubeconfig is "" and InCluster
	// is false.
	Context string `yaml:"context"`
	// InCluster reaches the management cluster through the service account
	// of the Pod the hub runs in (`inCluster: true`); Kubeconfig and
	// Context are then "".
	InCluster bool `yaml:"inCluster"`
	// Namespaces are the namespaces watched for Cluster objects, sorted;
	// nil means all namespaces.
	Namespaces []string `yaml:"namespaces"`
	// Selector is a Kubernetes label selector over Cluster objects; ""
	// means every Cluster object.
	Selector string `yaml:"selector"`
	// Labels are given to every discovered cluster, where they win over
	// the Cluster object's own labels (see Info).
	Labels map[string]string `yaml:"labels"`
	// IDTemplate is a Go text/template over .Namespace and .Name that makes
	// a discovered cluster's id; default DefaultIDTemplate.
	IDTemplate string `yaml:"idTemplate"`
	// Policy is the effective default policy of the discovered clusters
	// (the source's override, or the hub's).
	Policy hub.Policy `yaml:"policy"`
	// ExecAllowlist are the exec credential plugins that the kubeconfig
	// secrets of discovered clusters may run, in client-go's allowlist form
	// (`execAllowlist: [{command: /usr/local/bin/aws-iam-authenticator}]`):
	// an absolute path or a command name looked up in PATH. Nil (the
	// default) denies every exec plugin.
	ExecAllowlist []clientcmdapi.AllowlistEntry `yaml:"execAllowlist"`
	// AllowInsecureSkipTLSVerify accepts kubeconfig secrets that set
	// insecure-skip-tls-verify. Default false: such a kubeconfig is refused.
	AllowInsecureSkipTLSVerify bool `yaml:"allowInsecureSkipTLSVerify"`
}

// Info returns the ClusterInfo of a cluster discovered by the source: id,
// the Cluster object's labels with the source's Labels on top (so a source
// can force, say, env), and the source's policy. clusterLabels is not
// modified.
func (s ClusterAPISource) Info(id string, clusterLabels map[string]string) ClusterInfo {
	var l map[string]string
	if len(clusterLabels)+len(s.Labels) > 0 {
		l = make(map[string]string, len(clusterLabels)+len(s.Labels))
		maps.Copy(l, clusterLabels)
		maps.Copy(l, s.Labels)
	}
	return ClusterInfo{ID: id, Labels: l, Policy: s.Policy}
}

// ClusterInfo describes a cluster for matching and compiling applications. It
// exists so that clusters which are not in the file (discovered at runtime)
// can be compiled too.
type ClusterInfo struct {
	// ID is the cluster id.
	ID string
	// Labels are matched by application selectors.
	Labels map[string]string
	// Policy is the cluster's default policy; "" means the hub's.
	Policy hub.Policy
}

// Application is one application (an `applications:` entry): a Deployment,
// plus a Service and a ConfigMap when configured, on every target cluster.
type Application struct {
	// ID is the application's DNS-label id and the name of its objects.
	ID string `yaml:"id,required"`
	// Tenancy is an optional tenancy ID; it may contain colons.
	Tenancy string `yaml:"tenancy"`
	// Namespace is where the application's objects live.
	Namespace string `yaml:"namespace,required"`
	// Clusters lists target cluster ids; nil when Selector is used.
	Clusters []string `yaml:"clusters"`
	// Selector is a Kubernetes label selector over cluster labels; "" when
	// Clusters is used.
	Selector string `yaml:"selector"`
	// Image is the container image.
	Image string `yaml:"image,required"`
	// Replicas is the Deployment's replica count; default 1.
	Replicas int32 `yaml:"replicas"`
	// Port is the container port; 0 means none.
	Port int32 `yaml:"port,min=1,max=65535"`
	// Env holds the container's environment variables, in plain text.
	Env map[string]string `yaml:"env"`
	// SecretEnv holds the container's environment variables read from
	// Secrets in the application's namespace, by variable name (the
	// `secretEnv:` entries NAME: secret/key). They compile to
	// valueFrom.secretKeyRef, so their values never appear in the config,
	// the desired objects or the hub. No name is in both Env and SecretEnv.
	SecretEnv map[string]SecretKeyRef `yaml:"secretEnv"`
	// Config is the data of the application's ConfigMap; no ConfigMap is
	// made when it is empty.
	Config map[string]string `yaml:"config"`
	// Service is the application's Service with defaults applied; nil means
	// no Service. Load sets it when `service` or `port` is given.
	Service *Service `yaml:"service"`
	// Resources holds the container's requests and limits, canonicalised
	// (as the apiserver stores them).
	Resources Resources `yaml:"resources"`
	// Labels are extra labels on every object and on the pod template.
	Labels map[string]string `yaml:"labels"`
	// Annotations are extra annotations on every object.
	Annotations map[string]string `yaml:"annotations"`
	// Policy overrides the cluster's policy; "" means no override.
	Policy hub.Policy `yaml:"policy"`
	// ProgressDeadlineSeconds is the Deployment's progress deadline; 0
	// means unset (Kubernetes then uses 600).
	ProgressDeadlineSeconds int32 `yaml:"progressDeadlineSeconds,min=1"`
	// NodeSelector constrains the pods to matching nodes.
	NodeSelector map[string]string `yaml:"nodeSelector"`
	// Ignore are the application's ignore rules: differences they cover
	// (fields an autoscaler or a webhook owns) are not drift.
	Ignore []IgnoreRule `yaml:"ignore"`
}

// SecretKeyRef names one key of a Secret in the application's namespace.
type SecretKeyRef struct {
	// Name is the Secret's name, a DNS subdomain.
	Name string
	// Key is the key in the Secret's data.
	Key string
}

// String returns the reference as written in the config: name/key.
func (r SecretKeyRef) String() string { return r.Name + "/" + r.Key }

// Service is an application's Service.
type Service struct {
	// Port is the Service port; default the application's port.
	Port int32 `yaml:"port,min=1,max=65535"`
	// TargetPort is the container port traffic goes to; default the
	// application's port, else Port.
	TargetPort int32 `yaml:"targetPort,min=1,max=65535"`
	// Type is ClusterIP (default), NodePort or LoadBalancer.
	Type corev1.ServiceType `yaml:"type"`
}

// Resources holds a container's requests and limits by resource name (cpu,
// memory, ...), with canonical quantity strings.
type Resources struct {
	// Requests are the container's resource requests.
	Requests map[string]string `yaml:"requests"`
	// Limits are the container's resource limits.
	Limits map[string]string `yaml:"limits"`
}

// LoadOptions tunes how Load and Parse expand kubeconfig paths.
type LoadOptions struct {
	// Getenv looks up environment variables for ${VAR} expansion; nil means
	// os.Getenv.
	Getenv func(string) string
	// HomeDir replaces a leading `~`; empty means os.UserHomeDir.
	HomeDir string
	// IsolateSources makes a source that cannot be used (it does not
	// render, a path variable names a label a cluster lacks, one of its
	// objects is wanted by another source or an application, or falls
	// outside a cluster's namespaces) a fault of that source rather than
	// an error of the file: the source is left out of the desired state
	// and reported by Config.SourceFaults, and every other source and
	// application compiles as usual. A running hub loads with it, so one
	// broken source never stops the others; check and diff do not.
	IsolateSources bool
	// GitCheckout fetches a Git source (by source id; h is the file's hub
	// section, which says where the hub keeps its state) and returns the
	// checkout to render it from; an error is reported at the source's git
	// field (a fault of the source under IsolateSources). Nil: a file with
	// Git sources is an error ("git sources need a hub or check/diff to
	// fetch them"). The hub, check and diff set it.
	GitCheckout func(h Hub, sourceID string, g GitSource) (GitCheckout, error)
	// ChartPull pulls the chart of a source whose chart comes from a
	// repository (helm.repo; by source id, h as for GitCheckout) and
	// returns the version to render (GitCheckout.Archive); an error is
	// reported at the source's helm.repo field (a fault of the source
	// under IsolateSources). Nil: such a file is an error. The hub, check
	// and diff set it.
	ChartPull func(h Hub, sourceID string, c HelmChart) (GitCheckout, error)
	// RenderSandbox, when set, renders the Helm charts and kustomizations
	// of sources in a child process with a time and a memory limit
	// (manifest.Sandbox), so that a chart whose templates never end or eat
	// memory, or kustomizations that build exponentially many objects,
	// fail their source instead of stopping or killing the process. The hub, check, diff
	// and the bench set manifest.Self(); nil renders in process.
	RenderSandbox *manifest.Sandbox
}

// Load reads and validates the config file at path. Problems with the
// content are returned together as an ErrorList, and so is a file larger
// than MaxConfigSize, refused before it is read (see ReadFile).
func Load(path string, opts LoadOptions) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, opts)
}

// Parse validates config data read from path (used for error positions and
// to resolve relative kubeconfig paths). Every problem is returned together
// as an ErrorList, sorted by position.
func Parse(path string, data []byte, opts LoadOptions) (*Config, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	// One string of the content: the values the config keeps are
	// substrings of it (parseFast), and it is the config's Data.
	text := string(data)
	w := &walker{file: path}
	cfg := w.parse(path, data, text, opts)
	if len(w.errs) > 0 {
		sortErrors(w.errs)
		return nil, w.errs
	}
	cfg.text = text
	return cfg, nil
}

// Data returns a copy of the content the config was parsed from; nil for
// a Config built by hand. A hub parses it again when a Git source moves
// to a new commit, so that the commit, and not an edit of the file nobody
// reloaded yet, is what changes.
func (c *Config) Data() []byte {
	if c.text == "" {
		return nil
	}
	return []byte(c.text)
}

// Cluster returns the cluster with the given id.
func (c *Config) Cluster(id string) (Cluster, bool) {
	i := slices.IndexFunc(c.Clusters, func(cl Cluster) bool { return cl.ID == id })
	if i < 0 {
		return Cluster{}, false
	}
	return c.Clusters[i], true
}

// Matches reports whether the application targets the cluster: by id list,
// or by selector over the cluster's labels.
func (a Application) Matches(info ClusterInfo) bool { return matches(a.Clusters, a.Selector, info) }

// TargetClusters returns the clusters of the file that app targets, in file
// order.
func (c *Config) TargetClusters(app Application) []Cluster {
	var out []Cluster
	for _, cl := range c.Clusters {
		if app.Matches(cl.Info()) {
			out = append(out, cl)
		}
	}
	return out
}

// AppsFor returns the applications that target the cluster, in file order.
// The cluster need not be in the file.
func (c *Config) AppsFor(info ClusterInfo) []Application {
	// The matching indexes first, so the result, large for a large
	// config, is allocated once.
	idx := c.appIndexes(info)
	if len(idx) == 0 {
		return nil
	}
	out := make([]Application, len(idx))
	for j, i := range idx {
		out[j] = c.Applications[i]
	}
	return out
}

// ClusterInfos returns what compiling needs of each cluster of the file,
// in file order.
func (c *Config) ClusterInfos() []ClusterInfo {
	infos := make([]ClusterInfo, len(c.Clusters))
	for i, cl := range c.Clusters {
		infos[i] = cl.Info()
	}
	return infos
}

// appIndexes returns the indexes in c.Applications of the applications
// that target the cluster, in file order.
func (c *Config) appIndexes(info ClusterInfo) []int {
	var idx []int
	m := clusterMatcher{info: info}
	for i := range c.Applications {
		if a := &c.Applications[i]; m.matches(a.Clusters, a.Selector) {
			idx = append(idx, i)
		}
	}
	return idx
}

// Namespaces returns the sorted managed namespaces of a cluster: its
// explicit list when it has one, else the namespaces of the applications
// and source objects targeting it. A cluster that is not in the file is matched by id only; use
// NamespacesFor when its labels are known.
func (c *Config) Namespaces(clusterID string) []string {
	cl, ok := c.Cluster(clusterID)
	if !ok {
		return c.NamespacesFor(ClusterInfo{ID: clusterID})
	}
	if cl.Namespaces != nil {
		return slices.Clone(cl.Namespaces)
	}
	return c.NamespacesFor(cl.Info())
}

// NamespacesFor returns the sorted, deduplicated namespaces of the
// applications and of the namespaced source objects targeting the
// cluster. A source that does not render for the cluster adds none (its
// error is CompileCluster's).
func (c *Config) NamespacesFor(info ClusterInfo) []string {
	var ns []string
	for _, a := range c.AppsFor(info) {
		ns = append(ns, a.Namespace)
	}
	ns = append(ns, c.sourceNamespaces(info)...)
	slices.Sort(ns)
	return slices.Compact(ns)
}

// PolicyFor returns the effective policy of an application on a cluster:
// the application's override, else the cluster's, else the hub's.
func (c *Config) PolicyFor(app Application, info ClusterInfo) hub.Policy {
	switch {
	case app.Policy != "":
		return app.Policy
	case info.Policy != "":
		return info.Policy
	case c.Hub.Policy != "":
		return c.Hub.Policy
	}
	return DefaultPolicy
}

// Workers returns the number of reconcile workers the hub runs: Hub.Workers
// when set, else AutoWorkers of the config's sources.
func (c *Config) Workers() int {
	if c.Hub.Workers > 0 {
		return c.Hub.Workers
	}
	return AutoWorkers(len(c.Clusters) + len(c.Terraform) + len(c.ClusterAPI))
}

// AutoWorkers is the default worker count for a hub of sources cluster
// entries, workspaces and Cluster API sources (each source's discovered
// clusters are not known at start): WorkersPerSource each, clamped to
// [MinWorkers, MaxAutoWorkers].
func AutoWorkers(sources int) int {
	return min(max(WorkersPerSource*sources, MinWorkers), MaxAutoWorkers)
}
