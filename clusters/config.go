package clusters

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/transport"
)

// ClusterConfig says how to reach one cluster and what to watch on it.
type ClusterConfig struct {
	// ID is the cluster id, the first part of every NodeID on it.
	ID string
	// Kubeconfig, KubeconfigData and InCluster say how to reach the
	// cluster; RESTConfig takes the first that is set:
	//
	//   - KubeconfigData (e.g. a Cluster API kubeconfig secret) is
	//     untrusted: it is read with ParseUntrustedKubeconfig under
	//     KubeconfigPolicy (its current context only; Context is ignored);
	//   - InCluster uses the service account of the Pod the process runs in
	//     (rest.InClusterConfig; Kubeconfig and Context are ignored);
	//   - Kubeconfig is the path of a kubeconfig file;
	//   - none of them: the default kubeconfig, as kubectl resolves it: the
	//     files listed in $KUBECONFIG, merged, else ~/.kube/config (see
	//     DefaultKubeconfigFiles).
	Kubeconfig     string
	KubeconfigData []byte
	InCluster      bool
	// Getenv looks up the environment variables of the kubeconfig
	// resolution: KUBECONFIG and HOME for the default kubeconfig, and
	// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, checked before
	// InCluster is tried. Nil means os.Getenv. A Registry's Update does
	// not compare it (one process's environment lookup is the same at
	// every reload).
	Getenv func(string) string
	// KubeconfigPolicy says what KubeconfigData may use; the zero value is
	// the strictest (no exec plugin, no file reference, TLS verified).
	KubeconfigPolicy KubeconfigPolicy
	// Context is the kubeconfig context (of Kubeconfig, or of the default
	// kubeconfig); empty means its current context.
	Context string
	// Namespaces are the managed namespaces: one informer per namespace and
	// kind.
	Namespaces []string
	// Kinds are the kinds to watch beyond the applications' three
	// (hub.Kinds), the objects of manifest sources: one informer per
	// managed namespace for a namespaced kind, one for a cluster-scoped
	// kind. An empty Version means the cluster's preferred one. A kind the
	// cluster does not serve yet (a custom resource whose
	// CustomResourceDefinition the hub is about to apply) is looked up
	// again until it is, and watched from then on.
	Kinds []schema.GroupVersionKind
	// ManagedBy is the value of the managed-by label the informers filter
	// on; empty means kubeobj.DefaultManagedBy.
	ManagedBy string
	// HubID is the id of the hub that manages the cluster: objects whose
	// driftwatch.io/hub annotation names another hub are never deleted and
	// never listed as ours.
	HubID string
	// Replicated says the hub runs as several replicas that share its id
	// and field manager: a write by the hub's field manager that this
	// process did not make is expected (a replica that owned the cluster
	// before a takeover), so it is not taken for another hub with the
	// same id.
	Replicated bool
	// QPS and Burst configure the client's rate limit. Both 0 (the
	// default): adaptive, APF-aware: a DefaultQPS/DefaultBurst token bucket
	// until a response carries the apiserver's API Priority and Fairness
	// headers, then no client-side limit (the server's fairness protects
	// it), and the bucket again after a response without them. Either set:
	// a fixed token bucket, the unset one from DefaultQPS or DefaultBurst.
	// A negative QPS: no client-side limit (client-go's convention). In
	// every mode at most MaxInFlight requests are in flight (watches
	// aside), and client-go retries a 429 or 5xx as its Retry-After says.
	QPS   float32
	Burst int
	// Source says where the cluster comes from ("config" when empty).
	Source string
	// Phase is an optional lifecycle phase shown with the health (Cluster
	// API discovered clusters).
	Phase string
	// Labels are the cluster's labels (informational here).
	Labels map[string]string
	// Watch, when false, starts no informers: Read always GETs. The poll
	// baseline of the benchmark uses it. Defaults to true via Enabled.
	DisableWatch bool
	// WrapTransport, if set, wraps the cluster's HTTP transport
	// (client-go's rest.Config.WrapTransport): a proxy or audit hook, and
	// tests that hold or observe calls.
	WrapTransport transport.WrapperFunc
}

// HealthOptions tune the /readyz probe of every cluster. Zero values take
// the documented defaults.
type HealthOptions struct {
	// Interval between probes while healthy. Default 10s. A write the
	// apiserver accepted within Interval stands for a probe.
	Interval time.Duration
	// Timeout of one probe. Default 5s.
	Timeout time.Duration
	// FailureThreshold is how many failed probes in a row make a cluster
	// unreachable. Default 3.
	FailureThreshold int
	// RetryInterval between probes after a failure. Default 1s.
	RetryInterval time.Duration
	// ReportInterval is how often a changed events/s rate is reported,
	// on the interval's boundaries on the wall clock: the same instants
	// for every cluster of the process (see tickAligned). Default 1s.
	ReportInterval time.Duration
}

func (o HealthOptions) withDefaults() HealthOptions {
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.FailureThreshold <= 0 {
		o.FailureThreshold = 3
	}
	if o.RetryInterval <= 0 {
		o.RetryInterval = time.Second
	}
	if o.ReportInterval <= 0 {
		o.ReportInterval = time.Second
	}
	return o
}
