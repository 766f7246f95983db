package app

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
)

// TestDesiredHash: replicas compare the desired state their configs make:
// the same objects and policies give the same hash whatever the file's
// order or connection settings; another application, image, policy or
// cluster, or another application rule for Cluster API clusters, gives
// another.
func TestDesiredHash(t *testing.T) {
	dir := t.TempDir()
	kc := unreachableKubeconfig(t, dir)
	other := filepath.Join(dir, "elsewhere")
	app := func(id, image, policy string) string {
		s := fmt.Sprintf("  - id: %s\n    namespace: shop\n    selector: env=prod\n    image: %s\n", id, image)
		if policy != "" {
			s += "    policy: " + policy + "\n"
		}
		return s
	}
	clusters := func(kubeconfig string, ids ...string) string {
		s := "clusters:\n"
		for _, id := range ids {
			s += fmt.Sprintf("  - id: %s\n    kubeconfig: %s\n    labels: {env: prod}\n", id, kubeconfig)
		}
		return s
	}
	capi := fmt.Sprintf("clusterAPI:\n  - name: mgmt\n    kubeconfig: %s\n    labels: {env: prod}\n", kc)
	hash := func(text string) string {
		t.Helper()
		cfg, err := config.Parse(filepath.Join(dir, "driftwatch.yaml"), []byte(text), config.LoadOptions{})
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		return desiredHash(cfg, config.Compile(cfg))
	}
	base := hash(clusters(kc, "a", "b") + "applications:\n" + app("web", "web:1", "") + app("api", "api:1", ""))
	for _, tc := range []struct {
		name string
		text string
		same bool
	}{
		{"applications in another order", clusters(kc, "a", "b") + "applications:\n" + app("api", "api:1", "") + app("web", "web:1", ""), true},
		{"clusters in another order", clusters(kc, "b", "a") + "applications:\n" + app("web", "web:1", "") + app("api", "api:1", ""), true},
		{"another kubeconfig", clusters(other, "a", "b") + "applications:\n" + app("web", "web:1", "") + app("api", "api:1", ""), true},
		{"one application fewer", clusters(kc, "a", "b") + "applications:\n" + app("web", "web:1", ""), false},
		{"another image", clusters(kc, "a", "b") + "applications:\n" + app("web", "web:2", "") + app("api", "api:1", ""), false},
		{"another policy", clusters(kc, "a", "b") + "applications:\n" + app("web", "web:1", string(hub.PolicyWarn)) + app("api", "api:1", ""), false},
		{"one cluster fewer", clusters(kc, "a") + "applications:\n" + app("web", "web:1", "") + app("api", "api:1", ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hash(tc.text); (got == base) != tc.same {
				t.Errorf("hash %s, base %s: same = %t, want %t", got, base, got == base, tc.same)
			}
		})
	}
	// Only Cluster API clusters: nothing compiles at start, the rules do.
	onlyCAPI := hash(capi + "applications:\n" + app("web", "web:1", ""))
	if onlyCAPI == hash(capi+"applications:\n"+app("web", "web:1", "")+app("api", "api:1", "")) {
		t.Error("with Cluster API clusters only, another set of applications gives the same hash")
	}
	if onlyCAPI != hash(capi+"applications:\n"+app("web", "web:1", "")) {
		t.Error("the same config hashes differently")
	}
}
