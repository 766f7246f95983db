package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/api"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
	"github.com/driftwatch/driftwatch/internal/testwait"
	"github.com/driftwatch/driftwatch/tui"
)

// testViewerAttach: the terminal UI attached with a viewer token shows
// every cluster and NodeID, and each action it tries is refused by the hub
// (shown in the status bar); environment values reach a viewer redacted
// and an operator in clear.
func testViewerAttach(t *testing.T, path string) {
	s := startServe(t, path, t.TempDir(), "--token-file", writeTokenFile(t, 0o600))
	viewer, err := api.NewClientWithOptions(s.api, api.ClientOptions{Token: e2eViewer})
	if err != nil {
		t.Fatal(err)
	}
	operator, err := api.NewClientWithOptions(s.api, api.ClientOptions{Token: e2eOperator})
	if err != nil {
		t.Fatal(err)
	}
	// Everything is visible.
	testwait.For(t, 60*time.Second, "the viewer to see 3 NodeIDs in sync", func() error {
		snap, err := viewer.Snapshot(t.Context())
		if err != nil {
			return testwait.Stop(err)
		}
		return testwait.Check(allInSync(3)(snap), "%d nodes", len(snap.Nodes))
	})
	// Env values: redacted for the viewer, clear for the operator.
	dep := hub.NewNodeID("c1", "sec", "web", hub.KindDeployment)
	envValue := func(token string) string {
		code, _, body := (request{method: "GET", url: s.api + "/api/v1/nodes/" + url.PathEscape(dep.String()), token: token}).do(t, nil)
		if code != 200 {
			t.Fatalf("GET node %s: %d %s", dep, code, body)
		}
		var d apiv1.NodeDetail
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatal(err)
		}
		containers, _ := d.Desired["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
		for _, c := range containers {
			for _, e := range c.(map[string]any)["env"].([]any) {
				if e := e.(map[string]any); e["name"] == "MODE" {
					v, _ := e["value"].(string)
					return v
				}
			}
		}
		t.Fatalf("no MODE env in the desired object of %s", dep)
		return ""
	}
	if v := envValue(e2eViewer); v != "<redacted>" {
		t.Errorf("the viewer sees MODE=%q, want it redacted", v)
	}
	if v := envValue(e2eOperator); v != "prod" {
		t.Errorf("the operator sees MODE=%q, want prod", v)
	}

	// The UI over the viewer's client: actions are refused by the hub.
	m := tui.New(viewer, tui.Options{NoColor: true})
	t.Cleanup(m.Close)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 30),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)))
	testwait.Screen(t, tm, "LIVE FEED", 20*time.Second)
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter}) // into c1
	testwait.Screen(t, tm, "sec/web", 20*time.Second)
	tm.Type("p") // pause the cluster
	testwait.Screen(t, tm, "Why?", 20*time.Second)
	tm.Type("INC-9")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	testwait.Screen(t, tm, "error: hub", 20*time.Second) // the status bar may cut the rest
	tm.Type("q")
	tm.Type("q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
	final, ok := tm.FinalModel(t).(*tui.Model)
	if !ok {
		t.Fatalf("final model is %T", tm.FinalModel(t))
	}
	if msg := final.StatusMessage(); !strings.Contains(msg, "operator role is required") {
		t.Errorf("status after the viewer's pause: %q, want the hub's refusal", msg)
	}
	snap, err := operator.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := snap.Cluster("c1"); !ok || c.Paused {
		t.Fatalf("c1 after the viewer's pause: %+v (want not paused)", c)
	}
}
