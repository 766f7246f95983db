package tui

import (
	"strconv"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// contestLine describes a fight with another writer: who, the backoff and
// the next attempt (or when the fight clears if the last repair holds).
func contestLine(st *styles, c hub.Contest, now time.Time) string {
	s := st.contested.render(clean(c.Who()))
	if len(c.Fields) > 0 {
		s += st.dim.render(" over ") + clean(strings.Join(c.Fields, ", "))
	}
	repairs := " repairs"
	if c.Undone == 1 {
		repairs = " repair"
	}
	s += st.dim.render(" · undid ") + strconv.Itoa(c.Undone) + st.dim.render(repairs+" · backoff ") + shortDuration(c.Backoff)
	switch {
	case !c.NextAttempt.IsZero():
		s += st.dim.render(" · next repair ") + c.NextAttempt.Format("15:04:05") +
			st.dim.render(" (in "+shortDuration(max(c.NextAttempt.Sub(now), 0).Round(time.Second))+")")
	case !c.ClearsAt.IsZero():
		s += st.dim.render(" · clears ") + c.ClearsAt.Format("15:04:05") + st.dim.render(" if the last repair holds")
	}
	return s
}

// ignoredLines lists the differences ignore rules cover: not drift, not
// repaired.
func (v *detailView) ignoredLines() []string {
	l := []string{v.title("IGNORED")}
	for _, f := range v.node.Ignored {
		rule := "ignored (rule " + f.Rule
		if f.Manager != "" {
			rule += ", owned by " + f.Manager
		}
		rule += ")"
		l = append(l, "  "+clean(f.FieldDiff.String())+"  "+v.st.dim.render(clean(rule)))
	}
	return l
}

// ProposeIgnoreRule returns the ignore rule that would end a NodeID's fight
// or drift, as YAML for the application's `ignore:` list: the manager it is
// contested with (or that changed it last) and the fields fought over. It
// returns "" when there is nothing to propose (no drift recorded).
func ProposeIgnoreRule(n hub.NodeStatus) string {
	var manager string
	var fields []string
	switch {
	case n.Contested != nil:
		manager, fields = n.Contested.Manager, n.Contested.Fields
	case n.LastRepair != nil:
		if a := n.LastRepair.Attribution; a != nil {
			manager, fields = a.Manager, a.Fields
		}
		if len(fields) == 0 {
			for _, f := range n.LastRepair.Drift.Fields {
				fields = append(fields, f.Path)
			}
		}
	}
	if manager == "" && len(fields) == 0 {
		return ""
	}
	name := manager
	if name == "" {
		name = "fields of " + n.Application
	}
	var b strings.Builder
	b.WriteString("ignore:\n")
	b.WriteString("  - name: " + strconv.Quote(name) + "\n")
	if manager != "" {
		b.WriteString("    managers: [" + strconv.Quote(manager) + "]\n")
	}
	if len(fields) > 0 {
		q := make([]string, len(fields))
		for i, f := range fields {
			q[i] = strconv.Quote(f)
		}
		b.WriteString("    paths: [" + strings.Join(q, ", ") + "]\n")
	}
	if n.Kind != "" {
		b.WriteString("    kinds: [" + kindName(n.Kind) + "]\n")
	}
	return b.String()
}

// kindName is the kind as the config writes it (Deployment).
func kindName(k hub.Kind) string {
	switch k {
	case hub.KindDeployment:
		return "Deployment"
	case hub.KindConfigMap:
		return "ConfigMap"
	case hub.KindService:
		return "Service"
	}
	return string(k)
}

// proposalLines shows the proposed ignore rule (key i).
func (v *detailView) proposalLines() []string {
	rule := ProposeIgnoreRule(v.node)
	l := []string{v.title("PROPOSED IGNORE RULE") + v.st.dim.render(clean(" · add to application "+v.node.Application+" in the config, then reload · W writes it · i hides"))}
	if rule == "" {
		return append(l, v.st.dim.render("  no drift recorded: nothing to propose"))
	}
	for _, line := range strings.Split(strings.TrimSuffix(rule, "\n"), "\n") {
		l = append(l, "  "+clean(line))
	}
	return l
}

// askWriteRule asks to write the proposed ignore rule of the open node into
// the config file (key W, once i shows the proposal).
func (m *Model) askWriteRule() {
	v := m.detail
	switch {
	case m.opts.ReadOnly:
		m.setStatus(ReadOnlyMessage, true)
		return
	case m.opts.WriteRule == nil:
		m.setStatus(WriteRuleHint, true)
		return
	case !v.propose:
		m.setStatus("press i first to see the proposed ignore rule", true)
		return
	case !v.found || v.node.Application == "":
		m.setStatus("no application known for "+v.id.String(), true)
		return
	}
	rule := ProposeIgnoreRule(v.node)
	if rule == "" {
		m.setStatus("no drift recorded: nothing to propose", true)
		return
	}
	app, write := v.node.Application, m.opts.WriteRule
	m.confirm = &pendingAction{
		question: "Add the proposed ignore rule to application " + app + " in the config file and reload?",
		started:  "writing the ignore rule of " + app + "…",
		run:      func() (string, error) { return write(app, rule) },
	}
}
