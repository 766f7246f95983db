package drift

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Project returns the part of the live object that Classify compares with
// desired, shaped like desired, by the built-in schema of its kind (see
// ProjectWith).
func Project(desired, live *unstructured.Unstructured) map[string]any {
	if desired == nil {
		return nil
	}
	return ProjectWith(desired, live, schemaOf(desired.Object))
}

// ProjectWith returns the part of the live object that ClassifyWith
// compares with desired along s, shaped like desired: for every field
// desired sets, the live value (desired's own where ClassifyWith counts
// them equal, such as the quantities 1 and 1000m, so only drift differs),
// plus the entries someone else added inside what we own (ConfigMap data
// keys, containers, env vars, ports, a second member of a one-of group).
// Status, and metadata other than name, namespace and the labels and
// annotations desired sets, are left out; apiVersion, kind, name and
// namespace are desired's.
//
// ProjectWith(desired, desired, s) is the managed view of desired itself,
// so the two render as a diff of only what driftwatch manages. It returns
// nil when live is nil (the object does not exist). The result shares no
// map or list with either object.
func ProjectWith(desired, live *unstructured.Unstructured, s Schema) map[string]any {
	if desired == nil || live == nil {
		return nil
	}
	w := walker{project: true}
	return w.object(desired.Object, live.Object, s.root)
}

// projectMetadata keeps desired's name and namespace, and the live values
// of the labels and annotations desired sets.
func projectMetadata(dv, av any) map[string]any {
	dm, _ := dv.(map[string]any)
	am, _ := av.(map[string]any)
	out := make(map[string]any, 4)
	for _, f := range []string{"name", "namespace"} {
		if v, ok := dm[f]; ok {
			out[f] = copyValue(v)
		}
	}
	for _, field := range []string{"labels", "annotations"} {
		want, _ := dm[field].(map[string]any)
		if len(want) == 0 {
			continue
		}
		have, _ := am[field].(map[string]any)
		kept := make(map[string]any, len(want))
		for k := range want {
			if v, ok := have[k]; ok {
				kept[k] = copyValue(v)
			}
		}
		if len(kept) > 0 {
			out[field] = kept
		}
	}
	return out
}

// copyValue deep-copies the maps and lists of an unstructured value.
func copyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		return copyList(x)
	}
	return v
}

func copyList(l []any) []any {
	out := make([]any, len(l))
	for i, e := range l {
		out[i] = copyValue(e)
	}
	return out
}
