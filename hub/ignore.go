package hub

import (
	"slices"
	"strings"
)

// IgnoreRule says which differences between the desired and the live object
// are not drift: fields another writer is right to change (an autoscaler's
// spec.replicas, a webhook's sidecar). A rule with Paths covers the fields
// at or under those paths; a rule with Managers covers the fields whose
// current owner (per the live object's managedFields) is one of those field
// managers; a rule with both covers a field only when both hold. Kinds, when
// set, limits the rule to those kinds.
type IgnoreRule struct {
	// Name names the rule in messages ("ignored (rule autoscaler)"); the
	// config fills in a default from the paths and managers.
	Name string
	// Paths are field paths, each as segments from the object root: map
	// keys, and for list items their merge key value ("app" for a
	// container named app) or "*" for any one segment. The config accepts
	// JSON pointers and the classifier's own dotted form and stores them
	// split.
	Paths [][]string
	// Managers are field manager names.
	Managers []string
	// Kinds limits the rule to these kinds; nil means every kind.
	Kinds []Kind
}

// AppliesTo reports whether the rule covers objects of kind k.
func (r IgnoreRule) AppliesTo(k Kind) bool {
	return len(r.Kinds) == 0 || slices.Contains(r.Kinds, k)
}

// IgnoreSet is the compiled ignore rules of one application (its own and
// the hub's), shared by all of its NodeSpecs.
type IgnoreSet struct {
	// Rules are the hub's rules, then the application's, in file order.
	Rules []IgnoreRule
	// Key fingerprints the rules, to tell changed rule sets on reload.
	Key string
}

// For returns the rules that apply to objects of kind k.
func (s *IgnoreSet) For(k Kind) []IgnoreRule {
	if s == nil {
		return nil
	}
	var out []IgnoreRule
	for _, r := range s.Rules {
		if r.AppliesTo(k) {
			out = append(out, r)
		}
	}
	return out
}

// key returns the set's fingerprint ("" for none).
func (s *IgnoreSet) key() string {
	if s == nil {
		return ""
	}
	return s.Key
}

// IgnoredField is a difference an ignore rule covers: it is neither repaired
// nor counted as drift, but shown.
type IgnoredField struct {
	FieldDiff
	// Rule names the rule that covers it.
	Rule string
	// Manager is the field's current owner when a manager rule matched.
	Manager string `json:",omitempty"`
	// Segments is the field's path as segments (see IgnoreRule.Paths),
	// for the backend that keeps the live value on a repair.
	Segments []string `json:"-"`
}

// String formats the field as "path: desired -> actual, ignored (rule r)".
func (f IgnoredField) String() string {
	s := f.FieldDiff.String() + ", ignored (rule " + f.Rule
	if f.Manager != "" {
		s += ", owned by " + f.Manager
	}
	return s + ")"
}

// PathString joins path segments in the JSON pointer form ("/spec/replicas").
func PathString(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
	}
	return b.String()
}
