package config

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/driftwatch/driftwatch/config/manifest"
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
	// From, when set, makes the starter start from the user's manifests:
	// a source of them (in policy warn) replaces the example application.
	// For a base/overlays layout, the clusters get an env label: the
	// overlay their context name holds (see StarterOverlay).
	From *StarterFolder
	// FromPath is From's path as the config writes it: relative to the
	// config file's folder, or absolute; "" means From.Path.
	FromPath string
	// Namespace is the namespace asked for From's objects, written when
	// From.SourceNamespace says so.
	Namespace string
}

// Starter returns a commented starter configuration for the contexts of
// kc: a hub section with the defaults as comments, one cluster per context
// (its id derived from the context name, see StarterClusterID) and one
// example application on all of them, in policy warn, which Load accepts as
// it is. With opts.From, a source of the user's manifests, on all of them
// (or, for overlays, on those with an env label) in policy warn, replaces
// the example. The commented defaults are the values Load gives the file (the
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
	from := opts.From
	fromPath := ""
	if from != nil {
		fromPath = filepath.ToSlash(cmp.Or(opts.FromPath, from.Path))
		if strings.Contains(fromPath, "${") {
			return nil, fmt.Errorf("source path %q: the config would read its ${ as a variable", fromPath)
		}
		if ns := from.SourceNamespace(opts.Namespace); ns != "" {
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				return nil, fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
			}
		}
	}
	what := "one example\n# application."
	if from != nil {
		what = fmt.Sprintf("a source of\n# the manifests in %s.", fromPath)
	}

	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	// note writes code with a comment in the comment column.
	note := func(code, comment string) { fmt.Fprintf(&b, "%-30s # %s\n", code, comment) }
	line("%s", SchemaModeline)
	if opts.KubeconfigPath == "" {
		line("# driftwatch starter configuration: one cluster per context of the")
		line("# default kubeconfig ($KUBECONFIG, else ~/.kube/config), and %s", what)
	} else {
		line("# driftwatch starter configuration: one cluster per context of")
		line("# %s, and %s", opts.KubeconfigPath, strings.Replace(what, "\n# ", " ", 1))
	}
	line("#")
	line("# Check it without touching any cluster, then see what differs on the")
	line("# clusters (read-only), before `driftwatch serve` creates and repairs:")
	line("#   driftwatch check -f <this file>")
	line("#   driftwatch diff -f <this file>")
	line("#")
	line("# Every object driftwatch applies carries the label")
	line("# %s=<hub.managedBy> and the annotation", kubeobj.ManagedByLabel)
	line("# %s=<cluster>:<namespace>/<name>:<kind>.", kubeobj.NodeIDAnnotation)
	line("")
	line("hub:")
	note("  id: "+DefaultHubID, "names this hub (a DNS label)")
	line("  # The defaults:")
	note("  # managedBy: "+kubeobj.DefaultManagedBy, "value of the managed-by label")
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
	line("# Where the hub says what it does, besides its log (docs/notifications.md):")
	line("# notifications:")
	note("#   kubernetesEvents: {}", "on the objects: kubectl describe shows DriftRepaired...")
	line("#   webhooks:")
	line("#     - {name: oncall, url: \"${SLACK_WEBHOOK_URL}\", format: slack, minSeverity: warning}")
	line("")
	line("clusters:")
	if opts.KubeconfigPath == "" {
		line("  # Without `kubeconfig`, each context is looked up as kubectl does: in")
		line("  # the files listed in $KUBECONFIG (merged), else in ~/.kube/config.")
	} else {
		line("  # Each cluster is one context of the kubeconfig file.")
	}
	ids := starterIDs(contexts)
	envs := make([]string, len(contexts)) // the overlays guessed
	for i, c := range contexts {
		line("  - id: %s", ids[i])
		if opts.KubeconfigPath != "" {
			line("    kubeconfig: %s", yamlScalar(opts.KubeconfigPath))
		}
		line("    context: %s", yamlScalar(c))
		switch {
		case from != nil && from.Overlays != nil:
			if envs[i] = StarterOverlay(c, from.Overlays); envs[i] != "" {
				note(fmt.Sprintf("    labels: {%s: %s}", StarterEnvLabel, yamlScalar(envs[i])), "guessed from the context name: its overlay")
			} else {
				note(fmt.Sprintf("    # labels: {%s: <overlay>}", StarterEnvLabel), "not guessed from the context name: one of "+orList(from.Overlays))
			}
		case i == 0:
			note("    # labels: {env: prod}", "applications can select clusters by label")
		}
	}
	line("")
	if from != nil {
		starterSource(&b, from, fromPath, opts.Namespace, ids, envs)
		return []byte(b.String()), nil
	}
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

// StarterEnvLabel is the cluster label whose value names a cluster's
// overlay in a starter made from a base/overlays folder.
const StarterEnvLabel = "env"

// starterSource writes the sources section of a starter made from the
// user's manifests: one source at path (as the config writes it) on the
// clusters ids, whose guessed overlays are envs. With overlays but no
// cluster guessed, the source is commented out: a selector that matches
// no cluster is an error.
func starterSource(b *strings.Builder, f *StarterFolder, path, namespace string, ids, envs []string) {
	line := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	note := func(code, comment string) { fmt.Fprintf(b, "%-30s # %s\n", code, comment) }
	prefix := "" // comments the source out
	guessed := slices.ContainsFunc(envs, func(e string) bool { return e != "" })
	line("sources:")
	switch {
	case f.Overlays != nil:
		line("  # Your kustomize overlays, built as `kustomize build` does: each cluster")
		line("  # with an %s label gets overlays/<its %s>, one of %s.", StarterEnvLabel, StarterEnvLabel, orList(f.Overlays))
		line("  # `driftwatch serve` creates their objects, production included: diff")
		line("  # first.")
		if !guessed {
			line("  # No context name holds an overlay's name: set each cluster's %s", StarterEnvLabel)
			line("  # label above, then uncomment the source.")
			prefix = "# "
		}
	case f.Kind == "kustomize":
		line("  # Your kustomization, built as `kustomize build` does, on every cluster")
		line("  # above, production included. `driftwatch serve` creates its objects:")
		line("  # diff first.")
	case f.Kind == "helm":
		line("  # Your chart, rendered as `helm template` does (release %s), on every", f.ID)
		line("  # cluster above, production included. `driftwatch serve` creates its")
		line("  # objects: diff first.")
	default:
		line("  # Your manifests (every .yaml, .yml and .json file), on every cluster")
		line("  # above, production included. `driftwatch serve` creates their objects:")
		line("  # diff first.")
	}
	line("  %s- id: %s", prefix, f.ID)
	p := "  " + prefix + "  " // a field's indent
	switch {
	case f.Overlays != nil:
		overlay := path + "/overlays/${cluster.labels." + StarterEnvLabel + "}"
		if yamlScalar(path) != path {
			overlay = strconv.Quote(overlay)
		}
		line("%skustomize: %s", p, overlay)
		note(p+"selector: "+StarterEnvLabel, "every cluster with the label")
	case f.Kind == "kustomize":
		line("%skustomize: %s", p, yamlScalar(path))
	case f.Kind == "helm":
		line("%shelm:", p)
		line("%s  chart: %s", p, yamlScalar(path))
		if len(f.ValuesFiles) > 0 {
			note(p+"  # valuesFiles:", "merged over the chart's values.yaml (Helm applies it anyway)")
			for _, v := range f.ValuesFiles {
				line("%s  #   - %s", p, yamlScalar(path+"/"+v))
			}
		}
	default:
		line("%spath: %s", p, yamlScalar(path))
	}
	if f.Overlays == nil {
		line("%sclusters: [%s]", p, strings.Join(ids, ", "))
		note(p+"# selector: env=prod", "or select clusters by their labels")
	}
	switch ns := f.SourceNamespace(namespace); {
	case ns != "" && f.Kind == "helm":
		note(p+"namespace: "+ns, "the release's namespace")
	case ns != "":
		note(p+"namespace: "+ns, "of the namespaced objects that set none")
	case f.Kind != "helm" && f.Unnamespaced() > 0:
		note(p+"# namespace: default", "of the namespaced objects that set none")
	}
	line("%s# It starts in warn: drift is reported, never repaired, and nothing is", p)
	line("%s# deleted. Set repair (or remove the line: the hub's policy) once the", p)
	line("%s# diff is what you expect.", p)
	line("%spolicy: %s", p, hub.PolicyWarn)
}

// orList lists words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
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
func StarterClusterID(context string) string { return dnsLabelOf(context, "cluster") }

// dnsLabelOf makes s a lowercase DNS label of its letters and digits,
// every other run of characters a dash, at most 63 characters; fallback
// when nothing is left.
func dnsLabelOf(s, fallback string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
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
		return fallback
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

// StarterFolder is a folder of manifests a starter config makes a source
// of, as InspectStarterFolder found and rendered it.
type StarterFolder struct {
	// Path is the folder (or manifest file) as given, cleaned.
	Path string
	// Kind is how the source renders: "path", "kustomize" or "helm", as
	// Source.Kind says.
	Kind string
	// Overlays are the overlay names of a base/overlays layout, sorted:
	// the folder's overlays/NAME folders that hold a kustomization (Kind
	// is then "kustomize", rendered from overlays/${cluster.labels.env}).
	// Nil for any other layout.
	Overlays []string
	// ValuesFiles are a chart's values files besides its values.yaml
	// (values-prod.yaml), relative to the chart; the starter names them
	// in a comment. Helm applies values.yaml by itself.
	ValuesFiles []string
	// ID is the source id: the folder's name made a DNS label.
	ID string
	// Namespace is the release namespace a chart was rendered in; "" for
	// "default" and for the other kinds.
	Namespace string
	// Renders are the renderings: one per overlay, else one.
	Renders []StarterRender
}

// StarterRender is what one rendering of a StarterFolder gave.
type StarterRender struct {
	// Location is what was rendered, relative to the folder: "." or
	// overlays/NAME.
	Location string
	// Objects is the number of objects.
	Objects int
	// Kinds counts the objects by kind.
	Kinds map[string]int
	// Unnamespaced counts the namespaced objects that set no namespace:
	// they go to the source's namespace.
	Unnamespaced int
}

// Summary says what a rendering holds: "7 objects: 2 Deployment,
// 1 ConfigMap, ...", the kinds by count, then by name.
func (r StarterRender) Summary() string {
	kinds := make([]string, 0, len(r.Kinds))
	for k := range r.Kinds {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if c := r.Kinds[b] - r.Kinds[a]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", r.Kinds[k], k)
	}
	noun := "objects"
	if r.Objects == 1 {
		noun = "object"
	}
	return fmt.Sprintf("%d %s: %s", r.Objects, noun, strings.Join(parts, ", "))
}

// Unnamespaced counts the namespaced objects of every rendering that set
// no namespace.
func (f *StarterFolder) Unnamespaced() int {
	n := 0
	for _, r := range f.Renders {
		n += r.Unnamespaced
	}
	return n
}

// SourceNamespace returns the namespace the starter writes for the source
// when the user asked for ns: ns for a chart (its release's namespace),
// else ns only when some namespaced object sets no namespace; "" leaves
// the key out.
func (f *StarterFolder) SourceNamespace(ns string) string {
	if f.Kind == "helm" || f.Unnamespaced() > 0 {
		return ns
	}
	return ""
}

// helmReleaseNameMax is the longest Helm release name.
const helmReleaseNameMax = 53

// InspectStarterFolder finds out how the manifests at path render and
// renders them once, as Load would:
//   - a kustomization file (kustomization.yaml, kustomization.yml or
//     Kustomization) at the folder's root: a kustomize source;
//   - a Chart.yaml, or a .tgz file: a Helm chart, rendered in namespace
//     (its release's; "" means "default") with the release name the
//     source id;
//   - overlays/NAME folders holding a kustomization (base/overlays): a
//     kustomize source of overlays/${cluster.labels.env}, each overlay
//     rendered;
//   - else plain manifests: a path source (a folder, or one file).
//
// An empty folder, one that cannot be read, and manifests that do not
// render (kustomize's or Helm's own message) or render no object are
// errors naming the folder.
//
// sandbox, when set, renders a Helm chart in a child process
// (manifest.Sandbox); nil renders it in process.
func InspectStarterFolder(ctx context.Context, path, namespace string, sandbox *manifest.Sandbox) (*StarterFolder, error) {
	if path == "" {
		return nil, errors.New("no folder given")
	}
	path = filepath.Clean(path)
	f := &StarterFolder{Path: path}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.ID = StarterSourceID(abs)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	// The requests have no Root: the folder is local, the operator's own,
	// and renders as a local source of the config init writes would
	// (which may reach ../base beside it); only Git sources are held to
	// their checkout.
	var reqs []manifest.Request
	var locs []string
	if !fi.IsDir() {
		if strings.HasSuffix(strings.ToLower(path), ".tgz") {
			f.Kind = "helm"
		} else {
			f.Kind = "path"
		}
	} else {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
		}
		if len(entries) == 0 {
			return nil, fmt.Errorf("%s: empty folder: no manifests, kustomization or chart", path)
		}
		has := func(names ...string) bool {
			return slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return !e.IsDir() && slices.Contains(names, e.Name()) })
		}
		switch {
		case has(konfig.RecognizedKustomizationFileNames()...):
			f.Kind = "kustomize"
		case has("Chart.yaml"):
			f.Kind = "helm"
			for _, e := range entries {
				n := e.Name()
				if !e.IsDir() && n != "values.yaml" && strings.HasPrefix(n, "values") && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
					f.ValuesFiles = append(f.ValuesFiles, n)
				}
			}
		default:
			f.Overlays, err = overlays(path)
			if err != nil {
				return nil, err
			}
			if f.Overlays != nil {
				f.Kind = "kustomize"
				for _, o := range f.Overlays {
					loc := filepath.Join("overlays", o)
					locs = append(locs, filepath.ToSlash(loc))
					reqs = append(reqs, manifest.Request{Kustomize: filepath.Join(path, loc)})
				}
			} else {
				f.Kind = "path"
			}
		}
	}
	if reqs == nil {
		locs = []string{"."}
		var r manifest.Request
		switch f.Kind {
		case "path":
			r.Path = path
		case "kustomize":
			r.Kustomize = path
		case "helm":
			f.ID = trimID(f.ID, helmReleaseNameMax)
			f.Namespace = namespace
			r.Helm = &manifest.Helm{Chart: path, ReleaseName: f.ID, Namespace: namespace}
		}
		reqs = []manifest.Request{r}
	}

	st := newSourceState()
	st.sandbox = sandbox
	renders := make([]*rendering, len(reqs))
	for i, r := range reqs {
		where := filepath.Join(path, locs[i])
		renders[i] = st.render(ctx, sourceRequest{req: r, key: where})
		if err := renders[i].err; err != nil {
			hint := ""
			if f.Kind == "path" && fi.IsDir() {
				hint = nestedSources(path)
			}
			return nil, fmt.Errorf("%s: does not render (%s): %w%s", where, f.Kind, err, hint)
		}
		if len(renders[i].objects) == 0 {
			if f.Kind == "path" {
				return nil, fmt.Errorf("%s: no objects: no manifest (.yaml, .yml or .json file) holds one", where)
			}
			return nil, fmt.Errorf("%s: renders no objects (%s)", where, f.Kind)
		}
	}
	// Scopes are known once every rendering's CRDs are.
	for i, res := range renders {
		r := StarterRender{Location: locs[i], Objects: len(res.objects), Kinds: map[string]int{}}
		for _, o := range res.objects {
			r.Kinds[o.gvk.Kind]++
			if o.namespace == "" && st.namespaced(o.gvk) {
				r.Unnamespaced++
			}
		}
		f.Renders = append(f.Renders, r)
	}
	return f, nil
}

// overlays returns the names of the folder's overlays/NAME folders that
// hold a kustomization file, sorted; nil when there are none.
func overlays(dir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "overlays"))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "overlays"), unwrapPathError(err))
	}
	var names []string
	for _, e := range entries {
		// An overlay is chosen by a label value: other names cannot be.
		if !e.IsDir() || len(validation.IsValidLabelValue(e.Name())) > 0 || e.Name() == "" {
			continue
		}
		for _, k := range konfig.RecognizedKustomizationFileNames() {
			if fi, err := os.Stat(filepath.Join(dir, "overlays", e.Name(), k)); err == nil && !fi.IsDir() {
				names = append(names, e.Name())
				break
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// nestedSources names, as a hint for plain manifests that do not
// render, the folders under dir (a few levels down) that hold a
// kustomization or a chart, which are no plain manifests: " (deploy/base
// holds a kustomization: start from it)"; "" when there are none.
func nestedSources(dir string) string {
	var found []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || strings.Count(rel, string(filepath.Separator)) >= 3 || strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		for _, name := range append(konfig.RecognizedKustomizationFileNames(), "Chart.yaml") {
			if fi, err := os.Stat(filepath.Join(p, name)); err == nil && !fi.IsDir() {
				what := "a kustomization"
				if name == "Chart.yaml" {
					what = "a chart"
				}
				found = append(found, filepath.ToSlash(p)+" holds "+what)
				return filepath.SkipDir
			}
		}
		return nil
	})
	switch {
	case len(found) == 0:
		return ""
	case len(found) > 5:
		found = append(found[:5], "...")
	}
	what := "start from it"
	if len(found) > 1 {
		what = "start from one of them"
	}
	return " (" + strings.Join(found, ", ") + ": " + what + ")"
}

// unwrapPathError drops the path of a *fs.PathError, which the caller
// names already.
func unwrapPathError(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// StarterSourceID derives a source id from the path of a folder (or a
// file) of manifests: its last element, without a .yaml, .yml, .json or
// .tgz extension, made a DNS label as StarterClusterID does; "manifests"
// when nothing is left. For example ./deploy gives deploy and
// My_Chart-1.2.tgz gives my-chart-1-2.
func StarterSourceID(path string) string {
	base := filepath.Base(filepath.Clean(path))
	for _, ext := range []string{".yaml", ".yml", ".json", ".tgz"} {
		if strings.HasSuffix(strings.ToLower(base), ext) {
			base = base[:len(base)-len(ext)]
			break
		}
	}
	return dnsLabelOf(base, "manifests")
}

// StarterOverlay guesses the overlay of a cluster from its context name:
// the overlay whose name the context name holds (ignoring case), as a
// whole word (between non-alphanumerics) before anywhere else, the
// longest when several do. "" when none does, or when two that are not
// part of each other both do (dev-to-prod).
func StarterOverlay(context string, overlays []string) string {
	ctx := strings.ToLower(context)
	word := func(i, n int) bool {
		alnum := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }
		return (i == 0 || !alnum(ctx[i-1])) && (i+n == len(ctx) || !alnum(ctx[i+n]))
	}
	var words, anywhere []string
	for _, o := range overlays {
		lo := strings.ToLower(o)
		if lo == "" {
			continue
		}
		for i := 0; ; {
			j := strings.Index(ctx[i:], lo)
			if j < 0 {
				break
			}
			if word(i+j, len(lo)) {
				words = append(words, o)
				break
			}
			i += j + 1
			if !slices.Contains(anywhere, o) {
				anywhere = append(anywhere, o)
			}
		}
	}
	found := words
	if len(found) == 0 {
		found = anywhere
	}
	var best string
	for _, o := range found {
		if len(o) > len(best) {
			best = o
		}
	}
	for _, o := range found {
		if !strings.Contains(strings.ToLower(best), strings.ToLower(o)) {
			return ""
		}
	}
	return best
}
