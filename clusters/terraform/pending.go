package terraform

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
)

// RemovedNote is the note on a resource removed from the configuration but
// still in the state: driftwatch reports its drift (policy warn) and never
// repairs or destroys it.
const RemovedNote = "removed from config: still in the state; driftwatch never destroys it (tofu apply decommissions it)"

// pending is what a workspace's configuration holds that was not applied:
// resources added to it, resources whose configuration changed, and
// resources removed from it (with the plan's reason) that are still in the
// state. Drift is not pending: a resource changed outside Terraform shows
// in the refresh's drift, not here.
type pending struct {
	added, changed []string
	removed        map[string]tfjson.ActionReason
}

// pendingOf reads the planned changes of a plan made with refresh (the
// configuration against the refreshed state), telling what only undoes
// drift from what the configuration changed: a planned change of a
// resource the refresh found drifted whose known planned values equal the
// values last applied only puts the drift back, and is not pending. A
// resource the refresh found gone that the plan does not create again has
// left the configuration (nothing to destroy: only the state still holds
// it). obs are the plan's observed resources, by address.
func pendingOf(plan *tfjson.Plan, managed func(string) bool, obs map[string]*observed) pending {
	p := pending{removed: map[string]tfjson.ActionReason{}}
	created := map[string]bool{}
	for _, rc := range plan.ResourceChanges {
		if rc == nil || rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode || !managed(rc.Address) {
			continue
		}
		o := obs[rc.Address]
		a := rc.Change.Actions
		if a.Create() || a.Replace() {
			created[rc.Address] = true
		}
		switch {
		case a.Delete() || a.Forget():
			why := rc.ActionReason
			if why == "" {
				why = tfjson.ActionReasonDeleteBecauseNoResourceConfig
			}
			p.removed[rc.Address] = why
		case !a.Create() && !a.Update() && !a.Replace():
			// no-op or read: nothing to apply
		case o != nil && o.drift != nil && restores(rc.Change, o.applied):
			// Only puts the drift back: a repair, not a pending change.
		case a.Create() && o == nil:
			p.added = append(p.added, rc.Address)
		default:
			p.changed = append(p.changed, rc.Address)
		}
	}
	for addr, o := range obs {
		if o.gone() && !created[addr] {
			p.removed[addr] = tfjson.ActionReasonDeleteBecauseNoResourceConfig
		}
	}
	slices.Sort(p.added)
	slices.Sort(p.changed)
	return p
}

// restores reports whether a planned change leads back to the values last
// applied: every planned value known before apply equals the applied one.
func restores(c *tfjson.Change, applied map[string]any) bool {
	after, ok := c.After.(map[string]any)
	if !ok || applied == nil {
		return false
	}
	unknown, _ := c.AfterUnknown.(map[string]any)
	for k, v := range after {
		if u, ok := unknown[k]; ok && sensitiveMark(u) {
			continue // computed at apply: not set by the configuration
		}
		if !reflect.DeepEqual(v, applied[k]) {
			return false
		}
	}
	return true
}

// String is the workspace's note while it is ready: "" when everything in
// the configuration is applied, else e.g. "not applied: added in config
// local_file.b; removed from config (never destroyed) local_file.old".
func (p pending) String() string {
	var parts []string
	if len(p.added) > 0 {
		parts = append(parts, "added in config "+listOf(p.added))
	}
	if len(p.changed) > 0 {
		parts = append(parts, "changed in config "+listOf(p.changed))
	}
	if len(p.removed) > 0 {
		parts = append(parts, "removed from config (never destroyed) "+listOf(slices.Sorted(maps.Keys(p.removed))))
	}
	if len(parts) == 0 {
		return ""
	}
	return "not applied: " + strings.Join(parts, "; ")
}

// listOf joins at most three addresses and counts the rest.
func listOf(addrs []string) string {
	const shown = 3
	if len(addrs) <= shown {
		return strings.Join(addrs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(addrs[:shown], ", "), len(addrs)-shown)
}
