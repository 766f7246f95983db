package config

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// DefaultTerraformInterval is the default Workspace.Interval: Terraform has
// no watch, so a workspace is polled (and also checked at once when a file
// of its folder changes).
const DefaultTerraformInterval = time.Minute

// Terraform binaries a workspace may name without a path.
const (
	// BinaryTofu is OpenTofu's command.
	BinaryTofu = "tofu"
	// BinaryTerraform is Terraform's command.
	BinaryTerraform = "terraform"
)

// Workspace is a Terraform or OpenTofu working directory whose resources
// driftwatch watches for drift (a `terraform:` entry). Its resources are the
// workspace's own configuration: driftwatch reads them from the state and
// the plan, never from this file.
type Workspace struct {
	// ID is the workspace's DNS-label id, the first part of its NodeIDs; it
	// shares the namespace of cluster ids and clusterAPI source names.
	ID string `yaml:"id,required"`
	// Dir is the absolute path of the working directory (the root module),
	// expanded like Cluster.Kubeconfig: relative to the config file's
	// folder, with `~` and environment variables.
	Dir string `yaml:"dir,required"`
	// Binary is the command that runs Terraform: "tofu", "terraform" or an
	// absolute path (expanded like Dir). "" (the default) means tofu from
	// driftwatch's binaries cache (scripts/build-binaries.sh), else tofu
	// from $PATH.
	Binary string `yaml:"binary"`
	// Vars are input variables passed as -var NAME=VALUE. A value written
	// as exactly `${NAME}` is read from the environment (an unset one is an
	// error) and is a secret: its name goes to SecretVars.
	Vars map[string]string `yaml:"vars"`
	// SecretVars are the names of the Vars read from the environment,
	// sorted: secrets kept out of the file, never printed.
	SecretVars []string `yaml:"-"`
	// VarFiles are variable files passed as -var-file, expanded like Dir.
	VarFiles []string `yaml:"varFiles"`
	// Interval is the time between two drift checks; default 1m.
	Interval time.Duration `yaml:"interval"`
	// Policy is the workspace's policy (repair or warn); default the hub's.
	Policy hub.Policy `yaml:"policy"`
	// Targets are the resource addresses driftwatch manages (such as
	// local_file.motd or module.db["eu:west"].aws_db_instance.main); nil
	// means every managed resource of the workspace.
	Targets []string `yaml:"targets"`
}

// Workspace returns the Terraform workspace with the given id.
func (c *Config) Workspace(id string) (Workspace, bool) {
	i := slices.IndexFunc(c.Terraform, func(w Workspace) bool { return w.ID == id })
	if i < 0 {
		return Workspace{}, false
	}
	return c.Terraform[i], true
}

// workspaceSrc remembers where a workspace came from, for reference checks.
type workspaceSrc struct {
	field string
	idPos pos
}

// resourceAddress is what a target looks like: optional module steps
// (module.NAME with an optional [index] or ["key"]), then TYPE.NAME with an
// optional index. Data sources are not managed, so data.* is refused.
var resourceAddress = regexp.MustCompile(`^(module\.[A-Za-z_][A-Za-z0-9_-]*(\[(\d+|"([^"\\]|\\.)*")\])?\.)*[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_-]*(\[(\d+|"([^"\\]|\\.)*")\])?$`)

// workspaceList reads the terraform section.
func (d *decoder) workspaceList(c child) {
	items, ok := d.list(c)
	if !ok && c.node != nil {
		d.workspacesBroken = true
	}
	d.workspaceEntries = len(items)
	for _, it := range items {
		d.workspace(it)
	}
}

// workspace reads one Terraform workspace and applies its defaults.
func (d *decoder) workspace(it item) {
	w := Workspace{Interval: DefaultTerraformInterval, Policy: d.cfg.Hub.Policy}
	src := workspaceSrc{field: it.field}
	o := d.fields(it.node, it.field, it.pos, &w,
		on(&w.ID, func(c child) {
			src.idPos = c.pos
			if s, ok := d.str(c); ok && d.dnsLabel(c, s) {
				w.ID = s
			}
		}),
		on(&w.Dir, func(c child) { w.Dir = d.kubeconfig(c) }),
		on(&w.Binary, func(c child) { w.Binary = d.binary(c) }),
		on(&w.Vars, func(c child) { w.Vars, w.SecretVars = d.workspaceVars(c) }),
		on(&w.VarFiles, func(c child) {
			vals, items, ok := d.strList(c)
			if !ok {
				return
			}
			for i, v := range vals {
				if strings.TrimSpace(v) == "" {
					d.errorf(items[i].pos, items[i].field, "must not be empty")
					continue
				}
				p, err := d.expandPath(v)
				if err != nil {
					d.errorf(items[i].pos, items[i].field, "%v", err)
					continue
				}
				w.VarFiles = append(w.VarFiles, p)
			}
		}),
		on(&w.Targets, func(c child) {
			vals, items, ok := d.strList(c)
			if !ok {
				return
			}
			if len(items) == 0 {
				d.errorf(c.pos, c.field, "must list at least one resource address (leave it out to manage every resource)")
				return
			}
			w.Targets = []string{}
			listed := make(map[string]bool, len(vals))
			for i, v := range vals {
				switch {
				case strings.HasPrefix(v, "data."):
					d.errorf(items[i].pos, items[i].field, "%q is a data source: only managed resources can drift", v)
				case !resourceAddress.MatchString(v):
					d.errorf(items[i].pos, items[i].field, "invalid resource address %q: want TYPE.NAME, optionally indexed and under module.NAME steps (such as module.db[\"eu\"].aws_db_instance.main)", v)
				case listed[v]:
					d.errorf(items[i].pos, items[i].field, "resource address %q is listed twice", v)
				default:
					listed[v] = true
					w.Targets = append(w.Targets, v)
				}
			}
		}),
	)
	if o == nil {
		return
	}
	d.cfg.Terraform = append(d.cfg.Terraform, w)
	d.workspaces = append(d.workspaces, src)
}

// envReference matches a value that is exactly a reference to an
// environment variable, ${NAME}.
var envReference = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// workspaceVars reads a workspace's vars: a value written as ${NAME} is read
// from the environment and its name returned among the secret ones.
func (d *decoder) workspaceVars(c child) (vars map[string]string, secret []string) {
	kvs, ok := d.strMap(c)
	if !ok {
		return nil, nil
	}
	vars = make(map[string]string, len(kvs))
	for _, e := range kvs {
		m := envReference.FindStringSubmatch(e.value)
		if m == nil {
			vars[e.key] = e.value
			continue
		}
		v := d.opts.Getenv(m[1])
		if v == "" {
			d.errorf(e.valuePos, e.field, "environment variable %s is not set", m[1])
			continue
		}
		vars[e.key] = v
		secret = append(secret, e.key)
	}
	slices.Sort(secret)
	return vars, secret
}

// binary reads a workspace's binary: tofu, terraform or an absolute path.
func (d *decoder) binary(c child) string {
	if c.node == nil {
		if c.set {
			d.errorf(c.pos, c.field, "must not be empty (leave it out for tofu)")
		}
		return ""
	}
	s, ok := d.str(c)
	if !ok {
		return ""
	}
	switch {
	case s == BinaryTofu || s == BinaryTerraform:
		return s
	case strings.TrimSpace(s) == "":
		d.errorf(c.pos, c.field, "must not be empty (leave it out for tofu)")
		return ""
	case !strings.ContainsRune(s, '/') && !strings.HasPrefix(s, "~") && !strings.HasPrefix(s, "$"):
		d.errorf(c.pos, c.field, "invalid binary %q: want %s, %s or a path%s", s, BinaryTofu, BinaryTerraform,
			hint(s, []string{BinaryTofu, BinaryTerraform}))
		return ""
	}
	p, err := d.expandPath(s)
	if err != nil {
		d.errorf(c.pos, c.field, "%v", err)
		return ""
	}
	return filepath.Clean(p)
}

// workspaceReferences checks that workspace ids are unique and differ from
// every cluster id and clusterAPI source name (they share the first part of
// NodeIDs).
func (d *decoder) workspaceReferences(clusterAt map[string]int) {
	if d.cfg.Hub.Coordination != nil && len(d.workspaces) > 0 {
		// Two replicas must never apply the same workspace, and
		// workspaces are not claimed like clusters yet.
		src := d.workspaces[0]
		d.errorf(src.idPos, src.field, "terraform workspaces are not shared among replicas yet: run them in a hub without hub.coordination")
	}
	at := map[string]int{}
	for i, w := range d.cfg.Terraform {
		if w.ID == "" {
			continue
		}
		src := d.workspaces[i]
		field := joinField(src.field, "id")
		if j, dup := at[w.ID]; dup {
			d.errorf(src.idPos, field, "duplicate terraform workspace id %q (first at line %d)", w.ID, d.workspaces[j].idPos.line)
			continue
		}
		at[w.ID] = i
		if k, ok := clusterAt[w.ID]; ok {
			d.errorf(src.idPos, field, "id %q is also a cluster id (%s.id at line %d); workspace and cluster ids must differ",
				w.ID, d.clusters[k].field, d.clusters[k].idPos.line)
		}
		if d.isSource(w.ID) {
			d.errorf(src.idPos, field, "id %q is also a clusterAPI source name; workspace ids and source names must differ", w.ID)
		}
	}
}
