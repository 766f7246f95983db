package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/api"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
	"github.com/driftwatch/driftwatch/internal/termtext"
	"github.com/driftwatch/driftwatch/tui"
)

// Remote is a client of a running hub (driftwatch serve) for the one-shot
// commands: status, pause, resume, hold, release, repair and policy. Each
// does what the terminal UI's key does, through the same API, so a
// runbook, a script or a chat bot can pull the same switches.
type Remote struct {
	server string
	client *api.Client
	now    func() time.Time
	out    io.Writer
	// streamLost is told why a subscription's stream ended (Log sets it
	// before it subscribes); nil: nothing is.
	streamLost func(error)
}

// hubClient is what the commands ask of a hub: a plain client of a hub of
// one process, or a ReplicaClient of a hub that runs as several (one view
// of all of them; each action sent to the replica that manages its
// cluster).
type hubClient interface {
	Snapshot(ctx context.Context) (*hub.Snapshot, error)
	RepairNow(id hub.NodeID) error
	PauseCluster(cluster string, paused bool) error
	PauseClusterNote(cluster string, note hub.SwitchNote) error
	SetApplicationPolicy(app string, p hub.Policy) error
	SetApplicationPolicyNote(app string, p hub.Policy, note hub.SwitchNote) error
	Hold(t hub.HoldTarget, ttl time.Duration, reason string) (hub.Hold, error)
	ReleaseHold(t hub.HoldTarget) error
	Subscribe() (<-chan *hub.Snapshot, func())
	Node(ctx context.Context, id hub.NodeID) (hub.NodeStatus, error)
	NodeDetail(ctx context.Context, id hub.NodeID) (apiv1.NodeDetail, error)
}

// hub returns the client the commands use: it asks the hub for its
// replicas (GET /api/v1/replicas) and, when it runs as several, returns a
// ReplicaClient; a hub of one process, or one older than the route, is
// asked as it is.
func (r *Remote) hub() (hubClient, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.client.ResponseTimeout())
	defer cancel()
	l, err := r.client.Replicas(ctx)
	var ae *api.Error
	switch {
	case errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound:
		return r.client, nil
	case err != nil:
		return nil, r.hubError(err)
	case len(l.Replicas) > 0:
		return api.NewReplicaClient(r.client, 0), nil
	}
	return r.client, nil
}

// NewRemote returns a Remote of the hub at server (serve's --listen
// address), writing what it did to out. Its error (a malformed address,
// a token that would cross the network in clear) is the caller's usage
// error.
func NewRemote(server string, opts api.ClientOptions, out io.Writer) (*Remote, error) {
	r := &Remote{server: server, now: time.Now, out: out}
	opts.StreamLost = func(err error) {
		if r.streamLost != nil {
			r.streamLost(err)
		}
	}
	c, err := api.NewClientWithOptions(server, opts)
	if err != nil {
		return nil, err
	}
	r.client = c
	return r, nil
}

// hubError phrases an error of a request to the hub: a refused connection
// says that no hub answers there and how to name another.
func (r *Remote) hubError(err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("no hub answers at %s (is driftwatch serve running there? --server or $DRIFTWATCH_SERVER names another address): %w", r.server, err)
	}
	return err
}

// Snapshot returns the hub's latest snapshot: one view of every replica
// of a hub that runs as several.
func (r *Remote) Snapshot() (*hub.Snapshot, error) {
	c, err := r.hub()
	if err != nil {
		return nil, err
	}
	return r.snapshotOf(context.Background(), c)
}

// snapshotOf reads c's snapshot within the client's response timeout; a
// failure is phrased by hubError.
func (r *Remote) snapshotOf(ctx context.Context, c hubClient) (*hub.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, r.client.ResponseTimeout())
	defer cancel()
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return nil, r.hubError(err)
	}
	return snap, nil
}

// Reload asks the hub to reload its config file (POST /api/v1/reload),
// allowing a guarded prune with allowPrune, and says so. A refusal (the
// error wraps hub.ErrPruneRefused and says what would have been pruned)
// or a rejection is an error.
func (r *Remote) Reload(allowPrune bool) error {
	if err := r.client.Reload(allowPrune); err != nil {
		if errors.Is(err, hub.ErrPruneRefused) {
			// Said as such, not as a failed call (exit 1 as well).
			return &ExitError{Code: 1, Err: fmt.Errorf("reload refused: %w", err)}
		}
		return r.hubError(err)
	}
	fmt.Fprintf(r.out, "config reloaded by the hub at %s\n", r.server)
	return nil
}

// Pause pauses (or, with paused false, resumes) repairs on each cluster:
// drift is still reported. A pause carries reason (may be empty) in its
// note; the hub names who paused it. With all, it pauses every cluster the
// hub knows now (a cluster discovered later is not paused), or resumes
// every paused one. It goes on past a cluster the hub refuses and returns
// an error naming each.
func (r *Remote) Pause(clusters []string, all, paused bool, reason string) error {
	h, err := r.hub()
	if err != nil {
		return err
	}
	if all {
		snap, err := r.snapshotOf(context.Background(), h)
		if err != nil {
			return err
		}
		clusters = clusters[:0]
		for _, c := range snap.Clusters {
			// Resuming all resumes the paused ones; pausing all pauses
			// each again (a later pause wins over a manual repair asked
			// before it).
			if paused || c.Paused {
				clusters = append(clusters, c.Cluster)
			}
		}
		switch {
		case len(snap.Clusters) == 0:
			return errors.New("the hub manages no cluster")
		case len(clusters) == 0:
			fmt.Fprintln(r.out, "no cluster is paused")
			return nil
		}
	}
	var errs []error
	for _, c := range clusters {
		var err error
		if paused {
			err = h.PauseClusterNote(c, hub.SwitchNote{Reason: reason})
		} else {
			err = h.PauseCluster(c, false)
		}
		if err != nil {
			errs = append(errs, r.hubError(err))
			continue
		}
		if paused {
			fmt.Fprintf(r.out, "cluster %s paused: no write there can happen until driftwatch resume %s; its drift is still reported\n", termtext.Clean(c), termtext.Clean(c))
		} else {
			fmt.Fprintf(r.out, "cluster %s resumed: its drift is repaired again\n", termtext.Clean(c))
		}
	}
	return errors.Join(errs...)
}

// Hold stops the repairs of a NodeID, an application or a cluster for ttl,
// with a reason people read in every view of it.
func (r *Remote) Hold(t hub.HoldTarget, ttl time.Duration, reason string) error {
	c, err := r.hub()
	if err != nil {
		return err
	}
	h, err := c.Hold(t, ttl, reason)
	if err != nil {
		return r.hubError(err)
	}
	fmt.Fprintf(r.out, "%s %s held until %s (%s): %s\n", h.Target.Scope, termtext.Clean(h.Target.Name),
		h.Until.Local().Format("2006-01-02 15:04:05"), ttl, termtext.Clean(h.Reason))
	return nil
}

// Release ends the hold on a target.
func (r *Remote) Release(t hub.HoldTarget) error {
	c, err := r.hub()
	if err != nil {
		return err
	}
	if err := c.ReleaseHold(t); err != nil {
		return r.hubError(err)
	}
	fmt.Fprintf(r.out, "hold on %s %s released\n", t.Scope, termtext.Clean(t.Name))
	return nil
}

// Repair asks the hub to repair each NodeID now, once, past warn-only, a
// pause or a hold set before it. It goes on past a NodeID the hub refuses
// and returns an error naming each.
func (r *Remote) Repair(ids []hub.NodeID) error {
	c, err := r.hub()
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if err := c.RepairNow(id); err != nil {
			errs = append(errs, r.hubError(err))
			continue
		}
		fmt.Fprintf(r.out, "repair of %s requested\n", termtext.Clean(id.String()))
	}
	return errors.Join(errs...)
}

// Policy sets an application's policy at run time (warn-only or repair);
// "" clears the override, back to the config's. reason (may be empty) says why.
func (r *Remote) Policy(app string, p hub.Policy, reason string) error {
	c, err := r.hub()
	if err != nil {
		return err
	}
	if err := c.SetApplicationPolicyNote(app, p, hub.SwitchNote{Reason: reason}); err != nil {
		return r.hubError(err)
	}
	switch p {
	case "":
		fmt.Fprintf(r.out, "application %s follows its config's policy again\n", termtext.Clean(app))
	case hub.PolicyWarn:
		fmt.Fprintf(r.out, "application %s is warn-only: its drift is reported, not repaired\n", termtext.Clean(app))
	default:
		fmt.Fprintf(r.out, "application %s is repaired\n", termtext.Clean(app))
	}
	return nil
}

// StatusReport is what `driftwatch status -o json` prints: the hub's
// clusters, what needs attention and why, the holds and the sources that
// fail or are stale.
type StatusReport struct {
	Hub   string    `json:"hub"`
	Taken time.Time `json:"taken"`
	// Policy is the hub's mode: repair or warn.
	Policy   string          `json:"policy"`
	Objects  int             `json:"objects"`
	Clusters []StatusCluster `json:"clusters"`
	// Attention lists the NodeIDs whose status needs attention, the
	// worst first (see NodeAttention), at most the limit asked for;
	// AttentionTotal counts them all. NodeIDs of a cluster that is not
	// connected are unknown and counted in their cluster only.
	Attention      []NodeAttention `json:"attention"`
	AttentionTotal int             `json:"attentionTotal"`
	Holds          []StatusHold    `json:"holds"`
	// Overrides are the applications' runtime policy overrides, by id.
	Overrides []StatusOverride `json:"overrides"`
	// FailingSources are manifest sources that do not render (their last
	// good state kept); StaleSources are Git sources and chart
	// repositories whose latest revision is not in force.
	FailingSources []StatusSource `json:"failingSources"`
	StaleSources   []StatusSource `json:"staleSources"`
	// Replicas are the replicas of a hub that runs as several (empty for
	// a hub of one process).
	Replicas []StatusReplica `json:"replicas,omitempty"`
	// NeedsAttention is what --exit-code tests: a NodeID needs
	// attention, a cluster is not synced or is paused, a source fails or
	// is stale, a replica does not answer.
	NeedsAttention bool `json:"needsAttention"`
}

// StatusReplica is one replica of a hub that runs as several.
type StatusReplica struct {
	ID       string   `json:"id"`
	Address  string   `json:"address,omitempty"`
	Error    string   `json:"error,omitempty"`
	Clusters []string `json:"clusters"`
}

// StatusCluster is one cluster of a StatusReport.
type StatusCluster struct {
	ID        string    `json:"id"`
	State     string    `json:"state"`
	Since     time.Time `json:"since"`
	LastError string    `json:"lastError,omitempty"`
	Detection string    `json:"detection"`
	Paused    bool      `json:"paused"`
	// PausedAt, PausedBy and PauseReason say when, by whom and why a
	// paused cluster was paused, as far as the hub knows.
	PausedAt    time.Time `json:"pausedAt,omitzero"`
	PausedBy    string    `json:"pausedBy,omitempty"`
	PauseReason string    `json:"pauseReason,omitempty"`
	Owner       string    `json:"owner,omitempty"`
	Objects     int       `json:"objects"`
	InSync      int       `json:"inSync"`
	Drift       int       `json:"drift"`
	Fixing      int       `json:"fixing"`
	Failed      int       `json:"failed"`
	Stuck       int       `json:"stuck"`
	Contested   int       `json:"contested"`
}

// NodeAttention is one NodeID that needs attention.
type NodeAttention struct {
	ID     string    `json:"id"`
	Status string    `json:"status"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
	// Diagnosis says why a stuck rollout does not progress (see
	// hub.NodeStatus.Diagnosis).
	Diagnosis []string `json:"diagnosis,omitempty"`
}

// StatusHold is one active hold.
type StatusHold struct {
	Scope  string    `json:"scope"`
	Name   string    `json:"name"`
	Reason string    `json:"reason"`
	By     string    `json:"by,omitempty"`
	Until  time.Time `json:"until"`
}

// StatusOverride is an application's runtime policy override: when it was
// set, by whom and why, as far as the hub knows.
type StatusOverride struct {
	Application string    `json:"application"`
	Policy      string    `json:"policy"`
	At          time.Time `json:"at,omitzero"`
	By          string    `json:"by,omitempty"`
	Reason      string    `json:"reason,omitempty"`
}

// StatusSource is a manifest source that fails or a Git or chart source
// that is stale.
type StatusSource struct {
	ID    string    `json:"id"`
	Error string    `json:"error"`
	Since time.Time `json:"since"`
	// KeptObjects is how many objects of a failing source's last good
	// state stay in force.
	KeptObjects int `json:"keptObjects,omitempty"`
}

// attentionRank ranks the statuses that need attention, the most urgent
// first: a repair that fails, then one that cannot proceed, then drift
// that stays.
func attentionRank(s hub.Status) int {
	switch s {
	case hub.StatusFailed:
		return 0
	case hub.StatusForbidden:
		return 1
	case hub.StatusStuck:
		return 2
	case hub.StatusContested:
		return 3
	case hub.StatusDrifted:
		return 4
	case hub.StatusRepairing:
		return 5
	case hub.StatusWarnOnly, hub.StatusPaused, hub.StatusHeld:
		return 6
	case hub.StatusOrphan, hub.StatusForeign:
		return 7
	}
	return 8
}

// BuildStatus summarises a snapshot (see StatusReport), listing at most
// limit NodeIDs that need attention (0: all of them).
func BuildStatus(snap *hub.Snapshot, limit int) StatusReport {
	rep := StatusReport{Hub: snap.HubID, Taken: snap.Taken, Policy: string(snap.Policy),
		Clusters: []StatusCluster{}, Attention: []NodeAttention{}, Holds: []StatusHold{}, Overrides: []StatusOverride{},
		FailingSources: []StatusSource{}, StaleSources: []StatusSource{}}
	connected := make(map[string]bool, len(snap.Clusters))
	for _, c := range snap.Clusters {
		t := c.Tally()
		rep.Objects += c.Objects
		detect := c.Detection
		if detect == "" {
			detect = "watch"
		}
		rep.Clusters = append(rep.Clusters, StatusCluster{ID: c.Cluster, State: string(c.State), Since: c.Since,
			LastError: c.LastError, Detection: detect, Paused: c.Paused, PausedAt: c.PausedAt, PausedBy: c.PausedBy,
			PauseReason: c.PauseReason, Owner: c.Owner, Objects: c.Objects,
			InSync: t.InSync, Drift: t.Drift, Fixing: t.Fixing, Failed: t.Failed, Stuck: t.Stuck,
			Contested: c.Counts[hub.StatusContested]})
		up := c.State == hub.ClusterSynced || c.State == hub.ClusterDegraded
		connected[c.Cluster] = up
		if !up || c.Paused {
			rep.NeedsAttention = true
		}
	}
	for _, n := range snap.Nodes {
		if !n.Status.Problem() || (n.Status == hub.StatusUnknown && !connected[n.ID.Cluster]) {
			continue
		}
		rep.Attention = append(rep.Attention, NodeAttention{ID: n.ID.String(), Status: string(n.Status), Reason: n.Reason, Since: n.LastChange,
			Diagnosis: n.Diagnosis})
	}
	slices.SortStableFunc(rep.Attention, func(a, b NodeAttention) int {
		return cmp.Or(cmp.Compare(attentionRank(hub.Status(a.Status)), attentionRank(hub.Status(b.Status))), strings.Compare(a.ID, b.ID))
	})
	rep.AttentionTotal = len(rep.Attention)
	if limit > 0 && len(rep.Attention) > limit {
		rep.Attention = rep.Attention[:limit]
	}
	for _, h := range snap.Holds {
		rep.Holds = append(rep.Holds, StatusHold{Scope: string(h.Target.Scope), Name: h.Target.Name, Reason: h.Reason, By: h.By, Until: h.Until})
	}
	for _, app := range slices.Sorted(maps.Keys(snap.AppPolicies)) {
		n := snap.AppPolicyNotes[app]
		rep.Overrides = append(rep.Overrides, StatusOverride{Application: app, Policy: string(snap.AppPolicies[app]), At: n.At, By: n.By, Reason: n.Reason})
	}
	for _, s := range snap.Sources {
		rep.FailingSources = append(rep.FailingSources, StatusSource{ID: s.ID, Error: s.Error, Since: s.Since, KeptObjects: s.KeptObjects})
	}
	for _, s := range snap.Revisions {
		if s.Error != "" {
			rep.StaleSources = append(rep.StaleSources, StatusSource{ID: s.ID, Error: s.Error, Since: s.Since})
		}
	}
	for _, r := range snap.Replicas {
		rep.Replicas = append(rep.Replicas, StatusReplica{ID: r.ID, Address: r.Address, Error: r.Err, Clusters: r.Clusters})
		if !r.Reachable {
			rep.NeedsAttention = true
		}
	}
	if rep.AttentionTotal > 0 || len(rep.FailingSources) > 0 || len(rep.StaleSources) > 0 {
		rep.NeedsAttention = true
	}
	return rep
}

// Status prints the hub's status (see StatusReport) as text or JSON,
// listing at most limit NodeIDs that need attention (0: all). It reports
// whether anything needs attention.
func (r *Remote) Status(format string, limit int) (needsAttention bool, err error) {
	snap, err := r.Snapshot()
	if err != nil {
		return false, err
	}
	rep := BuildStatus(snap, limit)
	if format == "json" {
		enc := json.NewEncoder(r.out)
		enc.SetIndent("", "  ")
		return rep.NeedsAttention, enc.Encode(rep)
	}
	return rep.NeedsAttention, writeStatus(r.out, rep, r.server, r.now(), limit == 0)
}

// quietClusters is how many clusters the text form of status lists before
// it leaves out those with nothing to say (synced, not paused, every
// object in sync), counting them in one line.
const quietClusters = 20

// quiet reports whether a cluster has nothing to say: synced, not paused,
// every object in sync.
func (c StatusCluster) quiet() bool {
	return c.State == string(hub.ClusterSynced) && !c.Paused && c.InSync == c.Objects
}

// writeStatus prints a StatusReport as text: a header, the clusters'
// table, then only the sections that have something to say. Past
// quietClusters clusters, unless all, the table lists only those with
// something to say. Every text that came from a cluster, a manifest or a
// person is cleaned for the terminal.
func writeStatus(out io.Writer, rep StatusReport, server string, now time.Time, all bool) error {
	var b strings.Builder
	ago := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return max(now.Sub(t), 0).Round(time.Second).String()
	}
	// since says how long ago a switch was set, after word: " since 12m0s
	// ago"; "" when that is not known.
	since := func(t time.Time, word string) string {
		if t.IsZero() {
			return ""
		}
		return word + " " + ago(t) + " ago"
	}
	fmt.Fprintf(&b, "hub %s at %s · mode %s · %s · %s · snapshot %s ago\n\n",
		termtext.Clean(rep.Hub), termtext.Clean(server), rep.Policy, plural(len(rep.Clusters), "cluster"), plural(rep.Objects, "object"), ago(rep.Taken))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSTATE\tDETECT\tOBJECTS\tIN SYNC\tDRIFT\tFIXING\tFAILED\tSTUCK\tFIGHT\tNOTE")
	left := 0
	for _, c := range rep.Clusters {
		if !all && len(rep.Clusters) > quietClusters && c.quiet() {
			left++
			continue
		}
		var note []string
		if c.Paused {
			note = append(note, "PAUSED"+since(c.PausedAt, "")+termtext.Clean(hub.SwitchNote{By: c.PausedBy, Reason: c.PauseReason}.Suffix()))
		}
		if c.Owner != "" {
			note = append(note, "replica "+termtext.Clean(c.Owner))
		}
		if c.State != string(hub.ClusterSynced) {
			var s []string
			if !c.Since.IsZero() {
				s = append(s, "for "+ago(c.Since))
			}
			if c.LastError != "" {
				s = append(s, termtext.Clean(c.LastError))
			}
			if len(s) > 0 {
				note = append(note, strings.Join(s, ": "))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", termtext.Clean(c.ID), c.State, termtext.Clean(c.Detection),
			c.Objects, c.InSync, c.Drift, c.Fixing, c.Failed, c.Stuck, c.Contested, strings.Join(note, "; "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if left > 0 {
		noun := "clusters"
		if left == 1 {
			noun = "cluster"
		}
		fmt.Fprintf(&b, "(%d more %s synced, every object in sync: --all lists them)\n", left, noun)
	}
	if rep.AttentionTotal > 0 {
		head := fmt.Sprintf("%d", rep.AttentionTotal)
		if len(rep.Attention) < rep.AttentionTotal {
			head = fmt.Sprintf("%d of %d, --all lists every one", len(rep.Attention), rep.AttentionTotal)
		}
		fmt.Fprintf(&b, "\nNEEDS ATTENTION (%s)\n", head)
		var rows strings.Builder
		tw = tabwriter.NewWriter(&rows, 0, 0, 2, ' ', 0)
		for _, n := range rep.Attention {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", termtext.Clean(n.ID), n.Status, ago(n.Since), termtext.Clean(n.Reason))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		// A diagnosis goes under its row, outside the table's columns
		// (a line without a cell would end the table's alignment).
		for i, row := range strings.SplitAfter(rows.String(), "\n")[:len(rep.Attention)] {
			b.WriteString(row)
			for _, why := range rep.Attention[i].Diagnosis {
				fmt.Fprintf(&b, "    why: %s\n", termtext.Clean(why))
			}
		}
	}
	if len(rep.Replicas) > 0 {
		b.WriteString("\nREPLICAS\n")
		for _, r := range rep.Replicas {
			state := "answers"
			if r.Error != "" {
				state = "does not answer: " + termtext.Clean(r.Error)
			}
			fmt.Fprintf(&b, "  %s at %s manages %s, %s\n", termtext.Clean(r.ID), termtext.Clean(r.Address), plural(len(r.Clusters), "cluster"), state)
		}
	}
	if len(rep.Holds) > 0 {
		b.WriteString("\nHOLDS\n")
		for _, h := range rep.Holds {
			fmt.Fprintf(&b, "  %s %s until %s (in %s)%s\n", h.Scope, termtext.Clean(h.Name),
				h.Until.Local().Format("15:04:05"), max(h.Until.Sub(now), 0).Round(time.Second), termtext.Clean(hub.SwitchNote{By: h.By, Reason: h.Reason}.Suffix()))
		}
	}
	if len(rep.Overrides) > 0 {
		b.WriteString("\nOVERRIDES\n")
		for _, o := range rep.Overrides {
			what := "warn-only"
			if o.Policy == string(hub.PolicyRepair) {
				what = "repaired"
			}
			fmt.Fprintf(&b, "  application %s %s%s%s (driftwatch policy %s config drops it)\n", termtext.Clean(o.Application), what,
				since(o.At, " since"), termtext.Clean(hub.SwitchNote{By: o.By, Reason: o.Reason}.Suffix()), termtext.Clean(o.Application))
		}
	}
	if len(rep.FailingSources)+len(rep.StaleSources) > 0 {
		b.WriteString("\nSOURCES\n")
		for _, s := range rep.FailingSources {
			fmt.Fprintf(&b, "  %s failing for %s, its last good state kept (%d objects): %s\n", termtext.Clean(s.ID), ago(s.Since), s.KeptObjects, termtext.Clean(s.Error))
		}
		for _, s := range rep.StaleSources {
			fmt.Fprintf(&b, "  %s stale for %s, the revision before in force: %s\n", termtext.Clean(s.ID), ago(s.Since), termtext.Clean(s.Error))
		}
	}
	if !rep.NeedsAttention {
		b.WriteString("\nall clusters synced, every object in sync\n")
	}
	// The tables pad every cell but the last: no line ends in blanks.
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	_, err := io.WriteString(out, strings.Join(lines, "\n"))
	return err
}

// Completion is what a hub command's argument may be, for the shell's
// completion, read from a snapshot of the hub.
type Completion int

// The kinds of argument the hub commands take.
const (
	CompleteCluster Completion = iota
	CompleteNodeID
	CompleteApplication
	// CompleteHeld is the name of a hold of the scope given as the
	// argument before it.
	CompleteHeld
)

// maxCompletions bounds the candidates offered: a fleet of 100,000
// objects offers the first of them that match, not all.
const maxCompletions = 500

// Complete returns the candidates of kind in snap that start with prefix,
// sorted, without those in taken (the arguments already given), at most
// maxCompletions. scope is the hold scope CompleteHeld completes the names
// of.
func Complete(snap *hub.Snapshot, kind Completion, scope hub.HoldScope, prefix string, taken []string) []string {
	seen := map[string]bool{}
	for _, t := range taken {
		seen[t] = true
	}
	var out []string
	add := func(s string) {
		if !seen[s] && strings.HasPrefix(s, prefix) {
			seen[s] = true
			out = append(out, s)
		}
	}
	switch kind {
	case CompleteCluster:
		for _, c := range snap.Clusters {
			add(c.Cluster)
		}
	case CompleteNodeID:
		for _, n := range snap.Nodes {
			add(n.ID.String())
		}
	case CompleteApplication:
		for _, n := range snap.Nodes {
			if n.Application != "" {
				add(n.Application)
			}
		}
		for a := range snap.AppPolicies {
			add(a)
		}
	case CompleteHeld:
		for _, h := range snap.Holds {
			if h.Target.Scope == scope {
				add(h.Target.Name)
			}
		}
	}
	slices.Sort(out)
	return out[:min(len(out), maxCompletions)]
}

// describeWidth is the width describe wraps long reasons to.
const describeWidth = 120

// Describe prints one NodeID as the terminal UI's node view shows it
// (tui.NodeText: status, reason, why, holds, the drift as a diff with who
// made it, ignored fields, the timeline, the desired object), or with
// format json the API's node document (apiv1.NodeDetail). Through a hub
// that runs as several replicas, the NodeID is read from the replica that
// manages its cluster.
func (r *Remote) Describe(id hub.NodeID, format string) error {
	c, err := r.hub()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.client.ResponseTimeout())
	defer cancel()
	d, err := c.NodeDetail(ctx, id)
	var ae *api.Error
	if errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s: the hub does not manage it (driftwatch status lists the NodeIDs that need attention; completion offers the others)", id)
	}
	if err != nil {
		return r.hubError(err)
	}
	if format == FormatJSON {
		enc := json.NewEncoder(r.out)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	view, complete, err := d.View()
	if err != nil {
		return r.hubError(err)
	}
	n := view.Nodes[0] // with its desired object
	if !complete {
		// A hub from before node views: its cluster and holds are in
		// the snapshot.
		if view, err = r.snapshotOf(context.Background(), c); err != nil {
			return err
		}
	}
	_, err = io.WriteString(r.out, tui.NodeText(view, n, describeWidth, r.now()))
	return err
}
