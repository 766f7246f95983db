package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// orphanScanner finds the objects that carry this hub's marks but that
// nothing wants or remembers, when asked (after each sync generation and
// at each resync), shows them, and with Options.PruneOrphans decommissions
// them through the prune guard (the deletes pass the write gate).
type orphanScanner struct {
	*loopState
	ctrl *controller
}

// requestScanAll asks for an orphan scan of every ready cluster but those
// in except.
func (sc *orphanScanner) requestScanAll(except ...string) {
	sc.mu.Lock()
	for c, cl := range sc.clusters {
		if cl.ready && !slices.Contains(except, c) {
			sc.scans[c] = true
		}
	}
	sc.mu.Unlock()
	select {
	case sc.scanNow <- struct{}{}:
	default:
	}
}

// orphanLoop scans clusters for orphans when asked: after each sync
// generation and at each resync. The clusters asked for together are one
// change for the prune guard.
func (sc *orphanScanner) orphanLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sc.scanNow:
		}
		sc.mu.Lock()
		clusters := make([]string, 0, len(sc.scans))
		for c := range sc.scans {
			clusters = append(clusters, c)
		}
		clear(sc.scans)
		backends := sc.backends
		sc.mu.Unlock()
		slices.Sort(clusters)
		found := make(map[string][]SpecRef, len(clusters))
		for _, c := range clusters {
			if ctx.Err() != nil {
				return
			}
			if backends == nil {
				continue
			}
			be, ok := backends.Backend(c)
			if !ok {
				continue
			}
			lister, ok := be.(OwnedLister)
			if !ok {
				continue
			}
			callCtx, cancel := context.WithTimeout(ctx, sc.opts.CallTimeout)
			refs, err := lister.ListOwned(callCtx)
			cancel()
			if errors.Is(err, ErrRestarting) {
				// The cluster's next manager asks for a scan of its own
				// once synced.
				sc.log.Debug("orphan scan skipped: the cluster's backend is restarting", "cluster", c, "err", err)
				continue
			}
			if err != nil {
				sc.log.Warn("orphan scan", "cluster", c, "err", err)
				continue
			}
			found[c] = refs
		}
		sc.scanOrphans(found)
	}
}

// ScanOrphans takes the objects a cluster's backend found carrying our
// marks (see scanOrphans) and returns its orphans.
func (sc *orphanScanner) ScanOrphans(cluster string, refs []SpecRef) []NodeID {
	return sc.scanOrphans(map[string][]SpecRef{cluster: refs})[cluster]
}

// judgeOrphans is scanOrphans's part under sc.mu (released even on a
// panic): it finds the orphans, judges them and decommissions what may go.
func (sc *orphanScanner) judgeOrphans(scanned map[string][]SpecRef, now time.Time) (map[string][]NodeID, []DecommissionRecord) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	orphans := make(map[string]map[NodeID]SpecRef, len(scanned))
	out := make(map[string][]NodeID, len(scanned))
	reasons := make(map[string]string, len(scanned))
	var candidates []string
	total := 0
	wanted := make(map[string]int, len(scanned))
	if sc.opts.PruneOrphans {
		for id, n := range sc.nodes.all() {
			if n.spec != nil {
				wanted[id.Cluster]++
			}
		}
	}
	for _, cluster := range slices.Sorted(maps.Keys(scanned)) {
		if sc.clusters[cluster] == nil {
			continue // forgotten meanwhile
		}
		found := make(map[NodeID]SpecRef)
		for _, r := range scanned[cluster] {
			// Wanted, decommissioned or applied before: not an orphan.
			if r.ID.Cluster != cluster || sc.nodes.at(r.ID) != nil {
				continue
			}
			found[r.ID] = r
		}
		orphans[cluster] = found
		ids := slices.Collect(maps.Keys(found))
		sortIDs(ids)
		out[cluster] = ids
		reasons[cluster] = orphanShown
		if !sc.opts.PruneOrphans || len(found) == 0 {
			continue
		}
		switch {
		case sc.orphanPolicyLocked(cluster) == PolicyWarn:
			reasons[cluster] = orphanWarn
			sc.metrics.orphanGuard.WithLabelValues("warn").Inc()
		case sc.pauses[cluster] != 0:
			reasons[cluster] = orphanPaused
		case len(sc.kept) > 0:
			reasons[cluster] = fmt.Sprintf(orphanKept, strings.Join(sc.kept, ", "))
		case wanted[cluster] == 0:
			// The hub wants nothing here: pruning would delete every
			// object of this hub on the cluster (a lost config, a
			// wrong hub id), the case the prune guard exists for.
			reasons[cluster] = orphanAll
			sc.metrics.orphanGuard.WithLabelValues("all").Inc()
			sc.log.Error("orphans not pruned: they are every object of this hub on the cluster", "cluster", cluster,
				"orphans", len(found))
		default:
			candidates = append(candidates, cluster)
			total += len(found)
		}
	}
	if total > sc.opts.PruneLimit {
		sc.metrics.orphanGuard.WithLabelValues("limit").Inc()
		sc.log.Error("orphans not pruned: more than the prune limit across the hub", "clusters", candidates,
			"orphans", total, "limit", sc.opts.PruneLimit)
		for _, c := range candidates {
			reasons[c] = orphanLimit
		}
		candidates = nil
	}
	var records []DecommissionRecord
	for _, cluster := range candidates {
		found := orphans[cluster]
		for _, id := range out[cluster] {
			s := found[id].Spec()
			s.ID = id
			s.Policy = sc.orphanPolicyLocked(cluster)
			n := sc.nodeForLocked(id)
			n.dec = &decommission{spec: &s, since: now, orphan: true}
			sc.status.track(&s, true, now)
			records = append(records, DecommissionRecord{Ref: found[id], Since: now, Orphan: true})
		}
		delete(orphans, cluster)
		sc.status.setOrphans(cluster, nil, "", now)
		delete(sc.orphans, cluster)
	}
	for cluster, found := range orphans {
		sc.orphans[cluster] = found
		sc.status.setOrphans(cluster, found, reasons[cluster], now)
	}
	return out, records
}

// scanOrphans takes the objects each cluster's backend found carrying our
// marks: those the hub neither wants, decommissions nor remembers applying
// are orphans. They are shown as such. With PruneOrphans they are
// decommissioned through the prune guard, the scan being one change for
// the whole hub: never on a cluster whose policy is warn-only or that is
// paused, never every object of this hub on a cluster, and nothing at all
// when the scan would prune more than PruneLimit objects across the hub
// (each refusal logged, counted and shown on the orphans). The deletes
// then pass the write gate like every prune. It returns the orphans by
// cluster.
func (sc *orphanScanner) scanOrphans(scanned map[string][]SpecRef) map[string][]NodeID {
	now := sc.opts.Now()
	out, records := sc.judgeOrphans(scanned, now)
	if sc.opts.Intent != nil {
		for _, r := range records {
			if err := sc.opts.Intent.PutDecommission(r); err != nil {
				sc.log.Error("record decommission", "node", r.Ref.ID.String(), "err", err)
			}
		}
	}
	for _, r := range records {
		sc.ctrl.add(r.Ref.ID)
	}
	return out
}

// Reasons shown on orphans that are not pruned.
const (
	orphanShown  = "carries our label and hub id, but is in neither the config nor the state file; pruned only with hub.pruneOrphans"
	orphanWarn   = "would prune (hub.pruneOrphans): warn-only on this cluster never deletes"
	orphanAll    = "would prune (hub.pruneOrphans): refused, the hub wants nothing on this cluster: it would delete every object of this hub there"
	orphanLimit  = "would prune (hub.pruneOrphans): refused, more orphans than hub.pruneLimit across the hub"
	orphanPaused = "would prune (hub.pruneOrphans): repairs paused on this cluster"
	orphanKept   = "would prune (hub.pruneOrphans): refused while a source fails (%s): its objects cannot be told from orphans"
)
