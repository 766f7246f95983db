package api

import (
	"net/http"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// A caller who is not an operator never sees the value of an environment
// variable, nor any value of a Secret (its data and stringData, and every
// field diff of a Secret NodeID): not in a field diff, not in the desired
// object, not in a timeline detail, status reason or error that quotes one.
// A Secret's keys stay visible. Everything here copies on write: the wire
// values given are shared (a delta is marshalled once for every client) and
// are never modified.

// view is what a caller may see; each view of a snapshot or delta is
// marshalled once, whatever the number of clients.
type view int

const (
	// viewOperator is everything.
	viewOperator view = iota
	// viewRedacted has environment values and Secret values replaced by
	// apiv1.Redacted.
	viewRedacted
	numViews
)

// viewOf returns what the caller of r may see.
func viewOf(r *http.Request) view {
	if callerOf(r).Role == RoleOperator {
		return viewOperator
	}
	return viewRedacted
}

// envPath matches a field path inside a container's env list
// ("...containers[app].env[MODE].value", "...env"), not envFrom.
var envPath = regexp.MustCompile(`(?:^|\.)env(?:\[|\.|$)`)

// envText matches text that may quote an environment value: a field path
// into an env list, or an object rendered with an env list ("{env: [...]").
var envText = regexp.MustCompile(`(?:^|[\s.{,\[])env(?:\[|\.|:|$)`)

// envValueRendered matches a rendered object that holds an env list.
var envValueRendered = regexp.MustCompile(`(?:^|[\s{,\[])env: `)

// secretText matches text that may quote a value of a Secret: a field path
// into its data or stringData ("data.password: ... -> ...",
// "+data.token=...", "data[password]"), or an object rendered with one
// ("{data: {...}").
var secretText = regexp.MustCompile(`(?:^|[\s.{,\[+])(?:data|stringData)(?:\[|\.|:|=|$)`)

// kindSecret is the NodeID slug of a Kubernetes Secret (core group).
const kindSecret hub.Kind = "secret"

// isSecretID reports whether a NodeID's text form (cluster:resource:slug)
// is a Secret's.
func isSecretID(id string) bool {
	i := strings.LastIndexByte(id, ':')
	return i >= 0 && hub.Kind(id[i+1:]) == kindSecret
}

// rules are the redaction rules of one NodeID: env values always, every
// value of a Secret's field diffs and texts that mention its data.
type rules struct{ secret bool }

// rulesOf returns the rules of the NodeID of kind slug k.
func rulesOf(k hub.Kind) rules { return rules{secret: k == kindSecret} }

// none is the text of an absent value in a field diff.
const none = "<none>"

// needsRedaction reports whether a field diff's values may hold a secret:
// every diff of a Secret; elsewhere one whose path is in an env list, or
// one with a value that renders an object holding one (a container, the pod
// template).
func (r rules) needsRedaction(f apiv1.FieldDiff) bool {
	return r.secret || envPath.MatchString(f.Path) || envValueRendered.MatchString(f.Desired) || envValueRendered.MatchString(f.Actual)
}

// mention returns the position of the first mention in s of what may quote
// a secret (an env list; a Secret's data), or nil.
func (r rules) mention(s string) []int {
	loc := envText.FindStringIndex(s)
	if !r.secret {
		return loc
	}
	if sl := secretText.FindStringIndex(s); sl != nil && (loc == nil || sl[0] < loc[0]) {
		return sl
	}
	return loc
}

func redactValue(s string) string {
	if s == none || s == "" {
		return s
	}
	return apiv1.Redacted
}

// redactDiffs returns the diffs with secret values redacted (fs itself
// when there is nothing to redact).
func (r rules) redactDiffs(fs []apiv1.FieldDiff) []apiv1.FieldDiff {
	var out []apiv1.FieldDiff
	for i, f := range fs {
		if !r.needsRedaction(f) {
			continue
		}
		if out == nil {
			out = append([]apiv1.FieldDiff{}, fs...)
		}
		out[i].Desired, out[i].Actual = redactValue(f.Desired), redactValue(f.Actual)
	}
	if out == nil {
		return fs
	}
	return out
}

// quoted is a text fragment the hub writes for a field diff (its
// hub.FieldDiff.String form, as in a drift summary) and its redacted form.
type quoted struct{ text, redacted string }

// quotes returns the fragments of the diffs that need redaction.
func (r rules) quotes(fs []apiv1.FieldDiff) []quoted {
	var q []quoted
	for _, f := range fs {
		if !r.needsRedaction(f) {
			continue
		}
		red := f
		red.Desired, red.Actual = redactValue(f.Desired), redactValue(f.Actual)
		q = append(q, quoted{text: diffText(f), redacted: diffText(red)})
	}
	return q
}

// diffText is the hub's text form of a field diff.
func diffText(f apiv1.FieldDiff) string {
	return hub.FieldDiff{Path: f.Path, Desired: f.Desired, Actual: f.Actual, Added: f.Added}.String()
}

// redactText redacts free text (a timeline detail, a reason, an error):
// the known diffs it quotes are replaced by their redacted form; past any
// other mention of an env list (or, for a Secret, of its data), the text is
// cut and ends in apiv1.Redacted.
func (r rules) redactText(s string, known []quoted) string {
	if r.mention(s) == nil && !slices.ContainsFunc(known, func(q quoted) bool { return strings.Contains(s, q.text) }) {
		return s
	}
	var b strings.Builder
	for {
		at, q := -1, quoted{}
		for _, k := range known {
			if i := strings.Index(s, k.text); i >= 0 && (at < 0 || i < at) {
				at, q = i, k
			}
		}
		gap := s
		if at >= 0 {
			gap = s[:at]
		}
		if loc := r.mention(gap); loc != nil {
			// Cut at the start of the word that mentions env (or data).
			cut := strings.LastIndexAny(gap[:loc[0]+1], " \t\n") + 1
			b.WriteString(gap[:cut])
			b.WriteString(apiv1.Redacted)
			return b.String()
		}
		b.WriteString(gap)
		if at < 0 {
			return b.String()
		}
		b.WriteString(q.redacted)
		s = s[at+len(q.text):]
	}
}

// redactNode returns the node as a caller who is not an operator sees it.
func redactNode(n apiv1.Node) apiv1.Node {
	rs := rulesOf(hub.Kind(n.Kind))
	var known []quoted
	if r := n.LastRepair; r != nil {
		known = rs.quotes(r.Drift.Fields)
		rr := *r
		rr.Drift.Fields = rs.redactDiffs(r.Drift.Fields)
		rr.Error = rs.redactText(r.Error, known)
		n.LastRepair = &rr
	}
	if len(n.Ignored) > 0 {
		ig := make([]apiv1.IgnoredField, len(n.Ignored))
		for i, f := range n.Ignored {
			ig[i] = f
			ig[i].FieldDiff = rs.redactDiffs([]apiv1.FieldDiff{f.FieldDiff})[0]
		}
		n.Ignored = ig
	}
	n.Reason = rs.redactText(n.Reason, known)
	var tl []apiv1.TimelineEntry
	for i, e := range n.Timeline {
		d := rs.redactText(e.Detail, known)
		if d == e.Detail {
			continue
		}
		if tl == nil {
			tl = append([]apiv1.TimelineEntry{}, n.Timeline...)
		}
		tl[i].Detail = d
	}
	if tl != nil {
		n.Timeline = tl
	}
	return n
}

// redactFeedEntry returns the feed entry as a caller who is not an operator
// sees it.
func redactFeedEntry(e apiv1.FeedEntry) apiv1.FeedEntry {
	rs := rules{secret: isSecretID(e.ID)}
	e.Error = rs.redactText(e.Error, rs.quotes(e.Fields))
	e.Fields = rs.redactDiffs(e.Fields)
	return e
}

func redactCluster(c apiv1.Cluster) apiv1.Cluster {
	c.LastError = rules{}.redactText(c.LastError, nil)
	return c
}

// redactLists redacts the clusters, nodes and feed of a snapshot or delta
// into new slices.
func redactLists(cs []apiv1.Cluster, ns []apiv1.Node, fs []apiv1.FeedEntry) ([]apiv1.Cluster, []apiv1.Node, []apiv1.FeedEntry) {
	oc := make([]apiv1.Cluster, len(cs))
	for i, c := range cs {
		oc[i] = redactCluster(c)
	}
	on := make([]apiv1.Node, len(ns))
	for i, n := range ns {
		on[i] = redactNode(n)
	}
	of := make([]apiv1.FeedEntry, len(fs))
	for i, e := range fs {
		of[i] = redactFeedEntry(e)
	}
	return oc, on, of
}

// redactSnapshot returns the snapshot as a caller who is not an operator
// sees it.
func redactSnapshot(s *apiv1.Snapshot) *apiv1.Snapshot {
	out := *s
	out.Clusters, out.Nodes, out.Feed = redactLists(s.Clusters, s.Nodes, s.Feed)
	return &out
}

// redactDelta returns the delta as a caller who is not an operator sees it.
func redactDelta(d *apiv1.Delta) *apiv1.Delta {
	out := *d
	out.Clusters, out.Nodes, out.Feed = redactLists(d.Clusters, d.Nodes, d.Feed)
	return &out
}

// redactNodeDetail returns the node detail as a caller who is not an
// operator sees it: secrets are redacted from the status and from a copy of
// the desired object: env values (spec.template.spec.*containers[*].env[*].value)
// and, in a Secret, every value of data and stringData (the keys stay).
func redactNodeDetail(d apiv1.NodeDetail) apiv1.NodeDetail {
	d.Status = redactNode(d.Status)
	if d.Cluster != nil {
		c := redactCluster(*d.Cluster)
		d.Cluster = &c
	}
	if d.Desired == nil {
		return d
	}
	obj := (&unstructured.Unstructured{Object: d.Desired}).DeepCopy().Object
	if rulesOf(hub.Kind(d.Status.Kind)).secret || isSecretObject(obj) {
		for _, field := range [...]string{"data", "stringData"} {
			m, _ := obj[field].(map[string]any)
			for k := range m {
				m[k] = apiv1.Redacted
			}
		}
	}
	v, _, _ := unstructured.NestedFieldNoCopy(obj, "spec", "template", "spec")
	pod, _ := v.(map[string]any)
	for _, list := range [...]string{"initContainers", "containers", "ephemeralContainers"} {
		cs, _ := pod[list].([]any)
		for _, c := range cs {
			cm, _ := c.(map[string]any)
			env, _ := cm["env"].([]any)
			for _, e := range env {
				if em, ok := e.(map[string]any); ok {
					if _, has := em["value"]; has {
						em["value"] = apiv1.Redacted
					}
				}
			}
		}
	}
	d.Desired = obj
	return d
}

// isSecretObject reports whether a Kubernetes object is a Secret (core
// group, any version).
func isSecretObject(obj map[string]any) bool {
	kind, _ := obj["kind"].(string)
	apiVersion, _ := obj["apiVersion"].(string)
	return kind == "Secret" && !strings.Contains(apiVersion, "/")
}
