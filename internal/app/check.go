package app

import (
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
)

// Check is `driftwatch check`: it validates a config file and prints the
// plan, or with output "yaml" the compiled objects. An invalid file prints
// every error on stderr and exits 1.
func Check(file, output string, env Env) error {
	getenv, stdout, stderr := env.Getenv, env.Stdout, env.Stderr
	cfg, err := config.Load(file, config.LoadOptions{Getenv: getenv, HomeDir: getenv("HOME")})
	var list config.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Fprintln(stderr, e)
		}
		return &ExitError{Code: 1}
	}
	if err != nil {
		return err
	}

	warnManagesNothing(stderr, cfg)
	if output == "yaml" {
		return printObjects(stdout, config.Compile(cfg))
	}
	for _, cl := range cfg.Clusters {
		if _, err := os.Stat(cl.Kubeconfig); cl.Kubeconfig != "" && errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "driftwatch: warning: cluster %q: kubeconfig %s does not exist\n", cl.ID, cl.Kubeconfig)
		}
	}
	for _, src := range cfg.ClusterAPI {
		if _, err := os.Stat(src.Kubeconfig); src.Kubeconfig != "" && errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "driftwatch: warning: clusterAPI source %q: kubeconfig %s does not exist\n", src.Name, src.Kubeconfig)
		}
	}
	warnWorkspaces(stderr, cfg)
	stateFile, err := StateFile(cfg, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: warning: %v\n", err)
	}
	return printPlan(stdout, cfg, stateFile)
}

// warnManagesNothing warns loudly about a valid config that would manage
// nothing on a cluster: a hub running it would decommission everything it
// applied there before (the prune guard refuses that without
// --allow-prune, but the file is most likely a mistake).
func warnManagesNothing(w io.Writer, cfg *config.Config) {
	const consequence = "a running hub given this file would prune every object it manages there (refused without --allow-prune)"
	if len(cfg.Applications) == 0 && len(cfg.Clusters)+len(cfg.ClusterAPI) == 0 {
		return // only Terraform workspaces: their resources are their own
	}
	if len(cfg.Applications) == 0 {
		fmt.Fprintf(w, "driftwatch: WARNING: no applications: this config manages nothing on any cluster; %s\n", consequence)
		return
	}
	for _, cl := range cfg.Clusters {
		if len(cfg.AppsFor(cl.Info())) == 0 {
			fmt.Fprintf(w, "driftwatch: WARNING: cluster %q: no application targets it: this config manages nothing there; %s\n", cl.ID, consequence)
		}
	}
}

// printObjects writes the compiled objects as multi-document YAML, each
// preceded by a comment with its NodeID.
func printObjects(w io.Writer, specs []hub.NodeSpec) error {
	var b strings.Builder
	for i, s := range specs {
		obj, err := s.Object()
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		var y []byte
		if obj != nil {
			y, err = yaml.Marshal(obj.Object)
		}
		if err != nil {
			return fmt.Errorf("check: marshal %s: %w", s.ID, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "# %s\n", s.ID)
		b.Write(y)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// printPlan writes the hub settings, then per cluster what it will manage,
// then the Cluster API sources whose clusters are discovered at runtime.
// stateFile is the resolved state file ("" for none, or when there is no
// default path).
func printPlan(w io.Writer, cfg *config.Config, stateFile string) error {
	var b strings.Builder
	h := cfg.Hub
	tw := tabwriter.NewWriter(&b, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "hub %s\n", h.ID)
	fmt.Fprintf(tw, "  managedBy:\t%s\n", h.ManagedBy)
	fmt.Fprintf(tw, "  policy:\t%s\n", h.Policy)
	fmt.Fprintf(tw, "  resync:\t%s\n", h.Resync)
	if h.Workers > 0 {
		fmt.Fprintf(tw, "  workers:\t%d\n", h.Workers)
	} else {
		fmt.Fprintf(tw, "  workers:\t%d (%d per cluster source, %d to %d)\n", cfg.Workers(), config.WorkersPerSource, config.MinWorkers, config.MaxAutoWorkers)
	}
	fmt.Fprintf(tw, "  qps/burst:\t%s\n", clusters.DescribeRateLimit(h.QPS, h.Burst))
	fmt.Fprintf(tw, "  decommissionTimeout:\t%s\n", h.DecommissionTimeout)
	fmt.Fprintf(tw, "  pruneLimit:\t%d\n", h.PruneLimit)
	switch {
	case stateFile == "" && h.StateFile == config.StateFileNone:
		fmt.Fprintf(tw, "  stateFile:\t%s\n", "none (pauses, holds and what was applied are forgotten at exit)")
	case stateFile == "":
		fmt.Fprintf(tw, "  stateFile:\t%s\n", "(no default path: set hub.stateFile)")
	case h.StateFile == "":
		fmt.Fprintf(tw, "  stateFile:\t%s (default)\n", stateFile)
	default:
		fmt.Fprintf(tw, "  stateFile:\t%s\n", stateFile)
	}
	tw.Flush()

	total := 0
	for _, cl := range cfg.Clusters {
		specs := config.CompileCluster(cfg, cl.Info())
		total += len(specs)
		ns := strings.Join(cfg.Namespaces(cl.ID), ", ")
		switch {
		case cl.Namespaces == nil && ns == "":
			ns = "(none: no application targets this cluster)"
		case cl.Namespaces == nil:
			ns += " (from the applications)"
		}
		fmt.Fprintf(&b, "\ncluster %s\n", cl.ID)
		tw := tabwriter.NewWriter(&b, 0, 4, 1, ' ', 0)
		printKubeconfig(tw, cl.Kubeconfig, cl.Context, cl.InCluster)
		fmt.Fprintf(tw, "  namespaces:\t%s\n", ns)
		fmt.Fprintf(tw, "  labels:\t%s\n", formatLabels(cl.Labels))
		fmt.Fprintf(tw, "  policy:\t%s\n", cl.Policy)
		fmt.Fprintf(tw, "  qps/burst:\t%s\n", clusters.DescribeRateLimit(cl.QPS, cl.Burst))
		fmt.Fprintf(tw, "  objects:\t%d\n", len(specs))
		tw.Flush()
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, s := range specs {
			fmt.Fprintf(tw, "    %s\t%s\t%s%s\n", s.ID, s.Application, s.Policy, ignoreNote(s))
		}
		tw.Flush()
	}
	for _, src := range cfg.ClusterAPI {
		printSource(&b, cfg, src)
	}
	printWorkspaces(&b, cfg)
	summary := []string{plural(len(cfg.Clusters), "cluster")}
	if len(cfg.ClusterAPI) > 0 {
		summary = append(summary, plural(len(cfg.ClusterAPI), "clusterAPI source"))
	}
	if len(cfg.Terraform) > 0 {
		summary = append(summary, plural(len(cfg.Terraform), "terraform workspace"))
	}
	summary = append(summary, plural(len(cfg.Applications), "application"), plural(total, "object"))
	fmt.Fprintf(&b, "\n%s\n", strings.Join(summary, ", "))
	_, err := io.WriteString(w, b.String())
	return err
}

// printSource writes a Cluster API source of the plan. Its clusters are
// only known at runtime, so it lists the applications that the source's
// labels select on their own; a Cluster object's labels may add more.
func printSource(b *strings.Builder, cfg *config.Config, src config.ClusterAPISource) {
	ns := strings.Join(src.Namespaces, ", ")
	if ns == "" {
		ns = "(all)"
	}
	sel := src.Selector
	if sel == "" {
		sel = "(every Cluster object)"
	}
	var apps []string
	for _, a := range cfg.AppsFor(src.Info("", nil)) {
		apps = append(apps, a.ID)
	}
	appList := strings.Join(apps, ", ")
	if appList == "" {
		appList = "(none on the source's labels alone)"
	} else {
		appList += " (on the source's labels alone)"
	}
	fmt.Fprintf(b, "\nclusterAPI source %s\n", src.Name)
	tw := tabwriter.NewWriter(b, 0, 4, 1, ' ', 0)
	printKubeconfig(tw, src.Kubeconfig, src.Context, src.InCluster)
	fmt.Fprintf(tw, "  namespaces:\t%s\n", ns)
	fmt.Fprintf(tw, "  selector:\t%s\n", sel)
	fmt.Fprintf(tw, "  labels:\t%s\n", formatLabels(src.Labels))
	fmt.Fprintf(tw, "  id template:\t%s\n", src.IDTemplate)
	fmt.Fprintf(tw, "  policy:\t%s\n", src.Policy)
	fmt.Fprintf(tw, "  applications:\t%s\n", appList)
	fmt.Fprintf(tw, "  clusters:\t%s\n", "discovered at runtime")
	tw.Flush()
}

// printKubeconfig writes the plan lines saying how a cluster or source is
// reached: its kubeconfig file, the default one ($KUBECONFIG, else
// ~/.kube/config) and a context, or in-cluster.
func printKubeconfig(tw io.Writer, kubeconfig, ctxName string, inCluster bool) {
	switch {
	case inCluster:
		fmt.Fprintf(tw, "  kubeconfig:\t%s\n", "in-cluster (the service account of the hub's Pod)")
		return
	case kubeconfig == "":
		kubeconfig = "$KUBECONFIG/~/.kube/config"
	}
	if ctxName == "" {
		ctxName = "(the kubeconfig's current context)"
	}
	fmt.Fprintf(tw, "  kubeconfig:\t%s\n", kubeconfig)
	fmt.Fprintf(tw, "  context:\t%s\n", ctxName)
}

func formatLabels(l map[string]string) string {
	if len(l) == 0 {
		return "(none)"
	}
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// ignoreNote lists the ignore rules that apply to a spec, for the plan.
func ignoreNote(s hub.NodeSpec) string {
	rules := s.Ignore.For(s.Kind)
	if len(rules) == 0 {
		return ""
	}
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.Name
	}
	return "\tignoring: " + strings.Join(names, "; ")
}
