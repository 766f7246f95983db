package hub

import "testing"

func TestLookups(t *testing.T) {
	h := New(Options{ID: "lookup"})
	web := NewNodeID("c1", "ns", "web", KindDeployment)
	old := NewNodeID("c3", "ns", "old", KindConfigMap)
	h.SetDesired([]NodeSpec{
		{ID: web, Namespace: "ns", Name: "web", Kind: KindDeployment, Application: "web", Hash: "1"},
		{ID: old, Namespace: "ns", Name: "old", Kind: KindConfigMap, Application: "legacy", Hash: "1"},
	})
	// legacy leaves the config: it is decommissioning, still known.
	if _, _, err := h.ReplaceDesired([]NodeSpec{{ID: web, Namespace: "ns", Name: "web", Kind: KindDeployment, Application: "web", Hash: "1"}},
		DesiredOptions{AllowPrune: true}); err != nil {
		t.Fatal(err)
	}
	// c2 has no object but reported its health.
	h.ClusterChanged(ClusterHealth{Cluster: "c2", State: ClusterConnecting})

	for _, tt := range []struct {
		target HoldTarget
		want   bool
	}{
		{HoldTarget{Scope: HoldCluster, Name: "c1"}, true},
		{HoldTarget{Scope: HoldCluster, Name: "c2"}, true},
		{HoldTarget{Scope: HoldCluster, Name: "c3"}, true},
		{HoldTarget{Scope: HoldCluster, Name: "nope"}, false},
		{HoldTarget{Scope: HoldApplication, Name: "web"}, true},
		{HoldTarget{Scope: HoldApplication, Name: "legacy"}, true},
		{HoldTarget{Scope: HoldApplication, Name: "nope"}, false},
		{HoldTarget{Scope: HoldNode, Name: web.String()}, true},
		{HoldTarget{Scope: HoldNode, Name: old.String()}, true},
		{HoldTarget{Scope: HoldNode, Name: "c1:ns/nope:deployment"}, false},
		{HoldTarget{Scope: HoldNode, Name: "web"}, false},
		{HoldTarget{Scope: "namespace", Name: "ns"}, false},
	} {
		if got := h.KnowsTarget(tt.target); got != tt.want {
			t.Errorf("KnowsTarget(%s) = %v, want %v", tt.target, got, tt.want)
		}
	}
	// A cluster that is removed is no longer known; the lookups change
	// nothing themselves.
	h.ClusterChanged(ClusterHealth{Cluster: "c2", State: ClusterRemoved})
	if h.KnowsCluster("c2") {
		t.Fatal("a removed cluster is still known")
	}
	if _, ok := h.Snapshot().Cluster("nope"); ok {
		t.Fatal("a lookup created a cluster")
	}
}
