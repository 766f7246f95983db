package config

import (
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/template"

	"github.com/sourcegraph/conc/iter"
	yaml "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/driftwatch/driftwatch/hub"
)

// The known fields of each mapping, their schema order and how plain
// fields are read come from the `yaml` tags of the public types (see
// schema.go). What follows is what the tags cannot say: the values a few
// fields accept, and the checks and defaults of the others, as hooks.

func serviceTypes() []string {
	return []string{string(corev1.ServiceTypeClusterIP), string(corev1.ServiceTypeNodePort), string(corev1.ServiceTypeLoadBalancer)}
}

func policies() []string { return []string{string(hub.PolicyRepair), string(hub.PolicyWarn)} }

func resourceNames() []string {
	return []string{string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourceEphemeralStorage)}
}

// reservedPrefix marks label and annotation keys driftwatch owns.
const reservedPrefix = "driftwatch.io/"

// maxConfigBytes is the most data a ConfigMap can hold.
const maxConfigBytes = 1 << 20

// clusterSrc remembers where a cluster came from, for reference checks.
type clusterSrc struct {
	field  string
	idPos  pos
	nsList bool // namespaces is an explicit list
	reach  reach
}

// reach is how a cluster is reached, when that alone says which cluster it
// is: in-cluster, or a context of the default kubeconfig. Two clusters
// reached the same way are the same cluster twice.
type reach struct {
	key  string // "" when the file alone does not say which cluster
	at   child  // the field that says it
	desc string // in words, for messages
}

// sourceSrc remembers where a Cluster API source came from, for reference
// checks.
type sourceSrc struct {
	field   string
	namePos pos
}

// appSrc remembers where an application came from, for reference checks.
type appSrc struct {
	field      string
	pos        pos
	idPos      pos
	ns         child
	nsOK       bool
	clusters   child
	items      []item // entries of clusters, parallel to Application.Clusters
	hasList    bool
	selector   child
	selectorOK bool
	sel        labels.Selector // the parsed selector when selectorOK
}

// decoder holds the state of one Parse.
type decoder struct {
	*walker
	opts    LoadOptions
	baseDir string
	cfg     *Config
	// incomplete* are set when part of the clusters could not be read, so
	// reference checks do not pile up errors that are only consequences.
	incompleteIDs    bool
	incompleteLabels bool
	clusters         []clusterSrc
	sources          []sourceSrc
	apps             []appSrc
	srcs             []srcSrc
	// clusterAt are the first clusters of each id (references).
	clusterAt  map[string]int
	workspaces []workspaceSrc
	// workspaceEntries counts the terraform section's entries, even
	// unreadable ones; workspacesBroken is set when it is not a list.
	workspaceEntries int
	workspacesBroken bool
	// clustersSec and sourcesSec are the clusters and clusterAPI sections;
	// *Entries count their entries, even unreadable ones, and *Broken is
	// set when a section is not a list.
	clustersSec, sourcesSec       child
	clusterEntries, sourceEntries int
	clustersBroken, sourcesBroken bool
	topPos                        pos
	// sourceNames are the names of the clusterAPI sources (isSource).
	sourceNames map[string]bool
}

// emptyNode reports whether n is a document's empty content: nothing
// written, not even null.
func emptyNode(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "" && n.Tag == "!!null" && n.Style == 0 && n.Anchor == ""
}

// parse parses data (text as a string) and validates it, recording every
// problem in w.errs.
func (w *walker) parse(path string, data []byte, text string, opts LoadOptions) *Config {
	docs, ok := w.parseYAML(data, text)
	if !ok {
		return nil
	}
	var body *yaml.Node
	for _, doc := range docs {
		if len(doc.Content) == 0 || emptyNode(doc.Content[0]) {
			continue
		}
		if body != nil {
			w.errorf(w.posOf(doc.Content[0]), "", "want a single YAML document, found another one")
			break
		}
		body = doc.Content[0]
	}
	if body == nil {
		w.errorf(pos{1, 1}, "", "config is empty")
		return nil
	}

	base, err := filepath.Abs(filepath.Dir(path))
	if path == "" || err != nil {
		base, _ = os.Getwd()
	}
	d := &decoder{walker: w, opts: opts, baseDir: base, cfg: &Config{Path: path}}
	cfg := d.cfg
	top := d.fields(body, "", pos{1, 1}, cfg,
		on(&cfg.Hub, d.hub),
		on(&cfg.Clusters, d.clusterList),
		on(&cfg.ClusterAPI, d.sourceList),
		on(&cfg.Applications, d.appList),
		on(&cfg.Sources, d.sourceSection),
		on(&cfg.Notifications, d.notifications),
		on(&cfg.Terraform, d.workspaceList),
	)
	if top == nil {
		return nil
	}
	d.topPos = top.pos
	d.cfg.sources = newSourceState()
	d.cfg.sources.sandbox = opts.RenderSandbox
	d.references()
	if len(w.errs) == 0 {
		d.checkoutGitSources()
	}
	if len(w.errs) == 0 {
		d.renderSources(d.clusterAt)
	}
	return d.cfg
}

func (d *decoder) hub(c child) {
	h := &d.cfg.Hub
	*h = Hub{
		ID: DefaultHubID, ManagedBy: kubeobj.DefaultManagedBy, Resync: DefaultResync, Policy: DefaultPolicy,
		DecommissionTimeout: DefaultDecommissionTimeout, PruneLimit: DefaultPruneLimit,
		// QPS and Burst stay 0 unless set: the adaptive rate limit;
		// Workers 0: Config.Workers.
	}
	d.fields(c.node, c.field, c.pos, h,
		on(&h.ID, func(c child) {
			if s, ok := d.str(c); ok && d.dnsLabel(c, s) {
				h.ID = s
			}
		}),
		on(&h.ManagedBy, func(c child) {
			s, ok := d.str(c)
			if !ok {
				return
			}
			switch errs := content.IsLabelValue(s); {
			case s == "":
				d.errorf(c.pos, c.field, "must not be empty")
			case len(errs) > 0:
				d.errorf(c.pos, c.field, "invalid label value %q: %s", s, kmsg(errs))
			default:
				h.ManagedBy = s
			}
		}),
		on(&h.StateFile, func(c child) { h.StateFile = d.stateFile(c) }),
		on(&h.Coordination, func(c child) { h.Coordination = d.coordination(c) }),
		on(&h.Ignore, func(c child) { h.Ignore = d.ignoreRules(c) }),
	)
}

// coordination reads hub.coordination; nil when it is absent or invalid
// (reported).
func (d *decoder) coordination(c child) *Coordination {
	if !c.set {
		return nil
	}
	co := &Coordination{LeaseDuration: DefaultLeaseDuration}
	o := d.fields(c.node, c.field, c.pos, co,
		on(&co.Kubeconfig, func(c child) { co.Kubeconfig = d.kubeconfig(c) }),
		on(&co.Namespace, func(c child) {
			if s, ok := d.str(c); ok && d.dnsLabel(c, s) {
				co.Namespace = s
			}
		}),
	)
	if o == nil {
		return nil
	}
	if ctx := o.get("context"); ctx.set && !o.get("kubeconfig").set {
		d.errorf(ctx.pos, ctx.field, "needs kubeconfig (without it the hub uses the service account of its Pod)")
	}
	if ld := o.get("leaseDuration"); ld.set && co.LeaseDuration < MinLeaseDuration {
		d.errorf(ld.pos, ld.field, "must be at least %v", MinLeaseDuration)
	}
	return co
}

// stateFile reads hub.stateFile: StateFileNone as is, any other path
// expanded like a kubeconfig path; "" when it is absent or invalid
// (reported).
func (d *decoder) stateFile(c child) string {
	if c.node == nil {
		return ""
	}
	s, ok := d.str(c)
	if !ok {
		return ""
	}
	switch {
	case strings.TrimSpace(s) == "":
		d.errorf(c.pos, c.field, "must not be empty (leave it out for the default path, or set %s to keep no state)", StateFileNone)
		return ""
	case s == StateFileNone:
		return s
	}
	p, err := d.expandPath(s)
	if err != nil {
		d.errorf(c.pos, c.field, "%v", err)
		return ""
	}
	return p
}

func (d *decoder) clusterList(c child) {
	d.clustersSec = c
	items, ok := d.list(c)
	if !ok && c.node != nil {
		d.incompleteIDs, d.incompleteLabels = true, true
		d.clustersBroken = true
	}
	d.clusterEntries = len(items)
	for _, it := range items {
		d.cluster(it)
	}
}

func (d *decoder) cluster(it item) {
	h := d.cfg.Hub
	cl := Cluster{Policy: h.Policy, QPS: h.QPS, Burst: h.Burst}
	src := clusterSrc{field: it.field}
	o := d.fields(it.node, it.field, it.pos, &cl,
		on(&cl.ID, func(c child) {
			src.idPos = c.pos
			if s, ok := d.str(c); ok {
				cl.ID = s
				d.dnsLabel(c, s)
			}
		}),
		on(&cl.Kubeconfig, func(c child) { cl.Kubeconfig = d.kubeconfig(c) }),
		on(&cl.Namespaces, func(c child) {
			if ns, ok := d.namespaces(c); ok {
				src.nsList = true
				cl.Namespaces = ns
			}
		}),
		on(&cl.Labels, func(c child) {
			if c.node == nil {
				return
			}
			if l, ok := d.labels(c, false); ok {
				cl.Labels = l
			} else {
				d.incompleteLabels = true
			}
		}),
	)
	if o == nil {
		d.incompleteIDs, d.incompleteLabels = true, true
		return
	}
	if cl.ID == "" {
		d.incompleteIDs = true
	}
	src.reach = d.connection(o, cl.Context, cl.InCluster)
	d.cfg.Clusters = append(d.cfg.Clusters, cl)
	d.clusters = append(d.clusters, src)
}

// kubeconfig reads the kubeconfig field of a cluster or source and expands
// it; "" when it is absent (the default kubeconfig) or invalid (reported).
func (d *decoder) kubeconfig(c child) string {
	if !c.set {
		return ""
	}
	if c.node == nil {
		d.errorf(c.pos, c.field, "must not be empty")
		return ""
	}
	s, ok := d.str(c)
	if !ok {
		return ""
	}
	if s == "" {
		d.errorf(c.pos, c.field, "must not be empty")
		return ""
	}
	p, err := d.expandPath(s)
	if err != nil {
		d.errorf(c.pos, c.field, "%v", err)
		return ""
	}
	return p
}

// defaultKubeconfig names the kubeconfig used when a cluster or source has
// none, in messages.
const defaultKubeconfig = "$KUBECONFIG or ~/.kube/config"

// connection checks how the cluster or source read into o is reached, given
// the context and inCluster values read: with inCluster, kubeconfig and
// context must be left out; without kubeconfig, the default kubeconfig is
// used, and as kubectl shares it (its current context changes under
// `kubectl config use-context`), context is required. It returns the
// reach when that alone says which cluster it is.
func (d *decoder) connection(o *object, context string, inCluster bool) reach {
	kc, ctx, ic := o.get("kubeconfig"), o.get("context"), o.get("inCluster")
	if ic.node != nil && kindOf(ic.node) != kindBool {
		return reach{} // reported; whether it is in-cluster is unknown
	}
	if inCluster {
		for _, c := range []child{kc, ctx} {
			if c.set {
				d.errorf(c.pos, c.field, "must be left out with inCluster: true (line %d), which uses the service account of the hub's Pod", ic.pos.line)
			}
		}
		if kc.set || ctx.set {
			return reach{}
		}
		return reach{key: "in-cluster", at: ic, desc: "inCluster: true"}
	}
	if kc.set {
		return reach{}
	}
	switch s, isScalar := scalar(ctx.node); {
	case !ctx.set:
		d.errorf(ctx.pos, ctx.field, "required without kubeconfig: name the context of %s to use (or set kubeconfig, or inCluster: true)", defaultKubeconfig)
	case ctx.node == nil || isScalar && s == "":
		d.errorf(ctx.pos, ctx.field, "must not be empty without kubeconfig: name the context of %s to use", defaultKubeconfig)
	case context != "":
		return reach{key: "context " + context, at: ctx, desc: fmt.Sprintf("context %q of the default kubeconfig (%s)", context, defaultKubeconfig)}
	}
	return reach{}
}

// namespaces reads a list of namespaces, sorted; ok is false when the field
// is absent or not a list. Invalid and repeated entries are reported and
// left out.
func (d *decoder) namespaces(c child) (ns []string, ok bool) {
	if c.node == nil {
		return nil, false
	}
	vals, items, ok := d.strList(c)
	if !ok {
		return nil, false
	}
	ns = []string{}
	listed := make(map[string]bool, len(vals))
	for i, v := range vals {
		c := child{node: items[i].node, field: items[i].field, pos: items[i].pos}
		if !d.dnsLabel(c, v) {
			continue
		}
		if listed[v] {
			d.errorf(c.pos, c.field, "namespace %q is listed twice", v)
			continue
		}
		listed[v] = true
		ns = append(ns, v)
	}
	slices.Sort(ns)
	return ns, true
}

// sourceList reads the clusterAPI section.
func (d *decoder) sourceList(c child) {
	d.sourcesSec = c
	items, ok := d.list(c)
	if !ok && c.node != nil {
		d.sourcesBroken = true
	}
	d.sourceEntries = len(items)
	for _, it := range items {
		d.source(it)
	}
}

// source reads one Cluster API source and applies its defaults.
func (d *decoder) source(it item) {
	s := ClusterAPISource{IDTemplate: DefaultIDTemplate, Policy: d.cfg.Hub.Policy}
	src := sourceSrc{field: it.field}
	o := d.fields(it.node, it.field, it.pos, &s,
		on(&s.Name, func(c child) {
			src.namePos = c.pos
			if v, ok := d.str(c); ok && d.dnsLabel(c, v) {
				s.Name = v
			}
		}),
		on(&s.Kubeconfig, func(c child) { s.Kubeconfig = d.kubeconfig(c) }),
		on(&s.Namespaces, func(c child) {
			if ns, ok := d.namespaces(c); ok && len(ns) > 0 {
				s.Namespaces = ns
			}
		}),
		on(&s.Selector, func(c child) {
			if v, ok := d.str(c); ok && strings.TrimSpace(v) != "" {
				if _, err := labels.Parse(v); err != nil {
					d.errorf(c.pos, c.field, "invalid selector %q: %v", v, err)
				} else {
					s.Selector = v
				}
			}
		}),
		on(&s.Labels, func(c child) {
			if l, ok := d.labels(c, false); ok {
				s.Labels = l
			}
		}),
		on(&s.IDTemplate, func(c child) {
			if v, ok := d.str(c); ok && d.idTemplate(c, v) {
				s.IDTemplate = v
			}
		}),
		on(&s.ExecAllowlist, func(c child) { s.ExecAllowlist = d.execAllowlist(c) }),
	)
	if o == nil {
		return
	}
	// Several sources may watch one management cluster (other namespaces,
	// other selectors), so how a source is reached need not be unique.
	d.connection(o, s.Context, s.InCluster)
	d.cfg.ClusterAPI = append(d.cfg.ClusterAPI, s)
	d.sources = append(d.sources, src)
}

// execAllowlistEntry is an execAllowlist entry as written: the schema of
// clientcmdapi.AllowlistEntry, which has no yaml tags.
type execAllowlistEntry struct {
	// Command is an absolute path, or a command name looked up in PATH.
	Command string `yaml:"command,required"`
}

// execAllowlist reads a source's execAllowlist: entries {command: ...} whose
// command is an absolute path or a bare name looked up in PATH, normalised
// (client-go refuses an allowlist entry that filepath.Clean changes), and
// not repeated. Nil when absent or empty (reported), or when no entry is
// valid.
func (d *decoder) execAllowlist(c child) []clientcmdapi.AllowlistEntry {
	if c.set && c.node == nil {
		d.errorf(c.pos, c.field, "must not be empty (leave it out to deny every exec plugin)")
		return nil
	}
	items, ok := d.list(c)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		d.errorf(c.pos, c.field, "must not be empty (leave it out to deny every exec plugin)")
		return nil
	}
	var out []clientcmdapi.AllowlistEntry
	listed := map[string]bool{}
	for _, it := range items {
		var e execAllowlistEntry
		d.fields(it.node, it.field, it.pos, &e, on(&e.Command, func(cmd child) {
			v, ok := d.str(cmd)
			if !ok {
				return
			}
			switch {
			case strings.TrimSpace(v) == "":
				d.errorf(cmd.pos, cmd.field, "must not be empty")
			case filepath.Clean(v) != v:
				d.errorf(cmd.pos, cmd.field, "%q is not a normalised path: write %q", v, filepath.Clean(v))
			case !filepath.IsAbs(v) && strings.ContainsRune(v, filepath.Separator):
				d.errorf(cmd.pos, cmd.field, "%q is a relative path: want an absolute path or a command name looked up in PATH", v)
			case listed[v]:
				d.errorf(cmd.pos, cmd.field, "command %q is listed twice", v)
			default:
				listed[v] = true
				out = append(out, clientcmdapi.AllowlistEntry{Command: v})
			}
		}))
	}
	return out
}

// idTemplate checks a source's id template: it must parse, and render a
// valid cluster id for a sample Cluster object (so it uses no field but
// .Namespace and .Name). Discovery lowercases the ids it renders.
func (d *decoder) idTemplate(c child, s string) bool {
	if strings.TrimSpace(s) == "" {
		d.errorf(c.pos, c.field, "must not be empty (leave it out for %s)", DefaultIDTemplate)
		return false
	}
	tmpl, err := template.New("id").Option("missingkey=error").Parse(s)
	if err != nil {
		d.errorf(c.pos, c.field, "invalid id template %q: %s", s, templateMsg(err))
		return false
	}
	const sampleNS, sampleName = "default", "cluster"
	var w idWriter
	if err := tmpl.Execute(&w, struct{ Namespace, Name string }{sampleNS, sampleName}); err != nil {
		if w.tooLong {
			d.errorf(c.pos, c.field, "id template %q gives more than %d characters for Cluster %s/%s, too long for a cluster id",
				s, content.DNS1123LabelMaxLength, sampleNS, sampleName)
		} else {
			d.errorf(c.pos, c.field, "invalid id template %q: %s", s, templateMsg(err))
		}
		return false
	}
	id := strings.ToLower(string(w.b))
	if errs := content.IsDNS1123Label(id); len(errs) > 0 || id == "" {
		msg := "it is empty"
		if id != "" {
			msg = kmsg(errs)
		}
		d.errorf(c.pos, c.field, "id template %q gives %q for Cluster %s/%s, not a valid cluster id: %s", s, id, sampleNS, sampleName, msg)
		return false
	}
	return true
}

// idWriter collects a rendered cluster id. It fails once the id is longer
// than a DNS label may be, which also stops a template that loops.
type idWriter struct {
	b       []byte
	tooLong bool
}

// Write appends p to the id, or fails when that would make it too long.
func (w *idWriter) Write(p []byte) (int, error) {
	if len(w.b)+len(p) > content.DNS1123LabelMaxLength {
		w.tooLong = true
		return 0, fmt.Errorf("id longer than %d characters", content.DNS1123LabelMaxLength)
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

// templateMsg shortens a text/template error to its message: it drops the
// template's name and position, the failing action and the Go type.
func templateMsg(err error) string {
	msg := strings.TrimPrefix(err.Error(), "template: id:")
	msg = strings.TrimLeft(msg, "0123456789:")
	msg = strings.TrimSpace(msg)
	if rest, ok := strings.CutPrefix(msg, `executing "id" at <`); ok {
		if _, after, ok := strings.Cut(rest, ">: "); ok {
			msg = after
		}
	}
	if before, _, ok := strings.Cut(msg, " in type struct"); ok {
		msg = before + " (it can use .Namespace and .Name)"
	}
	return msg
}

func (d *decoder) appList(c child) {
	items, _ := d.list(c)
	d.cfg.Applications = slices.Grow(d.cfg.Applications, len(items))
	d.apps = slices.Grow(d.apps, len(items))
	if len(items) >= 2*appsPerFork && d.appsInParallel(items) {
		return
	}
	for _, it := range items {
		d.app(it)
	}
}

// appsPerFork is the fewest applications appsInParallel gives a core.
const appsPerFork = 256

// appsInParallel decodes items in a chunk per core, each chunk by a
// decoder of its own, and then takes what they read and the errors they
// found in the file's order: the result is what decoding the items one
// after the other gives. Decoding 10,000 applications takes about a
// third of loading them, and nothing in one reads another (the checks
// across them come later, in references). When merge keys in the items
// expand to more entries than a file may have, it gives up having changed
// nothing, so that the items are decoded again one by one and the error
// is reported where it always is.
func (d *decoder) appsInParallel(items []item) bool {
	n := min(runtime.GOMAXPROCS(0), len(items)/appsPerFork)
	if n < 2 {
		return false
	}
	chunks := make([][]item, n)
	for i := range n {
		chunks[i] = items[i*len(items)/n : (i+1)*len(items)/n]
	}
	forks := iter.Map(chunks, func(chunk *[]item) *decoder {
		f := d.fork(len(*chunk))
		for _, it := range *chunk {
			f.app(it)
		}
		return f
	})
	merged := d.merged
	for _, f := range forks {
		merged += f.merged - d.merged
	}
	if merged > maxMergedEntries {
		return false
	}
	for _, f := range forks {
		d.cfg.Applications = append(d.cfg.Applications, f.cfg.Applications...)
		d.apps = append(d.apps, f.apps...)
		for _, e := range f.errs {
			d.addError(e)
		}
	}
	d.merged = merged
	return true
}

// fork returns a decoder for n of the applications, run beside d: it
// reads what d has read, and has its own errors, positions cache and
// results, sized for n.
func (d *decoder) fork(n int) *decoder {
	f := *d
	f.walker = &walker{file: d.file, text: source{data: d.text.data, lines: d.text.lines, ascii: d.text.ascii}, unknown: d.unknown, merged: d.merged}
	cfg := *d.cfg
	cfg.Applications = make([]Application, 0, n)
	f.cfg = &cfg
	f.apps = make([]appSrc, 0, n)
	return &f
}

func (d *decoder) app(it item) {
	a := Application{Replicas: 1}
	src := appSrc{field: it.field}
	var id child
	var envAt map[string]pos
	o := d.fields(it.node, it.field, it.pos, &a,
		on(&a.ID, func(c child) {
			id, src.idPos = c, c.pos
			if s, ok := d.str(c); ok {
				a.ID = s
				d.dnsLabel(c, s)
			}
		}),
		on(&a.Tenancy, func(c child) {
			s, ok := d.str(c)
			if !ok {
				return
			}
			switch errs := content.IsLabelValue(TenancyLabelValue(s)); {
			case s == "":
				d.errorf(c.pos, c.field, "must not be empty")
			case len(errs) > 0:
				d.errorf(c.pos, c.field, "invalid tenancy %q: with ':' replaced by '.' it must be a label value: %s", s, kmsg(errs))
			default:
				a.Tenancy = s
			}
		}),
		on(&a.Namespace, func(c child) {
			src.ns = c
			if s, ok := d.str(c); ok {
				a.Namespace = s
				src.nsOK = d.dnsLabel(c, s)
			}
		}),
		on(&a.Clusters, func(c child) {
			src.clusters = c
			if c.node == nil {
				return
			}
			if vals, items, ok := d.strList(c); ok {
				src.hasList = true
				a.Clusters, src.items = vals, items
				if a.Clusters == nil {
					a.Clusters = []string{}
				}
			}
		}),
		on(&a.Selector, func(c child) {
			src.selector = c
			if s, ok := d.str(c); ok {
				a.Selector = s
				src.sel, src.selectorOK = d.selector(c, s)
			}
		}),
		on(&a.Image, func(c child) {
			s, ok := d.str(c)
			switch {
			case !ok:
			case s == "":
				d.errorf(c.pos, c.field, "must not be empty")
			case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
				d.errorf(c.pos, c.field, "invalid image %q: must not contain spaces or control characters", s)
			default:
				a.Image = s
			}
		}),
		on(&a.Env, func(c child) { a.Env, envAt = d.env(c) }),
		on(&a.SecretEnv, func(c child) { a.SecretEnv = d.secretEnv(c, envAt) }),
		on(&a.Config, func(c child) { a.Config = d.configData(c) }),
		on(&a.Service, func(c child) {
			a.Service = d.service(c, a.Port)
			if a.Service != nil && a.ID != "" && (a.ID[0] < 'a' || a.ID[0] > 'z') {
				d.errorf(id.pos, id.field, "%q must start with a letter: it names a Service", a.ID)
			}
		}),
		on(&a.Resources, func(c child) { a.Resources = d.resources(c) }),
		on(&a.Labels, func(c child) {
			if l, ok := d.labels(c, true); ok {
				a.Labels = l
			}
		}),
		on(&a.Annotations, func(c child) { a.Annotations = d.annotations(c) }),
		on(&a.NodeSelector, func(c child) {
			if l, ok := d.labels(c, false); ok {
				a.NodeSelector = l
			}
		}),
		on(&a.Ignore, func(c child) { a.Ignore = d.ignoreRules(c) }),
	)
	if o == nil {
		return
	}
	src.pos = o.pos
	d.cfg.Applications = append(d.cfg.Applications, a)
	d.apps = append(d.apps, src)
}

// references checks what spans entries: unique ids, cluster references,
// selectors and namespaces.
func (d *decoder) references() {
	clusterAt := map[string]int{}
	for i, cl := range d.cfg.Clusters {
		if cl.ID == "" {
			continue
		}
		if j, dup := clusterAt[cl.ID]; dup {
			d.errorf(d.clusters[i].idPos, joinField(d.clusters[i].field, "id"), "duplicate cluster id %q (first at line %d)", cl.ID, d.clusters[j].idPos.line)
			continue
		}
		clusterAt[cl.ID] = i
	}
	d.clusterAt = clusterAt
	reachedBy := map[string]int{}
	for i, src := range d.clusters {
		r := src.reach
		if r.key == "" {
			continue
		}
		if j, dup := reachedBy[r.key]; dup {
			first := d.clusters[j]
			d.errorf(r.at.pos, r.at.field, "%s also reaches %s (line %d): the same cluster twice", r.desc, first.field, first.reach.at.pos.line)
			continue
		}
		reachedBy[r.key] = i
	}
	var ids []string
	for _, cl := range d.cfg.Clusters {
		if cl.ID != "" {
			ids = append(ids, cl.ID)
		}
	}
	d.sourceReferences(clusterAt)
	d.workspaceReferences(clusterAt)
	if d.clusterEntries == 0 && d.sourceEntries == 0 && !d.clustersBroken && !d.sourcesBroken &&
		d.workspaceEntries == 0 && !d.workspacesBroken {
		c := d.clustersSec
		if !c.set && d.sourcesSec.set {
			c = d.sourcesSec
		}
		field, p := c.field, c.pos
		if !c.set {
			field, p = "", d.topPos
		}
		d.errorf(p, field, "at least one cluster or clusterAPI source is required")
	}
	// Clusters discovered at runtime may match any selector later.
	discovery := d.sourceEntries > 0 || d.sourcesBroken

	appAt := map[string]int{}
	suggested := map[string]string{} // unknown cluster -> hint
	for i, a := range d.cfg.Applications {
		src := d.apps[i]
		if a.ID != "" {
			if j, dup := appAt[a.ID]; dup {
				d.errorf(src.idPos, joinField(src.field, "id"), "duplicate application id %q (first at line %d)", a.ID, d.apps[j].idPos.line)
			} else {
				appAt[a.ID] = i
			}
		}

		hasSel := src.selector.node != nil
		switch {
		case src.hasList && hasSel:
			d.errorf(src.selector.pos, src.selector.field, "set either clusters or selector, not both")
			continue
		case !src.hasList && !hasSel:
			if src.clusters.node == nil && src.selector.node == nil {
				d.errorf(src.pos, src.field, "one of clusters or selector is required")
			}
			continue
		}

		if src.hasList {
			d.checkClusterList(src.clusters, src.items, a.Clusters, clusterAt, ids, suggested)
		}
		matched := false
		for _, k := range d.targets(a, src, clusterAt) {
			cl := d.cfg.Clusters[k]
			matched = true
			if _, found := slices.BinarySearch(cl.Namespaces, a.Namespace); !src.nsOK || !d.clusters[k].nsList || found {
				continue
			}
			d.errorf(src.ns.pos, src.ns.field, "namespace %q is not managed on cluster %q (%s.namespaces: %s)",
				a.Namespace, cl.ID, d.clusters[k].field, strings.Join(cl.Namespaces, ", "))
		}
		if hasSel && src.selectorOK && !matched && !d.incompleteLabels && !discovery {
			d.errorf(src.selector.pos, src.selector.field, "selector %q matches no cluster", a.Selector)
		}
	}
	d.manifestReferences(clusterAt, ids, discovery)
}

// targets returns the indices of the clusters that application a, read
// from src, targets, in file order. Of clusters with the same id, only the
// first (clusterAt) counts.
func (d *decoder) targets(a Application, src appSrc, clusterAt map[string]int) []int {
	var out []int
	if src.hasList {
		for _, name := range a.Clusters {
			if k, ok := clusterAt[name]; ok {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	for k, cl := range d.cfg.Clusters {
		if first, ok := clusterAt[cl.ID]; !ok || first != k {
			continue
		}
		// A selector that did not parse: as Application.Matches has it.
		if src.sel != nil && src.sel.Matches(labels.Set(cl.Labels)) || src.sel == nil && a.Matches(cl.Info()) {
			out = append(out, k)
		}
	}
	return out
}

// sourceReferences checks that source names are unique and are not cluster
// ids.
func (d *decoder) sourceReferences(clusterAt map[string]int) {
	sourceAt := map[string]int{}
	for i, s := range d.cfg.ClusterAPI {
		if s.Name == "" {
			continue
		}
		src := d.sources[i]
		field := joinField(src.field, "name")
		if j, dup := sourceAt[s.Name]; dup {
			d.errorf(src.namePos, field, "duplicate clusterAPI source name %q (first at line %d)", s.Name, d.sources[j].namePos.line)
			continue
		}
		sourceAt[s.Name] = i
		if k, ok := clusterAt[s.Name]; ok {
			d.errorf(src.namePos, field, "name %q is also a cluster id (%s.id at line %d); source names and cluster ids must differ",
				s.Name, d.clusters[k].field, d.clusters[k].idPos.line)
		}
	}
}

// isSource reports whether name is the name of a clusterAPI source.
func (d *decoder) isSource(name string) bool {
	if d.sourceNames == nil {
		d.sourceNames = make(map[string]bool, len(d.cfg.ClusterAPI))
		for _, s := range d.cfg.ClusterAPI {
			d.sourceNames[s.Name] = true
		}
	}
	return d.sourceNames[name]
}

// dnsLabel checks an id or namespace; it reports and returns false when s is
// not an RFC 1123 label.
func (d *decoder) dnsLabel(c child, s string) bool {
	if s == "" {
		d.errorf(c.pos, c.field, "must not be empty")
		return false
	}
	if errs := content.IsDNS1123Label(s); len(errs) > 0 {
		d.errorf(c.pos, c.field, "invalid name %q: %s", s, kmsg(errs))
		return false
	}
	return true
}

// policy reads a drift policy.
func (d *decoder) policy(c child) (hub.Policy, bool) {
	s, ok := d.str(c)
	if !ok {
		return "", false
	}
	if !slices.Contains(policies(), s) {
		d.errorf(c.pos, c.field, "invalid policy %q: want %s%s", s, strings.Join(policies(), " or "), hint(s, policies()))
		return "", false
	}
	return hub.Policy(s), true
}

// selector parses a label selector over cluster labels.
func (d *decoder) selector(c child, s string) (labels.Selector, bool) {
	if strings.TrimSpace(s) == "" {
		d.errorf(c.pos, c.field, "must not be empty (to target every cluster, list them or use a selector such as env)")
		return nil, false
	}
	sel, err := labels.Parse(s)
	if err != nil {
		d.errorf(c.pos, c.field, "invalid selector %q: %v", s, err)
		return nil, false
	}
	return sel, true
}

// labels reads a label map (labels or nodeSelector). With extra set, keys
// driftwatch manages itself are refused.
func (d *decoder) labels(c child, extra bool) (map[string]string, bool) {
	kvs, ok := d.strMap(c)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(kvs))
	good := true
	for _, e := range kvs {
		switch errs := content.IsLabelKey(e.key); {
		case len(errs) > 0:
			d.errorf(e.keyPos, e.field, "invalid label key %q: %s", e.key, kmsg(errs))
			good = false
			continue
		case extra && (e.key == kubeobj.ManagedByLabel || e.key == kubeobj.AppLabel || strings.HasPrefix(e.key, reservedPrefix)):
			d.errorf(e.keyPos, e.field, "label %q is managed by driftwatch and cannot be set", e.key)
			good = false
			continue
		}
		if errs := content.IsLabelValue(e.value); len(errs) > 0 {
			d.errorf(e.valuePos, e.field, "invalid label value %q: %s", e.value, kmsg(errs))
			good = false
			continue
		}
		out[e.key] = e.value
	}
	return out, good
}

// annotations reads extra annotations.
func (d *decoder) annotations(c child) map[string]string {
	kvs, ok := d.strMap(c)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(kvs))
	for _, e := range kvs {
		switch errs := content.IsLabelKey(e.key); {
		case len(errs) > 0:
			d.errorf(e.keyPos, e.field, "invalid annotation key %q: %s", e.key, kmsg(errs))
		case strings.HasPrefix(e.key, reservedPrefix):
			d.errorf(e.keyPos, e.field, "annotation %q is managed by driftwatch and cannot be set", e.key)
		default:
			out[e.key] = e.value
		}
	}
	return out
}

// env reads environment variables, and where each name is (for secretEnv's
// check).
func (d *decoder) env(c child) (map[string]string, map[string]pos) {
	kvs, ok := d.strMap(c)
	if !ok {
		return nil, nil
	}
	out := make(map[string]string, len(kvs))
	at := make(map[string]pos, len(kvs))
	for _, e := range kvs {
		at[e.key] = e.keyPos
		if !d.envVarName(e) {
			continue
		}
		out[e.key] = e.value
	}
	return out, at
}

// envVarName checks the name of an env or secretEnv entry.
func (d *decoder) envVarName(e kv) bool {
	if errs := validation.IsEnvVarName(e.key); len(errs) > 0 {
		d.errorf(e.keyPos, e.field, "invalid environment variable name %q: %s", e.key, kmsg(errs))
		return false
	}
	return true
}

// secretEnv reads environment variables set from Secrets: NAME: secret/key.
// envAt holds the positions of the env names, none of which may appear
// here.
func (d *decoder) secretEnv(c child, envAt map[string]pos) map[string]SecretKeyRef {
	kvs, ok := d.strMap(c)
	if !ok {
		return nil
	}
	out := make(map[string]SecretKeyRef, len(kvs))
	for _, e := range kvs {
		if !d.envVarName(e) {
			continue
		}
		if p, dup := envAt[e.key]; dup {
			d.errorf(e.keyPos, e.field, "%q is also set in env (line %d): set it in env or secretEnv, not both", e.key, p.line)
			continue
		}
		if ref, ok := d.secretKeyRef(e); ok {
			out[e.key] = ref
		}
	}
	return out
}

// secretKeyRef parses the value of a secretEnv entry, secret/key.
func (d *decoder) secretKeyRef(e kv) (SecretKeyRef, bool) {
	const want = "want <secret>/<key>, the name of a Secret in the application's namespace and a key in its data, e.g. db-credentials/password"
	name, key, found := strings.Cut(e.value, "/")
	switch {
	case strings.TrimSpace(e.value) == "":
		d.errorf(e.valuePos, e.field, "must not be empty: %s", want)
		return SecretKeyRef{}, false
	case !found:
		d.errorf(e.valuePos, e.field, "invalid secret reference %q: no '/': %s", e.value, want)
		return SecretKeyRef{}, false
	case name == "":
		d.errorf(e.valuePos, e.field, "invalid secret reference %q: the Secret name before '/' is empty: %s", e.value, want)
		return SecretKeyRef{}, false
	case key == "":
		d.errorf(e.valuePos, e.field, "invalid secret reference %q: the key after '/' is empty: %s", e.value, want)
		return SecretKeyRef{}, false
	}
	good := true
	if errs := content.IsDNS1123Subdomain(name); len(errs) > 0 {
		d.errorf(e.valuePos, e.field, "invalid secret reference %q: invalid Secret name %q: %s", e.value, name, kmsg(errs))
		good = false
	}
	if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
		// Secret keys follow the ConfigMap key rules; say which it is.
		msg := strings.ReplaceAll(kmsg(errs), "config key", "Secret key")
		d.errorf(e.valuePos, e.field, "invalid secret reference %q: invalid key %q: %s", e.value, key, msg)
		good = false
	}
	return SecretKeyRef{Name: name, Key: key}, good
}

// configData reads the data of the application's ConfigMap.
func (d *decoder) configData(c child) map[string]string {
	kvs, ok := d.strMap(c)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(kvs))
	size := 0
	for _, e := range kvs {
		if errs := validation.IsConfigMapKey(e.key); len(errs) > 0 {
			d.errorf(e.keyPos, e.field, "invalid config key %q: %s", e.key, kmsg(errs))
			continue
		}
		size += len(e.key) + len(e.value)
		out[e.key] = e.value
	}
	if size > maxConfigBytes {
		d.errorf(c.pos, c.field, "config data is %d bytes; a ConfigMap holds at most %d", size, maxConfigBytes)
	}
	return out
}

// service reads the service section and applies its defaults, given the
// application's port. A Service is made when the section is present or the
// application has a port.
func (d *decoder) service(c child, appPort int32) *Service {
	s := &Service{Port: appPort, TargetPort: appPort, Type: corev1.ServiceTypeClusterIP}
	if c.node == nil {
		if appPort == 0 {
			return nil
		}
		return s
	}
	o := d.fields(c.node, c.field, c.pos, s, on(&s.Type, func(t child) {
		if v, ok := d.str(t); ok {
			if !slices.Contains(serviceTypes(), v) {
				d.errorf(t.pos, t.field, "invalid service type %q: want %s%s", v, strings.Join(serviceTypes(), ", "), hint(v, serviceTypes()))
			} else {
				s.Type = corev1.ServiceType(v)
			}
		}
	}))
	if o == nil {
		return nil
	}
	if port := o.get("port"); port.node == nil && appPort == 0 {
		d.errorf(o.pos, port.field, "required when the application has no port")
	}
	if s.TargetPort == 0 {
		s.TargetPort = s.Port
	}
	return s
}

// resources reads requests and limits, canonicalising every quantity.
func (d *decoder) resources(c child) Resources {
	var r Resources
	type parsed struct {
		q   resource.Quantity
		pos pos
	}
	read := func(c child) (map[string]string, map[string]parsed) {
		kvs, ok := d.strMap(c)
		if !ok {
			return nil, nil
		}
		out := map[string]string{}
		qs := map[string]parsed{}
		for _, e := range kvs {
			if !validResourceName(e.key) {
				d.errorf(e.keyPos, e.field, "unknown resource %q: want cpu, memory, ephemeral-storage, hugepages-<size> or a prefixed extended resource%s", e.key, hint(e.key, resourceNames()))
				continue
			}
			q, err := resource.ParseQuantity(e.value)
			switch {
			case err != nil:
				d.errorf(e.valuePos, e.field, "invalid quantity %q: want a Kubernetes quantity such as 100m, 1, 64Mi or 1Gi", e.value)
				continue
			case q.Sign() < 0:
				d.errorf(e.valuePos, e.field, "quantity %q must not be negative", e.value)
				continue
			}
			out[e.key] = q.String()
			qs[e.key] = parsed{q: q, pos: e.valuePos}
		}
		return out, qs
	}
	var req child
	var reqQ, limQ map[string]parsed
	o := d.fields(c.node, c.field, c.pos, &r,
		on(&r.Requests, func(c child) { req = c; r.Requests, reqQ = read(c) }),
		on(&r.Limits, func(c child) { r.Limits, limQ = read(c) }),
	)
	if o == nil {
		return Resources{}
	}
	for name, rq := range reqQ {
		if lq, ok := limQ[name]; ok && rq.q.Cmp(lq.q) > 0 {
			d.errorf(rq.pos, mapField(req.field, name), "request %s exceeds limit %s", rq.q.String(), lq.q.String())
		}
	}
	if len(r.Requests) == 0 {
		r.Requests = nil
	}
	if len(r.Limits) == 0 {
		r.Limits = nil
	}
	return r
}

// validResourceName accepts the standard container resources and prefixed
// extended resources such as example.com/gpu.
func validResourceName(name string) bool {
	switch {
	case slices.Contains(resourceNames(), name):
		return true
	case strings.HasPrefix(name, "hugepages-"):
		_, err := resource.ParseQuantity(strings.TrimPrefix(name, "hugepages-"))
		return err == nil
	case strings.Contains(name, "/"):
		return len(content.IsLabelKey(name)) == 0
	}
	return false
}

// expandPath expands `~` and ${VAR} in a kubeconfig or state file path and
// makes it absolute relative to the config file's folder.
func (d *decoder) expandPath(p string) (string, error) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		home := d.opts.HomeDir
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("cannot expand ~: %w", err)
			}
			home = h
		}
		p = filepath.Join(home, p[1:])
	case strings.HasPrefix(p, "~"):
		return "", fmt.Errorf("invalid path %q: only ~/ is expanded, not ~user/", p)
	}
	var missing []string
	p = os.Expand(p, func(name string) string {
		v := d.opts.Getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	})
	switch len(missing) {
	case 0:
	case 1:
		return "", fmt.Errorf("environment variable %s is not set", missing[0])
	default:
		return "", fmt.Errorf("environment variables %s are not set", strings.Join(missing, ", "))
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(d.baseDir, p)
	}
	return filepath.Clean(p), nil
}

// hint returns a did-you-mean suffix, or "".
func hint(s string, known []string) string {
	if m := suggest(s, known); m != "" && m != s {
		return fmt.Sprintf(" (did you mean %q?)", m)
	}
	return ""
}

// kmsg shortens Kubernetes validation messages: it drops the examples and
// the regular expression and joins several messages with "; ".
func kmsg(errs []string) string {
	out := make([]string, len(errs))
	for i, e := range errs {
		if j := strings.Index(e, " (e.g. "); j >= 0 {
			e = e[:j]
		}
		out[i] = e
	}
	return strings.Join(out, "; ")
}

// TenancyLabelValue returns the value of the kubeobj.TenancyLabel label for a
// tenancy ID: label values cannot hold ':', so it becomes '.'.
func TenancyLabelValue(tenancy string) string {
	return strings.ReplaceAll(tenancy, ":", ".")
}

// checkClusterList checks the clusters list of an application or a source
// (names, parallel to items): not empty, no cluster twice, every one known
// (a did-you-mean hint, cached in suggested, for the others).
func (d *decoder) checkClusterList(clusters child, items []item, names []string, clusterAt map[string]int, ids []string, suggested map[string]string) {
	if len(names) == 0 && len(items) == 0 {
		d.errorf(clusters.pos, clusters.field, "must list at least one cluster")
	}
	listed := make(map[string]bool, len(names))
	for k, name := range names {
		it := items[k]
		if listed[name] {
			d.errorf(it.pos, it.field, "cluster %q is listed twice", name)
			continue
		}
		listed[name] = true
		if _, ok := clusterAt[name]; ok || d.incompleteIDs {
			continue
		}
		msg := fmt.Sprintf("unknown cluster %q", name)
		if d.isSource(name) {
			msg += " (it names a clusterAPI source: select the clusters it discovers with a selector over their labels)"
		} else {
			h, ok := suggested[name]
			if !ok {
				h = hint(name, ids)
				suggested[name] = h
			}
			msg += h
		}
		d.errorf(it.pos, it.field, "%s", msg)
	}
}
