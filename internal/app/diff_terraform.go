package app

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/clusters/diff"
	"github.com/driftwatch/driftwatch/clusters/terraform"
	"github.com/driftwatch/driftwatch/config"
)

// workspaceScope splits diff's filters between the clusters and the
// Terraform workspaces: a workspace id given to --cluster or --application
// (a workspace's resources belong to the application named after it)
// selects that workspace. It returns the options for the clusters, whether
// any cluster is still in scope, and the workspaces in scope.
func workspaceScope(cfg *config.Config, o DiffOptions) (DiffOptions, bool, []config.Workspace) {
	isWorkspace := func(id string) bool {
		_, ok := cfg.Workspace(id)
		return ok
	}
	var wsClusters, wsApps []string
	k8s := o
	k8s.Clusters, k8s.Applications = nil, nil
	for _, c := range o.Clusters {
		if isWorkspace(c) {
			wsClusters = append(wsClusters, c)
		} else {
			k8s.Clusters = append(k8s.Clusters, c)
		}
	}
	for _, a := range o.Applications {
		if isWorkspace(a) {
			wsApps = append(wsApps, a)
		} else {
			k8s.Applications = append(k8s.Applications, a)
		}
	}
	clustersToo := (len(o.Clusters) == 0 || len(k8s.Clusters) > 0) && (len(o.Applications) == 0 || len(k8s.Applications) > 0)
	var workspaces []config.Workspace
	for _, w := range cfg.Terraform {
		if (len(o.Clusters) == 0 || slices.Contains(wsClusters, w.ID)) && (len(o.Applications) == 0 || slices.Contains(wsApps, w.ID)) {
			workspaces = append(workspaces, w)
		}
	}
	return k8s, clustersToo, workspaces
}

// diffWorkspaces plans each workspace once, read-only (terraform.Check),
// and adds its resources to the report, or the workspace to its
// unreachable list when it cannot be planned (the binary missing, a
// failing plan): a partial answer is never "in sync".
func diffWorkspaces(ctx context.Context, rep *diff.Report, workspaces []config.Workspace, getenv func(string) string, log *slog.Logger) {
	for _, wc := range workspaces {
		rep.Workspaces = append(rep.Workspaces, wc.ID)
		checked, err := terraform.Check(ctx, terraform.Options{
			ID: wc.ID, Dir: wc.Dir, Binary: wc.Binary, Vars: wc.Vars, VarFiles: wc.VarFiles, Targets: wc.Targets,
			Getenv: getenv, Logger: log,
		})
		if err != nil {
			rep.Unreachable = append(rep.Unreachable, diff.ClusterError{Cluster: wc.ID, Err: err})
			continue
		}
		for _, c := range checked {
			o := diff.Object{ID: c.ID, Application: wc.ID, Class: c.Drift.Class, Fields: c.Drift.Fields}
			if !c.Drift.InSync() {
				var live *unstructured.Unstructured
				if c.Actual != nil {
					live = &unstructured.Unstructured{Object: c.Actual}
				}
				text, err := diff.Unified(&unstructured.Unstructured{Object: c.Desired}, live)
				if err != nil {
					o.Err = err
				}
				o.Diff = text
			}
			rep.Objects = append(rep.Objects, o)
		}
	}
	slices.SortFunc(rep.Objects, func(a, b diff.Object) int { return strings.Compare(a.ID.String(), b.ID.String()) })
	slices.SortFunc(rep.Unreachable, func(a, b diff.ClusterError) int { return strings.Compare(a.Cluster, b.Cluster) })
}
