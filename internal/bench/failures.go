package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/driftwatch/driftwatch/hub"
)

// failuresShown bounds the failures the text output lists (the JSON has
// them all).
const failuresShown = 20

// failureReport says why one drift was not seen repaired, or why one
// object never showed in sync: what the bench saw of it, and what the
// hub's snapshot said of the object and of its cluster when the run ended.
type failureReport struct {
	Cluster string `json:"cluster"`
	NodeID  string `json:"nodeID"`
	// Action is the drift made ("" when the hub never synced).
	Action string `json:"action,omitempty"`
	// DriftError is the drift call's error (or that a later drift of the
	// same object superseded it).
	DriftError string `json:"driftError,omitempty"`
	// Seen lists what the bench saw of the drift: floor, hub-event,
	// detect, apply (repair never, or it would not be a failure).
	Seen string `json:"seen,omitempty"`
	// HubStatus, HubReason and LastStep are the hub's status of the
	// NodeID, its reason and its latest timeline step.
	HubStatus string `json:"hubStatus"`
	HubReason string `json:"hubReason,omitempty"`
	LastStep  string `json:"lastStep,omitempty"`
	// ClusterState and ClusterError are the cluster's health.
	ClusterState string `json:"clusterState"`
	ClusterError string `json:"clusterError,omitempty"`
}

// describeNode fills the hub's view of id and of its cluster into f.
func describeNode(f *failureReport, id hub.NodeID, snap *hub.Snapshot) {
	f.Cluster, f.NodeID = id.Cluster, id.String()
	f.HubStatus, f.ClusterState = "not in the hub's snapshot", "not in the hub's snapshot"
	if snap == nil {
		return
	}
	if n, ok := snap.Node(id); ok {
		f.HubStatus, f.HubReason = string(n.Status), n.Reason
		if len(n.Timeline) > 0 {
			last := n.Timeline[len(n.Timeline)-1]
			f.LastStep = string(last.Step)
			if last.Detail != "" {
				f.LastStep += ": " + last.Detail
			}
			f.LastStep += " at " + last.At.Format("15:04:05.000")
		}
	}
	for _, c := range snap.Clusters {
		if c.Cluster == id.Cluster {
			f.ClusterState, f.ClusterError = string(c.State), c.LastError
			break
		}
	}
}

// explainFailures returns a failure report for every sample that failed or
// was not seen repaired, with what snap says of its NodeID and cluster.
func explainFailures(samples []Sample, snap *hub.Snapshot) []failureReport {
	var out []failureReport
	for _, s := range samples {
		if s.Err == nil && !s.Repair.IsZero() {
			continue
		}
		f := failureReport{Action: string(s.Action)}
		if s.Err != nil {
			f.DriftError = s.Err.Error()
		}
		var seen []string
		for _, st := range []struct {
			name string
			zero bool
		}{{"floor", s.Floor.IsZero()}, {"hub-event", s.Observed.IsZero()}, {"detect", s.Detect.IsZero()}, {"apply", s.Applied.IsZero()}} {
			if !st.zero {
				seen = append(seen, st.name)
			}
		}
		if len(seen) == 0 {
			f.Seen = "nothing"
		} else {
			f.Seen = strings.Join(seen, ", ")
		}
		describeNode(&f, s.Target.ID, snap)
		out = append(out, f)
	}
	return out
}

// explainUnsynced returns a failure report for every spec that snap does
// not show in sync (or repaired).
func explainUnsynced(specs []hub.NodeSpec, snap *hub.Snapshot) []failureReport {
	var out []failureReport
	for _, s := range specs {
		if snap != nil {
			if n, ok := snap.Node(s.ID); ok && (n.Status == hub.StatusInSync || n.Status == hub.StatusRepaired) {
				continue
			}
		}
		var f failureReport
		describeNode(&f, s.ID, snap)
		out = append(out, f)
	}
	return out
}

// writeFailures lists up to failuresShown failures of one run as a table
// under the heading what.
func writeFailures(w io.Writer, what string, fs []failureReport) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s: %d (the hub's status of each and of its cluster when the run ended)\n", what, len(fs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cluster\tnode\taction\tbench saw\thub status\treason\tlast step\tcluster state\tcluster error")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, f := range fs[:min(len(fs), failuresShown)] {
		saw := dash(f.Seen)
		if f.DriftError != "" {
			saw = "drift call: " + f.DriftError
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Cluster, f.NodeID, dash(f.Action), saw,
			f.HubStatus, dash(f.HubReason), dash(f.LastStep), f.ClusterState, dash(f.ClusterError))
	}
	_ = tw.Flush()
	if len(fs) > failuresShown {
		fmt.Fprintf(w, "... and %d more (all of them in -o json)\n", len(fs)-failuresShown)
	}
}
