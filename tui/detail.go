package tui

import (
	"cmp"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"sort"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/hub"
)

// detailView shows one NodeID: status and reason, the desired-versus-actual
// diff of the fields we manage, attribution, the timeline with per-step
// latency, and a summary of the desired object. It scrolls.
type detailView struct {
	st   *styles
	keys *keyMap
	now  func() time.Time

	width, height int
	id            hub.NodeID
	node          hub.NodeStatus
	found         bool
	cluster       hub.ClusterStatus
	override      hub.Policy // the application's runtime policy override
	overrideNote  hub.OverrideNote
	holds         []hub.Hold // holds covering the NodeID (active when received)
	hasSnapshot   bool
	off           int
	lineCount     int  // lines of the last render, to bound scrolling
	propose       bool // show the proposed ignore rule (key i)
	// The desired object read for a node whose snapshot does not carry it
	// (see Model.fetchSpec): for which NodeID and revision it was last
	// asked (zero: never), and the answer (nil: none yet).
	specFor specKey
	specGot *specMsg
}

// specKey is what a desired object read for the node view stands for: a
// NodeID at a revision of its source.
type specKey struct {
	id       hub.NodeID
	revision string
}

// needsSpec reports whether the node shown needs its desired object read
// (its snapshot does not carry it and it was not asked for at this
// revision), and marks it asked.
func (v *detailView) needsSpec() (specKey, bool) {
	if !v.hasSnapshot || !v.found || v.node.Spec != nil {
		return specKey{}, false
	}
	k := specKey{id: v.id, revision: v.node.Revision}
	if v.specFor == k {
		return specKey{}, false
	}
	v.specFor, v.specGot = k, nil
	return k, true
}

// gotSpec takes a desired object read for the node view; one for another
// NodeID or revision than the last asked is dropped.
func (v *detailView) gotSpec(msg specMsg) {
	if msg.key == v.specFor {
		v.specGot = &msg
	}
}

func newDetailView(st *styles, keys *keyMap, now func() time.Time) *detailView {
	return &detailView{st: st, keys: keys, now: now}
}

// open shows a NodeID.
func (v *detailView) open(id hub.NodeID, s *hub.Snapshot) {
	if id != v.id {
		v.off, v.propose = 0, false
	}
	v.id = id
	if s != nil {
		v.setSnapshot(s)
	}
}

// SetSize sets the size of the view's area.
func (v *detailView) SetSize(w, h int) { v.width, v.height = w, h }

func (v *detailView) setSnapshot(s *hub.Snapshot) {
	v.hasSnapshot = true
	v.node, v.found = s.Node(v.id)
	v.cluster, _ = s.Cluster(v.id.Cluster)
	v.override, v.overrideNote = "", hub.OverrideNote{}
	v.holds = v.holds[:0]
	if v.found {
		v.override = s.AppPolicies[v.node.Application]
		v.overrideNote = s.AppPolicyNotes[v.node.Application]
	}
	for _, hd := range s.Holds {
		if hd.Target.Covers(v.id, v.node.Application) { // no application ("") when not found
			v.holds = append(v.holds, hd)
		}
	}
}

// Update scrolls.
func (v *detailView) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	if d, ok := v.keys.movement(k, v.height); ok {
		v.off = clamp(v.off+d, 0, max(v.lineCount-v.height, 0))
	}
	if key.Matches(k, v.keys.Ignore) {
		v.propose = !v.propose
	}
	return nil
}

// View renders the visible part of the detail.
func (v *detailView) View() string {
	lines := v.lines()
	v.lineCount = len(lines)
	v.off = clamp(v.off, 0, max(len(lines)-v.height, 0))
	end := min(v.off+v.height, len(lines))
	out := make([]string, 0, end-v.off)
	for _, l := range lines[v.off:end] {
		out = append(out, truncate(l, v.width))
	}
	if v.off > 0 && len(out) > 0 {
		out[0] = v.st.dim.render(truncate(fmt.Sprintf("  ↑ %d more", v.off), v.width))
	}
	if end < len(lines) && len(out) > 1 {
		out[len(out)-1] = v.st.dim.render(truncate(fmt.Sprintf("  ↓ %d more", len(lines)-end), v.width))
	}
	return strings.Join(out, "\n")
}

const labelWidth = 12

// field renders "label      value".
func (v *detailView) field(label, value string) string {
	return v.st.dim.render(pad(label, labelWidth, false)) + value
}

// maxWrapped bounds the lines of a wrapped reason or error.
const maxWrapped = 4

// wrapped renders a long plain value (a reason, an error) under its label,
// wrapped to the width, at most maxWrapped lines.
func (v *detailView) wrapped(label, value string, st style) []string {
	room := max(v.width-labelWidth, 20)
	parts := strings.Split(ansi.Wrap(clean(value), room, ""), "\n")
	if len(parts) > maxWrapped {
		parts = parts[:maxWrapped]
		parts[maxWrapped-1] = truncate(parts[maxWrapped-1]+" "+ellipsis, room)
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		if i == 0 {
			out[i] = v.field(label, st.render(p))
		} else {
			out[i] = strings.Repeat(" ", labelWidth) + st.render(p)
		}
	}
	return out
}

func (v *detailView) lines() []string {
	if !v.hasSnapshot {
		return []string{v.st.dim.render("waiting for the first snapshot from the hub…")}
	}
	now := v.now()
	n := v.node
	var l []string
	add := func(s ...string) { l = append(l, s...) }
	add(v.field("node", v.st.bold.render(clean(v.id.String()))))
	if !v.found {
		add("", v.st.warn.render("This NodeID is not in the latest snapshot (removed from the config, or its cluster left)."))
		return l
	}

	status := v.st.status(n.Status).render(clean(string(n.Status))) + v.st.dim.render(" · changed "+age(now, n.LastChange)+" ago")
	if n.Repairs > 0 {
		status += v.st.dim.render(" · " + plural(n.Repairs, "repair"))
	}
	cl := v.st.health(v.cluster.State).render(clean(string(v.cluster.State)))
	if v.cluster.State == "" {
		cl = v.st.grey.render("unknown")
	}
	if v.cluster.Paused {
		cl += " " + v.st.magenta.render("PAUSED")
	}
	add(v.field("status", status+v.st.dim.render(" · cluster ")+cl))
	if v.cluster.Paused {
		add(v.wrapped("cluster", pauseText(v.cluster, now), v.st.magenta)...)
	}
	if n.Reason != "" {
		add(v.wrapped("reason", n.Reason, style{})...)
	}
	if c := n.Contested; c != nil {
		add(v.field("contested", contestLine(v.st, *c, now)))
	}
	for i, why := range n.Diagnosis {
		label := ""
		if i == 0 {
			label = "why"
		}
		add(v.wrapped(label, why, v.st.warn)...)
	}
	for _, hd := range v.holds {
		if !hd.Active(now) {
			continue
		}
		left := shortDuration(max(hd.Until.Sub(now).Round(time.Minute), time.Minute))
		head := v.st.magenta.render(clean(string(hd.Target.Scope)+" "+hd.Target.Name)) + v.st.dim.render(" · "+left+" left · ")
		by := ""
		if hd.By != "" {
			by = v.st.dim.render(clean(" · by " + hd.By)) // after the reason: a narrow view cuts it first
		}
		add(v.field("hold", head+clean(hd.Reason)+by))
	}
	app := clean(n.Application)
	if app == "" {
		app = "-"
	}
	obj := app + v.st.dim.render(" · ") + clean(string(n.Kind))
	if n.Kind == hub.KindDeployment || n.DesiredReplicas > 0 {
		obj += v.st.dim.render(" · ready ") + strconv.Itoa(int(n.ReadyReplicas)) + "/" + strconv.Itoa(int(n.DesiredReplicas))
	}
	policy := clean(string(n.Policy))
	if policy == "" {
		policy = "-"
	}
	if v.override != "" {
		policy += " (runtime override)"
	}
	add(v.field("application", obj+v.st.dim.render(" · policy ")+policy))
	if o := v.overrideNote; v.override != "" && o != (hub.OverrideNote{}) {
		add(v.wrapped("override", noteText("set", o.At, o.By, o.Reason, now), v.st.dim)...)
	}
	if n.Revision != "" {
		add(v.field("desired", "from "+app+" @ "+revisionLine(n.Revision)))
	}

	if v.propose {
		add("")
		l = append(l, v.proposalLines()...)
	}
	add("")
	l = append(l, v.driftLines()...)
	if len(n.Ignored) > 0 {
		add("")
		l = append(l, v.ignoredLines()...)
	}
	add("")
	l = append(l, v.timelineLines()...)
	add("")
	l = append(l, v.specLines()...)
	return l
}

func (v *detailView) title(s string) string { return v.st.title.render(s) }

// driftLines renders the last drift: the diff, attribution and repair.
func (v *detailView) driftLines() []string {
	r := v.node.LastRepair
	if r == nil {
		return []string{v.title("DRIFT"), v.st.dim.render("  no drift recorded since the hub started")}
	}
	if r.DesiredChange != "" {
		return v.desiredChangeLines(r)
	}
	head := v.title("DRIFT") + " " + v.st.class(r.Drift.Class).render(clean(string(r.Drift.Class)))
	if !r.ObservedAt.IsZero() {
		head += v.st.dim.render(" · observed " + r.ObservedAt.Format("15:04:05.000"))
	}
	if len(r.Drift.Fields) > 0 {
		head += "  " + v.st.diffDel.render("- desired") + " " + v.st.diffAdd.render("+ live")
	}
	l := []string{head}
	if len(r.Drift.Fields) == 0 {
		if note := classNote(r.Drift.Class); note != "" {
			l = append(l, "  "+note)
		}
	}
	for _, f := range r.Drift.Fields {
		if f.Added {
			l = append(l, v.st.diffAdd.render(clean("+ "+f.Path+": "+f.Actual))+v.st.dim.render("  (added by someone else)"))
			continue
		}
		l = append(l,
			v.st.diffDel.render(clean("- "+f.Path+": "+f.Desired)),
			v.st.diffAdd.render(clean("+ "+f.Path+": "+f.Actual)))
	}

	who := "unknown"
	if r.Attribution != nil {
		who = r.Attribution.String()
	}
	l = append(l, v.field("changed by", v.st.accent.render(clean(who))))
	if r.Attribution != nil && len(r.Attribution.Fields) > 0 {
		l = append(l, v.field("  fields", clean(strings.Join(r.Attribution.Fields, ", "))))
	}
	action := clean(r.Action)
	if action == "" {
		action = "-"
	}
	lat := []string{actionStyle(v.st, r.Action).render(action), "detect " + optDur(r.DetectLatency()),
		"applied " + optDur(r.RepairLatency()), "verified " + optDur(r.VerifyLatency())}
	l = append(l, v.field("action", strings.Join(lat, v.st.dim.render(" · "))))
	if r.Err != "" && r.Err != v.node.Reason {
		l = append(l, v.wrapped("error", r.Err, v.st.errText)...)
	}
	return l
}

// desiredChangeLines renders the last write when it applied a change of
// the desired state, not a repair of drift: what changed, from the old
// value to the new, and the change that caused it.
func (v *detailView) desiredChangeLines(r *hub.Repair) []string {
	head := v.title("CHANGE APPLIED")
	if !r.AppliedAt.IsZero() {
		head += v.st.dim.render(" · " + r.AppliedAt.Format("15:04:05.000"))
	}
	if len(r.Drift.Fields) > 0 {
		head += "  " + v.st.diffDel.render("- was") + " " + v.st.diffAdd.render("+ now")
	}
	l := []string{head}
	for _, f := range r.Drift.Fields {
		if f.Added {
			l = append(l, v.st.diffDel.render(clean("- "+f.Path+": "+f.Actual))+v.st.dim.render("  (added by someone else, removed)"))
			continue
		}
		l = append(l,
			v.st.diffDel.render(clean("- "+f.Path+": "+f.Actual)),
			v.st.diffAdd.render(clean("+ "+f.Path+": "+f.Desired)))
	}
	l = append(l, v.field("cause", v.st.accent.render(clean(r.DesiredChange))))
	lat := []string{actionStyle(v.st, r.Action).render(cmp.Or(clean(r.Action), "-")), "applied " + optDur(r.RepairLatency())}
	l = append(l, v.field("action", strings.Join(lat, v.st.dim.render(" · "))))
	return l
}

// timelineLines renders the timeline with each step's latency relative to
// the first step. A step the hub folded repeats into ends with how many
// times it happened and when last, "×4 (last 14:20:11.011)", as the feed
// counts its repeats; on a narrow screen the detail gives way to the count.
func (v *detailView) timelineLines() []string {
	tl := v.node.Timeline
	l := []string{v.title("TIMELINE")}
	if len(tl) == 0 {
		return append(l, v.st.dim.render("  no steps recorded"))
	}
	first := tl[0].At
	stepW := 0
	for _, e := range tl {
		stepW = max(stepW, width(clean(string(e.Step))))
	}
	for _, e := range tl {
		s := "  " + v.st.dim.render(e.At.Format("15:04:05.000")) + " " +
			pad("+"+dur(e.At.Sub(first)), 9, true) + "  " + pad(clean(string(e.Step)), stepW, false)
		detail := clean(e.Detail)
		times, last := repeatsText(e)
		if times != "" && detail != "" && width(s)+2+width(detail)+2+width(times)+width(last) > v.width {
			last = ""
			detail = truncate(detail, max(v.width-width(s)-2-2-width(times), minDetail))
		} else if times != "" && width(s)+2+width(times)+width(last) > v.width {
			last = ""
		}
		if detail != "" {
			s += "  " + v.st.dim.render(detail)
		}
		if times != "" {
			s += "  " + v.st.accent.render(times) + v.st.dim.render(last)
		}
		l = append(l, strings.TrimRight(s, " "))
	}
	return l
}

// minDetail is the fewest cells a timeline step's detail is cut to so
// that its repeat count fits the line.
const minDetail = 12

// repeatsText is how many times a timeline step happened, "×4", and when
// last, " (last 14:20:11.011)"; both "" when it happened once.
func repeatsText(e hub.TimelineEntry) (times, last string) {
	if e.Repeats <= 0 {
		return "", ""
	}
	times = "×" + strconv.Itoa(int(e.Repeats)+1)
	if !e.LastAt().IsZero() {
		last = " (last " + e.LastAt().Format("15:04:05.000") + ")"
	}
	return times, last
}

// specLines summarises the desired object.
func (v *detailView) specLines() []string {
	l := []string{v.title("DESIRED")}
	spec := v.node.Spec
	if spec == nil && v.specFor == (specKey{id: v.id, revision: v.node.Revision}) {
		switch got := v.specGot; {
		case got == nil:
			return append(l, v.st.dim.render("  reading the desired object from the hub…"))
		case got.err != nil:
			return append(l, v.st.warn.render(clean("  the desired object could not be read: "+got.err.Error())))
		default:
			spec = got.spec
		}
	}
	if spec == nil {
		return append(l, v.st.dim.render("  desired object not available here"))
	}
	head := "  " + string(spec.Kind)
	// Decoded once per render of the detail view, never kept.
	obj, _ := kubeobj.Object(*spec)
	if obj != nil {
		head = "  " + obj.GetAPIVersion() + " " + obj.GetKind()
	}
	res := spec.Name
	if spec.Namespace != "" {
		res = spec.Namespace + "/" + spec.Name
	}
	l = append(l, clean(head+" "+res))
	meta := []string{"policy " + string(spec.Policy)}
	if spec.Tenancy != "" {
		meta = append(meta, "tenancy "+spec.Tenancy)
	}
	if spec.ProgressDeadline > 0 {
		meta = append(meta, "progress deadline "+spec.ProgressDeadline.String())
	}
	if spec.Hash != "" {
		h := spec.Hash
		if len(h) > 12 {
			h = h[:12]
		}
		meta = append(meta, "hash "+h)
	}
	l = append(l, "  "+v.st.dim.render(clean(strings.Join(meta, " · "))))
	if obj != nil {
		for _, s := range objectSummary(obj) {
			l = append(l, "  "+clean(s))
		}
	}
	return l
}

// objectSummary lists the fields that matter of a desired object.
func objectSummary(u *unstructured.Unstructured) []string {
	obj := u.Object
	var out []string
	if labels := u.GetLabels(); len(labels) > 0 {
		keys := make([]string, 0, len(labels))
		for k, val := range labels {
			keys = append(keys, k+"="+val)
		}
		sort.Strings(keys)
		out = append(out, "labels "+strings.Join(keys, ", "))
	}
	switch u.GetKind() {
	case "Deployment":
		if r, ok, _ := unstructured.NestedFieldNoCopy(obj, "spec", "replicas"); ok {
			out = append(out, "replicas "+fmt.Sprint(r))
		}
		if cs, ok, _ := unstructured.NestedFieldNoCopy(obj, "spec", "template", "spec", "containers"); ok {
			list, _ := cs.([]any)
			for _, c := range list {
				m, _ := c.(map[string]any)
				out = append(out, fmt.Sprintf("container %v: %v", m["name"], m["image"]))
			}
		}
	case "Service":
		if t, ok, _ := unstructured.NestedString(obj, "spec", "type"); ok {
			out = append(out, "type "+t)
		}
		if sel, ok, _ := unstructured.NestedStringMap(obj, "spec", "selector"); ok {
			keys := make([]string, 0, len(sel))
			for k, val := range sel {
				keys = append(keys, k+"="+val)
			}
			sort.Strings(keys)
			out = append(out, "selector "+strings.Join(keys, ", "))
		}
		if ps, ok, _ := unstructured.NestedFieldNoCopy(obj, "spec", "ports"); ok {
			list, _ := ps.([]any)
			for _, p := range list {
				m, _ := p.(map[string]any)
				out = append(out, fmt.Sprintf("port %v -> %v", m["port"], m["targetPort"]))
			}
		}
	case "ConfigMap":
		if d, ok, _ := unstructured.NestedFieldNoCopy(obj, "data"); ok {
			m, _ := d.(map[string]any)
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			out = append(out, "data "+plural(len(keys), "key")+": "+strings.Join(keys, ", "))
		}
	}
	return out
}

// NodeText renders the node view of node over snap as plain text (no
// colour, no scrolling), as driftwatch describe prints it: its status,
// reason and why, holds, the drift as a diff with who made it, the
// ignored fields, the timeline and the desired object's summary. node is
// the NodeID's status with its desired object as its Spec, when read
// apart from the snapshot (a remote hub's); width bounds the wrapped
// reasons. Its text is cleaned for the terminal, as the views'.
func NodeText(snap *hub.Snapshot, node hub.NodeStatus, width int, now time.Time) string {
	v := newDetailView(newStyles(true), nil, func() time.Time { return now })
	v.SetSize(width, 0)
	v.open(node.ID, snap)
	v.node, v.found = node, true
	lines := v.lines()
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}
