package app

import (
	"slices"
	"testing"

	"github.com/driftwatch/driftwatch/config"
)

func TestWorkspaceScope(t *testing.T) {
	cfg := &config.Config{Terraform: []config.Workspace{{ID: "files"}, {ID: "dns"}}}
	for _, tc := range []struct {
		name                   string
		clusters, apps         []string
		wantClusters, wantApps []string
		wantK8s                bool
		wantWorkspaces         []string
	}{
		{"no filter", nil, nil, nil, nil, true, []string{"files", "dns"}},
		{"a workspace", []string{"files"}, nil, nil, nil, false, []string{"files"}},
		{"a cluster", []string{"prod"}, nil, []string{"prod"}, nil, true, nil},
		{"both", []string{"prod", "dns"}, nil, []string{"prod"}, nil, true, []string{"dns"}},
		{"an application", nil, []string{"web"}, nil, []string{"web"}, true, nil},
		{"a workspace as application", nil, []string{"dns"}, nil, nil, false, []string{"dns"}},
		{"a cluster and a workspace application", []string{"prod"}, []string{"dns"}, []string{"prod"}, nil, false, nil},
	} {
		k8s, clustersToo, ws := workspaceScope(cfg, DiffOptions{Clusters: tc.clusters, Applications: tc.apps})
		var ids []string
		for _, w := range ws {
			ids = append(ids, w.ID)
		}
		if !slices.Equal(k8s.Clusters, tc.wantClusters) || !slices.Equal(k8s.Applications, tc.wantApps) ||
			clustersToo != tc.wantK8s || !slices.Equal(ids, tc.wantWorkspaces) {
			t.Errorf("%s: clusters %v, applications %v, clusters too %v, workspaces %v; want %v, %v, %v, %v", tc.name,
				k8s.Clusters, k8s.Applications, clustersToo, ids, tc.wantClusters, tc.wantApps, tc.wantK8s, tc.wantWorkspaces)
		}
	}
}
