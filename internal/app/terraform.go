package app

import (
	"maps"
	"slices"

	"github.com/driftwatch/driftwatch/clusters/terraform"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
)

// workspaceSpecs takes a workspace's new desired state: it replaces that
// workspace's NodeIDs in the hub, unless a reload removed the workspace
// meanwhile. A resource that left the state is never deleted (the
// workspace reads it as not owned), so the prune guard, which protects
// clusters from a bad config, does not apply.
func (a *App) workspaceSpecs(id string, specs []hub.NodeSpec, current func() bool) {
	a.desiredMu.Lock()
	defer a.desiredMu.Unlock()
	if !current() {
		return
	}
	a.wsSpecs[id] = specs
	if _, _, err := a.hub.ReplaceDesiredCluster(id, specs, hub.DesiredOptions{AllowPrune: true}); err != nil {
		a.log.Error("terraform workspace: desired state refused", "workspace", id, "err", err)
	}
}

// workspaceSpecsLocked returns every current workspace's last desired state
// but those of skip (for reloads, which replace the whole desired state).
// The caller holds desiredMu.
func (a *App) workspaceSpecsLocked(skip []string) []hub.NodeSpec {
	var out []hub.NodeSpec
	for _, id := range slices.Sorted(maps.Keys(a.wsSpecs)) {
		if !slices.Contains(skip, id) {
			out = append(out, a.wsSpecs[id]...)
		}
	}
	return out
}

// Workspace returns a Terraform workspace of the config, for a manual
// refresh.
func (a *App) Workspace(id string) (*terraform.Workspace, bool) {
	return a.ws.Get(id)
}

// workspaceOptions are the settings of the config's `terraform:` entries,
// one terraform.Options each (terraform.Set adds what they share).
func workspaceOptions(ws []config.Workspace) []terraform.Options {
	out := make([]terraform.Options, 0, len(ws))
	for _, wc := range ws {
		out = append(out, terraform.Options{ID: wc.ID, Dir: wc.Dir, Binary: wc.Binary, Vars: wc.Vars, VarFiles: wc.VarFiles,
			Interval: wc.Interval, Policy: wc.Policy, Targets: wc.Targets})
	}
	return out
}
