package terraform

import (
	"fmt"
	"maps"
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

// pendingOf reads the changes of a plan made without refresh: the
// configuration against the state as last applied.
func pendingOf(plan *tfjson.Plan, managed func(string) bool) pending {
	p := pending{removed: map[string]tfjson.ActionReason{}}
	for _, rc := range plan.ResourceChanges {
		if rc == nil || rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode || !managed(rc.Address) {
			continue
		}
		switch a := rc.Change.Actions; {
		case a.Delete():
			why := rc.ActionReason
			if why == "" {
				why = tfjson.ActionReasonDeleteBecauseNoResourceConfig
			}
			p.removed[rc.Address] = why
		case a.Create():
			p.added = append(p.added, rc.Address)
		case a.Update(), a.Replace():
			p.changed = append(p.changed, rc.Address)
		}
	}
	slices.Sort(p.added)
	slices.Sort(p.changed)
	return p
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
