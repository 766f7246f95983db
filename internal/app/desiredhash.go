package app

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
)

// desiredHash identifies the desired state a config makes, as replicas
// compare it before they take clusters: every compiled spec of the
// configured clusters (its NodeID, content hash and policy) and, when
// Cluster API sources may add clusters at runtime, what compiles theirs
// (the applications, the sources' selection and labels, the hub's
// policy). Two replicas with the same hash would write the same objects
// and prune the same ones; connection settings (kubeconfigs, rate limits)
// and the order of the file do not count. compiled is config.Compile(cfg).
func desiredHash(cfg *config.Config, compiled []hub.NodeSpec) string {
	h := sha256.New()
	for _, s := range compiled {
		fmt.Fprintf(h, "%s\x00%s\x00%s\n", s.ID, s.Hash, s.Policy)
	}
	if len(cfg.ClusterAPI) > 0 {
		type source struct {
			Name, Selector, IDTemplate string
			Namespaces                 []string
			Labels                     map[string]string
			Policy                     hub.Policy
		}
		enc := json.NewEncoder(h)
		// Encoding plain config values cannot fail.
		_ = enc.Encode(cfg.Applications)
		for _, src := range cfg.ClusterAPI {
			_ = enc.Encode(source{Name: src.Name, Selector: src.Selector, IDTemplate: src.IDTemplate,
				Namespaces: src.Namespaces, Labels: src.Labels, Policy: src.Policy})
		}
		fmt.Fprintf(h, "policy %s\n", cfg.Hub.Policy)
	}
	return hex.EncodeToString(h.Sum(nil))
}
