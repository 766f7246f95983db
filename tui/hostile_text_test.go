package tui

import (
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
)

// hostile is what someone who can edit a managed object (a ConfigMap's
// value, a field manager's name) or answer for a hub over attach can put
// in a string: an OSC that retitles the terminal ended by BEL, a CSI that
// clears the screen, an SGR that hides what follows, the 8-bit CSI as a
// character (U+009B) and as a lone byte, DEL and a right-to-left override.
const hostile = "\x1b]0;pwned\x07\x1b[2J\x1b[8m\u009b31m\x9b\x7f\u202e"

// taint appends hostile to every string the value holds that can be set
// (fields, slice elements, map values; not map keys), through pointers:
// whatever field a snapshot gains is covered without a change here.
func taint(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			taint(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				taint(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			taint(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			taint(e)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(v.String() + hostile)
		}
	}
}

// hostileFixture is the contested fixture with a hold, a revision, a
// failing source, replicas and an ignored field on the first node of
// prod-eu, then every string in it tainted (the nodes sorted again).
func hostileFixture() *hub.Snapshot {
	s := contestedFixture()
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.ID == nid("prod-eu:casehub/inventory:deployment") {
			n.Revision = "9f2c4e1ab37d55e0aa11 bump inventory to 1.4.2"
			n.Contested = &hub.Contest{Manager: "fake-autoscaler", Fields: []string{"spec.replicas"}, Undone: 2,
				Backoff: 4 * time.Second, NextAttempt: fixedNow.Add(3 * time.Second)}
			n.Ignored = []hub.IgnoredField{{FieldDiff: hub.FieldDiff{Path: "metadata.annotations.note", Desired: "a", Actual: "b"},
				Rule: "notes", Manager: "kubectl-annotate"}}
			body := deploymentObject("casehub", "inventory", "ghcr.io/acme/inventory:1.4.2"+hostile, 3)
			body.SetLabels(map[string]string{"team" + hostile: "core" + hostile})
			n.Spec.Body = kubeobj.MustEncodeBody(body)
			n.Spec.Tenancy = "shared"
		}
	}
	s.Holds = []hub.Hold{{Target: hub.HoldTarget{Scope: hub.HoldCluster, Name: "prod-eu"}, Reason: "freeze for the audit",
		Since: ago(time.Minute), Until: fixedNow.Add(time.Hour)}}
	s.Revisions = []hub.SourceRevision{{ID: "web", Commit: "0123456789abcdef", Subject: "fix", Error: "fetch: refused", Since: ago(time.Minute)}}
	s.Sources = []hub.SourceStatus{{ID: "charts", Since: ago(time.Minute)}}
	s.Replicas = []hub.ReplicaStatus{{ID: "a", Self: true, Reachable: true}, {ID: "b", Err: "dial: refused"}}
	taint(reflect.ValueOf(s))
	// The hold's scope is one the UI knows (so that the node's detail and
	// the release prompt show it); the tainted NodeIDs sort differently
	// (Snapshot.Node searches them).
	s.Holds[0].Target.Scope = hub.HoldCluster
	slices.SortFunc(s.Nodes, func(a, b hub.NodeStatus) int { return strings.Compare(a.ID.String(), b.ID.String()) })
	return s
}

// hostileFlows visit every screen that shows hub text: the overview and
// its feed, a synced, a degraded and an unreachable cluster, a node's
// detail (diff, attribution, contest, hold, ignored fields, revision,
// desired object) and its proposed rule, the prompts that name what they
// act on, the status bar after an action the hub refused, and the help.
func hostileFlows() [][]string {
	return [][]string{
		nil, {"tab"}, {"tab", "down", "down"},
		{"enter"}, {"down", "enter"}, {"down", "down", "enter"}, {"enter", "x"},
		{"enter", "enter"}, {"enter", "enter", "i"}, {"enter", "enter", "pgdown"}, {"enter", "enter", "end"},
		{"enter", "r"}, {"enter", "r", "y"}, {"enter", "h"}, {"enter", "H"}, {"down", "p"}, {"enter", "w"},
		{"?"},
	}
}

// hostileModel is a model showing hostileFixture, whose source refuses
// every action with a hostile error and whose alerts are hostile too.
func hostileModel(w, h int, noColor bool) *Model {
	src := newFakeSource()
	src.err = errors.New("denied by the hub" + hostile)
	m := New(src, Options{NoColor: noColor, Now: fixedClock, Alerts: func() []string { return []string{"webhook ops failing" + hostile} }})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(snapshotMsg{snap: hostileFixture()})
	return m
}

// controlIn returns the first control character of s (C0 but the line
// break, DEL, C1, a byte that is not UTF-8, a bidirectional control, a
// line or paragraph separator) and
// whether there is one.
func controlIn(s string) (string, bool) {
	for i, r := range s {
		switch {
		case r == '\n':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f), unicode.In(r, unicode.Bidi_Control, unicode.Zl, unicode.Zp):
			return s[max(0, i-30):min(len(s), i+10)], true
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return s[max(0, i-30):min(len(s), i+10)], true
		}
	}
	return "", false
}

// TestNoColorViewsShowNoControlCharactersOfHubText drives the model over a
// snapshot whose every string (values, names, field managers, errors,
// reasons, commit subjects, hold reasons) carries terminal escape
// sequences: no screen puts a control character on the terminal (NoColor
// output holds none at all), the escapes are shown as text instead, and
// every frame still fits the terminal.
func TestNoColorViewsShowNoControlCharactersOfHubText(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {160, 48}, {240, 70}} {
		shown := false
		for _, flow := range hostileFlows() {
			m := hostileModel(size[0], size[1], true)
			press(t, m, flow...)
			out := m.View().Content
			checkScreen(t, out, size[0], size[1])
			if at, ok := controlIn(out); ok {
				t.Errorf("%v %v: the screen carries a control character of the hub's text: %q", size, flow, at)
			}
			shown = shown || strings.Contains(out, `\x1b]0;pwned\x07`)
		}
		if !shown {
			t.Errorf("%v: no screen shows the escaped text", size)
		}
	}
}

// TestColorViewsCarryOnlyTheirOwnStyles is the colour side: the only
// escape sequences on screen are SGRs, none of them the hub text's (the
// UI never conceals text with SGR 8).
func TestColorViewsCarryOnlyTheirOwnStyles(t *testing.T) {
	sgr := regexp.MustCompile(`\x1b\[[0-9;:]*m`) // what the styles emit
	for _, flow := range hostileFlows() {
		m := hostileModel(120, 40, false)
		press(t, m, flow...)
		out := m.View().Content
		checkScreen(t, out, 120, 40)
		if strings.Contains(out, "\x1b[8m") {
			t.Errorf("%v: the hub text's SGR reached the screen", flow)
		}
		if at, ok := controlIn(sgr.ReplaceAllString(out, "")); ok {
			t.Errorf("%v: the screen carries a control character of the hub's text: %q", flow, at)
		}
	}
}

// TestConfigMapValueEscapesShownAsText is the reported case: someone sets
// a managed ConfigMap's value to text with an OSC (terminal title) and a
// CSI (clear screen). The feed and the node's diff show the sequences as
// text and put none of them on the terminal.
func TestConfigMapValueEscapesShownAsText(t *testing.T) {
	const evil = "true\x1b]0;pwned\x07\x1b[2J"
	snap := fixture()
	for i := range snap.Feed {
		for j := range snap.Feed[i].Fields {
			if snap.Feed[i].Fields[j].Path == "data.debug" {
				snap.Feed[i].Fields[j].Actual = evil
			}
		}
	}
	for i := range snap.Nodes {
		if lr := snap.Nodes[i].LastRepair; lr != nil {
			for j := range lr.Drift.Fields {
				if lr.Drift.Fields[j].Path == "data.debug" {
					lr.Drift.Fields[j].Actual = evil
				}
			}
		}
	}
	m := New(newFakeSource(), Options{NoColor: true, Now: fixedClock})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m.Update(snapshotMsg{snap: snap})
	for _, flow := range [][]string{nil, {"tab"}, {":", "node prod-eu:casehub/inventory-config:configmap", "enter"}} {
		for _, k := range flow {
			if len(k) > 1 && k != "enter" && k != "tab" {
				typeText(t, m, k)
				continue
			}
			press(t, m, k)
		}
		out := m.View().Content
		if i := strings.IndexAny(out, "\x1b\x07"); i >= 0 {
			t.Errorf("after %v: the screen carries the value's escape sequence: %q", flow, out[max(0, i-40):min(len(out), i+20)])
		}
		if len(flow) == 3 && !strings.Contains(out, `+ data.debug: true\x1b]0;pwned\x07\x1b[2J`) {
			t.Errorf("the node's diff does not show the value as text:\n%s", out)
		}
	}
}
