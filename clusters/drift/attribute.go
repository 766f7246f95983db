package drift

import (
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// FieldOwner is one managedFields entry of a live object: a field manager,
// its operation, when it last wrote, and the field paths it owns (in
// FieldsV1Paths form).
type FieldOwner struct {
	Manager   string
	Operation string
	Time      time.Time
	Fields    []string
}

// Attribute says which field manager changed the drifted fields of d, and
// when: among the owners that own at least one drifted field (the field
// itself, a field inside it, or the entry holding it), the one that wrote
// last wins. self, the hub's own field manager (kubeobj.FieldManagerFor), is
// ignored; another hub's field manager is not (it is someone else's write).
// It returns nil when no owner matches (a missing object has no fields).
func Attribute(d hub.Drift, owners []FieldOwner, self string) *hub.Attribution {
	var best *hub.Attribution
	for _, o := range owners {
		if o.Manager == self {
			continue
		}
		var hit []string
		for _, f := range d.Fields {
			for _, p := range o.Fields {
				if owns(p, f.Path) {
					hit = append(hit, f.Path)
					break
				}
			}
		}
		if len(hit) == 0 {
			continue
		}
		if best == nil || o.Time.After(best.At) {
			best = &hub.Attribution{Manager: o.Manager, Operation: o.Operation, At: o.Time, Fields: hit}
		}
	}
	return best
}

// OwnsAny reports whether any of the owned paths covers the drifted path
// f: the same field, a field or list entry inside f, or a field f lies
// inside (paths as FieldsV1Paths and a Drift's fields spell them).
func OwnsAny(owned []string, f string) bool {
	for _, p := range owned {
		if owns(p, f) {
			return true
		}
	}
	return false
}

// owns reports whether an owned path p covers the drifted path f: the same
// field, a field or list entry inside f, or a field f lies inside.
func owns(p, f string) bool {
	return p == f || strings.HasPrefix(p, f+".") || strings.HasPrefix(p, f+"[") ||
		strings.HasPrefix(f, p+".") || strings.HasPrefix(f, p+"[")
}
