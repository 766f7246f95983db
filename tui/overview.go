package tui

import (
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/driftwatch/driftwatch/hub"
)

// overviewView shows one row per cluster and, below, the live feed of
// drift and repairs, newest first. Either list can hold the cursor (tab).
type overviewView struct {
	st   *styles
	keys *keyMap
	now  func() time.Time

	width, height int
	clusters      []hub.ClusterStatus
	feed          []hub.FeedEntry

	cur, off         int    // cluster cursor and first visible cluster
	selected         string // cluster under the cursor, kept across snapshots
	feedCur, feedOff int
	feedSel          hub.FeedEntry // entry under the feed cursor
	focusFeed        bool
	clusterRows      int // cluster lines visible in the last layout
	feedRows         int // feed rows visible in the last layout
	hasSnapshot      bool
}

func newOverview(st *styles, keys *keyMap, now func() time.Time) *overviewView {
	return &overviewView{st: st, keys: keys, now: now}
}

// SetSize sets the size of the view's area.
func (v *overviewView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.layout()
}

func (v *overviewView) setSnapshot(s *hub.Snapshot) {
	v.hasSnapshot = true
	v.clusters = s.Clusters
	v.feed = s.Feed
	v.cur = 0
	for i, c := range v.clusters {
		if c.Cluster == v.selected {
			v.cur = i
			break
		}
	}
	v.cur = clamp(v.cur, 0, max(len(v.clusters)-1, 0))
	if len(v.clusters) > 0 {
		v.selected = v.clusters[v.cur].Cluster
	}
	// Keep the feed cursor on the same entry while new ones arrive on top.
	if v.focusFeed && v.feedSel.ID.Valid() {
		for i, e := range v.feed {
			// A repeat folded into the entry moves it to the top with a
			// new time: it is still the same line.
			if e.ID == v.feedSel.ID && e.Started().Equal(v.feedSel.Started()) && e.Action == v.feedSel.Action {
				v.feedCur = i
				break
			}
		}
	}
	v.feedCur = clamp(v.feedCur, 0, max(len(v.feed)-1, 0))
	v.markFeed()
	v.layout()
}

// markFeed remembers the feed entry under the cursor.
func (v *overviewView) markFeed() {
	v.feedSel = hub.FeedEntry{}
	if v.feedCur < len(v.feed) {
		v.feedSel = v.feed[v.feedCur]
	}
}

// SelectedCluster returns the cluster under the cursor (or of the feed
// entry under the cursor when the feed has focus).
func (v *overviewView) SelectedCluster() (string, bool) {
	if v.focusFeed {
		if e, ok := v.SelectedFeed(); ok {
			return e.ID.Cluster, true
		}
		return "", false
	}
	if v.cur < len(v.clusters) {
		return v.clusters[v.cur].Cluster, true
	}
	return "", false
}

// SelectedFeed returns the feed entry under the cursor when the feed has
// focus.
func (v *overviewView) SelectedFeed() (hub.FeedEntry, bool) {
	if !v.focusFeed || v.feedCur >= len(v.feed) {
		return hub.FeedEntry{}, false
	}
	return v.feed[v.feedCur], true
}

// selectCluster moves the cursor to a cluster.
func (v *overviewView) selectCluster(id string) {
	for i, c := range v.clusters {
		if c.Cluster == id {
			v.cur, v.selected = i, id
			break
		}
	}
	v.layout()
}

// Update handles movement and focus keys.
func (v *overviewView) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	if key.Matches(k, v.keys.Tab) {
		v.focusFeed = !v.focusFeed && len(v.feed) > 0
		v.markFeed()
		return nil
	}
	if v.focusFeed {
		if d, ok := v.keys.movement(k, v.feedRows); ok {
			v.feedCur = clamp(v.feedCur+d, 0, max(len(v.feed)-1, 0))
			v.markFeed()
			v.layout()
		}
		return nil
	}
	if d, ok := v.keys.movement(k, v.clusterRows); ok && len(v.clusters) > 0 {
		v.cur = clamp(v.cur+d, 0, len(v.clusters)-1)
		v.selected = v.clusters[v.cur].Cluster
		v.layout()
	}
	return nil
}

// clusterLines is how many lines a cluster takes: its row plus a line for
// its state and last error when it is not synced.
func clusterLines(c hub.ClusterStatus) int {
	if c.State != hub.ClusterSynced {
		return 2
	}
	return 1
}

// areas splits the height between the cluster table (with its header) and
// the feed (with its title and header).
func (v *overviewView) areas() (clusterArea, feedArea int) {
	lines := 1
	for _, c := range v.clusters {
		lines += clusterLines(c)
	}
	feedMin := min(6, v.height/2)
	clusterArea = min(lines, v.height-feedMin)
	clusterArea = max(clusterArea, min(2, v.height))
	return clusterArea, v.height - clusterArea
}

// layout recomputes the scroll offsets after a move, resize or snapshot.
func (v *overviewView) layout() {
	ca, fa := v.areas()
	rows := ca - 1
	v.clusterRows = rows
	if v.cur < v.off {
		v.off = v.cur
	}
	// Move off forward until clusters off..cur fit in rows lines.
	for v.off < v.cur {
		used := 0
		for i := v.off; i <= v.cur; i++ {
			used += clusterLines(v.clusters[i])
		}
		if used <= rows {
			break
		}
		v.off++
	}
	v.feedRows = max(fa-2, 0)
	v.feedOff = clampOffset(v.feedOff, v.feedCur, v.feedRows, len(v.feed))
}

// counts sums a cluster's statuses into the overview's columns (SYNC,
// DRIFT, FIXING, FAIL, STUCK: see hub.Tally); the other statuses only
// count in OBJ.
func counts(c hub.ClusterStatus) (sync, drift, fixing, failed, stuck int) {
	t := c.Tally()
	return t.InSync, t.Drift, t.Fixing, t.Failed, t.Stuck
}

// Overview cluster table columns.
const (
	ocCluster = iota
	ocState
	ocPaused
	ocSource
	ocDetect
	ocObjects
	ocSync
	ocDrift
	ocFixing
	ocFailed
	ocStuck
	ocContested
	ocRate
	ocLast
	ocTTR
)

func (v *overviewView) clusterTable(now time.Time) (*table, [][]cell) {
	t := newTable(v.st, []column{
		ocCluster:   {title: "CLUSTER", flex: 2},
		ocState:     {title: "STATE"},
		ocPaused:    {title: ""},
		ocSource:    {title: "SOURCE", flex: 1, width: 6, drop: 3},
		ocDetect:    {title: "DETECT", drop: 3},
		ocObjects:   {title: "OBJ", right: true},
		ocSync:      {title: "SYNC", right: true},
		ocDrift:     {title: "DRIFT", right: true},
		ocFixing:    {title: "FIXING", right: true},
		ocFailed:    {title: "FAIL", right: true},
		ocStuck:     {title: "STUCK", right: true},
		ocContested: {title: "FIGHT", right: true},
		ocRate:      {title: "EV/S", right: true, drop: 4},
		ocLast:      {title: "LAST", right: true, drop: 2},
		ocTTR:       {title: "TTR", right: true, drop: 1},
	})
	num := func(n int, hot style) cell {
		if n == 0 {
			return cell{"0", v.st.dim}
		}
		return cell{strconv.Itoa(n), hot}
	}
	rows := make([][]cell, len(v.clusters))
	wmax := make([]int, len(t.cols))
	// The detection column shows only beside a polled backend (a
	// Terraform workspace): "watch" for clusters, "poll 1m" for it.
	polled := false
	for _, c := range v.clusters {
		polled = polled || c.Detection != ""
	}
	for i, c := range v.clusters {
		sync, drift, fixing, failed, stuck := counts(c)
		paused := cell{}
		if c.Paused {
			paused = cell{"PAUSED", v.st.magenta}
		}
		source := c.Source
		if source == "" {
			source = "-"
		}
		detect := cell{}
		if polled {
			detect = cell{"watch", v.st.dim}
			if c.Detection != "" {
				detect = cell{c.Detection, v.st.dim}
			}
		}
		rows[i] = []cell{
			ocCluster:   {c.Cluster, v.st.bold},
			ocState:     {string(c.State), v.st.health(c.State)},
			ocPaused:    paused,
			ocSource:    {source, v.st.dim},
			ocDetect:    detect,
			ocObjects:   {strconv.Itoa(c.Objects), style{}},
			ocSync:      num(sync, v.st.green),
			ocDrift:     num(drift, v.st.yellow),
			ocFixing:    num(fixing, v.st.cyan),
			ocFailed:    num(failed, v.st.errText),
			ocStuck:     num(stuck, v.st.errText),
			ocContested: num(c.Counts[hub.StatusContested], v.st.contested),
			ocRate:      {rate(c.EventsPerSecond), style{}},
			ocLast:      {age(now, c.LastEvent), style{}},
			ocTTR:       {optDur(c.MedianRepair), style{}},
		}
		for j, cl := range rows[i] {
			wmax[j] = max(wmax[j], width(clean(cl.text)))
		}
	}
	for j := range t.cols {
		switch j {
		case ocCluster:
			t.setWidth(j, min(wmax[j], 12))
			t.cols[j].max = max(wmax[j], width(t.cols[j].title))
		case ocSource:
			t.setWidth(j, min(wmax[j], 6))
			t.cols[j].max = max(wmax[j], width(t.cols[j].title))
		case ocPaused, ocDetect:
			if wmax[j] == 0 {
				t.cols[j].drop = 99 // nothing paused: hide
				t.cols[j].width = 0
			} else {
				t.setWidth(j, wmax[j])
			}
		case ocContested:
			if !anyContested(v.clusters) {
				t.cols[j].drop = 99 // no fight anywhere: hide
				t.cols[j].width = 0
			} else {
				t.setWidth(j, max(wmax[j], width(t.cols[j].title)))
			}
		default:
			t.setWidth(j, wmax[j])
		}
	}
	t.fit(v.width)
	return t, rows
}

// Feed table columns.
const (
	fcTime = iota
	fcCount
	fcNode
	fcClass
	fcChanges
	fcWho
	fcAction
	fcLatency
)

func (v *overviewView) feedTable() *table {
	t := newTable(v.st, []column{
		fcTime:    {title: "TIME", width: 8},
		fcCount:   {right: true}, // shown when a visible entry repeats
		fcNode:    {title: "NODE", width: 16, flex: 2, want: 24},
		fcClass:   {title: "CLASS", width: 10, drop: 2},
		fcChanges: {title: "CHANGES", width: 10, flex: 3, want: 22},
		fcWho:     {title: "WHO"},
		fcAction:  {title: "ACTION", width: 6, flex: 1},
		fcLatency: {title: "LATENCY", width: 7, right: true, drop: 3},
	})
	// Size the columns by the visible entries.
	end := min(v.feedOff+v.feedRows, len(v.feed))
	node, who, action, count := 0, 1, 0, 0
	for _, e := range v.feed[v.feedOff:end] {
		count = max(count, width(timesText(e)))
		node = max(node, len(clean(e.ID.Cluster))+len(clean(e.ID.Resource))+len(clean(string(e.ID.Kind)))+2)
		who = max(who, width(clean(e.Who)))
		action = max(action, width(clean(e.Action)))
		if e.Err != "" {
			action = max(action, len("failed"))
		}
	}
	t.cols[fcNode].max = max(node, 16)
	t.cols[fcAction].max = max(action, 6)
	t.cols[fcAction].want = t.cols[fcAction].max
	t.setWidth(fcWho, min(who, 14))
	t.cols[fcCount].width = count
	t.fit(v.width)
	return t
}

// timesText is how many times a feed entry happened, "×5", or "" once.
func timesText(e hub.FeedEntry) string {
	if e.Times() < 2 {
		return ""
	}
	return "×" + strconv.Itoa(e.Times())
}

// feedCells renders one feed entry as cells.
func feedCells(st *styles, e hub.FeedEntry) []cell {
	field := hub.FieldDiff.String // desired -> live
	if e.DesiredChanged() {
		field = hub.FieldDiff.ChangeString // old -> new
	}
	changes := make([]string, 0, len(e.Fields))
	for _, f := range e.Fields {
		changes = append(changes, field(f))
	}
	change := strings.Join(changes, ", ")
	if change == "" {
		change = classNote(e.Class)
	}
	action := cell{e.Action, actionStyle(st, e.Action)}
	if e.Err != "" {
		action = cell{"failed", st.errText}
		if e.Action == "waiting" { // for a deletion in progress: no failure
			action = cell{e.Action, st.yellow}
		}
		change = e.Err
		if len(changes) > 0 {
			change = strings.Join(changes, ", ") + " ! " + e.Err
		}
	}
	who := e.Who
	if who == "" {
		who = "-"
	}
	return []cell{
		fcTime:    {e.At.Format("15:04:05"), st.dim},
		fcCount:   {timesText(e), st.accent},
		fcNode:    {e.ID.String(), style{}},
		fcClass:   {string(e.Class), st.class(e.Class)},
		fcChanges: {change, style{}},
		fcWho:     {who, st.accent},
		fcAction:  action,
		fcLatency: {optDur(e.Latency), style{}},
	}
}

// classNote describes a drift class that has no field list.
func classNote(c hub.DriftClass) string {
	switch c {
	case hub.DriftMissing:
		return "object deleted"
	case hub.DriftUnlabelled:
		return "managed-by label removed"
	case hub.DriftDeleting:
		return "being deleted"
	case hub.DriftNone:
		return "back in sync"
	}
	return ""
}

func actionStyle(st *styles, action string) style {
	switch action {
	case "apply", "remove+apply":
		return st.green
	case "warn":
		return st.yellow
	case "paused":
		return st.magenta
	case "recreate":
		return st.yellow
	}
	return st.dim
}

// View renders the view in exactly its height (or fewer lines; the root
// pads).
func (v *overviewView) View() string {
	if !v.hasSnapshot {
		return v.st.dim.render("waiting for the first snapshot from the hub…")
	}
	now := v.now()
	ca, _ := v.areas()
	lines := make([]string, 0, v.height)

	if len(v.clusters) == 0 {
		lines = append(lines, v.st.dim.render("no clusters registered"))
	} else {
		t, rows := v.clusterTable(now)
		lines = append(lines, t.header())
		for i := v.off; i < len(v.clusters) && len(lines) < ca; i++ {
			c := v.clusters[i]
			lines = append(lines, t.row(rows[i], !v.focusFeed && i == v.cur))
			if clusterLines(c) > 1 && len(lines) < ca {
				lines = append(lines, v.clusterNote(c, now))
			}
		}
	}
	for len(lines) < ca {
		lines = append(lines, "")
	}

	if v.height-len(lines) < 1 {
		return strings.Join(lines, "\n")
	}
	title := "LIVE FEED"
	hint := "newest first"
	if len(v.feed) > 0 {
		hint += " · " + pluralOf(len(v.feed), "entry", "entries")
		if !v.focusFeed {
			hint += " · tab to select"
		}
	}
	lines = append(lines, truncate(v.st.title.render(title)+" "+v.st.dim.render(hint), v.width))
	if len(v.feed) == 0 {
		lines = append(lines, v.st.dim.render("  no drift seen yet"))
		return strings.Join(lines, "\n")
	}
	if v.height-len(lines) < 1 {
		return strings.Join(lines, "\n")
	}
	t := v.feedTable()
	lines = append(lines, t.header())
	end := min(v.feedOff+v.feedRows, len(v.feed))
	for i := v.feedOff; i < end; i++ {
		lines = append(lines, t.row(feedCells(v.st, v.feed[i]), v.focusFeed && i == v.feedCur))
	}
	return strings.Join(lines, "\n")
}

// clusterNote is the line under a cluster that is not synced: its state,
// since when, and its last error.
func (v *overviewView) clusterNote(c hub.ClusterStatus, now time.Time) string {
	s := "  └ " + string(c.State)
	if !c.Since.IsZero() {
		s += " for " + age(now, c.Since)
	}
	if c.LastError != "" {
		s += ": " + c.LastError
	}
	return v.st.health(c.State).render(truncate(clean(s), v.width))
}

// anyContested reports whether a cluster has a contested object (the FIGHT
// column shows only then).
func anyContested(cs []hub.ClusterStatus) bool {
	for _, c := range cs {
		if c.Counts[hub.StatusContested] > 0 {
			return true
		}
	}
	return false
}
