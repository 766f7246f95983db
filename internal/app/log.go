package app

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
	"github.com/driftwatch/driftwatch/internal/termtext"
)

// LogOptions are what driftwatch log prints of a hub's feed.
type LogOptions struct {
	// Targets keep the entries of these clusters (a cluster id) and
	// NodeIDs (anything with a colon: a NodeID, or the start of one such
	// as "prod-eu:shop/"); none keeps every entry.
	Targets []string
	// Since keeps the entries of the last Since; 0 keeps all the hub
	// holds.
	Since time.Duration
	// Follow keeps printing new entries until ctx ends.
	Follow bool
	// Format is FormatText or FormatJSON (one JSON object per line, the
	// API's feed entry).
	Format string
	// Notices receives what is not an entry: a lost connection, a
	// reconnect (follow only).
	Notices io.Writer
}

// logTime is how a log line writes its time: local, to the millisecond,
// sortable.
const logTime = "2006-01-02T15:04:05.000Z07:00"

// Log prints the hub's feed (every drift it saw, who made it and what it
// did about it), oldest first: the entries the hub holds (its last 200),
// those of the last o.Since, of o.Targets. With o.Follow it then prints
// each new entry as the hub's watch stream brings it, until ctx ends; a
// repeat the hub folds into an entry (×N) prints it again with its count.
// A cluster target the hub does not manage is an error; a NodeID target
// is a filter and may match nothing yet.
func (r *Remote) Log(ctx context.Context, o LogOptions) error {
	c, err := r.hub()
	if err != nil {
		return err
	}
	snap, err := r.snapshotOf(ctx, c)
	if err != nil {
		return err
	}
	var unknown []string
	for _, t := range o.Targets {
		if !strings.Contains(t, ":") && !slices.ContainsFunc(snap.Clusters, func(cs hub.ClusterStatus) bool { return cs.Cluster == t }) {
			unknown = append(unknown, t)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown cluster %s (the hub manages %s)", strings.Join(unknown, ", "), clusterList(snap))
	}
	p := logPrinter{o: o, out: r.out}
	if o.Since > 0 {
		p.after = r.now().Add(-o.Since)
	}
	if err := p.print(snap); err != nil || !o.Follow {
		return err
	}
	// The streams (one per replica) say a loss from their goroutines.
	if o.Notices != nil {
		o.Notices = &lockedWriter{w: o.Notices}
		p.o.Notices = o.Notices
	}
	var lost atomic.Bool
	r.streamLost = func(err error) {
		if !lost.Swap(true) && o.Notices != nil {
			fmt.Fprintf(o.Notices, "driftwatch log: lost the hub's stream (%v); reconnecting\n", termtext.Clean(err.Error()))
		}
	}
	ch, stop := c.Subscribe()
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case s := <-ch:
			if lost.Swap(false) && o.Notices != nil {
				fmt.Fprintln(o.Notices, "driftwatch log: reconnected (entries of the time lost past the hub's last 200 are not shown)")
			}
			if err := p.print(s); err != nil {
				return err
			}
		}
	}
}

// lockedWriter serializes the writes of several goroutines to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// clusterList names the clusters of a snapshot, at most 10.
func clusterList(snap *hub.Snapshot) string {
	var ids []string
	for _, c := range snap.Clusters {
		ids = append(ids, c.Cluster)
	}
	if len(ids) == 0 {
		return "no cluster"
	}
	if len(ids) > 10 {
		return strings.Join(ids[:10], ", ") + fmt.Sprintf(" and %d more", len(ids)-10)
	}
	return strings.Join(ids, ", ")
}

// logPrinter prints the feed entries of successive snapshots once each:
// those after the last one it printed.
type logPrinter struct {
	o   LogOptions
	out io.Writer
	// after is the time of the last entry printed (or the start of
	// --since): only later ones are printed. atAfter are the entries
	// printed at exactly that time, told apart by their keys.
	after   time.Time
	atAfter map[string]bool
	// seen is the time of the newest entry of the feeds read so far.
	seen time.Time
}

// print prints the entries of snap's feed that are new, oldest first.
// After a first read, a feed whose oldest entry is newer than the newest
// of the read before has let entries go unread (more came between two
// reads than the hub keeps): said on o.Notices.
func (p *logPrinter) print(snap *hub.Snapshot) error {
	if n := len(snap.Feed); n > 0 && !p.seen.IsZero() && snap.Feed[n-1].At.After(p.seen) && p.o.Notices != nil {
		fmt.Fprintf(p.o.Notices, "driftwatch log: more entries came than the hub keeps (%d) since the last read: some may be missing\n", n)
	}
	for _, e := range snap.Feed {
		if e.At.After(p.seen) {
			p.seen = e.At
		}
	}
	var fresh []hub.FeedEntry
	for _, e := range snap.Feed { // newest first
		if e.At.Before(p.after) || e.At.Equal(p.after) && p.atAfter[logKey(e)] || !p.keeps(e.ID) {
			continue
		}
		fresh = append(fresh, e)
	}
	slices.Reverse(fresh)
	slices.SortStableFunc(fresh, func(a, b hub.FeedEntry) int { return a.At.Compare(b.At) })
	for _, e := range fresh {
		if err := p.write(e); err != nil {
			return err
		}
		if !e.At.Equal(p.after) {
			p.after, p.atAfter = e.At, map[string]bool{}
		}
		p.atAfter[logKey(e)] = true
	}
	return nil
}

// logKey tells apart the entries of one time.
func logKey(e hub.FeedEntry) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%d", e.ID, e.Action, e.Class, e.Times())
}

// keeps reports whether the targets keep id's entries.
func (p *logPrinter) keeps(id hub.NodeID) bool {
	if len(p.o.Targets) == 0 {
		return true
	}
	s := id.String()
	for _, t := range p.o.Targets {
		if strings.Contains(t, ":") && strings.HasPrefix(s, t) || t == id.Cluster {
			return true
		}
	}
	return false
}

// write prints one entry: a JSON line, or a text line (see LogLine).
func (p *logPrinter) write(e hub.FeedEntry) error {
	if p.o.Format == FormatJSON {
		b, err := json.Marshal(apiv1.FromFeedEntry(e))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(p.out, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintln(p.out, LogLine(e))
	return err
}

// LogLine is the text line of a feed entry: its time, NodeID, what
// changed, who changed it and what the hub did, with how long it took and
// how many times it happened:
//
//	2026-12-07T17:41:43.012Z  prod-eu:shop/web:deployment  modified spec.replicas: 3 -> 5  by kubectl-edit  apply 12ms
//
// The cluster's text is cleaned for the terminal (termtext.Clean).
func LogLine(e hub.FeedEntry) string {
	field := hub.FieldDiff.String // desired -> live
	if e.DesiredChanged() {
		field = hub.FieldDiff.ChangeString // old -> new
	}
	what := string(e.Class)
	if len(e.Fields) > 0 {
		parts := make([]string, 0, len(e.Fields))
		for _, f := range e.Fields {
			parts = append(parts, field(f))
		}
		what = strings.TrimPrefix(what+" "+strings.Join(parts, ", "), " ")
	}
	parts := []string{e.At.Local().Format(logTime), e.ID.String()}
	if what != "" {
		parts = append(parts, what)
	}
	switch {
	case e.DesiredChanged():
		parts = append(parts, e.Who) // "desired changed (web@abc1234)"
	case e.Who != "":
		parts = append(parts, "by "+e.Who)
	}
	action := e.Action
	switch {
	case e.Err != "":
		action = cmp.Or(action, "failed") + ": " + e.Err
	case e.Latency > 0:
		action += " " + e.Latency.Round(time.Microsecond).String()
	}
	parts = append(parts, action)
	if e.Why != "" {
		parts = append(parts, "("+e.Why+")")
	}
	if n := e.Times(); n > 1 {
		parts = append(parts, fmt.Sprintf("×%d since %s", n, e.Started().Local().Format(logTime)))
	}
	return termtext.Clean(strings.Join(parts, "  "))
}
