package config

import (
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/config/chartrepo"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/driftwatch/driftwatch/hub"
)

// PruneAnnotation on a desired object, with the value PruneDisabled, says
// that the object is never pruned: when it leaves the config, the hub
// forgets it and leaves it in the cluster. The compiler puts it on the
// Namespaces, CustomResourceDefinitions and PersistentVolumeClaims of
// sources (unless the source's prune section enables them), where pruning
// would delete everything inside; a manifest may set it on any object.
// The backend reads it from the live object.
const PruneAnnotation = kubeobj.PruneAnnotation

// PruneDisabled is the value of PruneAnnotation that disables pruning.
const PruneDisabled = kubeobj.PruneDisabled

// Source is a manifest source (a `sources:` entry): the user's own
// manifests, any Kubernetes objects, rendered from plain files, a
// kustomize folder or a Helm chart (exactly one of Path, Kustomize and
// Helm) and applied to every target cluster.
//
// Paths are relative to the config file's folder (`~` and environment
// variables are not expanded) and may use ${cluster.id} and
// ${cluster.labels.KEY}, so that one entry gives each cluster its own
// overlay or values: `kustomize: deploy/overlays/${cluster.labels.env}`.
// A target cluster without that label is an error. Sources are rendered
// when the config is loaded, each distinct path once, so a source that
// does not render makes the config invalid (a reload keeps the running
// state); the variants of clusters discovered through Cluster API are
// rendered when they are discovered.
//
// Objects without a namespace get Namespace when their kind is namespaced
// (as the kustomize and Helm renderers, and the CustomResourceDefinitions
// of every source, tell; a custom kind no source defines counts as
// namespaced); cluster-scoped objects never keep one. Each object gets the
// managed-by label, the application label (the source id) and the
// node-id and hub annotations; its status and server-set metadata are
// dropped.
type Source struct {
	// ID is the source's DNS-label id, unique among the sources and the
	// applications; its objects report it as their application.
	ID string `yaml:"id,required"`
	// Git, when set, takes the source from a Git repository: Path,
	// Kustomize and the Helm chart and values files are then paths inside
	// the repository (relative; "." is its root), read from a checkout of
	// the ref's current commit; a kustomize build reads nothing outside
	// the checkout (symlinks resolved). See docs/sources.md.
	Git *GitSource `yaml:"git"`
	// Path is a manifest file, or a folder of .yaml, .yml and .json files
	// read recursively in sorted path order (multi-document YAML, List
	// kinds expanded, empty documents skipped). Symlinks out of the folder
	// are refused.
	Path string `yaml:"path"`
	// Kustomize is a folder holding a kustomization file, built as
	// `kustomize build` does: load restrictions RootOnly, no plugins, no
	// helmCharts, no remote bases, resources or builtin config files, no
	// folders as generators, transformers or validators.
	Kustomize string `yaml:"kustomize"`
	// Helm is a Helm chart rendered as `helm template` does, without a
	// cluster.
	Helm *HelmChart `yaml:"helm"`
	// Clusters lists target cluster ids; nil when Selector is used.
	Clusters []string `yaml:"clusters"`
	// Selector is a Kubernetes label selector over cluster labels (those of
	// discovered clusters too); "" when Clusters is used.
	Selector string `yaml:"selector"`
	// Namespace is the namespace of the namespaced objects that set none;
	// "" means the Helm release's namespace for a chart, else "default".
	Namespace string `yaml:"namespace"`
	// Policy overrides the cluster's policy for the source's objects; ""
	// means no override.
	Policy hub.Policy `yaml:"policy"`
	// ProgressDeadlineSeconds is how long the source's objects may take to
	// become ready before they are reported stuck; 0 (left out) means the
	// Deployment's own spec.progressDeadlineSeconds, else 600 seconds.
	ProgressDeadlineSeconds int32 `yaml:"progressDeadlineSeconds,min=1"`
	// Ignore are the source's ignore rules (after the hub's); a rule's
	// kinds name the kinds as Kind or Kind.group (StatefulSet.apps).
	Ignore []IgnoreRule `yaml:"ignore"`
	// Prune enables pruning the kinds that are never pruned by default.
	Prune SourcePrune `yaml:"prune"`
	// Recreate, when true, lets the hub delete and recreate an object of
	// the source whose new desired state changes a field the apiserver
	// keeps immutable (a Deployment's selector, a Job's template, a
	// StatefulSet's volumeClaimTemplates): the object is deleted with
	// its UID and resourceVersion as preconditions, in the foreground
	// (its pods go first), and created anew once gone; at most once in
	// ten minutes, so that an object the apiserver refuses again once
	// recreated (a webhook that changes the field back) is not deleted
	// over and over. Objects whose
	// pruning is disabled (Namespaces, CRDs and PersistentVolumeClaims
	// unless prune enables them, and any annotated driftwatch.io/prune:
	// disabled) are never recreated. A manifest may allow it for one
	// object with the annotation driftwatch.io/recreate: enabled. Without
	// it such a change fails, naming the field and saying how to allow it.
	Recreate bool `yaml:"recreate"`

	// checkout is the Git checkout the source renders from (Git sources
	// loaded with LoadOptions.GitCheckout); nil otherwise.
	checkout *GitCheckout
}

// GitSource is a source's `git:` section: the repository its manifests
// come from. Credentials are read from files (never written in the
// config), at every fetch, so they can be rotated in place.
type GitSource struct {
	// URL is the repository: https://host/path, http://host/path,
	// ssh://[user@]host[:port]/path, the scp-like [user@]host:path, or
	// file:///absolute/path. It carries no credentials.
	URL string `yaml:"url,required"`
	// Ref is the branch, tag (short or refs/... name) or full 40-hex
	// commit to follow; "" means the remote's HEAD (its default branch).
	Ref string `yaml:"ref"`
	// Interval is how often the hub polls the repository for a new commit
	// (default 1m, at least 10s). A push webhook (see WebhookSecretFile) fetches at
	// once.
	Interval time.Duration `yaml:"interval"`
	// Timeout bounds one fetch; 0 (left out) means two minutes.
	Timeout time.Duration `yaml:"timeout"`
	// Auth names the files holding the credentials.
	Auth GitAuth `yaml:"auth"`
	// Verify, when set, accepts only commits signed by one of its keys.
	Verify *GitVerify `yaml:"verify"`
	// WebhookSecretFile holds the shared secret of the repository's push
	// webhook (POST /api/v1/webhooks/git on the API listener); "" means
	// the source takes no webhook and is only polled.
	WebhookSecretFile string `yaml:"webhookSecretFile"`
}

// GitAuth names the credentials files of a Git source, relative to the
// config file's folder.
type GitAuth struct {
	// TokenFile holds an HTTPS access token (sent as the password of the
	// user x-access-token, or of the user in usernameFile).
	TokenFile string `yaml:"tokenFile"`
	// UsernameFile holds the HTTPS user name.
	UsernameFile string `yaml:"usernameFile"`
	// PasswordFile holds the HTTPS password, or the passphrase of
	// sshKeyFile.
	PasswordFile string `yaml:"passwordFile"`
	// SSHKeyFile holds an SSH private key, for ssh:// and scp-like URLs.
	SSHKeyFile string `yaml:"sshKeyFile"`
	// KnownHostsFile is the known_hosts file SSH checks the server's key
	// against (required with SSH).
	KnownHostsFile string `yaml:"knownHostsFile"`
}

// GitVerify is a Git source's `verify:` section.
type GitVerify struct {
	// KeysFile holds the trusted keys: ASCII-armored OpenPGP public keys
	// and SSH public keys (authorized_keys or allowed signers lines). A
	// head commit that none of them signed is refused.
	KeysFile string `yaml:"keysFile,required"`
}

// DefaultGitInterval is a Git source's default poll interval.
const DefaultGitInterval = time.Minute

// MinGitInterval is the shortest poll interval a Git source may set.
const MinGitInterval = 10 * time.Second

// GitCheckout is one checked-out commit of a Git source, as
// LoadOptions.GitCheckout returns it, or one pulled version of a chart from
// a repository (helm.repo), as LoadOptions.ChartPull returns it.
type GitCheckout struct {
	// Dir is the checked-out tree of exactly Commit; it must not change
	// while a Config loaded from it is in use.
	Dir string
	// Commit is the commit's full SHA.
	Commit string
	// Ref is the full name of the ref it was resolved from.
	Ref string
	// Time is the commit's committer time.
	Time time.Time
	// Author is "Name <email>" of the commit's author.
	Author string
	// Message is the first line of the commit message.
	Message string
	// Archive is, for a chart pulled from a repository (helm.repo), the
	// chart archive to render, in Dir; Commit is then its version and
	// digest ("4.11.2@sha256:..."), Ref the version and Time when it was
	// published.
	Archive string
}

// Revision is the opaque revision string the source's desired objects
// carry (hub.NodeSpec.Revision): the commit SHA, a space and the commit's
// subject.
func (g GitCheckout) Revision() string {
	if g.Message == "" {
		return g.Commit
	}
	return g.Commit + " " + g.Message
}

// Checkout returns the Git checkout the source was rendered from, if it is
// a Git source that was loaded with LoadOptions.GitCheckout, or the chart
// version it was rendered from, if its chart comes from a repository and
// was pulled with LoadOptions.ChartPull.
func (s Source) Checkout() (GitCheckout, bool) {
	if s.checkout == nil {
		return GitCheckout{}, false
	}
	return *s.checkout, true
}

// HelmChart is the Helm chart of a source (its `helm:` section). Hooks
// and tests are not applied; the CRDs of crds/ folders are; subcharts in
// charts/ are rendered with their conditions.
type HelmChart struct {
	// Chart is the chart's folder or .tgz archive; with repo, the chart's
	// name in that repository.
	Chart string `yaml:"chart,required"`
	// Repo, when set, takes the chart from a Helm chart repository
	// (https://host/path, which serves index.yaml) or an OCI registry
	// (oci://host/path, the chart being oci://host/path/CHART): the hub
	// pulls the version that Version picks at start and every Interval,
	// and applies a new one as it applies a new commit of a Git source
	// (the last good version stays in force while the repository cannot
	// be reached or a version does not render). valuesFiles stay paths
	// beside the config. Not with git.
	Repo string `yaml:"repo"`
	// Version picks the chart version in Repo: an exact version ("4.11.2")
	// or a semver range ("~4.11", ">=4.0.0 <5.0.0", "4.x"), as `helm pull
	// --version` takes it; "" (left out) means the latest stable version
	// (no prerelease). Only with repo.
	Version string `yaml:"version"`
	// Interval is how often the hub looks in Repo for a new version
	// (default 10m, at least 10s). Only with repo.
	Interval time.Duration `yaml:"interval"`
	// Timeout bounds one pull from Repo (the index or tags, and the
	// archive); 0 (left out) means two minutes. Only with repo.
	Timeout time.Duration `yaml:"timeout"`
	// Auth names the files of Repo's basic-auth credentials, read at every
	// pull and sent only over https (or http to a loopback address), and
	// only to Repo's host. Only with repo.
	Auth HelmAuth `yaml:"auth"`
	// CAFile is a PEM file of the certificate authorities Repo's
	// certificate may chain to, trusted besides the system's. Only with
	// repo.
	CAFile string `yaml:"caFile"`
	// ReleaseName is .Release.Name; "" (left out) means the source's id.
	ReleaseName string `yaml:"releaseName"`
	// Namespace is .Release.Namespace and the namespace of the chart's
	// namespaced objects that set none; "" means the source's namespace,
	// else "default".
	Namespace string `yaml:"namespace"`
	// Values are values given inline; they win over ValuesFiles.
	Values map[string]any `yaml:"values"`
	// ValuesFiles are values files merged in order over the chart's
	// values.yaml (a later one wins); paths like the chart's (with repo,
	// relative to the config file's folder).
	ValuesFiles []string `yaml:"valuesFiles"`
	// KubeVersion is the Kubernetes version templates see in
	// .Capabilities.KubeVersion, such as "1.37.2"; "" means the Helm
	// SDK's default (the version of the Kubernetes client it is built
	// with).
	KubeVersion string `yaml:"kubeVersion"`
}

// HelmAuth names the credentials files of a chart repository, relative to
// the config file's folder: both or neither.
type HelmAuth struct {
	// UsernameFile holds the user name.
	UsernameFile string `yaml:"usernameFile"`
	// PasswordFile holds the password (or an access token that the
	// registry takes as a password).
	PasswordFile string `yaml:"passwordFile"`
}

// DefaultChartInterval is how often the hub looks for a new version of a
// chart from a repository, by default.
const DefaultChartInterval = 10 * time.Minute

// SourcePrune is a source's `prune:` section. Objects of these kinds carry
// PruneAnnotation (disabled) unless enabled here: deleting them would
// delete what they hold (a namespace's objects, a CRD's custom resources,
// a claim's volume).
type SourcePrune struct {
	// Namespaces, when true, lets objects of kind Namespace be pruned.
	Namespaces bool `yaml:"namespaces"`
	// CustomResourceDefinitions, when true, lets objects of kind
	// CustomResourceDefinition be pruned (and with them their custom
	// resources).
	CustomResourceDefinitions bool `yaml:"customResourceDefinitions"`
	// PersistentVolumeClaims, when true, lets objects of kind
	// PersistentVolumeClaim be pruned (and with them, often, their
	// volumes).
	PersistentVolumeClaims bool `yaml:"persistentVolumeClaims"`
}

// Kind returns how the source renders: "path", "kustomize" or "helm".
func (s Source) Kind() string {
	switch {
	case s.Helm != nil:
		return "helm"
	case s.Kustomize != "":
		return "kustomize"
	}
	return "path"
}

// Location returns the path the source renders from as written in the
// config (made absolute): the path, the kustomize folder or the chart; for
// a chart from a repository, the chart's name.
func (s Source) Location() string {
	switch {
	case s.Helm != nil:
		return s.Helm.Chart
	case s.Kustomize != "":
		return s.Kustomize
	}
	return s.Path
}

// Matches reports whether the source targets the cluster: by id list, or
// by selector over the cluster's labels.
func (s Source) Matches(info ClusterInfo) bool { return matches(s.Clusters, s.Selector, info) }

// matches reports whether a cluster list or selector targets a cluster.
func matches(clusters []string, selector string, info ClusterInfo) bool {
	if selector == "" {
		return slices.Contains(clusters, info.ID)
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(info.Labels))
}

// clusterMatcher is matches for one cluster that parses and matches each
// distinct selector once: the applications of a large config share a few
// selectors.
type clusterMatcher struct {
	info       ClusterInfo
	bySelector map[string]bool
}

// matches is matches(clusters, selector, m.info).
func (m *clusterMatcher) matches(clusters []string, selector string) bool {
	if selector == "" {
		return slices.Contains(clusters, m.info.ID)
	}
	ok, seen := m.bySelector[selector]
	if !seen {
		ok = matches(nil, selector, m.info)
		if m.bySelector == nil {
			m.bySelector = map[string]bool{}
		}
		m.bySelector[selector] = ok
	}
	return ok
}

// SourcesFor returns the sources that target the cluster, in file order.
// The cluster need not be in the file.
func (c *Config) SourcesFor(info ClusterInfo) []Source {
	var out []Source
	for _, s := range c.Sources {
		if s.Matches(info) {
			out = append(out, s)
		}
	}
	return out
}

// SourcePolicy returns the effective policy of a source's objects on a
// cluster: the source's override, else the cluster's, else the hub's.
func (c *Config) SourcePolicy(s Source, info ClusterInfo) hub.Policy {
	return c.PolicyFor(Application{Policy: s.Policy}, info)
}

// srcSrc remembers where a source came from, for reference checks and
// render errors.
type srcSrc struct {
	field      string
	pos        pos
	idPos      pos
	at         child // the path, kustomize or helm field: where render errors go
	clusters   child
	items      []item
	hasList    bool
	selector   child
	selectorOK bool
	sel        labels.Selector
	// git is the source's git field (git.set: a Git source, whose paths
	// are inside the repository).
	git child
	// written are the paths as written, by field (path, kustomize,
	// helm.chart, helm.valuesFiles[i]), for messages.
	written map[string]string
}

// pathVar is a ${...} reference in a source path.
var pathVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// sourceSection reads the sources section.
func (d *decoder) sourceSection(c child) {
	items, _ := d.list(c)
	for _, it := range items {
		d.manifestSource(it)
	}
}

// manifestSource reads one source and applies its defaults.
func (d *decoder) manifestSource(it item) {
	s := Source{}
	src := srcSrc{field: it.field, written: map[string]string{}}
	var renderFields []child
	o := d.fields(it.node, it.field, it.pos, &s,
		on(&s.ID, func(c child) {
			src.idPos = c.pos
			if v, ok := d.str(c); ok && d.dnsLabel(c, v) {
				s.ID = v
			}
		}),
		on(&s.Git, func(c child) {
			src.git = c
			s.Git = d.gitSource(c)
		}),
		on(&s.Path, func(c child) {
			if c.set {
				renderFields = append(renderFields, c)
			}
			s.Path = d.sourcePath(c, &src)
		}),
		on(&s.Kustomize, func(c child) {
			if c.set {
				renderFields = append(renderFields, c)
			}
			s.Kustomize = d.sourcePath(c, &src)
		}),
		on(&s.Helm, func(c child) {
			if c.set {
				renderFields = append(renderFields, c)
			}
			s.Helm = d.helmChart(c, &src)
		}),
		on(&s.Clusters, func(c child) {
			src.clusters = c
			if c.node == nil {
				return
			}
			if vals, items, ok := d.strList(c); ok {
				src.hasList = true
				s.Clusters, src.items = vals, items
				if s.Clusters == nil {
					s.Clusters = []string{}
				}
			}
		}),
		on(&s.Selector, func(c child) {
			src.selector = c
			if v, ok := d.str(c); ok {
				s.Selector = v
				src.sel, src.selectorOK = d.selector(c, v)
			}
		}),
		on(&s.Namespace, func(c child) {
			if v, ok := d.str(c); ok && d.dnsLabel(c, v) {
				s.Namespace = v
			}
		}),
		on(&s.Ignore, func(c child) { s.Ignore = d.ignoreRules(c) }),
		on(&s.Prune, func(c child) { d.fields(c.node, c.field, c.pos, &s.Prune) }),
	)
	if o == nil {
		return
	}
	src.pos = o.pos
	switch len(renderFields) {
	case 0:
		d.errorf(o.pos, it.field, "one of path, kustomize or helm is required")
	case 1:
		src.at = renderFields[0]
	default:
		for _, c := range renderFields[1:] {
			d.errorf(c.pos, c.field, "set one of path, kustomize or helm, not several (%s is set at line %d)", renderFields[0].field, renderFields[0].pos.line)
		}
	}
	if s.Helm != nil {
		if s.Helm.ReleaseName == "" {
			s.Helm.ReleaseName = s.ID
		}
		if s.Helm.Namespace == "" {
			s.Helm.Namespace = s.Namespace
		}
		if s.Helm.Namespace == "" {
			s.Helm.Namespace = "default"
		}
	}
	d.cfg.Sources = append(d.cfg.Sources, s)
	d.srcs = append(d.srcs, src)
}

// sourcePath reads a source path: not empty, its ${...} references among
// ${cluster.id} and ${cluster.labels.KEY}, made absolute relative to the
// config file's folder. "" when absent or invalid (reported).
func (d *decoder) sourcePath(c child, src *srcSrc) string {
	if !c.set {
		return ""
	}
	s, ok := d.str(c)
	if c.node == nil || ok && strings.TrimSpace(s) == "" {
		d.errorf(c.pos, c.field, "must not be empty")
		return ""
	}
	if !ok {
		return ""
	}
	good := true
	for _, m := range pathVar.FindAllStringSubmatch(s, -1) {
		if err := checkPathVar(m[1]); err != nil {
			d.errorf(c.pos, c.field, "%s: %v", m[0], err)
			good = false
		}
	}
	if strings.Contains(pathVar.ReplaceAllString(s, ""), "${") {
		d.errorf(c.pos, c.field, "unterminated ${ in %q", s)
		good = false
	}
	if !good {
		return ""
	}
	src.written[c.field] = s
	if src.git.set {
		// A path inside the repository: resolved against the checkout
		// (gitsource.SafePath) once the variables are expanded.
		if filepath.IsAbs(s) || !filepath.IsLocal(filepath.Clean(pathVar.ReplaceAllString(s, "x"))) && filepath.Clean(s) != "." {
			d.errorf(c.pos, c.field, "%q is not a relative path inside the repository (git.url): want a path such as deploy/app or \".\" for its root", s)
			return ""
		}
		return filepath.Clean(s)
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(d.baseDir, s)
	}
	return filepath.Clean(s)
}

// checkPathVar checks the name inside a ${...} of a source path.
func checkPathVar(name string) error {
	const want = "want ${cluster.id} or ${cluster.labels.KEY}"
	switch key, isLabel := strings.CutPrefix(name, "cluster.labels."); {
	case name == "cluster.id":
		return nil
	case isLabel:
		if errs := content.IsLabelKey(key); len(errs) > 0 {
			return fmt.Errorf("invalid label key %q: %s", key, kmsg(errs))
		}
		return nil
	default:
		return fmt.Errorf("unknown variable %q: %s (environment variables are not expanded in source paths)%s",
			name, want, hint(name, []string{"cluster.id", "cluster.labels"}))
	}
}

// helmChart reads a source's helm section and applies the defaults that
// do not depend on other fields.
func (d *decoder) helmChart(c child, src *srcSrc) *HelmChart {
	if !c.set {
		return nil
	}
	h := &HelmChart{}
	var chart child
	repoFile := d.filePath
	var repoOnly []child // fields that need repo
	o := d.fields(c.node, c.field, c.pos, h,
		on(&h.Chart, func(c child) { chart = c }),
		on(&h.Repo, func(c child) {
			v, ok := d.str(c)
			if !ok {
				return
			}
			if err := chartrepo.CheckURL(v); err != nil {
				d.errorf(c.pos, c.field, "%v", err)
				return
			}
			h.Repo = v
		}),
		on(&h.Version, func(c child) {
			if c.set {
				repoOnly = append(repoOnly, c)
			}
			v, ok := d.str(c)
			if !ok {
				return
			}
			if err := chartrepo.CheckVersion(v); err != nil {
				d.errorf(c.pos, c.field, "%v", err)
				return
			}
			h.Version = v
		}),
		on(&h.Interval, func(c child) {
			if c.node != nil {
				repoOnly = append(repoOnly, c)
			}
			d.pollInterval(c, &h.Interval)
		}),
		on(&h.Timeout, func(c child) {
			if c.node == nil {
				return
			}
			repoOnly = append(repoOnly, c)
			if v, ok := d.duration(c); ok {
				h.Timeout = v
			}
		}),
		on(&h.Auth, func(c child) {
			if c.set {
				repoOnly = append(repoOnly, c)
			}
			a := &h.Auth
			if d.fields(c.node, c.field, c.pos, a,
				on(&a.UsernameFile, func(c child) { repoFile(c, &a.UsernameFile) }),
				on(&a.PasswordFile, func(c child) { repoFile(c, &a.PasswordFile) }),
			) != nil && (a.UsernameFile == "") != (a.PasswordFile == "") {
				d.errorf(c.pos, c.field, "set both usernameFile and passwordFile, or neither")
			}
		}),
		on(&h.CAFile, func(c child) {
			if c.set {
				repoOnly = append(repoOnly, c)
			}
			repoFile(c, &h.CAFile)
		}),
		on(&h.ReleaseName, func(c child) {
			if v, ok := d.str(c); ok && d.dnsLabel(c, v) {
				h.ReleaseName = v
			}
		}),
		on(&h.Namespace, func(c child) {
			if v, ok := d.str(c); ok && d.dnsLabel(c, v) {
				h.Namespace = v
			}
		}),
		on(&h.Values, func(c child) {
			if c.node == nil {
				return
			}
			budget := maxValueNodes
			if v, ok := d.anyValue(c.node, c.field, &budget); ok {
				m, isMap := v.(map[string]any)
				if !isMap {
					d.errorf(c.pos, c.field, "want a mapping, got %s", describe(c.node))
					return
				}
				h.Values = m
			}
		}),
		on(&h.ValuesFiles, func(c child) {
			items, ok := d.list(c)
			if !ok {
				return
			}
			for _, it := range items {
				if p := d.sourcePath(child{node: it.node, field: it.field, pos: it.pos, set: true}, src); p != "" {
					h.ValuesFiles = append(h.ValuesFiles, p)
				}
			}
		}),
		on(&h.KubeVersion, func(c child) {
			v, ok := d.str(c)
			if !ok {
				return
			}
			if !kubeVersionPattern.MatchString(v) {
				d.errorf(c.pos, c.field, "invalid Kubernetes version %q: want a version such as 1.37.2 or v1.37", v)
				return
			}
			h.KubeVersion = v
		}),
	)
	if o == nil {
		return nil
	}
	switch {
	case h.Repo == "" && o.get("repo").set:
		// An invalid repo, reported: the chart is not a local path either.
	case h.Repo == "":
		for _, c := range repoOnly {
			d.errorf(c.pos, c.field, "only with repo (a chart from a Helm repository or OCI registry)")
		}
		if chart.set {
			h.Chart = d.sourcePath(chart, src)
		}
	case src.git.set:
		d.errorf(o.get("repo").pos, o.get("repo").field, "a chart from a repository does not come from git too: drop git, or repo and keep the chart in the Git repository")
	default:
		if h.Interval == 0 {
			h.Interval = DefaultChartInterval
		}
		if v, ok := d.str(chart); ok {
			if err := chartrepo.CheckChart(v); err != nil {
				d.errorf(chart.pos, chart.field, "%v (with repo, chart is the chart's name in the repository)", err)
			} else {
				h.Chart = v
				src.written[chart.field] = v
			}
		}
	}
	return h
}

// kubeVersionPattern is a Kubernetes version as Helm parses it.
var kubeVersionPattern = regexp.MustCompile(`^v?[0-9]+\.[0-9]+(\.[0-9]+)?([-+][0-9A-Za-z.+-]*)?$`)

// maxValueNodes is the most YAML nodes inline Helm values may expand to,
// aliases included.
const maxValueNodes = 100000

// anyValue converts a YAML node into the value Helm reads from a values
// file: mappings, lists, strings, booleans, null and numbers (float64, as
// JSON has them). Aliases and merge keys are resolved; budget bounds the
// nodes visited, so nested aliases cannot blow up.
func (d *decoder) anyValue(n *yaml.Node, field string, budget *int) (any, bool) {
	if *budget--; *budget < 0 {
		if *budget == -1 {
			d.errorf(rawPos(n), field, "values expand to more than %d nodes", maxValueNodes)
		}
		return nil, false
	}
	n = d.resolve(n, field)
	switch kindOf(n) {
	case kindNull:
		return nil, true
	case kindMap:
		es, ok := d.entries(n, field, 0)
		if !ok {
			return nil, false
		}
		out := make(map[string]any, len(es))
		good := true
		for _, e := range es {
			x, ok := d.anyValue(e.value, joinField(field, e.key), budget)
			good = good && ok
			out[e.key] = x
		}
		return out, good
	case kindSeq:
		out := make([]any, 0, len(n.Content))
		good := true
		for i, e := range n.Content {
			x, ok := d.anyValue(e, fmt.Sprintf("%s[%d]", field, i), budget)
			good = good && ok
			out = append(out, x)
		}
		return out, good
	case kindBool:
		return n.Value[0] == 't' || n.Value[0] == 'T', true
	case kindInt:
		i, big, _ := intValue(n.Value)
		if big > 0 {
			return float64(big), true
		}
		return float64(i), true
	case kindFloat:
		if f := floatValue(n.Value); !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, true
		}
	case kindStr, kindBlock:
		return n.Value, true
	}
	d.errorf(d.posOf(n), field, "unsupported value %s (want what JSON can hold)", describe(n))
	return nil, false
}

// manifestReferences checks what spans the sources: unique ids, distinct
// from the application ids, and cluster references as applications have
// them. clusterAt are the first clusters by id, ids every cluster id.
func (d *decoder) manifestReferences(clusterAt map[string]int, ids []string, discovery bool) {
	appAt := map[string]int{}
	for i, a := range d.cfg.Applications {
		if _, dup := appAt[a.ID]; a.ID != "" && !dup {
			appAt[a.ID] = i
		}
	}
	srcAt := map[string]int{}
	suggested := map[string]string{} // unknown cluster -> hint
	for i, s := range d.cfg.Sources {
		src := d.srcs[i]
		field := joinField(src.field, "id")
		if s.ID != "" {
			if j, dup := srcAt[s.ID]; dup {
				d.errorf(src.idPos, field, "duplicate source id %q (first at line %d)", s.ID, d.srcs[j].idPos.line)
			} else {
				srcAt[s.ID] = i
			}
			if j, dup := appAt[s.ID]; dup {
				d.errorf(src.idPos, field, "source id %q is also an application id (%s.id at line %d): ids must differ",
					s.ID, d.apps[j].field, d.apps[j].idPos.line)
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
			d.checkClusterList(src.clusters, src.items, s.Clusters, clusterAt, ids, suggested)
		}
		if hasSel && src.selectorOK && len(d.sourceTargets(i, clusterAt)) == 0 && !d.incompleteLabels && !discovery {
			d.errorf(src.selector.pos, src.selector.field, "selector %q matches no cluster", s.Selector)
		}
	}
}

// sourceTargets returns the indices of the file's clusters that source i
// targets, in file order.
func (d *decoder) sourceTargets(i int, clusterAt map[string]int) []int {
	s, src := d.cfg.Sources[i], d.srcs[i]
	return d.targets(Application{Clusters: s.Clusters, Selector: s.Selector},
		appSrc{hasList: src.hasList, sel: src.sel}, clusterAt)
}
