package hub

import (
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// statusWriter is the narrow interface through which the reconcile loop
// records what users see. The loop decides; the store only remembers,
// publishes snapshots and keeps the metrics that describe it.
type statusWriter interface {
	// track starts (or updates) showing a NodeID with its spec;
	// decommissioning marks one whose application left the config.
	track(spec *NodeSpec, decommissioning bool, now time.Time)
	// untrack stops showing a NodeID (pruned, or its cluster forgotten).
	untrack(id NodeID)
	// forgetCluster drops a cluster and every NodeID on it.
	forgetCluster(cluster string)
	// setStatus sets a NodeID's status and reason.
	setStatus(id NodeID, st Status, reason string, now time.Time)
	// step appends a timeline entry (or folds it into the last one: see
	// foldable).
	step(id NodeID, s Step, detail string, at time.Time)
	// observed appends a pass's two timeline entries: StepObserved at
	// observedAt, then its classification step with its detail at
	// classifiedAt; a pair that repeats the timeline's last two entries
	// is counted on them instead.
	observed(id NodeID, s Step, detail string, observedAt, classifiedAt time.Time)
	// drift stores the latest drift record of a NodeID.
	drift(id NodeID, rep Repair)
	// applied marks the latest drift record as repaired.
	applied(id NodeID, rep Repair, latency time.Duration)
	// verified marks the latest repair as verified.
	verified(id NodeID, observedAt, now time.Time)
	// failed records an error on the latest drift record.
	failed(id NodeID, err string)
	// progress records rollout progress.
	progress(id NodeID, p *Progress)
	// feed adds a line to the live feed.
	feed(e FeedEntry)
	// health records a cluster's health; paused its pause intent.
	health(h ClusterHealth)
	paused(cluster string, paused bool, at time.Time, note SwitchNote)
	// appPolicies records the runtime policy overrides; setHolds the
	// holds (sorted, owned by the store from then on).
	appPolicies(o map[string]appOverride)
	setHolds(h []Hold)
	// removeHealth drops a removed cluster's health.
	removeHealth(cluster string)
	// setOrphans shows a cluster's orphans, with why they are not pruned.
	setOrphans(cluster string, orphans map[NodeID]SpecRef, reason string, now time.Time)
	// setIgnored records the differences ignore rules cover; setContest a
	// NodeID's contest (nil clears it).
	setIgnored(id NodeID, ignored []IgnoredField)
	setContest(id NodeID, c *Contest)
	// setDiagnosis records why a stuck rollout does not progress (nil
	// clears it; a status other than StatusStuck clears it too).
	setDiagnosis(id NodeID, lines []string)
}

// store holds node and cluster status, timelines, the feed, snapshots and
// subscriptions. It has its own lock: building a snapshot never holds up a
// worker's decision, and the loop never reads its own decisions back from
// here.
type store struct {
	opts Options

	mu sync.Mutex
	// nodes holds the records by NodeID (a record's spec.ID).
	nodes *idIndex[*nodeStatus]
	// order holds the records sorted by the text of their NodeID (their
	// spec's ID), rebuilt lazily: a snapshot walks it with no map lookup
	// and no copy of the NodeIDs. A rebuild makes a new slice, so a walk
	// that let go of mu between chunks still reads the one it took.
	order []*nodeStatus
	// orderGen counts the changes to the set of records (every put or
	// delete in nodes adds one); orderAt is the generation order was
	// sorted at. A walk that let go of mu compares them to see whether a
	// record it is about to read may have gone meanwhile.
	orderGen, orderAt uint64
	// walkChunk is how many records a walk reads per hold of mu
	// (defaultWalkChunk when 0); walkYield and sortYield, when set
	// (tests), run each time a walk has let go of mu between two chunks,
	// and to sort the records again.
	walkChunk int
	walkYield func()
	sortYield func()
	// clusterBoard holds what is shown per cluster and hub-wide; feedLog
	// the live feed. Both share mu and dirty.
	*clusterBoard
	*feedLog
	seq uint64
	// dirty tells the publisher the store changed.
	dirty chan struct{}
	// changed tells the publisher that a NodeID's known status changed
	// (a drift seen, a repair done): it publishes after
	// urgentPublishPause instead of its whole pause.
	changed     chan struct{}
	queueLength func() int
	metrics     *metrics
}

// nodeStatus is what users see of one NodeID. Fields at their zero value
// cost nothing beyond the struct: the timeline is allocated only once the
// NodeID has something to show, and what only drift sets (the drift
// record, the repair count and time, ignored differences, the contest)
// lives in extra, allocated by the first of them.
type nodeStatus struct {
	// spec is never nil, and spec.ID is the NodeID the record is kept
	// under (track and setOrphans key the record by it).
	spec            *NodeSpec
	status          Status
	reason          string
	lastChange      time.Time
	timeline        []TimelineEntry
	ready, replicas int32
	decom, orphan   bool
	extra           *nodeExtra
}

// more returns the NodeID's extra record, allocating it on first use;
// readers that must not allocate check n.extra for nil instead.
func (n *nodeStatus) more() *nodeExtra {
	if n.extra == nil {
		n.extra = &nodeExtra{}
	}
	return n.extra
}

// lastRepair returns the latest drift record, nil when none.
func (n *nodeStatus) lastRepair() *Repair {
	if n.extra == nil {
		return nil
	}
	return n.extra.repair
}

// repairedAt returns when the latest repair was verified (zero: never).
func (n *nodeStatus) repairedAt() time.Time {
	if n.extra == nil {
		return time.Time{}
	}
	return n.extra.repairedAt
}

type clusterStatus struct {
	health ClusterHealth
	known  bool // a health report arrived
	paused bool
	// pausedAt and pauseNote are the pause's time and note while paused.
	pausedAt  time.Time
	pauseNote SwitchNote
	repairs   []time.Duration // recent event-to-repaired times (ring)
}

var _ statusWriter = (*store)(nil)

func newStore(opts Options, m *metrics, queueLength func() int) *store {
	s := &store{
		opts:        opts,
		nodes:       newIDIndex(func(n *nodeStatus) NodeID { return n.spec.ID }),
		dirty:       make(chan struct{}, 1),
		changed:     make(chan struct{}, 1),
		queueLength: queueLength,
		metrics:     m,
	}
	s.clusterBoard = &clusterBoard{mu: &s.mu, dirty: s.dirty, metrics: m,
		clusters: make(map[string]*clusterStatus), appPolicy: make(map[string]Policy)}
	s.feedLog = &feedLog{mu: &s.mu, dirty: s.dirty, length: opts.FeedLength}
	return s
}

// signal tells the publisher the store changed (never blocks).
func signal(dirty chan<- struct{}) {
	select {
	case dirty <- struct{}{}:
	default:
	}
}

func (s *store) track(spec *NodeSpec, decom bool, now time.Time) {
	s.mu.Lock()
	n := s.nodeLocked(spec.ID)
	if n == nil {
		n = &nodeStatus{spec: spec, status: StatusUnknown, lastChange: now}
		s.nodes.put(spec.ID, n)
		s.orderGen++
	}
	n.spec = spec
	n.decom = decom
	if n.orphan {
		n.orphan = false
		setStatus(n, StatusUnknown, "", now)
	}
	if decom {
		setStatus(n, StatusDecommissioning, "application removed from the config", now)
	}
	s.mu.Unlock()
	signal(s.dirty)
}

func (s *store) untrack(id NodeID) {
	s.mu.Lock()
	if s.nodeLocked(id) != nil {
		s.nodes.del(id)
		s.orderGen++
	}
	s.mu.Unlock()
	signal(s.dirty)
}

func (s *store) forgetCluster(cluster string) {
	s.mu.Lock()
	if s.nodes.deleteInCluster(cluster, func(*nodeStatus) bool { return true }) > 0 {
		s.orderGen++
	}
	s.dropLocked(cluster)
	s.mu.Unlock()
	s.metrics.forgetCluster(cluster)
	signal(s.dirty)
}

// setOrphans replaces a cluster's orphans.
func (s *store) setOrphans(cluster string, orphans map[NodeID]SpecRef, reason string, now time.Time) {
	s.mu.Lock()
	if s.nodes.deleteInCluster(cluster, func(n *nodeStatus) bool {
		_, still := orphans[n.spec.ID]
		return n.orphan && !still
	}) > 0 {
		s.orderGen++
	}
	for id, r := range orphans {
		if n := s.nodeLocked(id); n != nil {
			if n.orphan {
				setStatus(n, StatusOrphan, reason, now)
			}
			continue // tracked as desired or decommissioning, or shown
		}
		spec := r.Spec()
		spec.ID = id // the key, as it is the ref's
		n := &nodeStatus{spec: &spec, orphan: true, lastChange: now}
		setStatus(n, StatusOrphan, reason, now)
		s.nodes.put(id, n)
		s.orderGen++
	}
	s.mu.Unlock()
	signal(s.dirty)
}

// node returns a tracked NodeID's status; nil when it is not tracked (its
// cluster was forgotten mid-pass): every writer tolerates that.
func (s *store) nodeLocked(id NodeID) *nodeStatus {
	n, _ := s.nodes.get(id)
	return n
}

func setStatus(n *nodeStatus, st Status, reason string, now time.Time) {
	if n.status != st {
		n.lastChange = now
	}
	if st != StatusStuck && n.extra != nil && n.extra.diagnosis != nil {
		n.extra.diagnosis = nil // said of a rollout no longer stuck
		n.trimExtra()
	}
	n.status = st
	n.reason = reason
}

func (s *store) setStatus(id NodeID, st Status, reason string, now time.Time) {
	s.mu.Lock()
	changed, other := false, false
	if n := s.nodeLocked(id); n != nil {
		// A first classification (from unknown: a start, a cluster
		// synced again) comes by the thousand and waits for the
		// interval; a change of a known status is news.
		other = n.status != st
		changed = other && n.status != StatusUnknown
		setStatus(n, st, reason, now)
	}
	s.mu.Unlock()
	signal(s.dirty)
	if changed {
		signal(s.changed)
	}
	if other && s.opts.OnStatus != nil {
		s.opts.OnStatus(id, st, now)
	}
}

func (s *store) step(id NodeID, step Step, detail string, at time.Time) {
	s.mu.Lock()
	if n := s.nodeLocked(id); n != nil {
		if k := len(n.timeline) - 1; k >= 0 && foldable(step) && n.timeline[k].Step == step && n.timeline[k].Detail == detail {
			n.timeline = repeated(n.timeline, k, at)
		} else {
			s.appendTimelineLocked(n, TimelineEntry{At: at, Step: step, Detail: detail})
		}
	}
	s.mu.Unlock()
	signal(s.dirty)
}

func (s *store) observed(id NodeID, step Step, detail string, observedAt, classifiedAt time.Time) {
	s.mu.Lock()
	if n := s.nodeLocked(id); n != nil {
		tl := n.timeline
		if k := len(tl) - 2; k >= 0 && foldable(step) && tl[k].Step == StepObserved && tl[k].Detail == "" &&
			tl[k+1].Step == step && tl[k+1].Detail == detail {
			n.timeline = repeated(tl, k, observedAt, classifiedAt)
		} else {
			s.appendTimelineLocked(n, TimelineEntry{At: observedAt, Step: StepObserved},
				TimelineEntry{At: classifiedAt, Step: step, Detail: detail})
		}
	}
	s.mu.Unlock()
	signal(s.dirty)
}

// foldable reports whether a step repeated right after an identical one
// (same detail) is counted on it rather than appended: what the hub
// observed, classified or held back, which every watch event of an object
// it does not repair yet brings again. A write, its check or its failure,
// a prune and a user's request are each an action of their own.
func foldable(step Step) bool {
	switch step {
	case StepObserved, StepClassified, StepDesiredChanged, StepWarned, StepPaused, StepHeld, StepStuck:
		return true
	}
	return false
}

// repeated returns a copy of a timeline in which the entries from
// position i on count one more repeat each, the latest at the matching
// time of ats (the first entry's at ats[0], the next one's at ats[1]).
// Snapshots share the timeline, so its entries are never changed in place.
func repeated(tl []TimelineEntry, i int, ats ...time.Time) []TimelineEntry {
	tl = slices.Clone(tl)
	for j, at := range ats {
		e := &tl[i+j]
		e.Repeats++
		if d := at.Sub(e.At); d > e.Last {
			e.Last = d
		}
	}
	return tl
}

// appendTimelineLocked appends entries to a bounded timeline, dropping its
// oldest ones past Options.TimelineLength. Snapshots share the slice, so
// it is copied, never appended to in place.
func (s *store) appendTimelineLocked(n *nodeStatus, entries ...TimelineEntry) {
	drop := max(len(n.timeline)+len(entries)-s.opts.TimelineLength, 0)
	kept := n.timeline[min(drop, len(n.timeline)):]
	entries = entries[max(drop-len(n.timeline), 0):]
	tl := make([]TimelineEntry, 0, len(kept)+len(entries))
	n.timeline = append(append(tl, kept...), entries...)
}

func (s *store) drift(id NodeID, rep Repair) {
	s.mu.Lock()
	if n := s.nodeLocked(id); n != nil {
		// A later pass over the same drift that cannot attribute it (the
		// live object's managedFields already name us) never replaces a
		// known attribution with "unknown".
		if last := n.lastRepair(); rep.Attribution == nil && last != nil && last.Attribution != nil &&
			last.VerifiedAt.IsZero() && last.Drift.Summary() == rep.Drift.Summary() {
			rep.Attribution = last.Attribution
		}
		r := rep
		n.more().repair = &r
	}
	s.mu.Unlock()
	signal(s.dirty)
}

func (s *store) applied(id NodeID, rep Repair, latency time.Duration) {
	s.mu.Lock()
	if n := s.nodeLocked(id); n != nil {
		if last := n.lastRepair(); rep.Attribution == nil && rep.DesiredChange == "" && last != nil && last.Attribution != nil {
			rep.Attribution = last.Attribution
		}
		r := rep
		x := n.more()
		x.repair = &r
		// A change of the desired state applied is not a repair: neither
		// counted nor in the cluster's event-to-repair times.
		if rep.DesiredChange == "" {
			x.repairs++
			c := s.clusterLocked(id.Cluster)
			c.repairs = append(c.repairs, latency)
			if len(c.repairs) > 100 {
				c.repairs = c.repairs[len(c.repairs)-100:]
			}
		}
	}
	s.mu.Unlock()
	signal(s.dirty)
}

func (s *store) verified(id NodeID, observedAt, now time.Time) {
	s.mu.Lock()
	if n := s.nodeLocked(id); n != nil {
		x := n.more()
		x.repairedAt = now
		if x.repair != nil {
			r := *x.repair
			r.VerifiedAt = observedAt
			if r.VerifiedAt.Before(r.AppliedAt) {
				r.VerifiedAt = now
			}
			x.repair = &r
		}
	}
	s.mu.Unlock()
	signal(s.dirty)
}

func (s *store) failed(id NodeID, err string) {
	s.mu.Lock()
	if n := s.nodeLocked(id); n != nil && n.lastRepair() != nil {
		r := *n.extra.repair
		r.Err = err
		n.extra.repair = &r
	}
	s.mu.Unlock()
}

func (s *store) progress(id NodeID, p *Progress) {
	s.mu.Lock()
	if n := s.nodeLocked(id); n != nil {
		if p == nil {
			n.ready, n.replicas = 0, 0
		} else {
			n.ready, n.replicas = p.Ready, p.Desired
		}
	}
	s.mu.Unlock()
}

// orderLocked returns the records sorted by the text of their NodeID, and
// the generation of the set of records (orderGen) they are. s.mu is held
// on entry and on return; when the set changed since the last sort, it is
// let go of while the records are sorted again (a tenth of a second at
// 100,000 NodeIDs, which the workers would otherwise wait for), from a
// copy of their NodeIDs taken under it.
func (s *store) orderLocked() ([]*nodeStatus, uint64) {
	if s.orderAt == s.orderGen && len(s.order) == s.nodes.len() {
		return s.order, s.orderGen
	}
	type keyed struct {
		id NodeID
		n  *nodeStatus
	}
	keys := make([]keyed, 0, s.nodes.len())
	for id, n := range s.nodes.all() {
		keys = append(keys, keyed{id, n})
	}
	gen := s.orderGen
	s.mu.Unlock()
	if s.sortYield != nil {
		s.sortYield()
	}
	slices.SortFunc(keys, func(a, b keyed) int { return CompareText(a.id, b.id) })
	order := make([]*nodeStatus, len(keys))
	for i, k := range keys {
		order[i] = k.n
	}
	s.mu.Lock()
	if s.orderGen == gen {
		s.order, s.orderAt = order, gen
	}
	return order, gen
}

// defaultWalkChunk is how many records a walk reads per hold of the
// store's lock: a snapshot reads about 70 ns a record, so the lock is free
// again every 0.1 ms or so however many NodeIDs the hub has, and a worker
// recording a drift waits about that long, not the whole walk (7 ms at
// 100,000 NodeIDs; BenchmarkStatusDuringWalk100k).
const defaultWalkChunk = 1024

// snapshot builds an immutable snapshot now (and refreshes the gauges).
func (s *store) snapshot(now time.Time) *Snapshot { return s.walk(now, true) }

// refreshGauges sets the gauges a snapshot sets (objects by cluster and
// status, queue depth) without building one: a hub nobody subscribes to
// needs only those, and a snapshot of every NodeID is a large allocation
// (about 250 bytes per NodeID) the garbage collector then pays for again.
func (s *store) refreshGauges(now time.Time) { s.walk(now, false) }

// walk reads every NodeID's status at now for the gauges and, when full,
// builds a snapshot of them (nil otherwise). It lets go of the store's lock
// after every chunk of records (walkChunk), so that the workers recording
// what they saw never wait for a whole walk: each record is read whole
// under the lock, a record whose status changes during the walk shows the
// status it has when its chunk is read, a record gone by then is left
// out, and one tracked during the walk shows in the next one.
func (s *store) walk(now time.Time, full bool) *Snapshot {
	depth := s.queueLength()
	s.metrics.queueDepth.Set(float64(depth))
	s.mu.Lock()
	defer s.mu.Unlock()
	order, gen := s.orderLocked()
	chunk := s.walkChunk
	if chunk <= 0 {
		chunk = defaultWalkChunk
	}
	var snap *Snapshot
	if full {
		s.seq++
		snap = &Snapshot{
			HubID:       s.opts.ID,
			Seq:         s.seq,
			Taken:       now,
			Policy:      s.opts.Policy,
			Nodes:       make([]NodeStatus, 0, len(order)),
			AppPolicies: maps.Clone(s.appPolicy),
			QueueDepth:  depth,
		}
		if len(s.appPolicyNotes) > 0 {
			snap.AppPolicyNotes = maps.Clone(s.appPolicyNotes)
		}
		for _, hd := range s.holds {
			if hd.Active(now) {
				snap.Holds = append(snap.Holds, hd)
			}
		}
		snap.Sources = slices.Clone(s.sources)
		snap.Revisions = slices.Clone(s.revisions)
	}
	counts := make(map[string]map[Status]int, len(s.clusters))
	objects := make(map[string]int, len(s.clusters))
	// The order is by text, so a cluster's NodeIDs come together: what
	// depends only on the cluster is looked up once per run of them.
	var (
		curName    string
		curCounts  map[Status]int
		curStale   bool   // the cluster is not connected: never show stale data as in sync
		curReason  string // why, when curStale
		curObjects int
		started    bool
	)
	flush := func() {
		if started {
			objects[curName] += curObjects
		}
	}
	for i, n := range order {
		if i > 0 && i%chunk == 0 {
			s.mu.Unlock()
			runtime.Gosched() // a worker woken by the unlock takes the lock now
			if s.walkYield != nil {
				s.walkYield()
			}
			s.mu.Lock()
		}
		if s.orderGen != gen {
			if cur, ok := s.nodes.get(n.spec.ID); !ok || cur != n {
				continue // untracked since the walk began
			}
		}
		id := n.spec.ID
		if !started || id.Cluster != curName {
			flush()
			started, curName, curObjects = true, id.Cluster, 0
			curCounts = counts[curName]
			if curCounts == nil {
				curCounts = make(map[Status]int)
				counts[curName] = curCounts
			}
			c := s.clusters[curName]
			curStale = c == nil || !c.known || !usable(c.health.State)
			curReason = "cluster not connected"
			if curStale && c != nil && c.known {
				curReason = "cluster " + string(c.health.State)
				if c.health.LastError != "" {
					curReason += ": " + c.health.LastError
				}
			}
		}
		st, reason := n.status, n.reason
		if st == StatusRepaired && now.Sub(n.repairedAt()) >= s.opts.RepairedHold {
			st = StatusInSync
		}
		if curStale {
			st, reason = StatusUnknown, curReason
		} else if reason == "" && n.spec != nil {
			reason = n.spec.Note
		}
		curCounts[st]++
		curObjects++
		if !full {
			continue
		}
		ns := NodeStatus{
			ID: id, Status: st, Reason: reason, Timeline: n.timeline,
			ReadyReplicas: n.ready, DesiredReplicas: n.replicas, LastChange: n.lastChange,
			Spec: n.spec,
		}
		n.fillExtra(&ns)
		ns.Application, ns.Kind, ns.Policy, ns.Revision = n.spec.Application, n.spec.Kind, n.spec.Policy, n.spec.Revision
		if p, ok := s.appPolicy[n.spec.Application]; ok {
			ns.Policy = p
		}
		snap.Nodes = append(snap.Nodes, ns)
	}
	flush()
	for id, c := range s.clusters {
		if !c.known && objects[id] == 0 && !c.paused {
			continue
		}
		cs := ClusterStatus{ClusterHealth: c.health, Paused: c.paused, Objects: objects[id], Counts: counts[id]}
		if c.paused {
			cs.PausedAt, cs.PausedBy, cs.PauseReason = c.pausedAt, c.pauseNote.By, c.pauseNote.Reason
		}
		if cs.Counts == nil {
			cs.Counts = map[Status]int{}
		}
		if full && len(c.repairs) > 0 {
			r := slices.Clone(c.repairs)
			slices.Sort(r)
			cs.MedianRepair = r[len(r)/2]
		}
		if full {
			snap.Clusters = append(snap.Clusters, cs)
		}
		for _, st := range AllStatuses() {
			s.metrics.objects.WithLabelValues(id, string(st)).Set(float64(cs.Counts[st]))
		}
	}
	if !full {
		return nil
	}
	// Clusters with desired objects but no status entry yet.
	for id, n := range objects {
		if _, ok := s.clusters[id]; !ok {
			snap.Clusters = append(snap.Clusters, ClusterStatus{
				ClusterHealth: ClusterHealth{Cluster: id, State: ClusterConnecting},
				Objects:       n, Counts: counts[id],
			})
		}
	}
	slices.SortFunc(snap.Clusters, func(a, b ClusterStatus) int { return strings.Compare(a.Cluster, b.Cluster) })
	snap.Feed = make([]FeedEntry, len(s.feedRing))
	for i := range s.feedRing {
		snap.Feed[i] = s.feedRing[len(s.feedRing)-1-i]
	}
	return snap
}

// usable reports whether a cluster state lets the loop read and repair.
func usable(st ClusterState) bool { return st == ClusterSynced || st == ClusterDegraded }
