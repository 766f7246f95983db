package tui

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/driftwatch/driftwatch/hub"
)

// sortKey is a sort column of the cluster view.
type sortKey int

const (
	sortName sortKey = iota
	sortStatus
	sortKind
	sortAge
	numSortKeys
)

func (k sortKey) String() string {
	switch k {
	case sortStatus:
		return "status"
	case sortKind:
		return "kind"
	case sortAge:
		return "age"
	}
	return "name"
}

// statusRank orders statuses worst first for the status sort.
func statusRank(s hub.Status) int {
	switch s {
	case hub.StatusFailed, hub.StatusForbidden:
		return 0
	case hub.StatusStuck, hub.StatusContested, hub.StatusForeign:
		return 1
	case hub.StatusDrifted:
		return 2
	case hub.StatusUnknown:
		return 3
	case hub.StatusRepairing:
		return 4
	case hub.StatusWarnOnly:
		return 5
	case hub.StatusPaused, hub.StatusHeld:
		return 6
	case hub.StatusDecommissioning, hub.StatusOrphan:
		return 7
	case hub.StatusRepaired:
		return 8
	case hub.StatusInSync:
		return 9
	}
	return 10
}

// clusterView lists every NodeID of one cluster: sortable, filterable, with
// a problems-only toggle. Only the visible rows are rendered.
type clusterView struct {
	st   *styles
	keys *keyMap
	now  func() time.Time

	width, height int
	cluster       string
	info          hub.ClusterStatus
	known         bool
	hasSnapshot   bool

	nodes []*hub.NodeStatus // the cluster's nodes, in snapshot (name) order
	rows  []*hub.NodeStatus // filtered and sorted
	spare []*hub.NodeStatus // second buffer for sorting
	cur   int
	off   int
	sel   hub.NodeID // NodeID under the cursor, kept across snapshots
	// natural widths of the name-like columns over rows
	resW, appW, kindW, statusW int

	sort      sortKey
	reverse   bool
	problems  bool
	filter    string
	filtering bool
	input     lineInput
}

func newClusterView(st *styles, keys *keyMap, now func() time.Time) *clusterView {
	return &clusterView{st: st, keys: keys, now: now}
}

// open switches the view to a cluster; sort and problems-only are kept, the
// filter and cursor are reset.
func (v *clusterView) open(cluster string, s *hub.Snapshot) {
	if cluster != v.cluster {
		v.cur, v.off, v.sel = 0, 0, hub.NodeID{}
		v.filter, v.filtering = "", false
	}
	v.cluster = cluster
	if s != nil {
		v.setSnapshot(s)
	}
}

// SetSize sets the size of the view's area.
func (v *clusterView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.off = clampOffset(v.off, v.cur, v.tableRows(), len(v.rows))
}

func (v *clusterView) setSnapshot(s *hub.Snapshot) {
	v.hasSnapshot = true
	v.info, v.known = s.Cluster(v.cluster)
	v.nodes = v.nodes[:0]
	for i := range s.Nodes {
		if s.Nodes[i].ID.Cluster == v.cluster {
			v.nodes = append(v.nodes, &s.Nodes[i])
		}
	}
	v.rebuild()
}

// matches reports whether a node passes problems-only and the filter (a
// case-insensitive substring of the NodeID text, application and status).
func (v *clusterView) matches(n *hub.NodeStatus, filter string) bool {
	if v.problems && !n.Status.Problem() {
		return false
	}
	if filter == "" {
		return true
	}
	return idContains(n.ID, filter) ||
		strings.Contains(strings.ToLower(n.Application), filter) ||
		strings.Contains(string(n.Status), filter)
}

// idContains reports whether the NodeID's text holds the lowercase filter,
// without building the text unless the filter spans its parts.
func idContains(id hub.NodeID, filter string) bool {
	if strings.IndexByte(filter, ':') >= 0 {
		return strings.Contains(strings.ToLower(id.String()), filter)
	}
	return strings.Contains(strings.ToLower(id.Resource), filter) ||
		strings.Contains(strings.ToLower(id.Cluster), filter) ||
		strings.Contains(string(id.Kind), filter)
}

// rebuild filters and sorts the rows and restores the cursor.
func (v *clusterView) rebuild() {
	filter := strings.ToLower(strings.TrimSpace(v.filter))
	v.rows = v.rows[:0]
	for _, n := range v.nodes {
		if v.matches(n, filter) {
			v.rows = append(v.rows, n)
		}
	}
	// Name order: the snapshot is sorted by NodeID text, where
	// "inventory-config:..." sorts before "inventory:..."; sort by resource
	// then kind instead (cheap on nearly sorted input).
	byName := func(a, b *hub.NodeStatus) int {
		if c := strings.Compare(a.ID.Resource, b.ID.Resource); c != 0 {
			return c
		}
		return strings.Compare(string(a.ID.Kind), string(b.ID.Kind))
	}
	if !slices.IsSortedFunc(v.rows, byName) {
		slices.SortStableFunc(v.rows, byName)
	}
	switch v.sort {
	case sortStatus:
		v.rows = sortByStatus(v.rows, &v.spare)
	case sortKind:
		slices.SortStableFunc(v.rows, func(a, b *hub.NodeStatus) int {
			return strings.Compare(string(a.Kind), string(b.Kind))
		})
	case sortAge:
		slices.SortStableFunc(v.rows, func(a, b *hub.NodeStatus) int {
			return b.LastChange.Compare(a.LastChange) // newest change first
		})
	}
	if v.reverse {
		slices.Reverse(v.rows)
	}
	v.resW, v.appW, v.kindW, v.statusW = 0, 0, 0, 0
	found := false
	for i, n := range v.rows {
		v.resW = max(v.resW, len(clean(n.ID.Resource)))
		v.appW = max(v.appW, len(clean(n.Application)))
		v.kindW = max(v.kindW, len(clean(string(n.Kind))))
		v.statusW = max(v.statusW, len(clean(string(n.Status))))
		if !found && n.ID == v.sel {
			v.cur, found = i, true
		}
	}
	v.cur = clamp(v.cur, 0, max(len(v.rows)-1, 0))
	if len(v.rows) > 0 {
		v.sel = v.rows[v.cur].ID
	}
	v.off = clampOffset(v.off, v.cur, v.tableRows(), len(v.rows))
}

// sortByStatus sorts rows worst status first, keeping name order within a
// status: a counting sort, linear in the rows. It returns the sorted rows in
// *spare's storage and leaves rows' storage in *spare for the next call.
func sortByStatus(rows []*hub.NodeStatus, spare *[]*hub.NodeStatus) []*hub.NodeStatus {
	const ranks = 11
	var start [ranks + 1]int
	for _, n := range rows {
		start[statusRank(n.Status)+1]++
	}
	for i := 1; i <= ranks; i++ {
		start[i] += start[i-1]
	}
	out := slices.Grow((*spare)[:0], len(rows))[:len(rows)]
	for _, n := range rows {
		r := statusRank(n.Status)
		out[start[r]] = n
		start[r]++
	}
	*spare = rows
	return out
}

// Selected returns the node under the cursor.
func (v *clusterView) Selected() (hub.NodeStatus, bool) {
	if v.cur < len(v.rows) {
		return *v.rows[v.cur], true
	}
	return hub.NodeStatus{}, false
}

// selectNode moves the cursor to a NodeID if it is shown.
func (v *clusterView) selectNode(id hub.NodeID) {
	for i, n := range v.rows {
		if n.ID == id {
			v.cur, v.sel = i, id
			v.off = clampOffset(v.off, v.cur, v.tableRows(), len(v.rows))
			return
		}
	}
}

// clearFilter drops an applied filter; it reports whether there was one.
func (v *clusterView) clearFilter() bool {
	if v.filter == "" {
		return false
	}
	v.filter = ""
	v.rebuild()
	return true
}

// headerLines is the number of lines above the table header.
func (v *clusterView) headerLines() int {
	n := 2
	if v.stateShown() {
		n++
	}
	if v.known && v.info.Paused {
		n++ // who paused it, when and why
	}
	return n
}

// stateShown says the header has the cluster's state line: why it is not
// synced, or a synced workspace's note.
func (v *clusterView) stateShown() bool {
	return v.known && (v.info.State != hub.ClusterSynced || v.info.LastError != "")
}

// tableRows is the number of visible table rows.
func (v *clusterView) tableRows() int {
	return max(v.height-v.headerLines()-1, 0)
}

// Update handles the filter input, movement, sort and problems-only.
func (v *clusterView) Update(msg tea.Msg) tea.Cmd {
	if p, ok := msg.(tea.PasteMsg); ok && v.filtering {
		v.input.insert(oneLine(p.Content))
		v.filter = v.input.String()
		v.rebuild()
		return nil
	}
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	if v.filtering {
		switch v.input.update(k) {
		case inputDone:
			v.filtering = false
		case inputCancel:
			v.filtering = false
			v.input.reset("/", "")
		}
		v.filter = v.input.String()
		v.rebuild()
		return nil
	}
	switch {
	case key.Matches(k, v.keys.Filter):
		v.filtering = true
		v.input.reset("/", v.filter)
		return nil
	case key.Matches(k, v.keys.Sort):
		v.sort = (v.sort + 1) % numSortKeys
		v.rebuild()
		return nil
	case key.Matches(k, v.keys.Reverse):
		v.reverse = !v.reverse
		v.rebuild()
		return nil
	case key.Matches(k, v.keys.Problems):
		v.problems = !v.problems
		v.rebuild()
		return nil
	}
	if d, ok := v.keys.movement(k, v.tableRows()); ok && len(v.rows) > 0 {
		v.cur = clamp(v.cur+d, 0, len(v.rows)-1)
		v.sel = v.rows[v.cur].ID
		v.off = clampOffset(v.off, v.cur, v.tableRows(), len(v.rows))
	}
	return nil
}

// Cluster view columns.
const (
	ccResource = iota
	ccKind
	ccApp
	ccStatus
	ccReady
	ccAge
	ccRepairs
	ccReason
)

func (v *clusterView) table() *table {
	t := newTable(v.st, []column{
		ccResource: {title: "RESOURCE", width: 20, flex: 3},
		ccKind:     {title: "KIND"},
		ccApp:      {title: "APP", width: 8, flex: 1},
		ccStatus:   {title: "STATUS"},
		ccReady:    {title: "READY", right: true, width: 5},
		ccAge:      {title: "AGE", right: true, width: 4},
		ccRepairs:  {title: "REPAIRS", right: true, drop: 3},
		ccReason:   {title: "REASON", width: 10, flex: 4, want: 30, drop: 2},
	})
	t.cols[ccResource].max = max(v.resW, 20)
	t.cols[ccResource].want = v.resW
	t.cols[ccApp].max = max(v.appW, 8)
	t.cols[ccApp].want = v.appW
	t.setWidth(ccKind, v.kindW)
	t.setWidth(ccStatus, v.statusW)
	t.setWidth(ccRepairs, 0)
	t.fit(v.width)
	return t
}

func (v *clusterView) cells(n *hub.NodeStatus, now time.Time) []cell {
	ready := cell{"-", v.st.dim}
	if n.Kind == hub.KindDeployment || n.DesiredReplicas > 0 {
		ready = cell{strconv.Itoa(int(n.ReadyReplicas)) + "/" + strconv.Itoa(int(n.DesiredReplicas)), style{}}
		if n.ReadyReplicas < n.DesiredReplicas {
			ready.st = v.st.yellow
		}
	}
	app := n.Application
	if app == "" {
		app = "-"
	}
	return []cell{
		ccResource: {n.ID.Resource, style{}},
		ccKind:     {string(n.Kind), v.st.dim},
		ccApp:      {app, style{}},
		ccStatus:   {string(n.Status), v.st.status(n.Status)},
		ccReady:    ready,
		ccAge:      {age(now, n.LastChange), style{}},
		ccRepairs:  {strconv.Itoa(n.Repairs), style{}},
		ccReason:   {n.Reason, v.st.dim},
	}
}

// infoLine summarises the cluster.
func (v *clusterView) infoLine(now time.Time) string {
	if !v.known {
		return v.st.bold.render(clean(v.cluster)) + " " + v.st.dim.render("not in the latest snapshot")
	}
	c := v.info
	parts := []string{v.st.bold.render(clean(c.Cluster)) + " " + v.st.health(c.State).render(clean(string(c.State)))}
	if c.Paused {
		parts[0] += " " + v.st.magenta.render("PAUSED")
	}
	source := c.Source
	if source == "" {
		source = "-"
	}
	parts = append(parts,
		clean(source),
		plural(c.Objects, "object"),
		rate(c.EventsPerSecond)+" ev/s",
		"last event "+age(now, c.LastEvent),
		"TTR "+optDur(c.MedianRepair),
	)
	return strings.Join(parts, v.st.dim.render(" · "))
}

// stateLine shows the sort, filter and problems-only state.
func (v *clusterView) stateLine() string {
	dir := "↑"
	if v.reverse {
		dir = "↓"
	}
	parts := []string{"sort " + v.sort.String() + " " + dir}
	if v.filter != "" {
		parts = append(parts, "filter \""+v.filter+"\"")
	}
	if v.problems {
		parts = append(parts, "problems only")
	}
	parts = append(parts, strconv.Itoa(len(v.rows))+"/"+strconv.Itoa(len(v.nodes))+" shown")
	return v.st.dim.render(clean(strings.Join(parts, " · ")))
}

// View renders the view; only the visible rows are rendered.
func (v *clusterView) View() string {
	if !v.hasSnapshot {
		return v.st.dim.render("waiting for the first snapshot from the hub…")
	}
	now := v.now()
	lines := make([]string, 0, v.height)
	lines = append(lines, truncate(v.infoLine(now), v.width))
	if v.known && v.info.Paused {
		lines = append(lines, v.st.magenta.render(truncate(clean("└ "+pauseText(v.info, now)), v.width)))
	}
	if v.stateShown() {
		c := v.info
		s := "└ " + string(c.State)
		if !c.Since.IsZero() {
			s += " for " + age(now, c.Since)
		}
		if c.LastError != "" {
			s += ": " + c.LastError
		}
		lines = append(lines, v.st.health(c.State).render(truncate(clean(s), v.width)))
	}
	lines = append(lines, truncate(v.stateLine(), v.width))
	if len(v.rows) == 0 {
		msg := "no objects on this cluster"
		if len(v.nodes) > 0 {
			msg = "no objects match (esc clears the filter, x toggles problems only)"
		}
		lines = append(lines, "", truncate(v.st.dim.render("  "+msg), v.width))
		return strings.Join(lines, "\n")
	}
	t := v.table()
	lines = append(lines, t.header())
	end := min(v.off+v.tableRows(), len(v.rows))
	for i := v.off; i < end; i++ {
		lines = append(lines, t.row(v.cells(v.rows[i], now), i == v.cur))
	}
	return strings.Join(lines, "\n")
}
