package hub

import "strings"

// DriftClass says how an object differs from its desired state.
type DriftClass string

// Drift classes.
const (
	// DriftNone: the object is in sync.
	DriftNone DriftClass = "in-sync"
	// DriftMissing: the object does not exist (deleted).
	DriftMissing DriftClass = "missing"
	// DriftModified: a field we manage differs.
	DriftModified DriftClass = "modified"
	// DriftAdded: someone added entries inside what we own (a ConfigMap data
	// key, an env var, a container, a port).
	DriftAdded DriftClass = "added"
	// DriftUnlabelled: our managed-by label was removed.
	DriftUnlabelled DriftClass = "unlabelled"
	// DriftDeleting: the object has a deletionTimestamp; it is recreated
	// once it is gone.
	DriftDeleting DriftClass = "deleting"
)

// FieldDiff is one differing field.
type FieldDiff struct {
	// Path is the field path (see drift.FieldsV1Paths for the form).
	Path string
	// Desired and Actual are the values as text; "<none>" when absent.
	Desired string
	Actual  string
	// Added marks an entry someone else added inside what we own.
	Added bool
	// Pointer is the JSON pointer of an added entry in the live object,
	// used to remove it.
	Pointer string
	// ListPointer is set for an item of ours that a live list (an
	// associative or a set list) lacks: the JSON pointer of that list in
	// the live object. DesiredPointer is then the item's JSON pointer in
	// the desired object. A repair that removes entries someone added to
	// the same list adds these items in the same JSON patch (a replaced
	// entry, such as a Service port whose number was changed by hand).
	ListPointer    string
	DesiredPointer string
}

// String formats the diff as "path: desired -> actual" or "+path=actual".
func (f FieldDiff) String() string {
	if f.Added {
		return "+" + f.Path + "=" + f.Actual
	}
	return f.Path + ": " + f.Desired + " -> " + f.Actual
}

// ChangeString formats the diff as the apply of a change of the desired
// state reads: "path: actual -> desired", from what the object held to
// what it gets now (String reads as drift: what it should hold, then what
// someone made of it).
func (f FieldDiff) ChangeString() string {
	if f.Added {
		return "-" + f.Path + "=" + f.Actual
	}
	return f.Path + ": " + f.Actual + " -> " + f.Desired
}

// Drift is the result of comparing desired with actual.
type Drift struct {
	Class  DriftClass
	Fields []FieldDiff
	// Ignored are the differences ignore rules cover: not drift, not
	// repaired, shown. A drift whose only differences are ignored is in
	// sync.
	Ignored []IgnoredField `json:",omitempty"`
}

// ChangeSummary is Summary as the apply of a change of the desired state
// reads (FieldDiff.ChangeString): "modified spec.replicas: 1 -> 3".
func (d Drift) ChangeSummary() string { return d.summary(FieldDiff.ChangeString) }

// InSync reports whether there is no drift.
func (d Drift) InSync() bool { return d.Class == DriftNone }

// Summary is a one-line description, e.g. "modified spec.replicas: 3 -> 1".
func (d Drift) Summary() string { return d.summary(FieldDiff.String) }

// summary is the class and each field as field says it.
func (d Drift) summary(field func(FieldDiff) string) string {
	if len(d.Fields) == 0 {
		return string(d.Class)
	}
	parts := make([]string, 0, len(d.Fields))
	for _, f := range d.Fields {
		parts = append(parts, field(f))
	}
	return string(d.Class) + " " + strings.Join(parts, ", ")
}
