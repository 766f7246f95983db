package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/driftwatch/driftwatch/clusters/drift"
	"github.com/driftwatch/driftwatch/hub"
)

// IgnoreRule is an `ignore:` entry of the hub or of an application: the
// differences it covers are not drift (not repaired, not counted, shown as
// ignored). It needs paths, managers or both.
type IgnoreRule struct {
	// Name names the rule in messages; default "paths <paths>" or
	// "managers <managers>".
	Name string `yaml:"name"`
	// Paths are field paths, as JSON pointers ("/spec/replicas") or in the
	// dotted form drift reports ("spec.replicas"); "*" stands for any one
	// list item ("/spec/template/spec/containers/*/image"). A path covers
	// the field and everything inside it.
	Paths []string `yaml:"paths"`
	// Managers are field manager names: a field whose current owner (in
	// the live object's managedFields) is one of them is not drift. With
	// Paths too, only fields under those paths.
	Managers []string `yaml:"managers"`
	// Kinds limits the rule to these kinds, as Kind for the core group and
	// Deployments (Deployment, Service, ConfigMap, Secret) or Kind.group
	// for the others (StatefulSet.apps, Certificate.cert-manager.io);
	// stored as the NodeID slug (hub.KindSlug: deployment,
	// statefulset.apps). Nil means every kind.
	Kinds []string `yaml:"kinds"`
}

// kindSlug reads a kind of an ignore rule, Kind or Kind.group, as its
// NodeID slug.
func kindSlug(v string) (hub.Kind, error) {
	kind, group, _ := strings.Cut(v, ".")
	if !kindPattern.MatchString(kind) || group != "" && len(content.IsDNS1123Subdomain(strings.ToLower(group))) > 0 {
		return "", fmt.Errorf("invalid kind %q: want Kind for the core group and Deployments (Deployment, Service, ConfigMap) or Kind.group (StatefulSet.apps)", v)
	}
	return hub.KindSlug(strings.ToLower(group), kind), nil
}

// kindPattern is a Kubernetes kind, as written.
var kindPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

// ignoreRules reads an `ignore:` list; every entry is validated with its
// position. Entries with errors are left out.
func (d *decoder) ignoreRules(c child) []IgnoreRule {
	items, ok := d.list(c)
	if !ok {
		return nil
	}
	var out []IgnoreRule
	for _, it := range items {
		var r IgnoreRule
		valid := true
		var pathsAt, managersAt child
		o := d.fields(it.node, it.field, it.pos, &r,
			on(&r.Paths, func(c child) {
				pathsAt = c
				r.Paths = d.eachString(c, &valid, func(v string) (string, error) {
					if _, err := drift.ParsePath(v); err != nil {
						return "", fmt.Errorf("invalid field path: %w", err)
					}
					return v, nil
				})
			}),
			on(&r.Managers, func(c child) {
				managersAt = c
				r.Managers = d.eachString(c, &valid, func(v string) (string, error) {
					if strings.TrimSpace(v) == "" {
						return "", errors.New("must not be empty")
					}
					return v, nil
				})
			}),
			on(&r.Kinds, func(c child) {
				r.Kinds = d.eachString(c, &valid, func(v string) (string, error) {
					k, err := kindSlug(v)
					return string(k), err
				})
			}),
		)
		if o == nil {
			continue
		}
		if valid && len(r.Paths) == 0 && len(r.Managers) == 0 {
			at := pathsAt
			if !at.set {
				at = managersAt
			}
			d.errorf(at.pos, it.field, "an ignore rule needs paths, managers or both")
			valid = false
		}
		if valid {
			out = append(out, r)
		}
	}
	return out
}

// DisplayName is the rule's name, or one made from its paths and managers.
func (r IgnoreRule) DisplayName() string {
	if r.Name != "" {
		return r.Name
	}
	var parts []string
	if len(r.Managers) > 0 {
		parts = append(parts, "managers "+strings.Join(r.Managers, ","))
	}
	if len(r.Paths) > 0 {
		parts = append(parts, "paths "+strings.Join(r.Paths, ","))
	}
	return strings.Join(parts, " ")
}

// compile turns the rule into its hub form. The paths were validated by
// Load; a path that does not parse (a Config built by hand) is left out.
func (r IgnoreRule) compile() hub.IgnoreRule {
	out := hub.IgnoreRule{Name: r.DisplayName(), Managers: slices.Clone(r.Managers)}
	for _, p := range r.Paths {
		if segs, err := drift.ParsePath(p); err == nil {
			out.Paths = append(out.Paths, segs)
		}
	}
	for _, k := range r.Kinds {
		if slug, err := kindSlug(k); err == nil {
			out.Kinds = append(out.Kinds, slug)
		} else {
			out.Kinds = append(out.Kinds, hub.Kind(strings.ToLower(k)))
		}
	}
	return out
}

// IgnoreFor returns the compiled ignore rules of an application: the hub's,
// then its own; nil when there are none.
func (c *Config) IgnoreFor(app Application) *hub.IgnoreSet { return c.ignoreSet(app.Ignore) }

// ignoreSet compiles the hub's rules, then own; nil when there are none.
func (c *Config) ignoreSet(own []IgnoreRule) *hub.IgnoreSet {
	rules := slices.Concat(c.Hub.Ignore, own)
	if len(rules) == 0 {
		return nil
	}
	set := &hub.IgnoreSet{}
	for _, r := range rules {
		set.Rules = append(set.Rules, r.compile())
	}
	b, _ := json.Marshal(set.Rules) // plain strings and slices: cannot fail
	sum := sha256.Sum256(b)
	set.Key = hex.EncodeToString(sum[:8])
	return set
}

// eachString reads a list of strings and returns those check accepts (as
// check rewrites them); each one it refuses is reported at its own position
// with check's error, and so is a malformed list: both clear *valid. A
// missing key gives nil.
func (d *decoder) eachString(c child, valid *bool, check func(string) (string, error)) []string {
	if c.node == nil {
		return nil
	}
	vals, items, ok := d.strList(c)
	if !ok {
		*valid = false
		return nil
	}
	var out []string
	for i, v := range vals {
		w, err := check(v)
		if err != nil {
			d.errorf(items[i].pos, items[i].field, "%v", err)
			*valid = false
			continue
		}
		out = append(out, w)
	}
	return out
}
