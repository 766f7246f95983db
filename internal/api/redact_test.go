package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
	"github.com/driftwatch/driftwatch/internal/testwait"
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
	got := rules{}.redactDiffs(diffs)
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
	known := rules{}.quotes(diffs)
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
		got := rules{}.redactText(tc.in, known)
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

// The values of the Secret of these tests: every one must be hidden from a
// viewer. secretData is base64 of "super-secret-db-password".
const (
	secretData       = "c3VwZXItc2VjcmV0LWRiLXBhc3N3b3Jk"
	secretStringData = "plain-text-api-token"
	secretLive       = "bGl2ZS1zZWNyZXQtdmFsdWU="
	secretLiveAdded  = "c2VjcmV0LWFkZGVkLWxpdmU="
)

func secretLeaks(b []byte) []string {
	var out []string
	for _, s := range []string{secretData, secretStringData, secretLive, secretLiveAdded} {
		if strings.Contains(string(b), s) {
			out = append(out, s)
		}
	}
	return out
}

// secretObject is a Secret as a plain-files or kustomize secretGenerator
// source renders it.
func secretObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "db", "namespace": "ns", "labels": map[string]any{"app": "db"}},
		"type":       "Opaque",
		"data":       map[string]any{"password": secretData},
		"stringData": map[string]any{"token": secretStringData},
	}}
}

// TestSecretRedactText: on a Secret, every field diff is redacted, keys and
// paths kept; a text is redacted where it quotes a known diff (a label's
// too) and cut at any other mention of data or stringData; text that only
// uses the word stays.
func TestSecretRedactText(t *testing.T) {
	rs := rulesOf(hub.KindSlug("", "Secret"))
	label := apiv1.FieldDiff{Path: "metadata.labels.app", Desired: "db", Actual: "other"}
	if got := rs.redactDiffs([]apiv1.FieldDiff{label})[0]; got != (apiv1.FieldDiff{Path: label.Path, Desired: apiv1.Redacted, Actual: apiv1.Redacted}) {
		t.Errorf("a Secret's label diff = %+v", got)
	}
	if got := rulesOf(hub.KindConfigMap).redactDiffs([]apiv1.FieldDiff{{Path: "data.password", Desired: "a", Actual: "b"}})[0]; got.Desired != "a" {
		t.Errorf("a ConfigMap's data diff was redacted: %+v", got)
	}
	known := rs.quotes([]apiv1.FieldDiff{label})
	for _, tc := range []struct{ in, want string }{
		{"modified metadata.labels.app: db -> other", "modified metadata.labels.app: <redacted> -> <redacted>"},
		{"modified stringData.token: " + secretStringData + " -> <none>", "modified <redacted>"},
		{"added +data.extra=" + secretLiveAdded, "added <redacted>"},
		{"created {apiVersion: v1, data: {password: " + secretData + "}}", "created {apiVersion: v1, <redacted>"},
		{"apply: illegal base64 data at input byte 4", "apply: illegal base64 data at input byte 4"},
	} {
		if got := rs.redactText(tc.in, known); got != tc.want {
			t.Errorf("redactText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// getAs answers GET path on srv with token, and its body.
func getAs(t *testing.T, srv *httptest.Server, token, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s %v", path, resp.StatusCode, b, err)
	}
	return b
}

// secretHub runs a hub whose one NodeID is a managed Secret (secretObject,
// with the policy and revision of spec) behind an API with a viewer's and
// an operator's token, until the test ends.
func secretHub(t *testing.T, spec hub.NodeSpec) (hub.NodeID, *httptest.Server) {
	t.Helper()
	kind := hub.KindSlug("", "Secret")
	id := hub.NewNodeID("c1", "ns", "db", kind)
	h := hub.New(hub.Options{ID: "secret-test", SnapshotInterval: 10 * time.Millisecond})
	h.SetDesired([]hub.NodeSpec{{ID: id, Namespace: "ns", Name: "db", Kind: kind, Application: "db",
		Policy: spec.Policy, Revision: spec.Revision, Hash: "1", Body: kubeobj.MustEncodeBody(secretObject())}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() { _ = h.Run(ctx) })
	toks, err := ParseTokens("mem", []byte(viewerToken+" viewer\n"+opToken+" operator\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(h, Options{Tokens: toks}))
	t.Cleanup(func() { srv.Close(); cancel(); wg.Wait() })
	return id, srv
}

// TestViewerCannotReadSecretValues: a Secret managed from a source is a
// NodeID like any other; GET /api/v1/nodes/{id} shows a viewer its desired
// object with the keys of data and stringData but every value redacted,
// and an operator the values.
func TestViewerCannotReadSecretValues(t *testing.T) {
	id, srv := secretHub(t, hub.NodeSpec{Policy: hub.PolicyRepair})
	path := "/api/v1/nodes/" + url.PathEscape(id.String())

	body := getAs(t, srv, viewerToken, path)
	if l := secretLeaks(body); len(l) > 0 {
		t.Fatalf("a viewer reads the Secret's values %v: %s", l, body)
	}
	var d apiv1.NodeDetail
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	data, _, _ := unstructured.NestedStringMap(d.Desired, "data")
	sdata, _, _ := unstructured.NestedStringMap(d.Desired, "stringData")
	if data["password"] != apiv1.Redacted || sdata["token"] != apiv1.Redacted || d.Desired["type"] != "Opaque" {
		t.Errorf("viewer's Secret: data %v, stringData %v, type %v: want the keys with redacted values, the rest as is", data, sdata, d.Desired["type"])
	}
	if l := secretLeaks(getAs(t, srv, opToken, path)); len(l) != 2 {
		t.Errorf("the operator sees %v of the Secret's values, want both", l)
	}
}

// TestClientNode: Client.Node reads a NodeID's status with its desired
// object as the status's Spec (a viewer's with the Secret's values
// redacted, an operator's whole), and an unknown NodeID is a 404.
func TestClientNode(t *testing.T) {
	id, srv := secretHub(t, hub.NodeSpec{Policy: hub.PolicyWarn, Revision: "abc1234 subject"})
	kind := id.Kind
	read := func(token string) (hub.NodeStatus, map[string]string) {
		t.Helper()
		c, err := NewClientWithOptions(srv.URL, ClientOptions{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		var n hub.NodeStatus
		testwait.For(t, 5*time.Second, "the node in a snapshot", func() error {
			n, err = c.Node(t.Context(), id)
			return err
		})
		if n.ID != id || n.Spec == nil || n.Spec.Application != "db" || n.Spec.Policy != hub.PolicyWarn || n.Spec.Revision != "abc1234 subject" ||
			n.Spec.Namespace != "ns" || n.Spec.Name != "db" || n.Spec.Kind != kind {
			t.Fatalf("node %+v, spec %+v", n, n.Spec)
		}
		u, err := kubeobj.Object(*n.Spec)
		if err != nil {
			t.Fatal(err)
		}
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		return n, data
	}
	if _, data := read(viewerToken); data["password"] != apiv1.Redacted {
		t.Errorf("a viewer's desired Secret: data %v", data)
	}
	if _, data := read(opToken); data["password"] == apiv1.Redacted || data["password"] == "" {
		t.Errorf("an operator's desired Secret: data %v", data)
	}
	c, _ := NewClientWithOptions(srv.URL, ClientOptions{Token: viewerToken})
	var ae *Error
	if _, err := c.Node(t.Context(), hub.NewNodeID("c1", "ns", "nope", kind)); !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown NodeID: %v", err)
	}
}

// secretSnapshot is a snapshot with a drifted Secret whose values are
// quoted everywhere a snapshot can: its drift's fields (a modified key, an
// added key, a label), an ignored field, its timeline, the status reason,
// the repair error and the feed.
func secretSnapshot() *hub.Snapshot {
	s := testSnapshot(1)
	id := hub.NewNodeID("c1", "ns", "db", kindSecret)
	spec := hub.NodeSpec{ID: id, Namespace: "ns", Name: "db", Kind: kindSecret, Application: "db",
		Policy: hub.PolicyRepair, Hash: "1", Body: kubeobj.MustEncodeBody(secretObject())}
	diffs := []hub.FieldDiff{
		{Path: "data.password", Desired: secretData, Actual: secretLive},
		{Path: "data.extra", Desired: "<none>", Actual: secretLiveAdded, Added: true, Pointer: "/data/extra"},
		{Path: "metadata.labels.app", Desired: "db", Actual: "other"},
	}
	drift := hub.Drift{Class: hub.DriftModified, Fields: diffs}
	errText := `apply: Secret "db" is invalid: data[password]: Invalid value: "` + secretLive + `"`
	s.Nodes = append(s.Nodes, hub.NodeStatus{ID: id, Application: "db", Kind: kindSecret, Policy: hub.PolicyRepair,
		Status: hub.StatusFailed, Reason: errText, LastChange: s.Taken, Spec: &spec,
		LastRepair: &hub.Repair{ID: id, Drift: drift, Action: "apply", Err: errText, ObservedAt: s.Taken},
		Ignored:    []hub.IgnoredField{{FieldDiff: hub.FieldDiff{Path: "data.rotated", Desired: secretData, Actual: secretLive}, Rule: "rotation"}},
		Timeline: []hub.TimelineEntry{
			{At: s.Taken, Step: hub.StepClassified, Detail: "modified data.password: " + secretLive + " -> " + secretData}, // an older drift
			{At: s.Taken, Step: hub.StepClassified, Detail: drift.Summary()},
		}})
	s.Feed = []hub.FeedEntry{{At: s.Taken, ID: id, Class: hub.DriftModified, Fields: diffs, Action: "apply", Err: errText}}
	return s
}

// sourceHub is a Hub whose snapshots are a fakeSource's: enough for the
// read routes, the only ones a test of it calls.
type sourceHub struct {
	Hub
	src *fakeSource
}

func (h sourceHub) Snapshot() *hub.Snapshot {
	h.src.mu.Lock()
	defer h.src.mu.Unlock()
	return h.src.latest
}

func (h sourceHub) Subscribe() (<-chan *hub.Snapshot, func()) { return h.src.Subscribe() }

// TestSecretDriftRedaction: the drift of a Secret (field diffs, ignored
// fields, timeline, reason, error, feed) shows a viewer the paths but not
// one value, on every route that serves a node: the snapshot, the watch
// stream's snapshot and delta, and the node detail. An operator sees them.
func TestSecretDriftRedaction(t *testing.T) {
	src := newFakeSource(secretSnapshot())
	toks, err := ParseTokens("mem", []byte(viewerToken+" viewer\n"+opToken+" operator\n"))
	if err != nil {
		t.Fatal(err)
	}
	api := NewServer(sourceHub{src: src}, Options{Tokens: toks})
	srv := httptest.NewServer(api.Handler())
	defer func() {
		_ = api.Close() // ends the streams first: the server's Close waits for them
		srv.Close()
	}()
	node := "/api/v1/nodes/" + url.PathEscape(hub.NewNodeID("c1", "ns", "db", kindSecret).String())

	// The snapshot route.
	body := getAs(t, srv, viewerToken, "/api/v1/snapshot")
	if l := secretLeaks(body); len(l) > 0 {
		t.Fatalf("a viewer's snapshot leaks %v: %s", l, body)
	}
	var s apiv1.Snapshot
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	db := s.Nodes[1]
	want := []apiv1.FieldDiff{
		{Path: "data.password", Desired: apiv1.Redacted, Actual: apiv1.Redacted},
		{Path: "data.extra", Desired: "<none>", Actual: apiv1.Redacted, Added: true, Pointer: "/data/extra"},
		{Path: "metadata.labels.app", Desired: apiv1.Redacted, Actual: apiv1.Redacted},
	}
	if !slices.Equal(db.LastRepair.Drift.Fields, want) || !slices.Equal(s.Feed[0].Fields, want) {
		t.Errorf("a viewer's Secret diffs = %+v, feed %+v, want %+v", db.LastRepair.Drift.Fields, s.Feed[0].Fields, want)
	}
	if d := db.Timeline[1].Detail; d != "modified data.password: <redacted> -> <redacted>, +data.extra=<redacted>, metadata.labels.app: <redacted> -> <redacted>" {
		t.Errorf("a viewer's timeline detail = %q", d)
	}
	if d := db.Timeline[0].Detail; d != "modified "+apiv1.Redacted {
		t.Errorf("a viewer's detail of an older drift = %q, want it cut at data", d)
	}
	if l := secretLeaks(getAs(t, srv, opToken, "/api/v1/snapshot")); len(l) != 3 {
		t.Errorf("the operator's snapshot shows %v, want every value", l)
	}

	// The node detail: the status and the desired object.
	body = getAs(t, srv, viewerToken, node)
	if l := secretLeaks(body); len(l) > 0 {
		t.Fatalf("a viewer's node detail leaks %v: %s", l, body)
	}
	if l := secretLeaks(getAs(t, srv, opToken, node)); len(l) != 4 {
		t.Errorf("the operator's node detail shows %v, want every value", l)
	}

	// The watch stream: its first snapshot, then a delta.
	viewer := openWatchWith(t, &http.Client{Transport: bearer{viewerToken}}, srv.URL, "")
	operator := openWatchWith(t, &http.Client{Transport: bearer{opToken}}, srv.URL, "")
	if ev := viewer.next(); len(secretLeaks(ev.data)) > 0 || snapshotEvent(t, ev).Nodes[1].LastRepair.Drift.Fields[0] != want[0] {
		t.Fatalf("a viewer's watch snapshot leaks %v: %s", secretLeaks(ev.data), ev.data)
	}
	if ev := operator.next(); len(secretLeaks(ev.data)) != 3 {
		t.Fatalf("the operator's watch snapshot shows %v, want every value", secretLeaks(ev.data))
	}
	s1 := src.latest
	s2 := *s1
	s2.Seq++
	s2.Nodes = append([]hub.NodeStatus(nil), s1.Nodes...)
	d := hub.Drift{Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "stringData.token", Desired: secretStringData, Actual: "<none>"}}}
	s2.Nodes[1].Status, s2.Nodes[1].Reason, s2.Nodes[1].LastRepair = hub.StatusDrifted, "", &hub.Repair{ID: s2.Nodes[1].ID, Drift: d}
	s2.Nodes[1].Timeline = append(slices.Clip(s1.Nodes[1].Timeline), hub.TimelineEntry{At: s2.Taken, Step: hub.StepClassified, Detail: d.Summary()})
	s2.Feed = append([]hub.FeedEntry{{At: s2.Taken.Add(time.Second), ID: s2.Nodes[1].ID, Class: hub.DriftModified, Fields: d.Fields}}, s1.Feed...)
	src.publish(&s2)
	ev := viewer.next()
	if l := secretLeaks(ev.data); len(l) > 0 || deltaEvent(t, ev).Nodes[0].LastRepair.Drift.Fields[0].Desired != apiv1.Redacted {
		t.Fatalf("a viewer's delta leaks %v: %s", l, ev.data)
	}
	if ev := operator.next(); !strings.Contains(string(ev.data), secretStringData) {
		t.Fatalf("the operator's delta hides the value: %s", ev.data)
	}
}
