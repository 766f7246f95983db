package terraform

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"reflect"
	"slices"

	tfjson "github.com/hashicorp/terraform-json"
)

// observed is one resource as a plan shows it, before redaction: the values
// may hold sensitive ones and never leave observe.
type observed struct {
	addr, typ string
	// applied are the values last applied (the state before refresh);
	// current the refreshed ones, nil when the resource is gone.
	applied, current map[string]any
	// sensitive are the top-level attributes a sensitivity map marks, on
	// either side.
	sensitive map[string]bool
	// drift is the plan's resource_drift entry; nil when the refresh found
	// nothing changed.
	drift *tfjson.Change
}

// gone reports whether the refresh found the resource deleted.
func (o *observed) gone() bool { return o.drift != nil && o.drift.Actions.Delete() }

// observation is what one plan says of a workspace's managed resources.
type observation struct {
	res  map[string]*resource
	pend pending
}

// observe reads a plan with refresh: the refreshed state (prior_state) says
// what exists now, the drift (resource_drift) what it was before, with the
// before/after sensitivity maps, and, unless refreshOnly, the planned
// changes (resource_changes) what the configuration holds that was not
// applied (see pendingOf). Resource types with an inspector are read
// where the refresh cannot tell (an edited local_file reads as gone).
// Sensitive attributes come out redacted: as redacted when unchanged,
// as sensitiveChanged when the refreshed (or inspected) value differs from
// the one applied. key keys the digest of changed sensitive values that
// goes into each resource's version, so a second change shows as new
// without the value ever being kept.
func observe(plan *tfjson.Plan, managed func(string) bool, dir string, key []byte, refreshOnly bool) observation {
	obs := make(map[string]*observed)
	if plan.PriorState != nil && plan.PriorState.Values != nil {
		walkModule(plan.PriorState.Values.RootModule, func(r *tfjson.StateResource) {
			if r.Mode != tfjson.ManagedResourceMode || !managed(r.Address) {
				return
			}
			o := &observed{addr: r.Address, typ: r.Type, applied: r.AttributeValues, current: r.AttributeValues,
				sensitive: map[string]bool{}}
			markSensitive(o.sensitive, r.SensitiveValues)
			obs[r.Address] = o
		})
	}
	for _, rc := range plan.ResourceDrift {
		if rc == nil || rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode || !managed(rc.Address) {
			continue
		}
		before, _ := rc.Change.Before.(map[string]any)
		if before == nil {
			continue // created outside: not one of ours
		}
		o := obs[rc.Address]
		if o == nil {
			o = &observed{addr: rc.Address, typ: rc.Type, sensitive: map[string]bool{}}
			obs[rc.Address] = o
		}
		o.applied, o.drift = before, rc.Change
		markSensitive(o.sensitive, sensitiveJSON(rc.Change.BeforeSensitive))
		markSensitive(o.sensitive, sensitiveJSON(rc.Change.AfterSensitive))
		if o.current == nil {
			if inspect := inspectors()[rc.Type]; inspect != nil {
				o.current, _ = inspect(dir, before)
			}
		}
	}
	for _, o := range obs {
		for attr, derived := range derivedSensitive(o.typ) {
			if o.sensitive[attr] {
				for _, d := range derived {
					o.sensitive[d] = true
				}
			}
		}
	}
	out := observation{res: make(map[string]*resource, len(obs)), pend: pending{removed: map[string]tfjson.ActionReason{}}}
	if !refreshOnly {
		out.pend = pendingOf(plan, managed, obs)
	}
	for addr, o := range obs {
		desired, actual := redactPair(o.applied, o.current, o.sensitive)
		r := &resource{addr: addr, typ: o.typ, desired: desired, exists: o.current != nil, actual: actual,
			removed: out.pend.removed[addr], secret: changedDigest(key, o)}
		out.res[addr] = r
	}
	return out
}

// derivedSensitive returns, for a resource type, the attributes computed
// from a sensitive one that the provider does not mark: a local_file's id
// is the SHA-1 of its content, which would let a short secret be guessed.
func derivedSensitive(typ string) map[string][]string {
	if typ == "local_file" {
		return map[string][]string{"content": {"id"}, "sensitive_content": {"id"}}
	}
	return nil
}

// markSensitive adds the top-level attributes a sensitivity map (a
// terraform-json sensitive_values document) marks, wholly or in part.
func markSensitive(into map[string]bool, marks json.RawMessage) {
	if len(marks) == 0 {
		return
	}
	var m map[string]any
	if json.Unmarshal(marks, &m) != nil {
		return
	}
	for k, v := range m {
		if sensitiveMark(v) {
			into[k] = true
		}
	}
}

// redactPair returns the values the hub may see of a resource: applied and
// current with every sensitive attribute replaced, by redacted when both
// sides hold the same value, and on the current side by sensitiveChanged
// when they differ. current nil (gone) stays nil.
func redactPair(applied, current map[string]any, sensitive map[string]bool) (desired, actual map[string]any) {
	desired = maps.Clone(applied)
	actual = maps.Clone(current)
	for k := range sensitive {
		a, inApplied := applied[k]
		c, inCurrent := current[k]
		if inApplied && a != nil {
			desired[k] = redacted
		}
		if current == nil || !inCurrent || (c == nil && a == nil) {
			continue
		}
		if reflect.DeepEqual(a, c) {
			actual[k] = redacted
		} else {
			actual[k] = sensitiveChanged
		}
	}
	return desired, actual
}

// changedDigest is a keyed digest of the current values of the sensitive
// attributes that changed ("" when none did): it tells one tampered value
// from the next without keeping either.
func changedDigest(key []byte, o *observed) string {
	if o.current == nil || len(o.sensitive) == 0 {
		return ""
	}
	mac := hmac.New(sha256.New, key)
	changed := false
	for _, k := range slices.Sorted(maps.Keys(o.sensitive)) {
		c, ok := o.current[k]
		if !ok || reflect.DeepEqual(o.applied[k], c) {
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			continue
		}
		changed = true
		mac.Write([]byte(k))
		mac.Write([]byte{0})
		mac.Write(b)
		mac.Write([]byte{0})
	}
	if !changed {
		return ""
	}
	return hex.EncodeToString(mac.Sum(nil))[:16]
}
