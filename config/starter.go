package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/driftwatch/driftwatch/hub"
)

// Names the starter config gives its example application.
const (
	// StarterApplication is the id of the starter's example application.
	StarterApplication = "hello"
	// StarterNamespace is the namespace of the starter's example
	// application.
	StarterNamespace = "driftwatch-example"
)

// StarterOptions tune Starter.
type StarterOptions struct {
	// KubeconfigPath is written as every cluster's kubeconfig; "" leaves
	// the key out, so the contexts are looked up in the default
	// kubeconfig ($KUBECONFIG, else ~/.kube/config), which a comment says.
	// Pass an absolute path: a relative one is read relative to the
	// config file's folder.
	KubeconfigPath string
	// Contexts are the contexts to make clusters of, in this order; nil
	// means every context of the kubeconfig, sorted by name (ignoring
	// case).
	Contexts []string
}

// Starter returns a commented starter configuration for the contexts of
// kc: a hub section with the defaults as comments, one cluster per context
// (its id derived from the context name, see StarterClusterID) and one
// example application on all of them, in policy warn, which Load accepts as
// it is. The commented defaults are the values Load gives the file (the
// workers: AutoWorkers of its clusters). A context in opts.Contexts that kc
// does not have is an error listing the ones it has.
func Starter(kc *clientcmdapi.Config, opts StarterOptions) ([]byte, error) {
	if kc == nil || len(kc.Contexts) == 0 {
		return nil, errors.New("the kubeconfig has no contexts: add one (kubectl config set-context) or name another kubeconfig")
	}
	available := make([]string, 0, len(kc.Contexts))
	for name := range kc.Contexts {
		available = append(available, name)
	}
	slices.SortFunc(available, func(a, b string) int {
		if c := strings.Compare(strings.ToLower(a), strings.ToLower(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	contexts := available
	if opts.Contexts != nil {
		contexts = nil
		var unknown []string
		for _, c := range opts.Contexts {
			switch {
			case slices.Contains(contexts, c):
			case kc.Contexts[c] == nil:
				unknown = append(unknown, strconv.Quote(c))
			default:
				contexts = append(contexts, c)
			}
		}
		if len(unknown) > 0 {
			noun := "context"
			if len(unknown) > 1 {
				noun = "contexts"
			}
			return nil, fmt.Errorf("%s %s not in the kubeconfig (contexts: %s)", noun, strings.Join(unknown, ", "), strings.Join(available, ", "))
		}
		if len(contexts) == 0 {
			return nil, errors.New("no context given")
		}
	}
	if strings.Contains(opts.KubeconfigPath, "$") {
		return nil, fmt.Errorf("kubeconfig path %q: the config would expand its $ as an environment variable", opts.KubeconfigPath)
	}

	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	// note writes code with a comment in the comment column.
	note := func(code, comment string) { fmt.Fprintf(&b, "%-30s # %s\n", code, comment) }
	line("%s", SchemaModeline)
	if opts.KubeconfigPath == "" {
		line("# driftwatch starter configuration: one cluster per context of the")
		line("# default kubeconfig ($KUBECONFIG, else ~/.kube/config), and one example")
		line("# application.")
	} else {
		line("# driftwatch starter configuration: one cluster per context of")
		line("# %s, and one example application.", opts.KubeconfigPath)
	}
	line("#")
	line("# Check it without touching any cluster, then see what differs on the")
	line("# clusters (read-only), before `driftwatch serve` creates and repairs:")
	line("#   driftwatch check -f <this file>")
	line("#   driftwatch diff -f <this file>")
	line("#")
	line("# Every object driftwatch applies carries the label")
	line("# %s=<hub.managedBy> and the annotation", hub.ManagedByLabel)
	line("# %s=<cluster>:<namespace>/<name>:<kind>.", hub.NodeIDAnnotation)
	line("")
	line("hub:")
	note("  id: "+DefaultHubID, "names this hub (a DNS label)")
	line("  # The defaults:")
	note("  # managedBy: "+hub.DefaultManagedBy, "value of the managed-by label")
	note("  # resync: "+shortDuration(DefaultResync), "safety-net resync; watches do the real work")
	note("  # policy: "+string(DefaultPolicy), "repair, or warn to only report drift")
	note("  # qps: 50", "a fixed client rate limit per cluster; unset: adaptive (APF-aware)")
	note("  # burst: 100", "...and its burst")
	note("  # workers: "+strconv.Itoa(AutoWorkers(len(contexts))), "reconcile workers shared by all clusters: "+strconv.Itoa(WorkersPerSource)+" per cluster, "+strconv.Itoa(MinWorkers)+" to "+strconv.Itoa(MaxAutoWorkers))
	note("  # decommissionTimeout: "+shortDuration(DefaultDecommissionTimeout), "pruning longer is reported stuck")
	note("  # pruneLimit: "+strconv.Itoa(DefaultPruneLimit), "a change pruning more needs --allow-prune")
	line("  # Where pauses, overrides, holds and what was applied survive restarts:")
	line("  # default $XDG_STATE_HOME/driftwatch/<hub.id>.db; %s keeps no state.", StateFileNone)
	line("  # stateFile: %s", StateFileNone)
	line("")
	line("clusters:")
	if opts.KubeconfigPath == "" {
		line("  # Without `kubeconfig`, each context is looked up as kubectl does: in")
		line("  # the files listed in $KUBECONFIG (merged), else in ~/.kube/config.")
	} else {
		line("  # Each cluster is one context of the kubeconfig file.")
	}
	ids := starterIDs(contexts)
	for i, c := range contexts {
		line("  - id: %s", ids[i])
		if opts.KubeconfigPath != "" {
			line("    kubeconfig: %s", yamlScalar(opts.KubeconfigPath))
		}
		line("    context: %s", yamlScalar(c))
		if i == 0 {
			note("    # labels: {env: prod}", "applications can select clusters by label")
		}
	}
	line("")
	line("applications:")
	line("  # An example: nginx, a Service on port 8080 and a ConfigMap, in their own")
	line("  # namespace on every cluster above, production included. `driftwatch")
	line("  # serve` creates them: edit or remove this entry first.")
	line("  - id: %s", StarterApplication)
	line("    namespace: %s", StarterNamespace)
	line("    clusters: [%s]", strings.Join(ids, ", "))
	note("    # selector: env=prod", "or select clusters by their labels")
	line("    image: nginx:1.27")
	line("    replicas: 2")
	note("    port: 8080", "a port alone gives a ClusterIP Service")
	note("    config:", "becomes a ConfigMap, loaded with envFrom")
	line("      GREETING: hello from driftwatch")
	line("    # It starts in warn: drift is reported, never repaired, and nothing is")
	line("    # deleted. Set repair (or remove the line: the hub's policy) once the")
	line("    # example is yours.")
	line("    policy: %s", hub.PolicyWarn)
	return []byte(b.String()), nil
}

// shortDuration formats a duration without zero units: 5m, 2m, 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// plainScalar matches strings YAML reads as the same string unquoted.
var plainScalar = regexp.MustCompile(`^(~/|[A-Za-z/])[A-Za-z0-9._/-]*$`)

// yamlScalar returns s as a YAML scalar: plain when that reads back as the
// same string, else double-quoted.
func yamlScalar(s string) string {
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return strconv.Quote(s)
	}
	if plainScalar.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

// StarterClusterID derives a cluster id from a kubeconfig context name: a
// lowercase DNS label made of its letters and digits, every other run of
// characters a dash, at most 63 characters; "cluster" when nothing is
// left. For example arn:aws:eks:eu-west-1:123:cluster/prod gives
// arn-aws-eks-eu-west-1-123-cluster-prod and Staging_1 gives staging-1.
func StarterClusterID(context string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(context) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	id := trimID(b.String(), validation.DNS1123LabelMaxLength)
	if id == "" {
		return "cluster"
	}
	return id
}

// trimID cuts id to at most n characters without a trailing dash.
func trimID(id string, n int) string {
	if len(id) > n {
		id = id[:n]
	}
	return strings.TrimRight(id, "-")
}

// starterIDs returns the cluster ids of contexts, made unique with -2, -3,
// ... suffixes in order.
func starterIDs(contexts []string) []string {
	ids := make([]string, len(contexts))
	used := make(map[string]bool, len(contexts))
	for i, c := range contexts {
		base := StarterClusterID(c)
		id := base
		for n := 2; used[id]; n++ {
			suffix := "-" + strconv.Itoa(n)
			id = trimID(base, validation.DNS1123LabelMaxLength-len(suffix)) + suffix
		}
		used[id] = true
		ids[i] = id
	}
	return ids
}
