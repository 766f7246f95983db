// Package e2etest holds what the end-to-end tests of package main and
// package app share: config writers for local clusters, snapshot
// predicates and a test certificate authority. Test helpers cannot cross
// packages from _test files, so they live here (imported by tests only).
package e2etest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
)

// Config writes a config for the local clusters: web (Deployment,
// Service, ConfigMap) everywhere, api (Deployment, Service) everywhere,
// worker (Deployment, ConfigMap) everywhere, and apps given in extra.
func Config(t testing.TB, set *localcluster.Set, ns string, extra string, skip ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "hub:\n  id: e2e\n  workers: 4\n  decommissionTimeout: 3s\nclusters:\n")
	for i, lc := range set.Clusters {
		fmt.Fprintf(&b, "  - id: %s\n    kubeconfig: %s\n    labels: {env: prod, idx: \"%d\"}\n", lc.Name, lc.Kubeconfig, i)
	}
	apps := map[string]string{
		"web": `  - id: web
    namespace: ` + ns + `
    selector: env=prod
    image: registry.example/web:1
    replicas: 3
    port: 8080
    env: {MODE: prod}
    config: {LOG_LEVEL: info}
`,
		"api": `  - id: api
    namespace: ` + ns + `
    selector: env=prod
    image: registry.example/api:1
    replicas: 2
    port: 9090
`,
		"worker": `  - id: worker
    namespace: ` + ns + `
    selector: env=prod
    image: registry.example/worker:1
    config: {QUEUE: jobs}
`,
	}
	b.WriteString("applications:\n")
	for _, name := range []string{"web", "api", "worker"} {
		if !slices.Contains(skip, name) {
			b.WriteString(apps[name])
		}
	}
	b.WriteString(extra)
	path := filepath.Join(t.TempDir(), "driftwatch.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// AllInSync holds when the snapshot has n NodeIDs, each in sync or repaired.
func AllInSync(n int) func(*hub.Snapshot) bool {
	return func(s *hub.Snapshot) bool {
		if len(s.Nodes) != n {
			return false
		}
		for _, nd := range s.Nodes {
			if nd.Status != hub.StatusInSync && nd.Status != hub.StatusRepaired {
				return false
			}
		}
		return true
	}
}

// SafetyApp is one application compiling to a Deployment, a Service and a
// ConfigMap named id in namespace ns.
func SafetyApp(id, ns string) string {
	return fmt.Sprintf(`  - id: %s
    namespace: %s
    selector: env=prod
    image: registry.example/%s:1
    replicas: 1
    port: 8080
    config: {APP: %s}
`, id, ns, id, id)
}

// SafetyConfig writes a config for the hub hubID with its state file, the
// clusters of set (ids c1, c2, ...) and the applications apps (ids) in ns.
func SafetyConfig(t testing.TB, path, hubID, state string, pruneOrphans bool, set *localcluster.Set, ns string, apps ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "hub:\n  id: %s\n  workers: 4\n  decommissionTimeout: 5s\n  stateFile: %s\n", hubID, state)
	if pruneOrphans {
		b.WriteString("  pruneOrphans: true\n")
	}
	b.WriteString("clusters:\n")
	for _, c := range set.Clusters {
		fmt.Fprintf(&b, "  - id: %s\n    kubeconfig: %s\n    labels: {env: prod}\n", c.Name, c.Kubeconfig)
	}
	if len(apps) == 0 {
		b.WriteString("applications: []\n")
	} else {
		b.WriteString("applications:\n")
		for _, a := range apps {
			b.WriteString(SafetyApp(a, ns))
		}
	}
	if path == "" {
		path = filepath.Join(t.TempDir(), "driftwatch.yaml")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// AppIDs are the NodeIDs of a SafetyApp on a cluster.
func AppIDs(cluster, ns, app string) []hub.NodeID {
	return []hub.NodeID{
		hub.NewNodeID(cluster, ns, app, hub.KindDeployment),
		hub.NewNodeID(cluster, ns, app, hub.KindService),
		hub.NewNodeID(cluster, ns, app, hub.KindConfigMap),
	}
}

// Exists reports whether the object of a NodeID exists on its cluster.
func Exists(t testing.TB, c kubernetes.Interface, id hub.NodeID) bool {
	t.Helper()
	ns, name := id.Namespace(), id.Name()
	var err error
	switch id.Kind {
	case hub.KindDeployment:
		_, err = c.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	case hub.KindService:
		_, err = c.CoreV1().Services(ns).Get(t.Context(), name, metav1.GetOptions{})
	case hub.KindConfigMap:
		_, err = c.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}
