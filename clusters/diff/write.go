package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/termtext"
)

// driftClasses are the classes of drift in the order summaries list them.
var driftClasses = [...]hub.DriftClass{hub.DriftMissing, hub.DriftModified, hub.DriftAdded, hub.DriftUnlabelled, hub.DriftDeleting}

// WriteText writes the report for a terminal: per drifted object a unified
// diff of its managed fields,
//
//	--- desired prod-eu:casehub/web:deployment
//	+++ live prod-eu:casehub/web:deployment (modified, changed by kubectl-scale 2m ago)
//	@@ -20,7 +20,7 @@
//	...
//
// then a line per difference an ignore rule covers ("ignored <nodeid>
// <path>: <desired> -> <actual>, ignored (rule <name>)"), per object that
// could not be checked, per unreachable cluster and per cluster that refused
// the credentials ("unauthorized <cluster>: ..."), per source not checked
// ("not checked <source>: <reason>"), and a summary line. In-sync objects
// print nothing but the summary. Control characters of the clusters' text
// (values, field managers, errors) are shown escaped (termtext.Clean).
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, o := range r.Objects {
		if !o.Drifted() {
			continue
		}
		note := string(o.Class)
		if a := o.Attribution; a != nil && a.Manager != "" {
			note += ", changed by " + a.Manager
			if !a.At.IsZero() {
				note += " " + ago(r.At.Sub(a.At))
			}
		}
		fmt.Fprintf(&b, "--- desired %s\n+++ live %s (%s)\n", o.ID, o.ID, note)
		b.WriteString(o.Diff)
		if o.Diff != "" && !strings.HasSuffix(o.Diff, "\n") {
			b.WriteString("\n")
		}
		if o.WouldFail != nil {
			fmt.Fprintf(&b, "! dry run: the repair would fail: %v\n", o.WouldFail)
		} else if o.DryRunNote != "" {
			fmt.Fprintf(&b, "! dry run: %s\n", o.DryRunNote)
		}
	}
	for _, o := range r.Objects {
		for _, f := range o.Ignored {
			fmt.Fprintf(&b, "ignored %s %s\n", o.ID, f)
		}
	}
	for _, o := range r.Objects {
		if o.Err != nil {
			fmt.Fprintf(&b, "error %s: %v\n", o.ID, o.Err)
		}
	}
	for _, u := range r.Unreachable {
		if slices.Contains(r.Workspaces, u.Cluster) {
			fmt.Fprintf(&b, "unreachable %s: %v (its resources not checked)\n", u.Cluster, u.Err)
			continue
		}
		fmt.Fprintf(&b, "unreachable %s: %v (%s not checked)\n", u.Cluster, u.Err, plural(u.Objects, "object"))
	}
	for _, u := range r.Unauthorized {
		fmt.Fprintf(&b, "unauthorized %s: %v (%s not checked)\n", u.Cluster, u.Err, plural(u.Objects, "object"))
	}
	for _, n := range r.NotChecked {
		fmt.Fprintf(&b, "not checked %s: %s\n", n.Source, n.Reason)
	}
	b.WriteString(r.summary())
	b.WriteString("\n")
	_, err := io.WriteString(w, printable(b.String()))
	return err
}

// printable cleans each line of a text report (termtext.Clean): the
// values, field managers and errors it quotes come from the clusters.
func printable(text string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		body, nl := strings.CutSuffix(l, "\n")
		if c := termtext.Clean(body); c != body {
			lines[i] = c
			if nl {
				lines[i] += "\n"
			}
		}
	}
	return strings.Join(lines, "")
}

// ago formats how long ago something happened, as kubectl's AGE column.
func ago(d time.Duration) string {
	return duration.HumanDuration(max(d, 0)) + " ago"
}

// plural formats a count with its noun.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// counts are a report's totals.
type counts struct {
	objects, clusters, inSync, drifted, errors int
	// wouldFail counts the drifted objects whose repair a dry run
	// refused.
	wouldFail                            int
	byClass                              map[hub.DriftClass]int
	unreachable, unauthorized, unchecked int
	// workspaces and unreachableWorkspaces count the Terraform workspaces
	// among clusters and unreachable.
	workspaces, unreachableWorkspaces int
}

func (r *Report) counts() counts {
	c := counts{byClass: make(map[hub.DriftClass]int)}
	seen := make(map[string]bool)
	for _, o := range r.Objects {
		c.objects++
		if !seen[o.ID.Cluster] {
			seen[o.ID.Cluster] = true
			if slices.Contains(r.Workspaces, o.ID.Cluster) {
				c.workspaces++
			} else {
				c.clusters++
			}
		}
		switch {
		case o.Err != nil:
			c.errors++
		case o.Class == hub.DriftNone:
			c.inSync++
		default:
			c.drifted++
			c.byClass[o.Class]++
			if o.WouldFail != nil {
				c.wouldFail++
			}
		}
	}
	for _, u := range r.Unreachable {
		if slices.Contains(r.Workspaces, u.Cluster) {
			c.unreachableWorkspaces++
			continue
		}
		c.unreachable++
		c.unchecked += u.Objects
	}
	for _, u := range r.Unauthorized {
		c.unauthorized++
		c.unchecked += u.Objects
	}
	return c
}

// summary is the closing line of WriteText, e.g. "summary: 12 objects on 2
// clusters: 10 in sync, 2 drifted (1 modified, 1 added); 1 cluster
// unreachable, 1 cluster unauthorized (7 objects not checked)".
func (r *Report) summary() string {
	c := r.counts()
	where := plural(c.clusters, "cluster")
	switch {
	case c.workspaces > 0 && c.clusters == 0:
		where = plural(c.workspaces, "workspace")
	case c.workspaces > 0:
		where += " and " + plural(c.workspaces, "workspace")
	}
	s := fmt.Sprintf("summary: %s on %s: ", plural(c.objects, "object"), where)
	switch {
	case c.objects == 0:
		s = "summary: no object checked"
	case c.drifted == 0 && c.errors == 0:
		s += "all in sync"
	default:
		s += fmt.Sprintf("%d in sync, %d drifted", c.inSync, c.drifted)
		var parts []string
		for _, class := range driftClasses {
			if n := c.byClass[class]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, class))
			}
		}
		if len(parts) > 0 {
			s += " (" + strings.Join(parts, ", ") + ")"
		}
		if c.wouldFail > 0 {
			s += fmt.Sprintf(", %d whose repair would fail (dry run)", c.wouldFail)
		}
		if c.errors > 0 {
			s += fmt.Sprintf(", %d not checked (errors)", c.errors)
		}
	}
	var down []string
	if c.unreachable > 0 {
		down = append(down, plural(c.unreachable, "cluster")+" unreachable")
	}
	if c.unauthorized > 0 {
		down = append(down, plural(c.unauthorized, "cluster")+" unauthorized")
	}
	if len(down) > 0 {
		s += fmt.Sprintf("; %s (%s not checked)", strings.Join(down, ", "), plural(c.unchecked, "object"))
	}
	if c.unreachableWorkspaces > 0 {
		s += fmt.Sprintf("; %s not planned", plural(c.unreachableWorkspaces, "workspace"))
	}
	if n := len(r.NotChecked); n > 0 {
		s += fmt.Sprintf("; %s not checked", plural(n, "source"))
	}
	return s
}

// The JSON form of a report. Field names are camelCase and stable: scripts
// depend on them.
type (
	jsonReport struct {
		At           time.Time          `json:"at"`
		ExitCode     int                `json:"exitCode"`
		Summary      jsonSummary        `json:"summary"`
		Objects      []jsonObject       `json:"objects"`
		Unreachable  []jsonClusterError `json:"unreachable"`
		Unauthorized []jsonClusterError `json:"unauthorized"`
		NotChecked   []jsonNotChecked   `json:"notChecked,omitempty"`
	}
	jsonSummary struct {
		Objects      int            `json:"objects"`
		InSync       int            `json:"inSync"`
		Drifted      int            `json:"drifted"`
		Errors       int            `json:"errors"`
		ByClass      map[string]int `json:"byClass"`
		Unreachable  int            `json:"unreachableClusters"`
		Unauthorized int            `json:"unauthorizedClusters"`
		Unchecked    int            `json:"uncheckedObjects"`
		// Unplanned counts the Terraform workspaces in unreachable.
		Unplanned int `json:"unplannedWorkspaces,omitempty"`
		// NotChecked counts the sources left out (notChecked).
		NotChecked int `json:"notCheckedSources,omitempty"`
		// WouldFail counts the drifted objects whose repair a dry run
		// refused (--dry-run).
		WouldFail int `json:"wouldFail,omitempty"`
	}
	jsonObject struct {
		NodeID      string           `json:"nodeId"`
		Cluster     string           `json:"cluster"`
		Namespace   string           `json:"namespace,omitempty"`
		Name        string           `json:"name"`
		Kind        string           `json:"kind"`
		Application string           `json:"application"`
		Class       string           `json:"class,omitempty"`
		Fields      []jsonField      `json:"fields,omitempty"`
		Ignored     []jsonIgnored    `json:"ignored,omitempty"`
		Attribution *jsonAttribution `json:"attribution,omitempty"`
		Diff        string           `json:"diff,omitempty"`
		Error       string           `json:"error,omitempty"`
		// WouldFail and DryRun are Object.WouldFail and
		// Object.DryRunNote (with --dry-run).
		WouldFail string `json:"wouldFail,omitempty"`
		DryRun    string `json:"dryRun,omitempty"`
	}
	jsonField struct {
		Path    string `json:"path"`
		Desired string `json:"desired"`
		Actual  string `json:"actual"`
		Added   bool   `json:"added,omitempty"`
	}
	jsonIgnored struct {
		jsonField
		Rule    string `json:"rule"`
		Manager string `json:"manager,omitempty"`
	}
	jsonAttribution struct {
		Manager   string     `json:"manager"`
		Operation string     `json:"operation,omitempty"`
		Time      *time.Time `json:"time,omitempty"`
		Fields    []string   `json:"fields,omitempty"`
	}
	jsonClusterError struct {
		Cluster string `json:"cluster"`
		Error   string `json:"error"`
		Objects int    `json:"objects"`
	}
	jsonNotChecked struct {
		Source string `json:"source"`
		Reason string `json:"reason"`
	}
)

// WriteJSON writes the report as one indented JSON document with
// camelCase keys: at, exitCode, summary, objects (every checked object,
// in sync ones included, sorted by nodeId), unreachable, unauthorized and
// notChecked (when a source was left out).
func (r *Report) WriteJSON(w io.Writer) error {
	c := r.counts()
	out := jsonReport{
		At: r.At, ExitCode: r.ExitCode(),
		Summary: jsonSummary{Objects: c.objects, InSync: c.inSync, Drifted: c.drifted, Errors: c.errors,
			ByClass: make(map[string]int), Unreachable: c.unreachable, Unauthorized: c.unauthorized, Unchecked: c.unchecked, Unplanned: c.unreachableWorkspaces,
			NotChecked: len(r.NotChecked), WouldFail: c.wouldFail},
		Objects:      make([]jsonObject, 0, len(r.Objects)),
		Unreachable:  make([]jsonClusterError, 0, len(r.Unreachable)),
		Unauthorized: make([]jsonClusterError, 0, len(r.Unauthorized)),
	}
	for class, n := range c.byClass {
		out.Summary.ByClass[string(class)] = n
	}
	for _, o := range r.Objects {
		jo := jsonObject{
			NodeID: o.ID.String(), Cluster: o.ID.Cluster, Namespace: o.ID.Namespace(), Name: o.ID.Name(),
			Kind: string(o.ID.Kind), Application: o.Application, Class: string(o.Class), Diff: o.Diff,
		}
		for _, f := range o.Fields {
			jo.Fields = append(jo.Fields, jsonField{Path: f.Path, Desired: f.Desired, Actual: f.Actual, Added: f.Added})
		}
		for _, f := range o.Ignored {
			jo.Ignored = append(jo.Ignored, jsonIgnored{jsonField: jsonField{Path: f.Path, Desired: f.Desired, Actual: f.Actual, Added: f.Added},
				Rule: f.Rule, Manager: f.Manager})
		}
		if a := o.Attribution; a != nil {
			ja := &jsonAttribution{Manager: a.Manager, Operation: a.Operation, Fields: a.Fields}
			if !a.At.IsZero() {
				at := a.At
				ja.Time = &at
			}
			jo.Attribution = ja
		}
		if o.WouldFail != nil {
			jo.WouldFail = o.WouldFail.Error()
		}
		jo.DryRun = o.DryRunNote
		if o.Err != nil {
			jo.Error = o.Err.Error()
		}
		out.Objects = append(out.Objects, jo)
	}
	for _, u := range r.Unreachable {
		out.Unreachable = append(out.Unreachable, jsonClusterError{Cluster: u.Cluster, Error: u.Err.Error(), Objects: u.Objects})
	}
	for _, u := range r.Unauthorized {
		out.Unauthorized = append(out.Unauthorized, jsonClusterError{Cluster: u.Cluster, Error: u.Err.Error(), Objects: u.Objects})
	}
	for _, n := range r.NotChecked {
		out.NotChecked = append(out.NotChecked, jsonNotChecked(n))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
