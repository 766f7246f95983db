package main

// Config writers and snapshot predicates shared by this package's tests
// (package app's tests have their own: test helpers do not cross packages).

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
)

// e2eConfig writes a config for the local clusters: web (Deployment,
// Service, ConfigMap) everywhere, api (Deployment, Service) everywhere,
// worker (Deployment, ConfigMap) everywhere, and apps given in extra.
func e2eConfig(t *testing.T, set *localcluster.Set, ns string, extra string, skip ...string) string {
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
		if !contains(skip, name) {
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

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func allInSync(n int) func(*hub.Snapshot) bool {
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

// safetyApp is one application compiling to a Deployment, a Service and a
// ConfigMap named id in namespace ns.
func safetyApp(id, ns string) string {
	return fmt.Sprintf(`  - id: %s
    namespace: %s
    selector: env=prod
    image: registry.example/%s:1
    replicas: 1
    port: 8080
    config: {APP: %s}
`, id, ns, id, id)
}

// safetyConfig writes a config for the hub hubID with its state file, the
// clusters of set (ids c1, c2, ...) and the applications apps (ids) in ns.
func safetyConfig(t *testing.T, path, hubID, state string, pruneOrphans bool, set *localcluster.Set, ns string, apps ...string) string {
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
			b.WriteString(safetyApp(a, ns))
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

// appIDs are the NodeIDs of a safetyApp on a cluster.
func appIDs(cluster, ns, app string) []hub.NodeID {
	return []hub.NodeID{
		hub.NewNodeID(cluster, ns, app, hub.KindDeployment),
		hub.NewNodeID(cluster, ns, app, hub.KindService),
		hub.NewNodeID(cluster, ns, app, hub.KindConfigMap),
	}
}

// exists reports whether the object of a NodeID exists on its cluster.
func exists(t *testing.T, c kubernetes.Interface, id hub.NodeID) bool {
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

func waitScreen(t *testing.T, tm *teatest.TestModel, s string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(s)) },
		teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
}
