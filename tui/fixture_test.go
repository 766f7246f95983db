package tui

import (
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"slices"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/hub"
)

// fixedNow is the clock of every test.
var fixedNow = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return fixedNow }

func ago(d time.Duration) time.Time { return fixedNow.Add(-d) }

func nid(s string) hub.NodeID {
	id, err := hub.ParseNodeID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// fakeSource records the actions the UI asks for.
type fakeSource struct {
	mu        sync.Mutex
	ch        chan *hub.Snapshot
	calls     []string
	err       error
	cancelled bool
}

func newFakeSource(snaps ...*hub.Snapshot) *fakeSource {
	f := &fakeSource{ch: make(chan *hub.Snapshot, len(snaps)+1)}
	for _, s := range snaps {
		f.ch <- s
	}
	return f
}

func (f *fakeSource) Subscribe() (<-chan *hub.Snapshot, func()) {
	return f.ch, func() {
		f.mu.Lock()
		f.cancelled = true
		f.mu.Unlock()
	}
}

func (f *fakeSource) record(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
	return f.err
}

func (f *fakeSource) RepairNow(id hub.NodeID) error { return f.record("repair " + id.String()) }

func (f *fakeSource) PauseCluster(cluster string, paused bool) error {
	return f.record(fmt.Sprintf("pause %s %t", cluster, paused))
}

func (f *fakeSource) PauseClusterNote(cluster string, note hub.SwitchNote) error {
	s := "pause " + cluster + " true"
	if note.By != "" || note.Reason != "" {
		s += fmt.Sprintf(" by %q: %q", note.By, note.Reason)
	}
	return f.record(s)
}

func (f *fakeSource) SetApplicationPolicy(app string, p hub.Policy) error {
	return f.record(fmt.Sprintf("policy %s %q", app, p))
}

func (f *fakeSource) SetApplicationPolicyNote(app string, p hub.Policy, note hub.SwitchNote) error {
	s := fmt.Sprintf("policy %s %q", app, p)
	if note.By != "" || note.Reason != "" {
		s += fmt.Sprintf(" by %q: %q", note.By, note.Reason)
	}
	return f.record(s)
}

func (f *fakeSource) Hold(t hub.HoldTarget, ttl time.Duration, reason string) (hub.Hold, error) {
	err := f.record(fmt.Sprintf("hold %s %s %q", t, ttl, reason))
	if err != nil {
		return hub.Hold{}, err
	}
	return hub.Hold{Target: t, Reason: reason, Since: fixedNow, Until: fixedNow.Add(ttl)}, nil
}

func (f *fakeSource) ReleaseHold(t hub.HoldTarget) error { return f.record("release " + t.String()) }

func (f *fakeSource) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// keyPress builds the key message a terminal sends for a key name as
// key.Binding spells it ("enter", "esc", "ctrl+c", "s", "S", "/").
func keyPress(name string) tea.KeyPressMsg {
	switch name {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	if c, ok := strings.CutPrefix(name, "ctrl+"); ok {
		return tea.KeyPressMsg{Code: []rune(c)[0], Mod: tea.ModCtrl}
	}
	r := []rune(name)
	if len(r) != 1 {
		panic("keyPress: unknown key " + name)
	}
	return tea.KeyPressMsg{Code: r[0], Text: name}
}

// deploymentObject builds a desired Deployment.
func deploymentObject(ns, name, image string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"namespace": ns,
			"name":      name,
			"labels": map[string]any{
				kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy,
				kubeobj.AppLabel:       name,
			},
			"annotations": map[string]any{kubeobj.NodeIDAnnotation: "prod-eu:" + ns + "/" + name + ":deployment"},
		},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": map[string]any{kubeobj.AppLabel: name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{kubeobj.AppLabel: name}},
				"spec": map[string]any{
					"containers": []any{map[string]any{"name": "app", "image": image}},
				},
			},
		},
	}}
}

// fixture is a hand-built snapshot: 3 clusters (synced, degraded and
// paused, unreachable), 20 nodes covering every status, and a feed of
// drifts and repairs.
func fixture() *hub.Snapshot {
	inv := nid("prod-eu:casehub/inventory:deployment")
	invRepair := &hub.Repair{
		ID: inv,
		Drift: hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{
			{Path: "spec.replicas", Desired: "3", Actual: "1"},
			{Path: "spec.template.spec.containers[name=app].image", Desired: "ghcr.io/acme/inventory:1.4.2", Actual: "ghcr.io/acme/inventory:debug"},
		}},
		Attribution: &hub.Attribution{Manager: "kubectl-edit", Operation: "Update", At: ago(13 * time.Second),
			Fields: []string{"spec.replicas", "spec.template.spec.containers[name=app].image"}},
		Action:       "apply",
		ObservedAt:   ago(12 * time.Second),
		ClassifiedAt: ago(12*time.Second - 800*time.Microsecond),
		AppliedAt:    ago(12*time.Second - 3100*time.Microsecond),
		VerifiedAt:   ago(12*time.Second - 9400*time.Microsecond),
	}
	cfg := nid("prod-eu:casehub/inventory-config:configmap")
	cfgRepair := &hub.Repair{
		ID: cfg,
		Drift: hub.Drift{Class: hub.DriftAdded, Fields: []hub.FieldDiff{
			{Path: "data.debug", Desired: "<none>", Actual: "true", Added: true, Pointer: "/data/debug"},
		}},
		Attribution: &hub.Attribution{Manager: "kubectl-patch", Operation: "Update", At: ago(3 * time.Second), Fields: []string{"data.debug"}},
		Action:      "remove+apply",
		ObservedAt:  ago(3 * time.Second),
	}
	orders := nid("prod-eu:casehub/orders:deployment")
	ordersRepair := &hub.Repair{ID: orders, Drift: hub.Drift{Class: hub.DriftMissing}, Action: "apply",
		ObservedAt: ago(1 * time.Second), ClassifiedAt: ago(1*time.Second - 2*time.Millisecond)}
	ocfg := nid("prod-eu:casehub/orders-config:configmap")
	ocfgRepair := &hub.Repair{ID: ocfg,
		Drift:  hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "data.LOG_LEVEL", Desired: "info", Actual: "debug"}}},
		Action: "apply", Err: "apply: admission webhook \"policy.acme.io\" denied the request: data.LOG_LEVEL is locked",
		Attribution: &hub.Attribution{Manager: "helm", Operation: "Update", At: ago(2 * time.Minute)},
		ObservedAt:  ago(2 * time.Minute), ClassifiedAt: ago(2*time.Minute - time.Millisecond)}
	psvc := nid("prod-eu:casehub/payments:service")
	psvcRepair := &hub.Repair{ID: psvc,
		Drift:       hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.ports[port=80,protocol=TCP].targetPort", Desired: "8080", Actual: "9090"}}},
		Attribution: &hub.Attribution{Manager: "kubectl-edit", Operation: "Update", At: ago(4 * time.Minute)},
		Action:      "warn", ObservedAt: ago(4 * time.Minute), ClassifiedAt: ago(4*time.Minute - 600*time.Microsecond)}
	billing := nid("prod-eu:legacy/billing:service")
	billingRepair := &hub.Repair{ID: billing, Drift: hub.Drift{Class: hub.DriftUnlabelled},
		Attribution: &hub.Attribution{Manager: "kubectl-label", Operation: "Update", At: ago(7 * time.Second)},
		ObservedAt:  ago(6 * time.Second)}
	usInv := nid("prod-us:casehub/inventory:deployment")
	usInvRepair := &hub.Repair{ID: usInv,
		Drift:       hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.replicas", Desired: "2", Actual: "5"}}},
		Attribution: &hub.Attribution{Manager: "kubectl-scale", Operation: "Update", At: ago(30 * time.Second)},
		Action:      "paused", ObservedAt: ago(30 * time.Second)}
	usSvc := nid("prod-us:casehub/orders:service")
	usSvcRepair := &hub.Repair{ID: usSvc, Drift: hub.Drift{Class: hub.DriftDeleting}, Action: "wait-deletion", ObservedAt: ago(20 * time.Second)}

	unreachable := "cluster unreachable: dial tcp 10.0.3.7:6443: connect: connection refused"
	nodes := []hub.NodeStatus{
		{ID: inv, Application: "inventory", Kind: hub.KindDeployment, Policy: hub.PolicyRepair, Status: hub.StatusRepaired,
			LastRepair: invRepair, ReadyReplicas: 3, DesiredReplicas: 3, LastChange: ago(12 * time.Second), Repairs: 3,
			Timeline: []hub.TimelineEntry{
				{At: invRepair.ObservedAt, Step: hub.StepObserved, Detail: "updated rv 48213"},
				{At: invRepair.ClassifiedAt, Step: hub.StepClassified, Detail: "modified spec.replicas: 3 -> 1"},
				{At: invRepair.AppliedAt, Step: hub.StepApplied, Detail: "server-side apply (force)"},
				{At: invRepair.VerifiedAt, Step: hub.StepVerified},
			},
			Spec: &hub.NodeSpec{ID: inv, Namespace: "casehub", Name: "inventory", Kind: hub.KindDeployment, Application: "inventory",
				Policy: hub.PolicyRepair, ProgressDeadline: 10 * time.Minute, Hash: "9f2c4e1ab37d55e0",
				Body: kubeobj.MustEncodeBody(deploymentObject("casehub", "inventory", "ghcr.io/acme/inventory:1.4.2", 3))}},
		{ID: nid("prod-eu:casehub/inventory:service"), Application: "inventory", Kind: hub.KindService, Status: hub.StatusInSync, LastChange: ago(3 * time.Hour)},
		{ID: cfg, Application: "inventory", Kind: hub.KindConfigMap, Status: hub.StatusDrifted, LastRepair: cfgRepair, LastChange: ago(3 * time.Second),
			Timeline: []hub.TimelineEntry{{At: ago(3 * time.Second), Step: hub.StepObserved}}},
		{ID: orders, Application: "orders", Kind: hub.KindDeployment, Status: hub.StatusRepairing, LastRepair: ordersRepair,
			ReadyReplicas: 0, DesiredReplicas: 2, LastChange: ago(1 * time.Second), Repairs: 1},
		{ID: nid("prod-eu:casehub/orders:service"), Application: "orders", Kind: hub.KindService, Status: hub.StatusInSync, LastChange: ago(3 * time.Hour)},
		{ID: ocfg, Application: "orders", Kind: hub.KindConfigMap, Status: hub.StatusFailed, LastRepair: ocfgRepair,
			Reason: ocfgRepair.Err, LastChange: ago(2 * time.Minute), Repairs: 4},
		{ID: nid("prod-eu:casehub/payments:deployment"), Application: "payments", Kind: hub.KindDeployment, Status: hub.StatusStuck,
			Reason: "progress deadline exceeded (10m0s): 0/2 available", DesiredReplicas: 2, LastChange: ago(11 * time.Minute)},
		{ID: psvc, Application: "payments", Kind: hub.KindService, Policy: hub.PolicyWarn, Status: hub.StatusWarnOnly, LastRepair: psvcRepair, LastChange: ago(4 * time.Minute)},
		{ID: nid("prod-eu:casehub/payments-config:configmap"), Application: "payments", Kind: hub.KindConfigMap, Status: hub.StatusDecommissioning,
			Reason: "application removed from the config", LastChange: ago(40 * time.Second)},
		{ID: nid("prod-eu:legacy/billing:deployment"), Application: "billing", Kind: hub.KindDeployment, Status: hub.StatusInSync,
			ReadyReplicas: 2, DesiredReplicas: 2, LastChange: ago(26 * time.Hour)},
		{ID: billing, Application: "billing", Kind: hub.KindService, Status: hub.StatusDrifted, LastRepair: billingRepair, LastChange: ago(6 * time.Second)},
		{ID: usInv, Application: "inventory", Kind: hub.KindDeployment, Status: hub.StatusPaused, Reason: "cluster paused",
			LastRepair: usInvRepair, ReadyReplicas: 5, DesiredReplicas: 2, LastChange: ago(30 * time.Second)},
		{ID: nid("prod-us:casehub/inventory:service"), Application: "inventory", Kind: hub.KindService, Status: hub.StatusInSync, LastChange: ago(2 * time.Hour)},
		{ID: nid("prod-us:casehub/inventory-config:configmap"), Application: "inventory", Kind: hub.KindConfigMap, Status: hub.StatusInSync, LastChange: ago(2 * time.Hour)},
		{ID: nid("prod-us:casehub/orders:deployment"), Application: "orders", Kind: hub.KindDeployment, Status: hub.StatusInSync,
			ReadyReplicas: 3, DesiredReplicas: 3, LastChange: ago(2 * time.Hour)},
		{ID: usSvc, Application: "orders", Kind: hub.KindService, Status: hub.StatusRepairing, LastRepair: usSvcRepair, LastChange: ago(20 * time.Second)},
		{ID: nid("staging:casehub/inventory:deployment"), Application: "inventory", Kind: hub.KindDeployment, Status: hub.StatusUnknown, Reason: unreachable, LastChange: ago(5 * time.Minute)},
		{ID: nid("staging:casehub/inventory:service"), Application: "inventory", Kind: hub.KindService, Status: hub.StatusUnknown, Reason: unreachable, LastChange: ago(5 * time.Minute)},
		{ID: nid("staging:casehub/inventory-config:configmap"), Application: "inventory", Kind: hub.KindConfigMap, Status: hub.StatusUnknown, Reason: unreachable, LastChange: ago(5 * time.Minute)},
		{ID: nid("staging:casehub/orders:deployment"), Application: "orders", Kind: hub.KindDeployment, Status: hub.StatusUnknown, Reason: unreachable, LastChange: ago(5 * time.Minute)},
	}
	clusters := []hub.ClusterStatus{
		{ClusterHealth: hub.ClusterHealth{Cluster: "prod-eu", State: hub.ClusterSynced, Since: ago(3 * time.Hour), Source: "config",
			EventsPerSecond: 4.2, LastEvent: ago(1 * time.Second), Generation: 1}, MedianRepair: 14 * time.Millisecond},
		{ClusterHealth: hub.ClusterHealth{Cluster: "prod-us", State: hub.ClusterDegraded, Since: ago(90 * time.Second), Source: "capi:mgmt/fleet",
			LastError: "watch services in casehub: too many requests, retrying", EventsPerSecond: 0.8, LastEvent: ago(20 * time.Second), Generation: 2},
			Paused: true, PausedAt: ago(12 * time.Minute), PausedBy: "alice", PauseReason: "INC-4211: failover to prod-eu",
			MedianRepair: 1250 * time.Millisecond},
		{ClusterHealth: hub.ClusterHealth{Cluster: "staging", State: hub.ClusterUnreachable, Since: ago(5 * time.Minute), Source: "config",
			LastError: "dial tcp 10.0.3.7:6443: connect: connection refused", LastEvent: ago(6 * time.Minute), Generation: 1}},
	}
	feed := []hub.FeedEntry{
		{At: ago(1 * time.Second), ID: orders, Class: hub.DriftMissing, Action: "apply"},
		{At: ago(3 * time.Second), ID: cfg, Class: hub.DriftAdded, Fields: cfgRepair.Drift.Fields, Who: "kubectl-patch", Action: "remove+apply"},
		{At: ago(6 * time.Second), ID: billing, Class: hub.DriftUnlabelled, Who: "kubectl-label", Action: "apply"},
		{At: ago(12 * time.Second), ID: inv, Class: hub.DriftModified, Fields: invRepair.Drift.Fields, Who: "kubectl-edit", Action: "apply", Latency: 9400 * time.Microsecond},
		{At: ago(20 * time.Second), ID: usSvc, Class: hub.DriftDeleting, Action: "wait-deletion"},
		{At: ago(30 * time.Second), ID: usInv, Class: hub.DriftModified, Fields: usInvRepair.Drift.Fields, Who: "kubectl-scale", Action: "paused"},
		{At: ago(2 * time.Minute), ID: ocfg, Class: hub.DriftModified, Fields: ocfgRepair.Drift.Fields, Who: "helm", Action: "apply", Err: "admission webhook denied the request"},
		{At: ago(4 * time.Minute), ID: psvc, Class: hub.DriftModified, Fields: psvcRepair.Drift.Fields, Who: "kubectl-edit", Action: "warn", Latency: 600 * time.Microsecond},
		{At: ago(9 * time.Minute), ID: inv, Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.replicas", Desired: "3", Actual: "0"}}, Who: "kubectl-scale", Action: "apply", Latency: 11 * time.Millisecond},
		{At: ago(15 * time.Minute), ID: orders, Class: hub.DriftMissing, Who: "", Action: "apply", Latency: 13200 * time.Microsecond},
	}
	s := buildSnapshot("hub-eu-1", clusters, nodes, feed, map[string]hub.Policy{"payments": hub.PolicyWarn})
	s.AppPolicyNotes = map[string]hub.OverrideNote{"payments": {At: ago(20 * time.Minute), By: "dave", Reason: "PSP migration"}}
	return s
}

// buildSnapshot sorts the nodes and fills each cluster's Objects and Counts
// from them, as the hub does.
func buildSnapshot(hubID string, clusters []hub.ClusterStatus, nodes []hub.NodeStatus, feed []hub.FeedEntry, policies map[string]hub.Policy) *hub.Snapshot {
	slices.SortFunc(nodes, func(a, b hub.NodeStatus) int { return strings.Compare(a.ID.String(), b.ID.String()) })
	for i := range nodes {
		if nodes[i].Policy == "" {
			nodes[i].Policy = hub.PolicyRepair
		}
	}
	for i := range clusters {
		c := &clusters[i]
		c.Counts = map[hub.Status]int{}
		c.Objects = 0
		for _, n := range nodes {
			if n.ID.Cluster == c.Cluster {
				c.Objects++
				c.Counts[n.Status]++
			}
		}
	}
	return &hub.Snapshot{
		HubID: hubID, Seq: 42, Taken: ago(2 * time.Second), Policy: hub.PolicyRepair,
		Clusters: clusters, Nodes: nodes, Feed: feed, AppPolicies: policies,
	}
}

// bigSnapshot has n nodes on one cluster, for benchmarks.
func bigSnapshot(n int, seq uint64) *hub.Snapshot {
	statuses := hub.AllStatuses()
	kinds := hub.Kinds()
	nodes := make([]hub.NodeStatus, n)
	for i := range nodes {
		k := kinds[i%len(kinds)]
		nodes[i] = hub.NodeStatus{
			ID:          hub.NewNodeID("big", fmt.Sprintf("ns-%03d", i/100), fmt.Sprintf("app-%05d", i), k),
			Application: fmt.Sprintf("app-%05d", i/3),
			Kind:        k,
			Status:      statuses[(i*7+int(seq))%len(statuses)],
			LastChange:  ago(time.Duration(i%3600) * time.Second),
		}
		if k == hub.KindDeployment {
			nodes[i].ReadyReplicas, nodes[i].DesiredReplicas = 2, 3
		}
	}
	clusters := []hub.ClusterStatus{{ClusterHealth: hub.ClusterHealth{Cluster: "big", State: hub.ClusterSynced, Source: "config",
		EventsPerSecond: 120, LastEvent: ago(time.Second)}, MedianRepair: 12 * time.Millisecond}}
	feed := make([]hub.FeedEntry, 200)
	for i := range feed {
		feed[i] = hub.FeedEntry{At: ago(time.Duration(i) * time.Second), ID: nodes[i*37%n].ID, Class: hub.DriftModified,
			Fields: []hub.FieldDiff{{Path: "spec.replicas", Desired: "3", Actual: "1"}}, Who: "kubectl-scale", Action: "apply", Latency: 12 * time.Millisecond}
	}
	s := buildSnapshot("bench", clusters, nodes, feed, nil)
	s.Seq = seq
	return s
}
