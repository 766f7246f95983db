package drift

import (
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"slices"
	"strings"

	"github.com/driftwatch/driftwatch/hub"
)

// ParsePath reads the field path of an ignore rule into segments. Two forms
// are accepted:
//
//   - a JSON pointer (RFC 6901): "/spec/replicas",
//     "/metadata/annotations/cert-manager.io~1issuer";
//   - the classifier's own dotted form, as drift reports paths:
//     "spec.replicas", "spec.template.spec.containers[app].image"; the key
//     after metadata.labels or metadata.annotations is taken whole (it may
//     hold dots).
//
// List items are named by their merge key value (a container's name) as in
// reported paths, or "*" for any one item (or any one map key). A segment of
// "*" in brackets works too ("containers[*].image").
func ParsePath(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty path")
	}
	if strings.HasPrefix(s, "/") {
		parts := strings.Split(s[1:], "/")
		for i, p := range parts {
			if p == "" {
				return nil, fmt.Errorf("path %q: empty segment %d", s, i+1)
			}
			if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(p, "~0", ""), "~1", ""), "~") {
				return nil, fmt.Errorf("path %q: %q: a ~ must be written ~0 (and a / ~1)", s, p)
			}
			parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
		}
		return parts, nil
	}
	var segs []string
	rest := s
	for rest != "" {
		if n := len(segs); n >= 2 && segs[n-2] == "metadata" && (segs[n-1] == "labels" || segs[n-1] == "annotations") {
			segs = append(segs, rest)
			break
		}
		switch rest[0] {
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("path %q: unclosed [", s)
			}
			if end == 1 {
				return nil, fmt.Errorf("path %q: empty []", s)
			}
			segs = append(segs, rest[1:end])
			rest = rest[end+1:]
			if strings.HasPrefix(rest, ".") {
				rest = rest[1:]
				if rest == "" {
					return nil, fmt.Errorf("path %q: ends in a dot", s)
				}
			} else if rest != "" && rest[0] != '[' {
				return nil, fmt.Errorf("path %q: want . or [ after ]", s)
			}
		default:
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return nil, fmt.Errorf("path %q: empty segment", s)
			}
			if strings.Contains(rest[:end], "]") {
				return nil, fmt.Errorf("path %q: ] without [", s)
			}
			segs = append(segs, rest[:end])
			rest = rest[end:]
			if strings.HasPrefix(rest, ".") {
				rest = rest[1:]
				if rest == "" {
					return nil, fmt.Errorf("path %q: ends in a dot", s)
				}
			}
		}
	}
	return segs, nil
}

// MatchPath reports whether the rule path rule covers the field whose path
// segments are field: the same field, or one inside it; "*" matches any one
// segment.
func MatchPath(rule, field []string) bool {
	if len(rule) > len(field) {
		return false
	}
	for i, r := range rule {
		if r != "*" && r != field[i] {
			return false
		}
	}
	return true
}

// CurrentOwner returns the field manager that owns the field at path (in
// FieldsV1Paths form) now: among owners other than self (the hub's own
// field manager, kubeobj.FieldManagerFor) that own the field itself or a field
// inside it, the one that wrote last; "" when none does.
func CurrentOwner(path string, owners []FieldOwner, self string) string {
	best := -1
	for i, o := range owners {
		if o.Manager == self {
			continue
		}
		if !slices.ContainsFunc(o.Fields, func(p string) bool {
			return p == path || strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[")
		}) {
			continue
		}
		if best < 0 || o.Time.After(owners[best].Time) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return owners[best].Manager
}

// applyIgnore splits diffs (with their path segments, parallel) into those
// that stay drift and those an ignore rule covers. The first rule that
// covers a difference names it.
func applyIgnore(diffs []hub.FieldDiff, segs [][]string, ig Ignore) ([]hub.FieldDiff, []hub.IgnoredField, error) {
	var (
		owners    []FieldOwner
		ownersErr error
		loaded    bool
	)
	owner := func(path string) string {
		if !loaded {
			loaded = true
			if ig.Owners != nil {
				owners, ownersErr = ig.Owners()
			}
		}
		self := ig.Self
		if self == "" {
			self = kubeobj.FieldManager
		}
		return CurrentOwner(path, owners, self)
	}
	kept := diffs[:0:0]
	var ignored []hub.IgnoredField
	for i, f := range diffs {
		rule, mgr, ok := cover(f, segs[i], ig.Rules, owner)
		if !ok {
			kept = append(kept, f)
			continue
		}
		ignored = append(ignored, hub.IgnoredField{FieldDiff: f, Rule: rule, Manager: mgr, Segments: segs[i]})
	}
	if len(kept) == 0 {
		kept = nil
	}
	return kept, ignored, ownersErr
}

// cover returns the name of the first rule that covers the difference f at
// segs, and the field's owner when a manager rule matched.
func cover(f hub.FieldDiff, segs []string, rules []hub.IgnoreRule, owner func(string) string) (string, string, bool) {
	for _, r := range rules {
		if len(r.Paths) > 0 && !slices.ContainsFunc(r.Paths, func(p []string) bool { return MatchPath(p, segs) }) {
			continue
		}
		if len(r.Managers) == 0 {
			return r.Name, "", true
		}
		if m := owner(f.Path); m != "" && slices.Contains(r.Managers, m) {
			return r.Name, m, true
		}
	}
	return "", "", false
}
