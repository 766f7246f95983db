package clusters

import (
	"time"

	"k8s.io/client-go/transport"
)

// ClusterConfig says how to reach one cluster and what to watch on it.
type ClusterConfig struct {
	// ID is the cluster id, the first part of every NodeID on it.
	ID string
	// Kubeconfig is the path of the kubeconfig file. KubeconfigData, when
	// set, is used instead (e.g. a Cluster API kubeconfig secret); it is
	// untrusted: RESTConfig reads it with ParseUntrustedKubeconfig under
	// KubeconfigPolicy (its current context only; Context is ignored).
	Kubeconfig     string
	KubeconfigData []byte
	// KubeconfigPolicy says what KubeconfigData may use; the zero value is
	// the strictest (no exec plugin, no file reference, TLS verified).
	KubeconfigPolicy KubeconfigPolicy
	// Context is the kubeconfig context; empty means its current context.
	Context string
	// Namespaces are the managed namespaces: one informer per namespace and
	// kind.
	Namespaces []string
	// ManagedBy is the value of the managed-by label the informers filter
	// on; empty means hub.DefaultManagedBy.
	ManagedBy string
	// HubID is the id of the hub that manages the cluster: objects whose
	// driftwatch.io/hub annotation names another hub are never deleted and
	// never listed as ours.
	HubID string
	// QPS and Burst configure the client's rate limit; zero means 50 and
	// 100 (never client-go's 5/10, which makes 200 repairs take 38 s).
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
	// Interval between probes while healthy. Default 10s.
	Interval time.Duration
	// Timeout of one probe. Default 5s.
	Timeout time.Duration
	// FailureThreshold is how many failed probes in a row make a cluster
	// unreachable. Default 3.
	FailureThreshold int
	// RetryInterval between probes after a failure. Default 1s.
	RetryInterval time.Duration
	// ReportInterval is how often a changed events/s rate is reported.
	// Default 1s.
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
