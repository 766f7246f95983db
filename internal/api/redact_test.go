package api

import (
	"context"
	"encoding/json"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// The secrets of these tests: every one must be hidden from a viewer.
const (
	secretDesired = "s3cret-desired"
	secretActual  = "s3cret-actual"
	secretAdded   = "s3cret-added"
	secretInit    = "s3cret-init"
)

func TestRedactDiffsAndText(t *testing.T) {
	diffs := []apiv1.FieldDiff{
		{Path: "spec.replicas", Desired: "3", Actual: "1"},
		{Path: "spec.template.spec.containers[app].env[DB_PASSWORD].value", Desired: secretDesired, Actual: secretActual},
		{Path: "spec.template.spec.containers[app].env[TOKEN]", Desired: "<none>", Actual: "{name: TOKEN, value: " + secretAdded + "}", Added: true},
		{Path: "spec.template.spec.containers[sidecar]", Desired: "<none>", Actual: "{env: [{name: K, value: " + secretAdded + "}], image: x}", Added: true},
		{Path: "spec.template.spec.containers[app].env", Desired: "[{name: A, value: " + secretDesired + "}]", Actual: "<none>"},
		{Path: "spec.template.spec.containers[app].envFrom[cm].configMapRef.name", Desired: "a", Actual: "b"},
		{Path: "data.environment", Desired: "prod", Actual: "dev"},
	}
	got := redactDiffs(diffs)
	want := []apiv1.FieldDiff{
		diffs[0],
		{Path: diffs[1].Path, Desired: apiv1.Redacted, Actual: apiv1.Redacted},
		{Path: diffs[2].Path, Desired: "<none>", Actual: apiv1.Redacted, Added: true},
		{Path: diffs[3].Path, Desired: "<none>", Actual: apiv1.Redacted, Added: true},
		{Path: diffs[4].Path, Desired: apiv1.Redacted, Actual: "<none>"},
		diffs[5],
		diffs[6],
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("diff %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if diffs[1].Desired != secretDesired {
		t.Fatal("redactDiffs modified its argument")
	}

	// The hub's drift summary quotes the diffs: the known ones are redacted
	// in place, anything else that mentions an env list is cut.
	var parts []string
	for _, f := range diffs {
		parts = append(parts, diffText(f))
	}
	summary := "modified " + strings.Join(parts, ", ")
	known := quotes(diffs)
	for _, tc := range []struct {
		name, in string
		want     []string // substrings the result must hold
	}{
		{"no env", "modified spec.replicas: 3 -> 1", []string{"modified spec.replicas: 3 -> 1"}},
		{"summary of the known drift", summary, []string{"modified spec.replicas: 3 -> 1, ", "env[DB_PASSWORD].value: <redacted> -> <redacted>",
			"+spec.template.spec.containers[app].env[TOKEN]=<redacted>", "data.environment: prod -> dev"}},
		{"an older drift", "modified spec.template.spec.containers[app].env[OLD].value: " + secretDesired + " -> x", []string{"modified <redacted>"}},
		{"an apiserver error", `apply: Deployment.apps "web" is invalid: spec.template.spec.containers[0].env[0].value: Invalid value: "` + secretActual + `"`,
			[]string{`apply: Deployment.apps "web" is invalid: <redacted>`}},
		{"a rendered container", "added +spec.template.spec.containers[s]={env: [{name: K, value: " + secretAdded + "}]}", []string{"added <redacted>"}},
	} {
		got := redactText(tc.in, known)
		for _, s := range []string{secretDesired, secretActual, secretAdded} {
			if strings.Contains(got, s) {
				t.Errorf("%s: %q leaks %s", tc.name, got, s)
			}
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q does not hold %q", tc.name, got, w)
			}
		}
	}
}

// envSnapshot is a snapshot quoting env values everywhere a snapshot can:
// a drift's fields, its timeline, the status reason, the repair error and
// the feed.
func envSnapshot() *hub.Snapshot {
	s := testSnapshot(2)
	id := s.Nodes[0].ID
	diffs := []hub.FieldDiff{
		{Path: "spec.template.spec.containers[app].env[DB_PASSWORD].value", Desired: secretDesired, Actual: secretActual},
		{Path: "spec.template.spec.containers[app].env[TOKEN]", Desired: "<none>", Actual: "{name: TOKEN, value: " + secretAdded + "}", Added: true, Pointer: "/spec/template/spec/containers/0/env/1"},
		{Path: "spec.replicas", Desired: "3", Actual: "1"},
	}
	drift := hub.Drift{Class: hub.DriftModified, Fields: diffs}
	errText := "apply: spec.template.spec.containers[0].env[0].value: Invalid value: " + secretActual
	n := &s.Nodes[0]
	n.Status, n.Reason = hub.StatusFailed, errText
	n.LastRepair = &hub.Repair{ID: id, Drift: drift, Action: "apply", Err: errText, ObservedAt: s.Taken}
	n.Timeline = append(append([]hub.TimelineEntry(nil), n.Timeline...), hub.TimelineEntry{At: s.Taken, Step: hub.StepClassified, Detail: drift.Summary()})
	s.Feed = []hub.FeedEntry{{At: s.Taken, ID: id, Class: hub.DriftModified, Fields: diffs, Action: "apply", Err: errText}}
	return s
}

func leaks(b []byte) []string {
	var out []string
	for _, s := range []string{secretDesired, secretActual, secretAdded, secretInit} {
		if strings.Contains(string(b), s) {
			out = append(out, s)
		}
	}
	return out
}

// TestWatchRedaction: a viewer's snapshots and deltas hide every env value
// an operator's show; each view is marshalled once for all its streams.
func TestWatchRedaction(t *testing.T) {
	src := newFakeSource(envSnapshot())
	st := newStreamer(src, streamConfig{})
	viewer := httptest.NewServer(asRole(RoleViewer, st))
	none := httptest.NewServer(asRole(RoleNone, st))
	operator := httptest.NewServer(asRole(RoleOperator, st))
	defer func() {
		st.close() // ends the streams first: a server's Close waits for them
		viewer.Close()
		none.Close()
		operator.Close()
	}()

	v1, v2 := openWatch(t, viewer.URL, ""), openWatch(t, none.URL, "")
	op := openWatch(t, operator.URL, "")
	for _, c := range []*sseConn{v1, v2} {
		ev := c.next()
		if l := leaks(ev.data); len(l) > 0 {
			t.Fatalf("a viewer's snapshot leaks %v: %s", l, ev.data)
		}
		s := snapshotEvent(t, ev)
		if f := s.Nodes[0].LastRepair.Drift.Fields; f[0].Desired != apiv1.Redacted || f[1].Actual != apiv1.Redacted || f[2].Actual != "1" {
			t.Fatalf("viewer's fields = %+v", f)
		}
		if f := s.Feed[0].Fields; f[0].Actual != apiv1.Redacted || f[1].Pointer == "" {
			t.Fatalf("viewer's feed fields = %+v", f)
		}
		if d := s.Nodes[0].Timeline[len(s.Nodes[0].Timeline)-1].Detail; !strings.Contains(d, "spec.replicas: 3 -> 1") {
			t.Fatalf("viewer's timeline detail lost what is not secret: %q", d)
		}
	}
	ev := op.next()
	if l := leaks(ev.data); len(l) != 3 {
		t.Fatalf("the operator's snapshot shows %v, want every secret", l)
	}

	// A delta: the other NodeID drifts on an env value.
	s1 := src.latest
	s2 := *s1
	s2.Seq++
	s2.Nodes = append([]hub.NodeStatus(nil), s1.Nodes...)
	d := hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "spec.template.spec.containers[app].env[KEY].value", Desired: secretInit, Actual: "x"}}}
	s2.Nodes[1].Status, s2.Nodes[1].LastRepair = hub.StatusDrifted, &hub.Repair{ID: s2.Nodes[1].ID, Drift: d}
	s2.Feed = append([]hub.FeedEntry{{At: s2.Taken.Add(time.Second), ID: s2.Nodes[1].ID, Class: hub.DriftModified, Fields: d.Fields}}, s1.Feed...)
	src.publish(&s2)
	e1, e2 := v1.next(), v2.next()
	if l := leaks(e1.data); len(l) > 0 || deltaEvent(t, e1).Nodes[0].LastRepair.Drift.Fields[0].Desired != apiv1.Redacted {
		t.Fatalf("a viewer's delta leaks %v: %s", l, e1.data)
	}
	if string(e1.data) != string(e2.data) {
		t.Fatal("two viewers got different deltas")
	}
	if e := op.next(); !strings.Contains(string(e.data), secretInit) {
		t.Fatalf("the operator's delta hides the value: %s", e.data)
	}
	// Each view of the delta was built once, and is shared.
	st.mu.Lock()
	last := st.ring[len(st.ring)-1]
	st.mu.Unlock()
	if a, b := last.frame(viewRedacted), last.frame(viewRedacted); &a[0] != &b[0] || !strings.HasSuffix(string(a), string(e1.data)+"\n\n") {
		t.Fatal("the redacted delta is not marshalled once and shared")
	}
}

// TestNodeDetailRedaction: the node endpoint hides the desired object's env
// values (containers and initContainers) from a viewer, not from an
// operator, and never modifies the hub's object.
func TestNodeDetailRedaction(t *testing.T) {
	id := hub.NewNodeID("c1", "ns", "web", hub.KindDeployment)
	env := func(v string) []any {
		return []any{map[string]any{"name": "DB_PASSWORD", "value": v}, map[string]any{"name": "FROM_SECRET",
			"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db", "key": "password"}}}}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "ns"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers":     []any{map[string]any{"name": "app", "image": "web:1", "env": env(secretDesired)}},
			"initContainers": []any{map[string]any{"name": "init", "image": "init:1", "env": env(secretInit)}},
		}}},
	}}
	h := hub.New(hub.Options{ID: "redact-test", SnapshotInterval: 10 * time.Millisecond})
	spec := hub.NodeSpec{ID: id, Namespace: "ns", Name: "web", Kind: hub.KindDeployment, Application: "web",
		Policy: hub.PolicyRepair, Hash: "1", Body: kubeobj.MustEncodeBody(obj)}
	h.SetDesired([]hub.NodeSpec{spec})
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = h.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	s := &server{h: h, opts: Options{}.withDefaults()}
	get := func(role Role) (apiv1.NodeDetail, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, "/api/v1/nodes/"+id.String(), nil)
		req.SetPathValue("id", id.String())
		req = req.WithContext(withCaller(req.Context(), Caller{Role: role, Name: "t"}))
		w := httptest.NewRecorder()
		s.node(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", role, w.Code, w.Body)
		}
		var d apiv1.NodeDetail
		if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		return d, w.Body.String()
	}
	for _, tc := range []struct {
		role  Role
		leaks int
	}{{RoleViewer, 0}, {RoleNone, 0}, {RoleOperator, 2}} {
		d, body := get(tc.role)
		if l := leaks([]byte(body)); len(l) != tc.leaks {
			t.Errorf("%s sees %v of the secrets, want %d of them", tc.role, l, tc.leaks)
		}
		if d.APIVersion != apiv1.APIVersion || d.Status.ID != id.String() {
			t.Errorf("%s: detail = %+v", tc.role, d)
		}
		c, _, _ := unstructured.NestedSlice(d.Desired, "spec", "template", "spec", "containers")
		e := c[0].(map[string]any)["env"].([]any)
		if tc.leaks == 0 && (e[0].(map[string]any)["value"] != apiv1.Redacted || e[1].(map[string]any)["valueFrom"] == nil) {
			t.Errorf("%s: env = %v, want the value redacted and valueFrom kept", tc.role, e)
		}
	}
	obj, err := kubeobj.Object(spec)
	if err != nil {
		t.Fatal(err)
	}
	if v := obj.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["env"].([]any)[0].(map[string]any)["value"]; v != secretDesired {
		t.Fatalf("the hub's desired object was modified: %v", v)
	}
}
