package app

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/config/manifest"
	"github.com/driftwatch/driftwatch/hub"
)

// Output formats of -o, as every command spells them: text for people,
// json and yaml for programs. Each command accepts those that mean
// something for it (see its help).
const (
	FormatText = "text"
	FormatJSON = "json"
	FormatYAML = "yaml"
)

// StdinName names the standard input in config errors when a command
// reads its config from it (-f -); relative paths in it are relative to
// the current folder.
const StdinName = "<stdin>"

// CheckOptions are the settings of Check (the flags of driftwatch check).
type CheckOptions struct {
	// File is the config file; "-" reads it from Env.Stdin.
	File string
	// Output is FormatText (the plan), FormatYAML or FormatJSON (the
	// compiled objects).
	Output string
	// Kubeconfig, when set, is the kubeconfig of the clusters and sources
	// that name none, instead of $KUBECONFIG, else ~/.kube/config.
	Kubeconfig string
	// SkipKubeconfigs checks the file alone, without reading the
	// kubeconfigs it names (e.g. where they are not installed).
	SkipKubeconfigs bool
}

// Check is `driftwatch check`: it validates a config file, and the
// kubeconfigs and contexts it names without contacting any cluster (see
// checkKubeconfigs), and prints the plan, or with FormatYAML or FormatJSON
// the compiled objects. An invalid file prints every error on stderr and
// exits 1.
func Check(o CheckOptions, env Env) error {
	getenv, stdout, stderr := env.Getenv, env.Stdout, env.Stderr
	opts, cleanup := tempRemotes(config.LoadOptions{Getenv: getenv, HomeDir: getenv("HOME"), RenderSandbox: manifest.Self()}, "")
	defer cleanup()
	cfg, data, err := loadConfig(o.File, env, opts)
	var list config.ErrorList
	if errors.As(err, &list) {
		printErrors(stderr, list)
		return &ExitError{Code: 1}
	}
	if err != nil {
		return err
	}
	loaded := cfg
	cfg, flagKubeconfig, err := withDefaultKubeconfig(cfg, o.Kubeconfig, "check")
	if err != nil {
		return err
	}
	if !o.SkipKubeconfigs {
		scope := kubeconfigScope{others: true, defaultKubeconfig: flagKubeconfig}
		if list := checkKubeconfigs(loaded, data, getenv, scope); len(list) > 0 {
			printErrors(stderr, list)
			return &ExitError{Code: 1}
		}
	}

	warnManagesNothing(stderr, cfg)
	switch o.Output {
	case FormatYAML:
		return printObjects(stdout, config.Compile(cfg))
	case FormatJSON:
		return printObjectsJSON(stdout, config.Compile(cfg))
	}
	warnWorkspaces(stderr, cfg)
	stateFile, err := StateFile(cfg, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "driftwatch: warning: %v\n", err)
	}
	return printPlan(stdout, cfg, stateFile)
}

// loadConfig loads the config file, or with "-" the config on env.Stdin
// (named StdinName in errors). data is what was read from stdin, nil for
// a file.
func loadConfig(file string, env Env, opts config.LoadOptions) (cfg *config.Config, data []byte, err error) {
	if file != "-" {
		cfg, err = config.Load(file, opts)
		return cfg, nil, err
	}
	if env.Stdin == nil {
		return nil, nil, errors.New("read config: -f -: no standard input")
	}
	if data, err = config.Read(StdinName, env.Stdin); err != nil {
		return nil, nil, err // an ErrorList when over the size limit
	}
	cfg, err = config.Parse(StdinName, data, opts)
	return cfg, data, err
}

// printErrors prints config errors, one a line.
func printErrors(w io.Writer, list config.ErrorList) {
	for _, e := range list {
		fmt.Fprintln(w, e)
	}
}

// warnManagesNothing warns loudly about a valid config that would manage
// nothing on a cluster: a hub running it would decommission everything it
// applied there before (the prune guard refuses that without
// --allow-prune, but the file is most likely a mistake).
func warnManagesNothing(w io.Writer, cfg *config.Config) {
	const consequence = "a running hub given this file would prune every object it manages there (refused without --allow-prune)"
	if len(cfg.Applications)+len(cfg.Sources) == 0 && len(cfg.Clusters)+len(cfg.ClusterAPI) == 0 {
		return // only Terraform workspaces: their resources are their own
	}
	if len(cfg.Applications)+len(cfg.Sources) == 0 {
		fmt.Fprintf(w, "driftwatch: WARNING: no applications: this config manages nothing on any cluster; %s\n", consequence)
		return
	}
	what := "no application"
	if len(cfg.Sources) > 0 {
		what = "no application or source"
	}
	for _, cl := range cfg.Clusters {
		if len(cfg.AppsFor(cl.Info()))+len(cfg.SourcesFor(cl.Info())) == 0 {
			fmt.Fprintf(w, "driftwatch: WARNING: cluster %q: %s targets it: this config manages nothing there; %s\n", cl.ID, what, consequence)
		}
	}
}

// printObjects writes the compiled objects as multi-document YAML, each
// preceded by a comment with its NodeID.
func printObjects(w io.Writer, specs []hub.NodeSpec) error {
	var b strings.Builder
	for i, s := range specs {
		obj, err := kubeobj.Object(s)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		var y []byte
		if obj != nil {
			y, err = kubeobj.MarshalYAML(obj.Object)
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

// printObjectsJSON writes the compiled objects as one JSON List, as
// kubectl get -o json prints several objects.
func printObjectsJSON(w io.Writer, specs []hub.NodeSpec) error {
	items := make([]map[string]any, 0, len(specs))
	for _, s := range specs {
		obj, err := kubeobj.Object(s)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		if obj != nil {
			items = append(items, obj.Object)
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}

// printPlan writes the hub settings, then per cluster what it will manage,
// then the Cluster API sources whose clusters are discovered at runtime.
// stateFile is the resolved state file ("" for none, or when there is no
// default path).
func printPlan(w io.Writer, cfg *config.Config, stateFile string) error {
	// Written as it goes: the plan of a large config is tens of MB.
	b := bufio.NewWriterSize(w, 64<<10)
	h := cfg.Hub
	tw := tabwriter.NewWriter(b, 0, 4, 1, ' ', 0)
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
	compiled, err := config.OutlineClusters(cfg, cfg.ClusterInfos())
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	for i, cl := range cfg.Clusters {
		specs := compiled[i]
		total += len(specs)
		ns := strings.Join(cfg.Namespaces(cl.ID), ", ")
		switch {
		case cl.Namespaces == nil && ns == "" && len(cfg.Sources) > 0:
			ns = "(none: no application or namespaced source object targets this cluster)"
		case cl.Namespaces == nil && ns == "":
			ns = "(none: no application targets this cluster)"
		case cl.Namespaces == nil && len(cfg.Sources) > 0:
			ns += " (from the applications and sources)"
		case cl.Namespaces == nil:
			ns += " (from the applications)"
		}
		fmt.Fprintf(b, "\ncluster %s\n", cl.ID)
		tw := tabwriter.NewWriter(b, 0, 4, 1, ' ', 0)
		printKubeconfig(tw, cl.Kubeconfig, cl.Context, cl.InCluster)
		fmt.Fprintf(tw, "  namespaces:\t%s\n", ns)
		fmt.Fprintf(tw, "  labels:\t%s\n", formatLabels(cl.Labels))
		fmt.Fprintf(tw, "  policy:\t%s\n", cl.Policy)
		fmt.Fprintf(tw, "  qps/burst:\t%s\n", clusters.DescribeRateLimit(cl.QPS, cl.Burst))
		fmt.Fprintf(tw, "  objects:\t%d\n", len(specs))
		tw.Flush()
		printSpecs(b, specs)
	}
	for _, src := range cfg.Sources {
		printManifestSource(b, cfg, src)
	}
	for _, src := range cfg.ClusterAPI {
		printSource(b, cfg, src)
	}
	printWorkspaces(b, cfg)
	printNotifications(b, cfg)
	summary := []string{plural(len(cfg.Clusters), "cluster")}
	if len(cfg.ClusterAPI) > 0 {
		summary = append(summary, plural(len(cfg.ClusterAPI), "clusterAPI source"))
	}
	if len(cfg.Terraform) > 0 {
		summary = append(summary, plural(len(cfg.Terraform), "terraform workspace"))
	}
	summary = append(summary, plural(len(cfg.Applications), "application"))
	if len(cfg.Sources) > 0 {
		summary = append(summary, plural(len(cfg.Sources), "source"))
	}
	summary = append(summary, plural(total, "object"))
	if n := len(cfg.Notifications.Webhooks); n > 0 {
		summary = append(summary, plural(n, "webhook"))
	}
	fmt.Fprintf(b, "\n%s\n", strings.Join(summary, ", "))
	return b.Flush()
}

// printNotifications writes the webhooks of the plan: where each goes (the
// URL's scheme and host only: its path and query often hold the secret,
// e.g. a chat incoming-webhook URL), which events it takes, and the names of
// its headers (never their values).
func printNotifications(b *bufio.Writer, cfg *config.Config) {
	for _, w := range cfg.Notifications.Webhooks {
		fmt.Fprintf(b, "\nwebhook %s\n", w.Name)
		tw := tabwriter.NewWriter(b, 0, 4, 1, ' ', 0)
		fmt.Fprintf(tw, "  to:\t%s\n", webhookTarget(w.URL))
		if w.Format != "" {
			fmt.Fprintf(tw, "  format:\t%s\n", w.Format)
		}
		events := "every event"
		if len(w.Events) > 0 {
			names := make([]string, 0, len(w.Events))
			for _, e := range w.Events {
				names = append(names, string(e))
			}
			events = strings.Join(names, ", ")
		}
		fmt.Fprintf(tw, "  events:\t%s\n", events)
		if w.MinSeverity != "" {
			fmt.Fprintf(tw, "  min severity:\t%s\n", w.MinSeverity)
		}
		if len(w.Clusters) > 0 {
			fmt.Fprintf(tw, "  clusters:\t%s\n", strings.Join(w.Clusters, ", "))
		}
		if len(w.Applications) > 0 {
			fmt.Fprintf(tw, "  applications:\t%s\n", strings.Join(w.Applications, ", "))
		}
		if len(w.Headers) > 0 {
			fmt.Fprintf(tw, "  headers:\t%s (values not shown)\n", strings.Join(slices.Sorted(maps.Keys(w.Headers)), ", "))
		}
		tw.Flush()
	}
}

// webhookTarget is a webhook URL without what may be secret in it: its
// scheme and host, and whether a path or query was left out.
func webhookTarget(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(URL not shown)"
	}
	t := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		t += "/... (path not shown)"
	}
	return t
}

// printManifestSource writes a manifest source of the plan: how it
// renders and from where, what it targets, and per target cluster of the
// file the number of its objects and their kinds.
func printManifestSource(b *bufio.Writer, cfg *config.Config, src config.Source) {
	fmt.Fprintf(b, "\nsource %s\n", src.ID)
	tw := tabwriter.NewWriter(b, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "  %s:\t%s\n", src.Kind(), cfg.RelPath(src.Location()))
	if g := src.Git; g != nil {
		at := "-"
		if co, ok := src.Checkout(); ok {
			at = co.Commit
			if len(at) > 7 {
				at = at[:7]
			}
			at += " " + co.Message
		}
		fmt.Fprintf(tw, "  git:\t%s %s @ %s\n", g.URL, cmp.Or(g.Ref, "HEAD"), at)
	}
	if h := src.Helm; h != nil {
		if h.Repo != "" {
			at := "-"
			if co, ok := src.Checkout(); ok {
				at = hub.ShortCommit(co.Commit) + " " + co.Message
			}
			fmt.Fprintf(tw, "  repo:\t%s %s @ %s\n", h.Repo, cmp.Or(h.Version, "(latest)"), at)
		}
		fmt.Fprintf(tw, "  release:\t%s in %s\n", h.ReleaseName, h.Namespace)
		for _, f := range h.ValuesFiles {
			fmt.Fprintf(tw, "  values file:\t%s\n", cfg.RelPath(f))
		}
		if len(h.Values) > 0 {
			fmt.Fprintf(tw, "  values:\t%s (inline)\n", strings.Join(slices.Sorted(maps.Keys(h.Values)), ", "))
		}
		if h.KubeVersion != "" {
			fmt.Fprintf(tw, "  kubeVersion:\t%s\n", h.KubeVersion)
		}
	}
	if src.Selector != "" {
		fmt.Fprintf(tw, "  selector:\t%s\n", src.Selector)
	} else {
		fmt.Fprintf(tw, "  clusters:\t%s\n", strings.Join(src.Clusters, ", "))
	}
	if src.Namespace != "" {
		fmt.Fprintf(tw, "  namespace:\t%s\n", src.Namespace)
	}
	if src.Policy != "" {
		fmt.Fprintf(tw, "  policy:\t%s\n", src.Policy)
	}
	var pruned []string
	for kind, on := range map[string]bool{"namespaces": src.Prune.Namespaces, "customResourceDefinitions": src.Prune.CustomResourceDefinitions,
		"persistentVolumeClaims": src.Prune.PersistentVolumeClaims} {
		if on {
			pruned = append(pruned, kind)
		}
	}
	slices.Sort(pruned)
	if len(pruned) > 0 {
		fmt.Fprintf(tw, "  prune:\t%s\n", strings.Join(pruned, ", "))
	}
	for _, cl := range cfg.Clusters {
		if !src.Matches(cl.Info()) {
			continue
		}
		sum := cfg.SourceObjects(cl.Info())[src.ID]
		fmt.Fprintf(tw, "  on %s:\t%s: %s\n", cl.ID, plural(sum.Objects, "object"), strings.Join(sum.Kinds, ", "))
	}
	if len(cfg.ClusterAPI) > 0 && src.Selector != "" {
		fmt.Fprintf(tw, "  discovered clusters:\t%s\n", "rendered when discovered, when the selector matches them")
	}
	tw.Flush()
}

// printSource writes a Cluster API source of the plan. Its clusters are
// only known at runtime, so it lists the applications that the source's
// labels select on their own; a Cluster object's labels may add more.
func printSource(b *bufio.Writer, cfg *config.Config, src config.ClusterAPISource) {
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

// printSpecs writes a cluster's objects, one a line: NodeID, application
// and policy in aligned columns, then the ignore rules an object has. The
// lines are those a tabwriter (padding 2) gives, written directly: the
// tabwriter kept every cell of a cluster's tens of thousands of lines.
func printSpecs(b *bufio.Writer, specs []hub.NodeSpec) {
	const indent, padding = "    ", 2
	ids := make([]string, len(specs))
	notes := make([]string, len(specs))
	idWidth, appWidth := 0, 0
	for i, s := range specs {
		ids[i], notes[i] = s.ID.String(), ignoreNote(s)
		idWidth = max(idWidth, len(indent)+utf8.RuneCountInString(ids[i]))
		appWidth = max(appWidth, utf8.RuneCountInString(s.Application))
	}
	// The policy is a column only in the runs of lines with a note.
	policyWidth := make([]int, len(specs))
	for i := 0; i < len(specs); {
		j, w := i, 0
		for ; j < len(specs) && notes[j] != ""; j++ {
			w = max(w, utf8.RuneCountInString(string(specs[j].Policy)))
		}
		for k := i; k < j; k++ {
			policyWidth[k] = w
		}
		i = max(j, i+1)
	}
	cell := func(s string, width int) {
		b.WriteString(s)
		for range width + padding - utf8.RuneCountInString(s) {
			b.WriteByte(' ')
		}
	}
	for i, s := range specs {
		cell(indent+ids[i], idWidth)
		cell(s.Application, appWidth)
		if notes[i] == "" {
			b.WriteString(string(s.Policy))
		} else {
			cell(string(s.Policy), policyWidth[i])
			b.WriteString(notes[i])
		}
		b.WriteByte('\n')
	}
}

// ignoreNote is what printSpecs writes after an object's policy: the names
// of the ignore rules that apply to it, or "".
func ignoreNote(s hub.NodeSpec) string {
	rules := s.Ignore.For(s.Kind)
	if len(rules) == 0 {
		return ""
	}
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.Name
	}
	return "ignoring: " + strings.Join(names, "; ")
}
