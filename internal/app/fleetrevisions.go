package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/coord"
)

// Replicas and Git sources: no replica applies an older commit of a Git
// source than one the fleet already applied. Each replica records the
// commit of every Git source in the coordination cluster before its
// desired state moves to it (coord.RecordRevisions, a write ahead of the
// writes), and a replica takes a cluster over only when each of its
// sources is at the recorded commit, or at a commit a fetch found at the
// head of the ref after that record: a replica that starts from an old
// cache while the repository is unreachable holds the cluster's claim but
// does not manage it until a fetch brings it up to date. A ref moved back
// on purpose (a force-push, a revert of the branch) is followed: a fetch
// after the record finds it at the head.

// gitRevision is a Git source's commit in a desired state, and when a
// fetch last found that commit at the head of its ref (zero: none did, as
// for a commit taken from the cache while the repository was
// unreachable).
type gitRevision struct {
	ID, URL, Ref, Commit string
	Seen                 time.Time
}

// inForce returns the revision in force of each Git source that has one,
// sorted by source id.
func (g *GitSources) inForce() []gitRevision {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []gitRevision
	for _, r := range g.repos {
		if r.applied != nil {
			out = append(out, gitRevision{ID: r.id, URL: r.url, Ref: r.ref, Commit: r.applied.Commit, Seen: r.appliedSeen})
		}
	}
	slices.SortFunc(out, func(a, b gitRevision) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// revisionsOf returns the revision of each Git source that renders in
// cfg (a load not in force yet), sorted by source id.
func (g *GitSources) revisionsOf(cfg *config.Config) []gitRevision {
	faults := cfg.SourceFaults()
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []gitRevision
	for _, s := range cfg.Sources {
		r := g.repos[s.ID]
		co, ok := s.Checkout()
		if !remoteSource(s) || r == nil || !ok || faults[s.ID] != nil {
			continue
		}
		rev := gitRevision{ID: s.ID, URL: r.url, Ref: r.ref, Commit: co.Commit}
		switch {
		case r.latest != nil && r.latest.Commit == co.Commit:
			rev.Seen = r.latestSeen
		case r.applied != nil && r.applied.Commit == co.Commit:
			rev.Seen = r.appliedSeen
		}
		out = append(out, rev)
	}
	slices.SortFunc(out, func(a, b gitRevision) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// reloadAfterFetch has the sources' next fetch reload the desired state
// even when the commit did not move (a reload refused for being behind
// the fleet, or for a record that could not be written, is tried again);
// now asks for that fetch at once rather than at the next poll.
func (g *GitSources) reloadAfterFetch(ids []string, now bool) {
	g.mu.Lock()
	for _, id := range ids {
		if r := g.repos[id]; r != nil {
			r.offered = ""
		}
	}
	g.mu.Unlock()
	if now {
		g.Trigger(ids...)
	}
}

// behindFleet says why revs must not be applied ("" when they may): a
// source whose commit is not the one the fleet recorded, and that no
// fetch started after the record found at the head of its ref. A record
// of another repository or ref (a config that changed) does not count.
func behindFleet(recorded map[string]coord.AppliedRevision, revs []gitRevision) string {
	var why []string
	for _, r := range revs {
		rec, ok := recorded[r.ID]
		if !ok || rec.URL != r.URL || rec.Ref != r.Ref || rec.Commit == r.Commit || !r.Seen.IsZero() && !r.Seen.Before(rec.At) {
			continue
		}
		seen := "never fetched at the head of its ref"
		if !r.Seen.IsZero() {
			seen = "last found at the head of its ref at " + r.Seen.UTC().Format(time.RFC3339)
		}
		why = append(why, fmt.Sprintf("Git source %s is at %s (%s), but replica %s applied %s at %s",
			r.ID, hub.ShortCommit(r.Commit), seen, rec.Replica, hub.ShortCommit(rec.Commit), rec.At.UTC().Format(time.RFC3339)))
	}
	return strings.Join(why, "; ")
}

// ids returns the source ids of revs.
func ids(revs []gitRevision) []string {
	out := make([]string, len(revs))
	for i, r := range revs {
		out[i] = r.ID
	}
	return out
}

// errBehindFleet wraps the refusals of behindFleet.
var errBehindFleet = errors.New("behind the revisions the replicas applied")

// recordRevisions is called before the hub's desired state moves to revs:
// it refuses revisions behind those the fleet applied (and has them
// fetched again), and records the others as applied; undo takes the
// record back when the desired state does not go into force after all
// (the prune guard refused it). Each failure asks the sources to be
// fetched and reloaded again.
func (r *replicas) recordRevisions(revs []gitRevision) (undo func(), err error) {
	undo = func() {}
	if len(revs) == 0 {
		return undo, nil
	}
	recorded, moved, err := r.writeAhead(revs)
	if err != nil {
		// Behind: a fetch at once brings the sources up to date (it starts
		// after the record, so its commit may be applied). A record that
		// could not be read or written is tried again at the next poll.
		if r.a.git != nil {
			r.a.git.reloadAfterFetch(ids(revs), errors.Is(err, errBehindFleet))
		}
		return undo, err
	}
	return func() {
		if err := r.coord.UndoRevisions(context.Background(), moved, recorded); err != nil {
			r.a.log.Warn("take back the applied revisions of a refused reload", "err", err)
		}
	}, nil
}

// writeAhead reads the fleet's record, refuses revs when they are behind
// it (errBehindFleet), and records those of revs that moved; it returns
// the record as read and what it wrote.
func (r *replicas) writeAhead(revs []gitRevision) (recorded map[string]coord.AppliedRevision, moved []coord.AppliedRevision, err error) {
	ctx := context.Background()
	recorded, err = r.coord.AppliedRevisions(ctx)
	if err != nil {
		return nil, nil, err
	}
	if why := behindFleet(recorded, revs); why != "" {
		return nil, nil, fmt.Errorf("%w: %s; fetching again", errBehindFleet, why)
	}
	now := time.Now()
	for _, rev := range revs {
		if rec, ok := recorded[rev.ID]; ok && rec.URL == rev.URL && rec.Ref == rev.Ref && rec.Commit == rev.Commit {
			continue
		}
		moved = append(moved, coord.AppliedRevision{Source: rev.ID, URL: rev.URL, Ref: rev.Ref, Commit: rev.Commit,
			Replica: r.coord.ReplicaID(), At: now})
	}
	return recorded, moved, r.coord.RecordRevisions(ctx, moved)
}

// revisionsCurrent is called before this replica takes a cluster over: nil
// when its Git sources are not behind the revisions the fleet applied
// (those that moved are then recorded, as the cluster is about to get
// them); otherwise why, and the sources are fetched again (at most once
// per lease duration).
func (r *replicas) revisionsCurrent() error {
	if r.a.git == nil {
		return nil
	}
	revs := r.a.git.inForce()
	if len(revs) == 0 {
		return nil
	}
	// Clusters are taken over many at once (a replica starting or
	// another leaving): one read of the record serves those of the same
	// second, at the same revisions.
	r.mu.Lock()
	fresh := time.Since(r.revsCheckedAt) < time.Second && slices.Equal(r.revsChecked, revs)
	r.mu.Unlock()
	if fresh {
		return nil
	}
	_, _, err := r.writeAhead(revs)
	if err == nil {
		r.mu.Lock()
		r.revsChecked, r.revsCheckedAt = revs, time.Now()
		r.mu.Unlock()
	}
	if !errors.Is(err, errBehindFleet) {
		return err
	}
	r.mu.Lock()
	fetch := time.Since(r.lastFetchAsk) >= r.lease
	if fetch {
		r.lastFetchAsk = time.Now()
	}
	r.mu.Unlock()
	if fetch {
		r.a.git.Trigger(ids(revs)...)
	}
	return err
}
