package tui

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/driftwatch/driftwatch/hub"
)

// step is one input of a model test: keys to press, text to type, or a
// snapshot to deliver.
type step struct {
	keys []string
	text string
	snap *hub.Snapshot
}

func keys(k ...string) step { return step{keys: k} }
func text(s string) step    { return step{text: s} }

func run(t *testing.T, m *Model, steps []step) {
	t.Helper()
	for _, s := range steps {
		press(t, m, s.keys...)
		if s.text != "" {
			typeText(t, m, s.text)
		}
		if s.snap != nil {
			m.Update(snapshotMsg{snap: s.snap})
		}
	}
}

// shownIDs lists the NodeIDs the cluster view shows, in order.
func shownIDs(m *Model) []string {
	var ids []string
	for _, n := range m.cluster.rows {
		ids = append(ids, n.ID.String())
	}
	return ids
}

func selectedID(m *Model) string {
	if id, ok := m.targetNode(); ok {
		return id.String()
	}
	return ""
}

func TestNavigation(t *testing.T) {
	tests := []struct {
		name     string
		steps    []step
		screen   Screen
		cluster  string // cluster view's cluster, when on the cluster or detail screen
		selected string // NodeID actions would target
	}{
		{name: "start on overview", screen: ScreenOverview},
		{name: "enter opens the cluster under the cursor", steps: []step{keys("down", "enter")}, screen: ScreenCluster, cluster: "prod-us",
			selected: "prod-us:casehub/inventory:deployment"},
		{name: "j and k move", steps: []step{keys("j", "j", "k", "enter")}, screen: ScreenCluster, cluster: "prod-us",
			selected: "prod-us:casehub/inventory:deployment"},
		{name: "cursor stops at the last cluster", steps: []step{keys("end", "down", "enter")}, screen: ScreenCluster, cluster: "staging",
			selected: "staging:casehub/inventory:deployment"},
		{name: "enter on a node opens its detail", steps: []step{keys("enter", "down", "enter")}, screen: ScreenDetail, cluster: "prod-eu",
			selected: "prod-eu:casehub/inventory:service"},
		{name: "esc goes back to the cluster with the cursor kept", steps: []step{keys("enter", "down", "enter", "esc")}, screen: ScreenCluster,
			cluster: "prod-eu", selected: "prod-eu:casehub/inventory:service"},
		{name: "esc twice goes back to the overview", steps: []step{keys("enter", "enter", "esc", "esc")}, screen: ScreenOverview},
		{name: "q goes back outside the overview", steps: []step{keys("enter", "enter", "q")}, screen: ScreenCluster, cluster: "prod-eu",
			selected: "prod-eu:casehub/inventory:deployment"},
		{name: "tab then enter opens the feed entry", steps: []step{keys("tab", "down", "enter")}, screen: ScreenDetail, cluster: "prod-eu",
			selected: "prod-eu:casehub/inventory-config:configmap"},
		{name: "esc leaves the feed focus", steps: []step{keys("tab", "esc", "enter")}, screen: ScreenCluster, cluster: "prod-eu",
			selected: "prod-eu:casehub/inventory:deployment"},
		{name: "? opens help, esc closes it", steps: []step{keys("enter", "?")}, screen: ScreenHelp, cluster: "prod-eu",
			selected: "prod-eu:casehub/inventory:deployment"},
		{name: "help closes with ?", steps: []step{keys("enter", "?", "?")}, screen: ScreenCluster, cluster: "prod-eu",
			selected: "prod-eu:casehub/inventory:deployment"},
		{name: ":cluster opens a cluster", steps: []step{keys(":"), text("cluster staging"), keys("enter")}, screen: ScreenCluster, cluster: "staging",
			selected: "staging:casehub/inventory:deployment"},
		{name: ":node opens a node", steps: []step{keys(":"), text("node prod-us:casehub/orders:service"), keys("enter")}, screen: ScreenDetail,
			cluster: "prod-us", selected: "prod-us:casehub/orders:service"},
		{name: ":node then esc lands on its cluster", steps: []step{keys(":"), text("node prod-us:casehub/orders:service"), keys("enter", "esc")},
			screen: ScreenCluster, cluster: "prod-us", selected: "prod-us:casehub/orders:service"},
		{name: "esc cancels the command line", steps: []step{keys(":"), text("cluster staging"), keys("esc", "enter")}, screen: ScreenCluster,
			cluster: "prod-eu", selected: "prod-eu:casehub/inventory:deployment"},
		{name: ":overview goes home", steps: []step{keys("enter", "enter", ":"), text("overview"), keys("enter")}, screen: ScreenOverview},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newFixtureModel(t, 80, 24, Options{})
			run(t, m, tt.steps)
			if got := m.Screen(); got != tt.screen {
				t.Fatalf("screen = %v, want %v", got, tt.screen)
			}
			if tt.cluster != "" && m.cluster.cluster != tt.cluster {
				t.Errorf("cluster = %q, want %q", m.cluster.cluster, tt.cluster)
			}
			if tt.selected != "" {
				if got := selectedID(m); got != tt.selected {
					t.Errorf("selected = %q, want %q", got, tt.selected)
				}
			}
		})
	}
}

func TestQuit(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		last  string
	}{
		{"q on the overview", nil, "q"},
		{"ctrl+c anywhere", []step{keys("enter", "enter")}, "ctrl+c"},
		{"ctrl+c in the filter", []step{keys("enter", "/")}, "ctrl+c"},
		{"ctrl+c in a confirmation", []step{keys("enter", "r")}, "ctrl+c"},
		{":q", []step{keys(":"), text("q")}, "enter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newFixtureModel(t, 80, 24, Options{})
			run(t, m, tt.steps)
			_, cmd := m.Update(keyPress(tt.last))
			if cmd == nil {
				t.Fatal("no command, want tea.Quit")
			}
			if _, ok := cmd().(tea.QuitMsg); !ok {
				t.Fatal("command is not tea.Quit")
			}
		})
	}
}

func TestCommandErrors(t *testing.T) {
	tests := []struct {
		line, status string
	}{
		{"cluster nope", `no cluster "nope"`},
		{"cluster", "usage: :cluster <id>"},
		{"node nope", "invalid node id"},
		{"node prod-eu:casehub/nope:deployment", "no node prod-eu:casehub/nope:deployment"},
		{"frobnicate", `unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			m, _ := newFixtureModel(t, 80, 24, Options{})
			run(t, m, []step{keys(":"), text(tt.line), keys("enter")})
			if !strings.Contains(m.StatusMessage(), tt.status) || !m.statusErr {
				t.Errorf("status = %q (error %v), want an error containing %q", m.StatusMessage(), m.statusErr, tt.status)
			}
			if m.Screen() != ScreenOverview {
				t.Errorf("screen = %v, want overview", m.Screen())
			}
		})
	}
}

func TestClusterFilterSortProblems(t *testing.T) {
	prodEU := []string{
		"prod-eu:casehub/inventory:deployment",
		"prod-eu:casehub/inventory:service",
		"prod-eu:casehub/inventory-config:configmap",
		"prod-eu:casehub/orders:deployment",
		"prod-eu:casehub/orders:service",
		"prod-eu:casehub/orders-config:configmap",
		"prod-eu:casehub/payments:deployment",
		"prod-eu:casehub/payments:service",
		"prod-eu:casehub/payments-config:configmap",
		"prod-eu:legacy/billing:deployment",
		"prod-eu:legacy/billing:service",
	}
	tests := []struct {
		name      string
		steps     []step
		want      []string
		filter    string
		filtering bool
		screen    Screen
	}{
		{name: "name order", want: prodEU},
		{name: "filter as you type", steps: []step{keys("/"), text("ORDERS")}, filtering: true, filter: "ORDERS",
			want: []string{"prod-eu:casehub/orders:deployment", "prod-eu:casehub/orders:service", "prod-eu:casehub/orders-config:configmap"}},
		{name: "enter keeps the filter", steps: []step{keys("/"), text("billing"), keys("enter")}, filter: "billing",
			want: []string{"prod-eu:legacy/billing:deployment", "prod-eu:legacy/billing:service"}},
		{name: "filter matches status", steps: []step{keys("/"), text("stuck"), keys("enter")}, filter: "stuck",
			want: []string{"prod-eu:casehub/payments:deployment"}},
		{name: "filter matches kind and application", steps: []step{keys("/"), text("payments:serv"), keys("enter")}, filter: "payments:serv",
			want: []string{"prod-eu:casehub/payments:service"}},
		{name: "backspace edits the filter", steps: []step{keys("/"), text("billingx"), keys("backspace", "enter")}, filter: "billing",
			want: []string{"prod-eu:legacy/billing:deployment", "prod-eu:legacy/billing:service"}},
		{name: "esc in the input clears the filter", steps: []step{keys("/"), text("billing"), keys("esc")}, want: prodEU},
		{name: "esc clears an applied filter first", steps: []step{keys("/"), text("billing"), keys("enter", "esc")}, want: prodEU, screen: ScreenCluster},
		{name: "no match", steps: []step{keys("/"), text("zzz"), keys("enter")}, filter: "zzz", want: nil},
		{name: "problems only", steps: []step{keys("x")}, want: []string{
			"prod-eu:casehub/inventory-config:configmap",
			"prod-eu:casehub/orders:deployment",
			"prod-eu:casehub/orders-config:configmap",
			"prod-eu:casehub/payments:deployment",
			"prod-eu:casehub/payments:service",
			"prod-eu:legacy/billing:service",
		}},
		{name: "problems only toggles off", steps: []step{keys("x", "x")}, want: prodEU},
		{name: "sort by status, worst first", steps: []step{keys("s", "x")}, want: []string{
			"prod-eu:casehub/orders-config:configmap",
			"prod-eu:casehub/payments:deployment",
			"prod-eu:casehub/inventory-config:configmap",
			"prod-eu:legacy/billing:service",
			"prod-eu:casehub/orders:deployment",
			"prod-eu:casehub/payments:service",
		}},
		{name: "sort by kind", steps: []step{keys("s", "s", "/"), text("inventory"), keys("enter")}, filter: "inventory", want: []string{
			"prod-eu:casehub/inventory-config:configmap",
			"prod-eu:casehub/inventory:deployment",
			"prod-eu:casehub/inventory:service",
		}},
		{name: "sort by age, newest first", steps: []step{keys("s", "s", "s", "x")}, want: []string{
			"prod-eu:casehub/orders:deployment",
			"prod-eu:casehub/inventory-config:configmap",
			"prod-eu:legacy/billing:service",
			"prod-eu:casehub/orders-config:configmap",
			"prod-eu:casehub/payments:service",
			"prod-eu:casehub/payments:deployment",
		}},
		{name: "sort cycles back to name", steps: []step{keys("s", "s", "s", "s")}, want: prodEU},
		{name: "reverse", steps: []step{keys("S", "/"), text("billing"), keys("enter")}, filter: "billing",
			want: []string{"prod-eu:legacy/billing:service", "prod-eu:legacy/billing:deployment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newFixtureModel(t, 80, 24, Options{})
			press(t, m, "enter")
			run(t, m, tt.steps)
			if got := shownIDs(m); !slices.Equal(got, tt.want) {
				t.Errorf("rows:\n got %q\nwant %q", got, tt.want)
			}
			if m.cluster.filter != tt.filter || m.cluster.filtering != tt.filtering {
				t.Errorf("filter = %q (editing %v), want %q (editing %v)", m.cluster.filter, m.cluster.filtering, tt.filter, tt.filtering)
			}
			want := tt.screen
			if want == ScreenOverview {
				want = ScreenCluster
			}
			if m.Screen() != want {
				t.Errorf("screen = %v, want %v", m.Screen(), want)
			}
		})
	}
}

func TestActions(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		srcErr   error
		steps    []step
		calls    []string
		status   string
		question string // pending confirmation after the steps
	}{
		{name: "r asks before repairing", steps: []step{keys("enter", "r")},
			question: "Repair prod-eu:casehub/inventory:deployment now?"},
		{name: "r then y repairs the selected node", steps: []step{keys("enter", "down", "r", "y")},
			calls: []string{"repair prod-eu:casehub/inventory:service"}, status: "repair queued: prod-eu:casehub/inventory:service"},
		{name: "r then n cancels", steps: []step{keys("enter", "r", "n")}, status: "cancelled"},
		{name: "r then esc cancels and stays", steps: []step{keys("enter", "r", "esc")}, status: "cancelled"},
		{name: "any other key cancels", steps: []step{keys("enter", "r", "x")}, status: "cancelled"},
		{name: "r in the detail view", steps: []step{keys("enter", "end", "enter", "r", "y")},
			calls: []string{"repair prod-eu:legacy/billing:service"}, status: "repair queued"},
		{name: "r on a feed entry", steps: []step{keys("tab", "r", "y")},
			calls: []string{"repair prod-eu:casehub/orders:deployment"}},
		{name: "r on a cluster row needs a node", steps: []step{keys("r")}, status: "select a node first"},
		{name: "p asks why, enter pauses the selected cluster", steps: []step{keys("p", "enter")},
			calls: []string{"pause prod-eu true"}, status: "repairs paused on prod-eu"},
		{name: "p pauses with the reason typed", steps: []step{keys("p"), text("  INC-4211: failover "), keys("enter")},
			calls: []string{`pause prod-eu true by "": "INC-4211: failover"`}, status: "repairs paused on prod-eu"},
		{name: "p then esc cancels the pause", steps: []step{keys("p"), text("why"), keys("esc")}, status: "cancelled"},
		{name: "p with a reason too long", steps: []step{keys("p"), text(strings.Repeat("x", hub.MaxSwitchNote+1)), keys("enter")},
			status: "at most 512 bytes"},
		{name: "p resumes a paused cluster", steps: []step{keys("down", "p")},
			question: "Resume repairs on cluster prod-us?"},
		{name: "p resumes from the cluster view", steps: []step{keys("down", "enter", "p", "y")},
			calls: []string{"pause prod-us false"}, status: "repairs resumed on prod-us"},
		{name: "p in the detail view pauses its cluster", steps: []step{keys("down", "down", "enter", "enter", "p", "enter")},
			calls: []string{"pause staging true"}},
		{name: "w asks why, enter sets warn-only on the application", steps: []step{keys("enter", "w", "enter")},
			calls: []string{`policy inventory "warn"`}, status: "application inventory is warn-only"},
		{name: "w with a reason", steps: []step{keys("enter", "w"), text("vendor scales it"), keys("enter")},
			calls: []string{`policy inventory "warn" by "": "vendor scales it"`}, status: "application inventory is warn-only"},
		{name: "w clears a warn-only override", steps: []step{keys("enter", "/"), text("payments:serv"), keys("enter", "w", "y")},
			calls: []string{`policy payments ""`}, status: "application payments back to its configured policy"},
		{name: "errors are shown", srcErr: errors.New("hub unreachable"), steps: []step{keys("enter", "r", "y")},
			calls: []string{"repair prod-eu:casehub/inventory:deployment"}, status: "error: hub unreachable"},
		{name: "read-only: r", opts: Options{ReadOnly: true}, steps: []step{keys("enter", "r", "y")}, status: ReadOnlyMessage},
		{name: "read-only: p", opts: Options{ReadOnly: true}, steps: []step{keys("p", "y")}, status: ReadOnlyMessage},
		{name: "read-only, its own message: p", opts: Options{ReadOnly: true, ReadOnlyMessage: "read-only: a viewer's token"}, steps: []step{keys("p", "y")}, status: "read-only: a viewer's token"},
		{name: "read-only: w", opts: Options{ReadOnly: true}, steps: []step{keys("enter", "enter", "w", "y")}, status: ReadOnlyMessage},
		{name: "extra key", opts: Options{Extra: []ExtraKey{{
			Binding: key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "toggle drift generator")),
			Run:     func() string { return "drift generator on" },
		}}}, steps: []step{keys("g")}, status: "drift generator on"},
		{name: "extra key runs in read-only mode", opts: Options{ReadOnly: true, Extra: []ExtraKey{{
			Binding: key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "toggle drift generator")),
			Run:     func() string { return "drift generator off" },
		}}}, steps: []step{keys("g")}, status: "drift generator off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, src := newFixtureModel(t, 80, 24, tt.opts)
			src.err = tt.srcErr
			run(t, m, tt.steps)
			if got := src.Calls(); !slices.Equal(got, tt.calls) {
				t.Errorf("calls = %q, want %q", got, tt.calls)
			}
			if !strings.Contains(m.StatusMessage(), tt.status) {
				t.Errorf("status = %q, want it to contain %q", m.StatusMessage(), tt.status)
			}
			q := ""
			if m.confirm != nil {
				q = m.confirm.question
			}
			if !strings.HasPrefix(q, tt.question) || (tt.question == "") != (q == "") {
				t.Errorf("pending question = %q, want %q", q, tt.question)
			}
			if q != "" && !strings.Contains(m.View().Content, q) {
				t.Errorf("question %q not on screen", q)
			}
		})
	}
}

// An action shows an optimistic message at once, before the source answers.
func TestActionOptimisticStatus(t *testing.T) {
	m, src := newFixtureModel(t, 80, 24, Options{})
	press(t, m, "enter", "r")
	_, cmd := m.Update(keyPress("y"))
	if got := m.StatusMessage(); got != "repair of prod-eu:casehub/inventory:deployment requested…" {
		t.Errorf("status before the source answered = %q", got)
	}
	if len(src.Calls()) != 0 {
		t.Fatal("the source was called inside Update: actions must run in a command")
	}
	runCmd(m, cmd)
	if got := src.Calls(); len(got) != 1 {
		t.Fatalf("calls = %q", got)
	}
}

// A new snapshot keeps the cursor on the same NodeID even when rows move.
func TestSnapshotKeepsSelection(t *testing.T) {
	m, _ := newFixtureModel(t, 80, 24, Options{})
	press(t, m, "enter", "down", "down", "down")
	before := selectedID(m)

	next := fixture()
	extra := hub.NodeStatus{ID: nid("prod-eu:casehub/aaa:service"), Application: "aaa", Kind: hub.KindService, Status: hub.StatusInSync, LastChange: fixedNow}
	next.Nodes = append(next.Nodes, extra)
	next = buildSnapshot(next.HubID, next.Clusters, next.Nodes, next.Feed, next.AppPolicies)
	m.Update(snapshotMsg{snap: next})
	if got := selectedID(m); got != before {
		t.Errorf("selected after snapshot = %q, want %q", got, before)
	}
	if m.cluster.cur != 4 {
		t.Errorf("cursor row = %d, want 4 (one row inserted above)", m.cluster.cur)
	}

	// The selected node disappears: the cursor stays in place.
	gone := fixture()
	gone.Nodes = slices.DeleteFunc(gone.Nodes, func(n hub.NodeStatus) bool { return n.ID.String() == before })
	m.Update(snapshotMsg{snap: gone})
	if got := selectedID(m); got == before || got == "" {
		t.Errorf("selected after removal = %q", got)
	}
}

// The detail view follows snapshots and says when its node is gone.
func TestDetailFollowsSnapshots(t *testing.T) {
	m, _ := newFixtureModel(t, 80, 24, Options{})
	run(t, m, []step{keys(":"), text("node prod-eu:casehub/orders:deployment"), keys("enter")})
	if !strings.Contains(m.View().Content, "repairing") {
		t.Fatal("detail does not show the status")
	}
	next := fixture()
	for i := range next.Nodes {
		if next.Nodes[i].ID.String() == "prod-eu:casehub/orders:deployment" {
			next.Nodes[i].Status = hub.StatusRepaired
		}
	}
	m.Update(snapshotMsg{snap: next})
	if !strings.Contains(m.View().Content, "repaired") {
		t.Error("detail did not follow the snapshot")
	}
	gone := fixture()
	gone.Nodes = slices.DeleteFunc(gone.Nodes, func(n hub.NodeStatus) bool { return n.ID.String() == "prod-eu:casehub/orders:deployment" })
	m.Update(snapshotMsg{snap: gone})
	if !strings.Contains(m.View().Content, "not in the latest snapshot") {
		t.Error("detail does not say the node is gone")
	}
}

// Every screen fills the terminal exactly, at any size, without wrapping,
// and NoColor output holds no escape sequence.
func TestLayoutFitsAnySize(t *testing.T) {
	sizes := [][2]int{{80, 24}, {160, 48}, {100, 30}, {60, 15}, {40, 10}, {20, 5}, {240, 70}, {1, 1}, {10, 3}}
	flows := [][]string{nil, {"tab"}, {"enter"}, {"enter", "enter"}, {"?"}, {"enter", "/", "o"}, {"enter", "r"}, {"down", "down", "enter"}}
	for _, size := range sizes {
		for _, flow := range flows {
			m, _ := newFixtureModel(t, size[0], size[1], Options{})
			press(t, m, flow...)
			out := m.View().Content
			checkScreen(t, out, size[0], size[1])
			if strings.Contains(out, "\x1b") {
				t.Errorf("%v %v: NoColor output has escape sequences", size, flow)
			}
		}
	}
}

// Colour output styles health and statuses; sizes still hold.
func TestColor(t *testing.T) {
	src := newFakeSource()
	m := New(src, Options{Now: fixedClock})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(snapshotMsg{snap: fixture()})
	for _, flow := range [][]string{nil, {"enter"}, {"enter", "enter"}, {"?"}} {
		press(t, m, flow...)
		out := m.View().Content
		if !strings.Contains(out, "\x1b[") {
			t.Errorf("%v: colour output has no styles", flow)
		}
		checkScreen(t, out, 80, 24)
	}
}

func TestWindowResize(t *testing.T) {
	m, _ := newFixtureModel(t, 80, 24, Options{})
	press(t, m, "enter")
	for _, size := range [][2]int{{160, 48}, {50, 12}, {80, 24}} {
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		checkScreen(t, m.View().Content, size[0], size[1])
	}
}

// The overview keeps the selected cluster visible in a short window.
func TestOverviewScrollsClusters(t *testing.T) {
	var clusters []hub.ClusterStatus
	for i := range 30 {
		clusters = append(clusters, hub.ClusterStatus{ClusterHealth: hub.ClusterHealth{
			Cluster: "c" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), State: hub.ClusterUnreachable, LastError: "down"}})
	}
	snap := buildSnapshot("h", clusters, nil, nil, nil)
	m := New(newFakeSource(), Options{NoColor: true, Now: fixedClock})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(snapshotMsg{snap: snap})
	press(t, m, "end")
	out := m.View().Content
	checkScreen(t, out, 80, 24)
	if !strings.Contains(out, "> cdx") {
		t.Errorf("last cluster not visible:\n%s", out)
	}
}

func TestAges(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {59 * time.Second, "59s"}, {time.Minute, "1m"}, {59 * time.Minute, "59m"},
		{time.Hour, "1h"}, {47 * time.Hour, "47h"}, {48 * time.Hour, "2d"}, {-time.Second, "0s"},
	}
	for _, tt := range tests {
		if got := age(fixedNow, fixedNow.Add(-tt.d)); got != tt.want {
			t.Errorf("age(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := age(fixedNow, time.Time{}); got != "-" {
		t.Errorf("age(zero) = %q", got)
	}
}

func TestDur(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0ms"}, {800 * time.Microsecond, "0.8ms"}, {3100 * time.Microsecond, "3.1ms"}, {14 * time.Millisecond, "14ms"},
		{1250 * time.Millisecond, "1.25s"}, {12500 * time.Millisecond, "12.5s"}, {123 * time.Second, "2m3s"}, {-2 * time.Millisecond, "-2.0ms"},
	}
	for _, tt := range tests {
		if got := dur(tt.d); got != tt.want {
			t.Errorf("dur(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestTableFit(t *testing.T) {
	st := newStyles(true)
	tests := []struct {
		name  string
		total int
		want  []int
	}{
		{"everything fits", 80, []int{30, 6, 32, 7}},
		{"preferred widths first", 40, []int{12, 6, 10, 7}},
		{"drop by priority", 36, []int{14, 6, 12, 0}},
		{"drop every droppable column", 20, []int{11, 6, 0, 0}},
		{"shrink what cannot be dropped", 12, []int{4, 5, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := newTable(st, []column{
				{title: "NAME", width: 8, flex: 1, want: 12, max: 30},
				{title: "STATE", width: 6},
				{title: "REASON", width: 10, flex: 1, drop: 1},
				{title: "LATENCY", width: 7, drop: 2},
			})
			tb.fit(tt.total)
			if !slices.Equal(tb.widths, tt.want) {
				t.Errorf("widths = %v, want %v", tb.widths, tt.want)
			}
		})
	}
}

func TestSubscriptionLifecycle(t *testing.T) {
	src := newFakeSource(fixture())
	m := New(src, Options{NoColor: true, Now: fixedClock})
	msg := m.subscribe()
	sub, ok := msg.(subscribedMsg)
	if !ok {
		t.Fatalf("subscribe returned %T", msg)
	}
	_, cmd := m.Update(sub)
	got := cmd()
	snap, ok := got.(snapshotMsg)
	if !ok || snap.snap == nil {
		t.Fatalf("waiting for a snapshot returned %T", got)
	}
	_, cmd = m.Update(snap)
	if cmd == nil {
		t.Fatal("the snapshot command was not re-armed")
	}
	if m.Snapshot() == nil {
		t.Fatal("snapshot not applied")
	}
	m.Close()
	m.Close() // idempotent
	if got := cmd(); got != nil {
		t.Errorf("after Close the waiting command returned %T, want nil", got)
	}
	src.mu.Lock()
	cancelled := src.cancelled
	src.mu.Unlock()
	if !cancelled {
		t.Error("Close did not cancel the subscription")
	}

	// A closed channel ends the subscription with a message.
	src2 := newFakeSource()
	close(src2.ch)
	m2 := New(src2, Options{NoColor: true, Now: fixedClock})
	_, cmd = m2.Update(m2.subscribe())
	m2.Update(cmd())
	if !strings.Contains(m2.StatusMessage(), "no longer live") {
		t.Errorf("status = %q", m2.StatusMessage())
	}
}

// The feed cursor stays on its entry while new entries arrive on top.
func TestFeedKeepsSelection(t *testing.T) {
	m, _ := newFixtureModel(t, 80, 24, Options{})
	press(t, m, "tab", "down", "down")
	before := selectedID(m)
	next := fixture()
	next.Feed = append([]hub.FeedEntry{{At: fixedNow, ID: nid("prod-eu:casehub/orders:service"), Class: hub.DriftMissing, Action: "apply"}}, next.Feed...)
	m.Update(snapshotMsg{snap: next})
	if got := selectedID(m); got != before || m.overview.feedCur != 3 {
		t.Errorf("selected = %q at row %d, want %q at row 3", got, m.overview.feedCur, before)
	}
}

// withHolds returns the fixture with active holds on an application and a
// cluster, and an expired one.
func withHolds() *hub.Snapshot {
	s := fixture()
	s.Holds = []hub.Hold{
		{Target: hub.HoldTarget{Scope: hub.HoldApplication, Name: "inventory"}, Reason: "release freeze", Since: ago(5 * time.Minute), Until: fixedNow.Add(25 * time.Minute)},
		{Target: hub.HoldTarget{Scope: hub.HoldCluster, Name: "prod-us"}, Reason: "node pool upgrade", Since: ago(time.Hour), Until: fixedNow.Add(2 * time.Hour)},
		{Target: hub.HoldTarget{Scope: hub.HoldCluster, Name: "staging"}, Reason: "over", Since: ago(time.Hour), Until: ago(time.Minute)},
	}
	return s
}

func TestHoldKeys(t *testing.T) {
	const inv = "prod-eu:casehub/inventory:deployment"
	tests := []struct {
		name     string
		opts     Options
		srcErr   error
		steps    []step
		calls    []string
		status   string
		prompt   string // the prompt line after the steps ("" none)
		question string // pending confirmation after the steps
	}{
		{name: "h on a node asks for the duration", steps: []step{keys("enter", "h")},
			prompt: "Hold repairs of node " + inv + " for: 30m"},
		{name: "then for the reason", steps: []step{keys("enter", "h", "enter")},
			prompt: "Reason for holding node " + inv + " (30m): "},
		{name: "h places the hold", steps: []step{keys("enter", "h", "enter"), text("incident 42"), keys("enter")},
			calls:  []string{"hold node/" + inv + ` 30m0s "incident 42"`},
			status: "repairs of node " + inv + " held for 30m (until 12:30); H releases it"},
		{name: "h on the overview holds the cluster", steps: []step{keys("h", "ctrl+u"), text("2h"), keys("enter"), text("upgrade"), keys("enter")},
			calls: []string{`hold cluster/prod-eu 2h0m0s "upgrade"`}, status: "held for 2h (until 14:00)"},
		{name: "h in the detail view", steps: []step{keys("enter", "end", "enter", "h", "backspace", "backspace", "backspace"), text("1h30m"), keys("enter"), text("x"), keys("enter")},
			calls: []string{`hold node/prod-eu:legacy/billing:service 1h30m0s "x"`}},
		{name: "h on a feed entry holds its node", steps: []step{keys("tab", "h", "enter"), text("y"), keys("enter")},
			calls: []string{`hold node/prod-eu:casehub/orders:deployment 30m0s "y"`}},
		{name: "a reason is required", steps: []step{keys("enter", "h", "enter", "space", "enter")},
			status: "a reason is required", prompt: "Reason for holding node " + inv},
		{name: "a bad duration is refused", steps: []step{keys("enter", "h", "ctrl+u"), text("soon"), keys("enter")},
			status: `hold duration "soon": want a positive duration`, prompt: "Hold repairs of node " + inv + " for: soon"},
		{name: "esc cancels", steps: []step{keys("enter", "h", "enter", "esc")}, status: "cancelled"},
		{name: "errors are shown", srcErr: errors.New("hub unreachable"), steps: []step{keys("enter", "h", "enter"), text("z"), keys("enter")},
			calls: []string{"hold node/" + inv + ` 30m0s "z"`}, status: "error: hub unreachable"},
		{name: "H releases the application hold over a node", steps: []step{{snap: withHolds()}, keys("enter", "H")},
			question: "Release the hold on application inventory (release freeze, 25m left)?"},
		{name: "H then y", steps: []step{{snap: withHolds()}, keys("enter", "H", "y")},
			calls: []string{"release application/inventory"}, status: "hold on application inventory released: repairs resume"},
		{name: "H on a held cluster", steps: []step{{snap: withHolds()}, keys("down", "H", "y")},
			calls: []string{"release cluster/prod-us"}},
		{name: "H without an active hold", steps: []step{{snap: withHolds()}, keys("down", "down", "H")},
			status: "no active hold on cluster staging"},
		{name: "read-only: h", opts: Options{ReadOnly: true}, steps: []step{keys("enter", "h")}, status: ReadOnlyMessage},
		{name: "read-only: H", opts: Options{ReadOnly: true}, steps: []step{{snap: withHolds()}, keys("enter", "H", "y")}, status: ReadOnlyMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, src := newFixtureModel(t, 160, 24, tt.opts)
			src.err = tt.srcErr
			run(t, m, tt.steps)
			if got := src.Calls(); !slices.Equal(got, tt.calls) {
				t.Errorf("calls = %q, want %q", got, tt.calls)
			}
			if !strings.Contains(m.StatusMessage(), tt.status) {
				t.Errorf("status = %q, want it to contain %q", m.StatusMessage(), tt.status)
			}
			prompt := ""
			if m.hold != nil {
				prompt = m.promptLine()
			}
			if !strings.HasPrefix(prompt, tt.prompt) || (tt.prompt == "") != (prompt == "") {
				t.Errorf("prompt = %q, want %q", prompt, tt.prompt)
			}
			q := ""
			if m.confirm != nil {
				q = m.confirm.question
			}
			if q != tt.question {
				t.Errorf("pending question = %q, want %q", q, tt.question)
			}
		})
	}
}

// TestHeldStatus: holds show in the status bar; held counts as drift on
// the overview, sorts with paused and is magenta like it.
func TestHeldStatus(t *testing.T) {
	m, _ := newFixtureModel(t, 160, 24, Options{})
	if out := m.View().Content; strings.Contains(out, "holds") || strings.Contains(out, "1 hold") {
		t.Errorf("status bar mentions holds when there are none:\n%s", out)
	}
	m.Update(snapshotMsg{snap: withHolds()})
	if out := m.View().Content; !strings.Contains(out, "mode repair │ 2 holds") {
		t.Errorf("status bar lacks the 2 active holds:\n%s", out)
	}
	press(t, m, "enter", "enter")
	if out := m.View().Content; !strings.Contains(out, "hold        application inventory · 25m left · release freeze") {
		t.Errorf("the detail view lacks the hold over its node:\n%s", out)
	}
	c := hub.ClusterStatus{Counts: map[hub.Status]int{hub.StatusHeld: 2, hub.StatusDrifted: 1, hub.StatusForbidden: 3, hub.StatusFailed: 1}}
	if _, drift, _, failed, _ := counts(c); drift != 3 || failed != 4 {
		t.Errorf("counts: drift %d (want 3), failed %d (want 4)", drift, failed)
	}
	if statusRank(hub.StatusHeld) != statusRank(hub.StatusPaused) || statusRank(hub.StatusForbidden) != statusRank(hub.StatusFailed) {
		t.Error("held must sort with paused, forbidden with failed")
	}
	st := newStyles(false)
	if st.status(hub.StatusHeld) != st.magenta || st.status(hub.StatusForbidden) != st.status(hub.StatusFailed) {
		t.Error("held must be magenta, forbidden styled like failed")
	}
}

// TestInitialSnapshot: Options.Initial is on the first frame, before the
// source sends anything, and the source's first snapshot replaces it.
func TestInitialSnapshot(t *testing.T) {
	src := newFakeSource() // sends nothing yet
	m := New(src, Options{Now: fixedClock, Initial: fixture()})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	if out := m.View().Content; !strings.Contains(out, "prod-eu") || !strings.Contains(out, "staging") {
		t.Fatalf("the first frame lacks the initial snapshot's clusters:\n%s", out)
	}
	if out := New(src, Options{Now: fixedClock}).View().Content; strings.Contains(out, "prod-eu") {
		t.Fatalf("without Initial the first frame shows clusters:\n%s", out)
	}
	later := buildSnapshot("hub-1", []hub.ClusterStatus{{ClusterHealth: hub.ClusterHealth{Cluster: "dr-west", State: hub.ClusterSynced}}}, nil, nil, nil)
	m.Update(snapshotMsg{snap: later})
	if out := m.View().Content; !strings.Contains(out, "dr-west") || strings.Contains(out, "prod-eu") {
		t.Fatalf("the source's snapshot did not replace the initial one:\n%s", out)
	}
}

// TestFirstFrame: FirstFrame is called once, by the terminal's first
// write after a View of a snapshot from the source, and not for the
// Initial snapshot alone.
func TestFirstFrame(t *testing.T) {
	calls := 0
	m := New(newFakeSource(), Options{Now: fixedClock, Initial: fixture(), FirstFrame: func() { calls++ }})
	frame := []byte("\x1b[H\x1b[2Jprod-eu  synced")
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m.View()
	m.wrote(frame)
	if calls != 0 {
		t.Fatalf("FirstFrame called %d times before the source's first snapshot", calls)
	}
	m.Update(snapshotMsg{snap: fixture(), fromSub: true})
	m.wrote(frame) // a write of an earlier frame
	if calls != 0 {
		t.Fatal("FirstFrame called before the frame was rendered")
	}
	if out := m.View().Content; !strings.Contains(out, "prod-eu") {
		t.Fatalf("the frame lacks the snapshot:\n%s", out)
	}
	if calls != 0 {
		t.Fatal("FirstFrame called before the frame was written")
	}
	// The program's terminal queries (synchronized output, Unicode
	// core), written before the frame: escape sequences only.
	m.wrote([]byte("\x1b[?2026$p\x1b[?2027$p"))
	if calls != 0 {
		t.Fatal("FirstFrame called on a write of escape sequences only")
	}
	m.wrote(frame)
	m.Update(snapshotMsg{snap: fixture(), fromSub: true})
	m.View()
	m.wrote(frame)
	if calls != 1 {
		t.Fatalf("FirstFrame called %d times, want once", calls)
	}
}

// TestPauseNoteShown: a paused cluster's view and its nodes' detail say
// who paused it, when and why, cleaned for the terminal.
func TestPauseNoteShown(t *testing.T) {
	m, _ := newFixtureModel(t, 120, 30, Options{})
	run(t, m, []step{keys("down", "enter")}) // prod-us, paused
	want := "└ paused 12m ago by alice: INC-4211: failover to prod-eu"
	if v := m.View().Content; !strings.Contains(v, want) {
		t.Errorf("cluster view does not say %q:\n%s", want, v)
	}
	run(t, m, []step{keys("enter")})
	if v := m.View().Content; !strings.Contains(v, "paused 12m ago by alice: INC-4211: failover to prod-eu") {
		t.Errorf("node detail does not say the pause:\n%s", v)
	}

	snap := fixture()
	snap.Clusters[1].PausedBy, snap.Clusters[1].PauseReason, snap.Clusters[1].PausedAt = "\x1b[2Jmallory", "why\x1b]0;pwned\x07", time.Time{}
	m, _ = newFixtureModel(t, 120, 30, Options{})
	m.Update(snapshotMsg{snap: snap})
	run(t, m, []step{keys("down", "enter")})
	v := m.View().Content
	if strings.Contains(v, "\x1b[2J") || strings.Contains(v, "\x1b]0;") || !strings.Contains(v, "└ paused by ") {
		t.Errorf("a hostile note reached the terminal, or no pause line:\n%q", v)
	}
}

// TestOverrideNoteShown: a node whose application has a runtime override
// says when it was set, by whom and why.
func TestOverrideNoteShown(t *testing.T) {
	m, _ := newFixtureModel(t, 120, 40, Options{})
	run(t, m, []step{keys("enter", "/"), text("payments:serv"), keys("enter", "enter")})
	if v := m.View().Content; !strings.Contains(v, "policy warn (runtime override)") ||
		!regexp.MustCompile(`override +set 20m ago by dave: PSP migration`).MatchString(v) {
		t.Errorf("node detail does not say the override's note:\n%s", v)
	}
}
