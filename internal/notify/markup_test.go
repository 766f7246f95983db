package notify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

// hostileManager is a field manager name whoever edits a managed object
// chooses (kubectl --field-manager takes any printable text): Slack
// markup for a channel-wide ping and a disguised link, the plain-text
// mentions of Slack-compatible services (Mattermost, Rocket.Chat,
// Discord's /slack endpoint) and an entity.
const hostileManager = "<!channel> <https://evil.example/login|re-authenticate here> @here @everyone &amp;"

// repairedBy is the drift-repaired event of web changed by manager.
func repairedBy(t *testing.T, manager string) Event {
	t.Helper()
	d := newDeriver("hq")
	n0 := node(web, hub.StatusInSync, 0)
	n1 := node(web, hub.StatusRepaired, 1)
	n1.LastRepair.Attribution.Manager = manager
	d.next(snap(1, hub.ClusterSynced, n0))
	evs := d.next(snap(2, hub.ClusterSynced, n1))
	if len(evs) != 1 {
		t.Fatalf("events %v", evs)
	}
	return evs[0]
}

// TestSlackBodyEscapesMarkupOfClusterText: the "slack" format's text
// escapes &, < and > as Slack's message formatting requires, so a field
// manager's name can neither ping the channel nor carry a link, and
// breaks plain-text mentions with a zero-width space; the text reads the
// same.
func TestSlackBodyEscapesMarkupOfClusterText(t *testing.T) {
	s := &sender{cfg: Webhook{Name: "slack", Format: FormatSlack}}
	raw, err := s.body(repairedBy(t, hostileManager))
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Text string }
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(body.Text, "<>") {
		t.Errorf("slack text carries markup: %q", body.Text)
	}
	for _, bad := range []string{"@here", "@everyone"} {
		if strings.Contains(body.Text, bad) {
			t.Errorf("slack text carries the mention %q: %q", bad, body.Text)
		}
	}
	want := "changed by &lt;!channel&gt; &lt;https://evil.example/login|re-authenticate here&gt; @\u200bhere @\u200beveryone &amp;amp;)"
	if !strings.Contains(body.Text, want) {
		t.Errorf("slack text %q, want it to hold %q", body.Text, want)
	}
}

// TestJSONBodyKeepsClusterTextVerbatim: the "json" format is data, not
// markup: the field manager arrives as it is, for the receiver to escape
// as its output needs.
func TestJSONBodyKeepsClusterTextVerbatim(t *testing.T) {
	s := &sender{cfg: Webhook{Name: "json", Format: FormatJSON}}
	raw, err := s.body(repairedBy(t, hostileManager))
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.ChangedBy != hostileManager || !strings.Contains(ev.Message, "changed by "+hostileManager) {
		t.Errorf("json event changedBy %q, message %q: want the manager verbatim", ev.ChangedBy, ev.Message)
	}
}
