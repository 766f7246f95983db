package coord

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/driftwatch/driftwatch/internal/rescue"
)

// Labels and annotations of the Leases.
const (
	// HubLabel names the hub a Lease belongs to (several hubs may share a
	// namespace).
	HubLabel = "driftwatch.io/hub"
	// KindLabel is "replica" on membership Leases and "cluster" on claims.
	KindLabel = "driftwatch.io/lease"
	// IncarnationAnnotation is the random id of the replica process that
	// wrote the Lease: a claim is held only while its holder's membership
	// Lease carries the same incarnation.
	IncarnationAnnotation = "driftwatch.io/incarnation"
	// AddressAnnotation is a membership Lease's API address (for attach).
	AddressAnnotation = "driftwatch.io/address"
	// ClusterAnnotation is the cluster id of a claim.
	ClusterAnnotation = "driftwatch.io/cluster"
	// DesiredHashAnnotation is a membership Lease's desired-state hash
	// (Options.DesiredHash): a replica takes clusters only while its hash
	// is that of the replicas owning them.
	DesiredHashAnnotation = "driftwatch.io/desired-hash"
	// DuplicateAnnotation is set on a membership Lease by a process that
	// found its replica id in use and exits: the incarnation it would have
	// had. The holder logs it and clears it at its next renewal.
	DuplicateAnnotation = "driftwatch.io/duplicate"
)

// Lease kinds (KindLabel values).
const (
	kindReplica = "replica"
	kindCluster = "cluster"
)

// DefaultLeaseDuration is the default Options.LeaseDuration.
const DefaultLeaseDuration = 10 * time.Second

// ErrNotOwner is wrapped by Guard's error when this replica does not hold a
// valid claim on the cluster.
var ErrNotOwner = errors.New("this replica does not hold the cluster's claim")

// Handler starts and stops managing clusters as claims come and go. Both
// are called from the coordinator's loop, one at a time.
type Handler interface {
	// Own is called once this replica holds the cluster's claim: start
	// watching and repairing it.
	Own(cluster string)
	// Disown is called once the claim is given up (released, lost or
	// expired) and no guarded write is in flight any more: stop watching
	// the cluster, without pruning anything.
	Disown(cluster string)
}

// Options configure a Coordinator. Zero values take the documented
// defaults where there is one.
type Options struct {
	// Client reaches the coordination cluster (required).
	Client kubernetes.Interface
	// Namespace holds the Leases (required).
	Namespace string
	// HubID is the hub's id: the replicas of one hub share it (required).
	HubID string
	// ReplicaID names this replica, unique among the live replicas
	// (required).
	ReplicaID string
	// Address is this replica's API address, published on its membership
	// Lease so that any replica can reach the others.
	Address string
	// LeaseDuration is how long a replica that stopped renewing is still
	// taken for alive by the others. Default DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RenewDeadline is how long after the start of its last successful
	// renewal a replica still writes to its clusters; it must be less than
	// LeaseDuration (the difference is the fencing margin). Default 2/3 of
	// LeaseDuration.
	RenewDeadline time.Duration
	// RetryPeriod is the period of the renewals. Default 1/5 of
	// LeaseDuration.
	RetryPeriod time.Duration
	// Handler is told about the clusters this replica owns (required).
	Handler Handler
	// Logger receives the coordinator's logs. Default: discard.
	Logger *slog.Logger
	// Registerer receives the coordinator's metrics. Default: none.
	Registerer prometheus.Registerer
	// DesiredHash identifies this replica's desired state (SetDesiredHash
	// changes it): published on its membership Lease, it must be that of
	// the replicas owning clusters for this one to take any (see
	// Standing). "" publishes none: such a replica is taken as agreeing
	// with every other.
	DesiredHash string
	// OnOtherHash, when set, is called from the coordinator's loop each
	// time the set of desired-state hashes that other live replicas
	// publish, other than this replica's, changes and is not empty: one of
	// them may have moved to a newer revision of a Git source, and a hub
	// fetches its sources at once rather than at its next poll. It must
	// not block.
	OnOtherHash func()
}

func (o Options) withDefaults() (Options, error) {
	if o.Client == nil || o.Handler == nil {
		return o, errors.New("coordination: a client and a handler are required")
	}
	if o.LeaseDuration <= 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline <= 0 {
		o.RenewDeadline = o.LeaseDuration * 2 / 3
	}
	if o.RetryPeriod <= 0 {
		o.RetryPeriod = o.LeaseDuration / 5
	}
	if o.RenewDeadline >= o.LeaseDuration || o.RetryPeriod >= o.RenewDeadline {
		return o, fmt.Errorf("coordination: want retryPeriod (%v) < renewDeadline (%v) < leaseDuration (%v)", o.RetryPeriod, o.RenewDeadline, o.LeaseDuration)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for _, name := range []string{memberName(o.HubID, o.ReplicaID), claimName(o.HubID, "x")} {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || o.HubID == "" || o.ReplicaID == "" {
			return o, fmt.Errorf("coordination: replica id %q of hub %q does not make a valid Lease name %q: %v", o.ReplicaID, o.HubID, name, errs)
		}
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return o, fmt.Errorf("coordination: namespace %q: %v", o.Namespace, errs)
	}
	return o, nil
}

func memberName(hubID, replica string) string { return hubID + "-replica-" + replica }
func claimName(hubID, cluster string) string  { return hubID + "-cluster-" + cluster }

// Standing is a replica's part in the coordination.
type Standing string

// Standings.
const (
	// StandingJoining: this replica is not a member yet (it joins, or
	// joins again after it was evicted). It holds no cluster.
	StandingJoining Standing = "joining"
	// StandingActive: a member that takes its share of the clusters.
	StandingActive Standing = "active"
	// StandingRefused: a member whose desired-state hash differs from
	// that of the replicas owning clusters. It holds no cluster.
	StandingRefused Standing = "refused"
	// StandingFenced: this replica's last successful renewal started
	// RenewDeadline ago or more (the coordination cluster is unreachable,
	// or the process was paused). It holds no cluster, and knows no
	// owner.
	StandingFenced Standing = "fenced"
)

// Replica is one live replica as this one sees it.
type Replica struct {
	// ID is the replica id; Address its API address.
	ID, Address string
	// Self is true for this replica.
	Self bool
	// Clusters are the clusters it holds, sorted.
	Clusters []string
	// DesiredHash is the desired-state hash it publishes.
	DesiredHash string
	// Standing is StandingActive or StandingRefused for the others; this
	// replica's own is any.
	Standing Standing
	// Reason says why it takes no cluster (Standing not active).
	Reason string
}

// View is what this replica knows of the others.
type View struct {
	// Replicas are the live replicas, sorted by id. While this replica is
	// joining or fenced, it is the only one listed.
	Replicas []Replica
	// Owners maps each claimed cluster to the replica holding it: empty
	// while this replica is joining or fenced (it cannot tell).
	Owners map[string]string
	// Standing is this replica's; Reason says why it takes no cluster
	// (Standing not active).
	Standing Standing
	Reason   string
	// Reference is the desired-state hash a replica must publish to take
	// clusters ("" when none is published).
	Reference string
}

// Coordinator is one replica's membership and claims: it renews its
// membership Lease, computes its share of the clusters over the live
// replicas that agree on the desired state (Owner), acquires the claims
// of its share once they are free, releases those that left it, and fences
// the writes to its clusters (Guard).
type Coordinator struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	kick    chan struct{}

	mu         sync.Mutex
	address    string
	clusters   []string
	validUntil time.Time
	claims     map[string]*claim
	view       View
	// hash is this replica's desired-state hash; republish asks the loop
	// to publish it now.
	hash      string
	republish bool
	// joined is true while this replica is a member (from its join to its
	// eviction); joinNote says what a join waits for, lastErr why the
	// last renewal failed.
	joined            bool
	joinNote, lastErr string
	// refusal says why this replica takes no cluster ("" when it takes
	// its share); members is what the last cycle read of the live
	// replicas, itself included.
	refusal string
	members []memberInfo

	// Owned by the loop.
	incarnation string
	// others are the other live replicas' hashes OnOtherHash was last
	// called for (see otherHashes).
	others string
	// retired is the incarnation of this process that was evicted last:
	// a Lease of it is this process's own, never another's.
	retired    string
	sight      sighting
	member     *coordv1.Lease
	renewStart time.Time
	renewTry   time.Time
	observed   map[string]observation
	// lastSeen is when a replica's membership was last seen renewed, kept
	// after it is evicted (takeover times are measured from it).
	lastSeen map[string]time.Time
	nextWake time.Time
	// failure is the last join or renewal failure logged, loggedAt when,
	// and unlogged how many times it happened again since (see
	// noteFailure).
	failure  string
	loggedAt time.Time
	unlogged int
}

// claim is a cluster's claim while this replica holds it.
type claim struct {
	lease  *coordv1.Lease // as last written by this replica
	prevRV string         // the version this replica's acquisition replaced
	ctx    context.Context
	cancel context.CancelFunc
	writes sync.WaitGroup // guarded writes in flight
}

// observation is when this replica saw a Lease's version change (by its
// own monotonic clock: the leader elector's rule, free of clock skew).
type observation struct {
	rv string
	at time.Time
}

// New returns a coordinator. It does nothing before Run.
func New(opts Options) (*Coordinator, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Coordinator{
		opts:     opts,
		address:  opts.Address,
		hash:     opts.DesiredHash,
		log:      opts.Logger,
		metrics:  newMetrics(opts.Registerer),
		kick:     make(chan struct{}, 1),
		claims:   make(map[string]*claim),
		observed: make(map[string]observation),
		lastSeen: make(map[string]time.Time),
	}, nil
}

// SetAddress sets the API address published on the membership Lease from
// the next (re)join on; call it before Run.
func (c *Coordinator) SetAddress(addr string) {
	c.mu.Lock()
	c.address = addr
	c.mu.Unlock()
}

// ReplicaID returns this replica's id.
func (c *Coordinator) ReplicaID() string { return c.opts.ReplicaID }

// SetClusters sets the clusters to divide among the replicas.
func (c *Coordinator) SetClusters(ids []string) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	c.mu.Lock()
	c.clusters = ids
	c.mu.Unlock()
	c.wake()
}

func (c *Coordinator) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// SetDesiredHash sets this replica's desired-state hash and publishes it
// at once. When the new hash takes this replica out of the agreement (see
// Standing), its guarded writes are refused from the moment this returns,
// before the desired state that made the hash is put in force: a replica
// that disagrees with the owners never writes. Its claims are then
// released.
func (c *Coordinator) SetDesiredHash(h string) {
	c.mu.Lock()
	if c.hash == h {
		c.mu.Unlock()
		return
	}
	c.hash = h
	c.republish = true
	var reason string
	known := c.members != nil
	if known {
		ms := slices.Clone(c.members)
		for i := range ms {
			if ms[i].id == c.opts.ReplicaID {
				ms[i].hash = h
			}
		}
		reason = refusal(c.opts.ReplicaID, ms, reference(ms))
	}
	c.mu.Unlock()
	if known {
		c.setRefusal(reason)
	}
	c.wake()
}

// setRefusal records why this replica takes no cluster ("": it takes its
// share) and logs the change.
func (c *Coordinator) setRefusal(reason string) {
	c.mu.Lock()
	prev := c.refusal
	c.refusal = reason
	c.mu.Unlock()
	switch {
	case reason == prev:
	case reason != "":
		c.metrics.refused.Set(1)
		c.log.Warn("coordination: this replica refuses clusters", "replica", c.opts.ReplicaID, "reason", reason)
	default:
		c.metrics.refused.Set(0)
		c.log.Info("coordination: this replica's desired state agrees with the owners'; it takes its share again", "replica", c.opts.ReplicaID)
	}
}

// Owns reports whether this replica holds a valid claim on the cluster now
// (and agrees with the owners' desired state).
func (c *Coordinator) Owns(cluster string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claims[cluster] != nil && time.Now().Before(c.validUntil) && c.refusal == ""
}

// standingLocked returns this replica's standing at now and why it takes
// no cluster. Callers hold c.mu.
func (c *Coordinator) standingLocked(now time.Time) (Standing, string) {
	id := c.opts.ReplicaID
	switch {
	case !c.joined:
		reason := fmt.Sprintf("replica %q is joining the replicas of hub %q", id, c.opts.HubID)
		if c.joinNote != "" {
			reason += ": " + c.joinNote
		} else if c.lastErr != "" {
			reason += ": " + c.lastErr
		}
		return StandingJoining, reason
	case !now.Before(c.validUntil):
		since := now.Sub(c.validUntil.Add(-c.opts.RenewDeadline)).Round(time.Millisecond)
		reason := fmt.Sprintf("coordination unreachable: replica %q has not renewed its membership for %v (renewDeadline %v), so it holds no cluster", id, since, c.opts.RenewDeadline)
		if c.lastErr != "" {
			reason += ": " + c.lastErr
		}
		return StandingFenced, reason
	case c.refusal != "":
		return StandingRefused, fmt.Sprintf("replica %q refuses clusters: %s", id, c.refusal)
	}
	return StandingActive, ""
}

// Ready returns nil while this replica is an active member (it takes its
// share of the clusters), else why not: it is joining, refused (its
// desired state differs from the owners') or fenced (its membership could
// not be renewed in time).
func (c *Coordinator) Ready() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, reason := c.standingLocked(time.Now()); st != StandingActive {
		return errors.New(reason)
	}
	return nil
}

// View returns the live replicas and the owner of each claimed cluster, as
// of the last cycle. While this replica is joining or fenced it knows no
// owner: the view lists only itself, with its standing and why.
func (c *Coordinator) View() View {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, reason := c.standingLocked(time.Now())
	if st == StandingJoining || st == StandingFenced {
		return View{
			Replicas: []Replica{{ID: c.opts.ReplicaID, Address: c.address, Self: true, DesiredHash: c.hash, Standing: st, Reason: reason}},
			Owners:   map[string]string{}, Standing: st, Reason: reason, Reference: c.view.Reference,
		}
	}
	v := View{Replicas: slices.Clone(c.view.Replicas), Owners: maps.Clone(c.view.Owners), Standing: st, Reason: reason, Reference: c.view.Reference}
	for i, r := range v.Replicas {
		if r.Self {
			v.Replicas[i].Standing, v.Replicas[i].Reason, v.Replicas[i].DesiredHash = st, reason, c.hash
		}
	}
	return v
}

// Guard fences one write to a cluster: it fails (wrapping ErrNotOwner)
// unless this replica holds the cluster's claim, agrees with the owners'
// desired state, and its membership was renewed less than RenewDeadline
// ago, by the monotonic clock. The returned context ends when the claim is
// given up or its validity runs out; call done once the write has
// returned.
func (c *Coordinator) Guard(ctx context.Context, cluster string) (context.Context, func(), error) {
	c.mu.Lock()
	cl := c.claims[cluster]
	until := c.validUntil
	if cl == nil || !time.Now().Before(until) || c.refusal != "" {
		c.mu.Unlock()
		c.metrics.fenced.Inc()
		return nil, nil, fmt.Errorf("cluster %q: %w", cluster, ErrNotOwner)
	}
	cl.writes.Add(1)
	c.mu.Unlock()
	wctx, cancel := context.WithDeadline(ctx, until)
	stop := context.AfterFunc(cl.ctx, cancel)
	return wctx, func() {
		stop()
		cancel()
		cl.writes.Done()
	}, nil
}

// Run takes part in the coordination until ctx ends: it watches the
// hub's Leases, renews this replica's membership, acquires and releases
// claims. Then it gives up every claim, releases them and deletes its
// membership Lease, so the others take over at once, and returns once
// every goroutine it started has returned.
//
// When another live process holds this replica's id (its membership Lease
// carries another incarnation and is renewed while this one watches it,
// within a lease duration), Run returns an error wrapping
// ErrDuplicateReplica without joining; the other process logs a warning
// and keeps running.
//
// A panic in a cycle (its own code or the Handler's) is recovered, logged
// with its stack and returned in an error (wrapping a *rescue.PanicError):
// the cycle may have stopped between a claim and its Handler call, so this
// replica stops taking part rather than renew a membership whose share it
// may no longer manage. Nothing is released: its claims are taken over
// after a lease duration, as a stopped process's are, and Guard refuses
// its writes from RenewDeadline after its last renewal.
func (c *Coordinator) Run(ctx context.Context) error {
	sel := labels.SelectorFromSet(labels.Set{HubLabel: c.opts.HubID}).String()
	factory := informers.NewSharedInformerFactoryWithOptions(listWatchClient{c.opts.Client}, 0,
		informers.WithNamespace(c.opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	inf := factory.Coordination().V1().Leases()
	kick := func(any) { c.wake() }
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: kick, UpdateFunc: func(_, n any) { c.wake() }, DeleteFunc: kick,
	}); err != nil {
		return fmt.Errorf("coordination: watch leases: %w", err)
	}
	lister := inf.Lister()
	infCtx, stopInf := context.WithCancel(ctx)
	factory.Start(infCtx.Done())
	defer func() {
		stopInf()
		factory.Shutdown()
	}()
	c.log.Info("coordination: joining", "replica", c.opts.ReplicaID, "namespace", c.opts.Namespace,
		"leaseDuration", c.opts.LeaseDuration, "renewDeadline", c.opts.RenewDeadline, "retryPeriod", c.opts.RetryPeriod)
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		return nil // ctx ended before the first list: nothing held
	}
	for {
		var err error
		if perr := rescue.Call(c.log, "the coordination cycle", func() { err = c.cycle(ctx, lister) }); perr != nil {
			return fmt.Errorf("coordination: replica %q stops: %w", c.opts.ReplicaID, perr)
		}
		if err != nil {
			return err
		}
		wait := time.Until(c.nextWake)
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			c.leave(context.WithoutCancel(ctx))
			return nil
		case <-c.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// cycle joins or renews the membership when due, then brings the claims
// in line with the assignment over the live replicas that agree on the
// desired state. Its only error is a duplicate replica id.
func (c *Coordinator) cycle(ctx context.Context, lister coordlisters.LeaseLister) error {
	now := time.Now()
	if !c.renewStart.IsZero() && now.Sub(c.renewStart) >= c.opts.RenewDeadline && c.holding() {
		c.dropAll(fmt.Sprintf("membership not renewed for %v (renewDeadline %v)", now.Sub(c.renewStart).Round(time.Millisecond), c.opts.RenewDeadline))
	}
	var judgeAgain time.Time
	if c.member == nil {
		var err error
		if judgeAgain, err = c.join(ctx, lister); err != nil {
			return err
		}
	} else if now.Sub(c.renewTry) >= c.opts.RetryPeriod || c.takeRepublish() {
		c.renew(ctx)
	}
	c.nextWake = c.renewTry.Add(c.opts.RetryPeriod)
	if !judgeAgain.IsZero() {
		c.nextWake = earliest(c.nextWake, judgeAgain)
	}
	if c.member == nil || time.Since(c.renewStart) >= c.opts.RenewDeadline {
		return nil
	}
	if c.holding() {
		c.nextWake = earliest(c.nextWake, c.renewStart.Add(c.opts.RenewDeadline))
	}

	leases, err := lister.List(labels.Everything())
	if err != nil {
		c.log.Error("coordination: list leases", "err", err)
		return nil
	}
	now = time.Now()
	c.mu.Lock()
	self := member{inc: c.incarnation, addr: c.member.Annotations[AddressAnnotation], hash: c.hash, since: acquiredAt(c.member)}
	c.mu.Unlock()
	members := map[string]member{c.opts.ReplicaID: self}
	claimLeases := make(map[string]*coordv1.Lease)
	seen := make(map[string]bool, len(leases))
	for _, l := range leases {
		seen[l.Name] = true
		o, ok := c.observed[l.Name]
		if !ok || o.rv != l.ResourceVersion {
			o = observation{rv: l.ResourceVersion, at: now}
			c.observed[l.Name] = o
		}
		holder := holderOf(l)
		switch l.Labels[KindLabel] {
		case kindReplica:
			if holder == "" || holder == c.opts.ReplicaID {
				continue
			}
			c.lastSeen[holder] = o.at
			dur := c.opts.LeaseDuration
			if l.Spec.LeaseDurationSeconds != nil {
				dur = max(dur, time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second)
			}
			if expiry := o.at.Add(dur); now.After(expiry) {
				if c.evict(ctx, l, now.Sub(o.at)) {
					continue
				}
			} else {
				c.nextWake = earliest(c.nextWake, expiry.Add(time.Millisecond))
			}
			members[holder] = member{inc: l.Annotations[IncarnationAnnotation], addr: l.Annotations[AddressAnnotation],
				hash: l.Annotations[DesiredHashAnnotation], since: acquiredAt(l)}
		case kindCluster:
			if id := l.Annotations[ClusterAnnotation]; id != "" {
				claimLeases[id] = l
			}
		}
	}
	for name := range c.observed {
		if !seen[name] {
			delete(c.observed, name)
		}
	}

	// Only the replicas that agree on the desired state share the
	// clusters; one that does not takes none and gives its claims up.
	infos := memberInfos(c.opts.ReplicaID, members, claimLeases, c.holding())
	ref := reference(infos)
	live := eligible(infos, ref)
	why := refusal(c.opts.ReplicaID, infos, ref)
	c.mu.Lock()
	c.members = infos
	c.mu.Unlock()
	c.setRefusal(why)
	if c.opts.OnOtherHash != nil {
		if others := otherHashes(c.opts.ReplicaID, self.hash, members); others != c.others {
			c.others = others
			if others != "" {
				c.otherHash()
			}
		}
	}
	c.mu.Lock()
	all := c.clusters
	c.mu.Unlock()
	mine := make(map[string]bool)
	for _, id := range Assign(c.opts.ReplicaID, all, live) {
		mine[id] = true
	}

	// Claims that left this replica's share are released; a claim someone
	// else wrote meanwhile is lost.
	for _, id := range c.held() {
		cl := c.claimOf(id)
		if l := claimLeases[id]; l != nil && l.ResourceVersion != cl.lease.ResourceVersion && l.ResourceVersion != cl.prevRV &&
			(holderOf(l) != c.opts.ReplicaID || l.Annotations[IncarnationAnnotation] != c.incarnation) {
			c.dropClaim(id, "claim taken by "+holderOf(l))
			continue
		}
		switch {
		case why != "":
			c.release(ctx, id, "this replica's desired state differs from the owners'")
		case !mine[id]:
			c.release(ctx, id, "assigned to "+Owner(id, live))
		}
	}
	// Claims of this replica's share are acquired once free: released,
	// never held, or held by a replica that is gone (evicted, or started
	// again with a new incarnation).
	for _, id := range all {
		if !mine[id] || c.claimOf(id) != nil {
			continue
		}
		l := claimLeases[id]
		if l != nil {
			holder := holderOf(l)
			if m, live := members[holder]; live && holder != c.opts.ReplicaID && m.inc == l.Annotations[IncarnationAnnotation] {
				continue // its holder releases it once it sees this replica
			}
		}
		c.acquire(ctx, id, l)
	}
	c.publishView(members, claimLeases, ref)
	return nil
}

// otherHash calls Options.OnOtherHash; a panic in it is logged, and the
// loop goes on.
func (c *Coordinator) otherHash() {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("coordination: OnOtherHash panicked", "panic", r)
		}
	}()
	c.opts.OnOtherHash()
}

// otherHashes returns the desired-state hashes the live replicas other
// than self publish and that differ from hash, sorted and joined ("" when
// there are none).
func otherHashes(self, hash string, members map[string]member) string {
	var out []string
	for id, m := range members {
		if id != self && m.hash != "" && m.hash != hash && !slices.Contains(out, m.hash) {
			out = append(out, m.hash)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// member is a live replica as seen in its membership Lease.
type member struct {
	inc, addr, hash string
	since           time.Time
}

// memberInfos returns what the agreement rule reads of the live members:
// self (this replica, an owner when selfOwns) and the others, owners when
// a claim names them in the incarnation that took it.
func memberInfos(self string, members map[string]member, claims map[string]*coordv1.Lease, selfOwns bool) []memberInfo {
	owners := map[string]bool{self: selfOwns}
	for _, l := range claims {
		if h := holderOf(l); h != self {
			if m, ok := members[h]; ok && m.inc == l.Annotations[IncarnationAnnotation] {
				owners[h] = true
			}
		}
	}
	out := make([]memberInfo, 0, len(members))
	for _, id := range slices.Sorted(maps.Keys(members)) {
		m := members[id]
		out = append(out, memberInfo{id: id, hash: m.hash, since: m.since, owner: owners[id]})
	}
	return out
}

// acquiredAt returns a Lease's acquire time (zero when unset).
func acquiredAt(l *coordv1.Lease) time.Time {
	if l.Spec.AcquireTime == nil {
		return time.Time{}
	}
	return l.Spec.AcquireTime.Time
}

// publishView stores what View returns: the live replicas with their
// standing, and the holder of each claim whose holder is live in the
// incarnation that took it.
func (c *Coordinator) publishView(members map[string]member, claims map[string]*coordv1.Lease, ref string) {
	owners := make(map[string]string)
	for id, l := range claims {
		h := holderOf(l)
		if m, ok := members[h]; ok && h != c.opts.ReplicaID && m.inc == l.Annotations[IncarnationAnnotation] {
			owners[id] = h
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.claims {
		owners[id] = c.opts.ReplicaID
	}
	byReplica := make(map[string][]string)
	for id, r := range owners {
		byReplica[r] = append(byReplica[r], id)
	}
	reps := make([]Replica, 0, len(members))
	for _, id := range slices.Sorted(maps.Keys(members)) {
		cl := byReplica[id]
		slices.Sort(cl)
		m := members[id]
		r := Replica{ID: id, Address: m.addr, Self: id == c.opts.ReplicaID, Clusters: cl, DesiredHash: m.hash, Standing: StandingActive}
		if !agrees(m.hash, ref) {
			r.Standing = StandingRefused
			r.Reason = fmt.Sprintf("its desired state (hash %s) differs from the owners' (hash %s)", short(m.hash), short(ref))
		}
		reps = append(reps, r)
	}
	c.view = View{Replicas: reps, Owners: owners, Reference: ref}
	c.metrics.replicas.Set(float64(len(members)))
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func holderOf(l *coordv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func (c *Coordinator) holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.claims) > 0
}

func (c *Coordinator) held() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.claims))
}

func (c *Coordinator) claimOf(id string) *claim {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claims[id]
}

// takeRepublish reports (and clears) a request to publish a new desired
// hash now.
func (c *Coordinator) takeRepublish() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.republish
	c.republish = false
	return r
}

// callTimeout bounds one Lease call.
func (c *Coordinator) callTimeout() time.Duration { return c.opts.RetryPeriod }

// join makes this replica a member: it creates its membership Lease, or
// takes over one of its id that is its own (an earlier incarnation of this
// process) or was left by a process that is gone. A Lease of its id that
// another incarnation renews while this replica watches it means another
// live process has this id: join returns an error wrapping
// ErrDuplicateReplica. It returns when to judge that Lease again while
// undecided.
func (c *Coordinator) join(ctx context.Context, lister coordlisters.LeaseLister) (time.Time, error) {
	start := time.Now()
	c.renewTry = start
	if c.incarnation == "" {
		c.incarnation = rand.Text()[:16]
	}
	name := memberName(c.opts.HubID, c.opts.ReplicaID)
	callCtx, cancel := context.WithTimeout(ctx, c.callTimeout())
	defer cancel()
	leases := c.opts.Client.CoordinationV1().Leases(c.opts.Namespace)
	now := metav1.NewMicroTime(start)
	l := c.newLease(name, kindReplica)
	l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
	c.annotate(l)

	cur, err := lister.Leases(c.opts.Namespace).Get(name)
	var out *coordv1.Lease
	switch {
	case apierrors.IsNotFound(err):
		c.sight = sighting{}
		out, err = leases.Create(callCtx, l, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return time.Time{}, nil // the informer brings it; judged then
		}
	case err != nil:
		c.log.Error("coordination: read own membership lease", "err", err)
		return time.Time{}, nil
	default:
		inc := cur.Annotations[IncarnationAnnotation]
		if own := inc == c.incarnation || (inc != "" && inc == c.retired); !own {
			verdict, again := c.sight.judge(cur, start, c.opts.LeaseDuration)
			switch verdict {
			case joinWait:
				c.setJoinNote(fmt.Sprintf("its membership Lease %s carries incarnation %s of another process; waiting up to %v to see whether that one renews it",
					name, inc, again.Sub(start).Round(time.Millisecond)))
				return again, nil
			case joinDuplicate:
				c.noticeDuplicate(callCtx, cur)
				c.metrics.duplicates.Inc()
				return time.Time{}, fmt.Errorf("coordination: replica id %q of hub %q is %w (its membership Lease %s/%s is renewed by incarnation %s; this process was %s)",
					c.opts.ReplicaID, c.opts.HubID, ErrDuplicateReplica, c.opts.Namespace, name, inc, c.incarnation)
			}
			c.log.Warn("coordination: taking over this replica id's membership lease: the process that held it did not renew it for a lease duration",
				"replica", c.opts.ReplicaID, "previousIncarnation", inc)
		}
		// This process's own Lease (a join whose answer was lost, or an
		// incarnation that was evicted), or one left by a process that is
		// gone: taken over with the version seen as a precondition.
		l.ResourceVersion = cur.ResourceVersion
		out, err = leases.Update(callCtx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		c.metrics.renewFailures.Inc()
		if c.namespaceMissing(err) {
			err = fmt.Errorf("coordination namespace %q does not exist on the coordination cluster: create it (kubectl create namespace %s)",
				c.opts.Namespace, c.opts.Namespace)
		}
		c.setLastErr(err)
		c.noteFailure("coordination: join", err)
		return time.Time{}, nil
	}
	c.failure = ""
	c.sight = sighting{}
	c.member = out
	c.renewStart = start
	c.mu.Lock()
	c.validUntil = start.Add(c.opts.RenewDeadline)
	c.joined, c.joinNote, c.lastErr = true, "", ""
	c.mu.Unlock()
	c.metrics.renewals.Inc()
	c.log.Info("coordination: joined", "replica", c.opts.ReplicaID, "incarnation", c.incarnation, "desiredHash", out.Annotations[DesiredHashAnnotation])
	return time.Time{}, nil
}

// annotate sets the address and the desired hash this replica publishes
// on its membership Lease.
func (c *Coordinator) annotate(l *coordv1.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l.Annotations[AddressAnnotation] = c.address
	if c.hash != "" {
		l.Annotations[DesiredHashAnnotation] = c.hash
	} else {
		delete(l.Annotations, DesiredHashAnnotation)
	}
}

func (c *Coordinator) setJoinNote(note string) {
	c.mu.Lock()
	c.joinNote = note
	c.mu.Unlock()
}

func (c *Coordinator) setLastErr(err error) {
	c.mu.Lock()
	c.lastErr = err.Error()
	c.mu.Unlock()
}

// noticeDuplicate tells the process holding this replica's id that
// another one started with it and exits: it sets DuplicateAnnotation on
// its membership Lease (the holder logs it at its next renewal). Best
// effort: a failure is logged.
func (c *Coordinator) noticeDuplicate(ctx context.Context, l *coordv1.Lease) {
	leases := c.opts.Client.CoordinationV1().Leases(c.opts.Namespace)
	for range 2 {
		n := l.DeepCopy()
		if n.Annotations == nil {
			n.Annotations = make(map[string]string)
		}
		n.Annotations[DuplicateAnnotation] = c.incarnation
		_, err := leases.Update(ctx, n, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			if err != nil {
				c.log.Warn("coordination: tell the process holding this replica id about the duplicate", "err", err)
			}
			return
		}
		if l, err = leases.Get(ctx, l.Name, metav1.GetOptions{}); err != nil {
			return
		}
	}
}

// renew renews this replica's membership Lease. A renewal refused because
// the Lease is gone or carries another incarnation means the others
// evicted this replica (or a process took its id over after it stopped
// renewing): every claim is dropped before it joins again. A Lease that
// changed but is still this incarnation's (another process's duplicate
// notice) is renewed on its new version.
func (c *Coordinator) renew(ctx context.Context) {
	start := time.Now()
	c.renewTry = start
	callCtx, cancel := context.WithTimeout(ctx, c.callTimeout())
	defer cancel()
	leases := c.opts.Client.CoordinationV1().Leases(c.opts.Namespace)
	now := metav1.NewMicroTime(start)
	l := c.member.DeepCopy()
	l.Spec.RenewTime = &now
	c.annotate(l)
	out, err := leases.Update(callCtx, l, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		var cur *coordv1.Lease
		switch cur, err = leases.Get(callCtx, l.Name, metav1.GetOptions{}); {
		case err != nil:
		case holderOf(cur) == c.opts.ReplicaID && cur.Annotations[IncarnationAnnotation] == c.incarnation:
			if dup := cur.Annotations[DuplicateAnnotation]; dup != "" {
				c.metrics.duplicates.Inc()
				c.log.Warn("coordination: another process started with this replica's id; it was refused and exits, this one keeps running: give every replica its own id",
					"replica", c.opts.ReplicaID, "otherIncarnation", dup)
			}
			l = cur.DeepCopy()
			delete(l.Annotations, DuplicateAnnotation)
			l.Spec.RenewTime = &now
			c.annotate(l)
			out, err = leases.Update(callCtx, l, metav1.UpdateOptions{})
		default:
			err = apierrors.NewConflict(coordv1.Resource("leases"), l.Name,
				fmt.Errorf("held by %s incarnation %s", holderOf(cur), cur.Annotations[IncarnationAnnotation]))
		}
	}
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		c.metrics.renewFailures.Inc()
		c.log.Error("coordination: this replica was evicted (its membership lease changed or is gone); giving up every cluster and joining again", "err", err)
		c.dropAll("evicted")
		c.member = nil
		c.retired, c.incarnation = c.incarnation, ""
		c.renewTry = time.Time{}
		c.mu.Lock()
		c.joined, c.members = false, nil
		c.mu.Unlock()
		c.setLastErr(fmt.Errorf("evicted: %w", err))
		c.wake()
		return
	}
	if err != nil {
		c.metrics.renewFailures.Inc()
		c.setLastErr(err)
		c.noteFailure("coordination: renew membership", err, "sinceLastRenewal", time.Since(c.renewStart).Round(time.Millisecond))
		return
	}
	c.failure = ""
	c.member = out
	c.renewStart = start
	c.mu.Lock()
	c.validUntil = start.Add(c.opts.RenewDeadline)
	c.lastErr = ""
	c.mu.Unlock()
	c.metrics.renewals.Inc()
}

// failureLogInterval is how often the loop logs a join or renewal failure
// that stays the same.
const failureLogInterval = 5 * time.Minute

// noteFailure logs a join or renewal failure (msg, err, args) as a
// warning: at once when it differs from the last one logged, else at most
// every failureLogInterval, with how many times it happened meanwhile.
// A success clears it (c.failure).
func (c *Coordinator) noteFailure(msg string, err error, args ...any) {
	now := time.Now()
	key := msg + ": " + err.Error()
	if key == c.failure && now.Sub(c.loggedAt) < failureLogInterval {
		c.unlogged++
		return
	}
	args = append([]any{"err", err}, args...)
	if key == c.failure && c.unlogged > 0 {
		args = append(args, "repeatedSinceLastLog", c.unlogged)
	}
	c.log.Warn(msg, args...)
	c.failure, c.loggedAt, c.unlogged = key, now, 0
}

// namespaceMissing reports whether err is the apiserver's answer to a
// write into a namespace that does not exist: the coordination namespace.
func (c *Coordinator) namespaceMissing(err error) bool {
	var st apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == c.opts.Namespace
}

// newLease returns a Lease of this hub held by this replica.
func (c *Coordinator) newLease(name, kind string) *coordv1.Lease {
	id := c.opts.ReplicaID
	secs := int32((c.opts.LeaseDuration + time.Second - 1) / time.Second)
	return &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: c.opts.Namespace,
			Labels:      map[string]string{HubLabel: c.opts.HubID, KindLabel: kind},
			Annotations: map[string]string{IncarnationAnnotation: c.incarnation},
		},
		Spec: coordv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs},
	}
}

// evict deletes the membership Lease of a replica that stopped renewing,
// with its observed version as a precondition: it fails if the replica
// renewed meanwhile. It reports whether the replica is gone.
func (c *Coordinator) evict(ctx context.Context, l *coordv1.Lease, silent time.Duration) bool {
	callCtx, cancel := context.WithTimeout(ctx, c.callTimeout())
	defer cancel()
	rv := l.ResourceVersion
	err := c.opts.Client.CoordinationV1().Leases(c.opts.Namespace).Delete(callCtx, l.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	switch {
	case err == nil:
		c.log.Warn("coordination: replica expired; evicted", "replica", holderOf(l), "silentFor", silent.Round(time.Millisecond))
		c.metrics.evictions.Inc()
		return true
	case apierrors.IsNotFound(err):
		return true
	default:
		// Renewed meanwhile, or the call failed: still alive for now.
		return false
	}
}

// acquire takes a free claim (l nil: it does not exist yet).
func (c *Coordinator) acquire(ctx context.Context, id string, l *coordv1.Lease) {
	callCtx, cancel := context.WithTimeout(ctx, c.callTimeout())
	defer cancel()
	leases := c.opts.Client.CoordinationV1().Leases(c.opts.Namespace)
	now := metav1.NewMicroTime(time.Now())
	var out *coordv1.Lease
	var err error
	prev, prevRV := "", ""
	freeSince := time.Time{}
	if l == nil {
		n := c.newLease(claimName(c.opts.HubID, id), kindCluster)
		n.Annotations[ClusterAnnotation] = id
		n.Spec.AcquireTime, n.Spec.RenewTime = &now, &now
		out, err = leases.Create(callCtx, n, metav1.CreateOptions{})
	} else {
		prev, prevRV = holderOf(l), l.ResourceVersion
		if o, ok := c.observed[l.Name]; ok {
			freeSince = o.at
		}
		if seen, ok := c.lastSeen[prev]; ok && prev != "" {
			freeSince = seen
		}
		n := l.DeepCopy()
		me := c.opts.ReplicaID
		n.Spec.HolderIdentity = &me
		n.Annotations[IncarnationAnnotation] = c.incarnation
		n.Spec.AcquireTime, n.Spec.RenewTime = &now, &now
		if prev != me {
			t := int32(0)
			if n.Spec.LeaseTransitions != nil {
				t = *n.Spec.LeaseTransitions
			}
			t++
			n.Spec.LeaseTransitions = &t
		}
		out, err = leases.Update(callCtx, n, metav1.UpdateOptions{})
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			c.log.Warn("coordination: acquire claim", "cluster", id, "err", err)
		}
		return // the informer's next event brings the next try
	}
	c.mu.Lock()
	valid := time.Now().Before(c.validUntil)
	if valid {
		cl := &claim{lease: out, prevRV: prevRV}
		cl.ctx, cl.cancel = context.WithCancel(context.Background())
		c.claims[id] = cl
	}
	n := len(c.claims)
	c.mu.Unlock()
	if !valid {
		return // expired during the call; the next cycle re-acquires it
	}
	c.metrics.owned.Set(float64(n))
	if prev != "" && prev != c.opts.ReplicaID {
		c.metrics.takeovers.Inc()
		took := time.Since(freeSince)
		if !freeSince.IsZero() {
			c.metrics.takeoverSeconds.Observe(took.Seconds())
		}
		c.log.Info("coordination: took over cluster", "cluster", id, "from", prev, "sinceLastSeen", took.Round(time.Millisecond))
	} else {
		c.log.Info("coordination: claimed cluster", "cluster", id)
	}
	c.opts.Handler.Own(id)
}

// dropClaim gives a claim up locally: no new guarded write starts, those in
// flight are cancelled and waited for, and the handler stops managing the
// cluster. It returns the claim (nil when not held).
func (c *Coordinator) dropClaim(id, reason string) *claim {
	c.mu.Lock()
	cl := c.claims[id]
	delete(c.claims, id)
	n := len(c.claims)
	c.mu.Unlock()
	if cl == nil {
		return nil
	}
	cl.cancel()
	cl.writes.Wait()
	c.metrics.owned.Set(float64(n))
	c.log.Info("coordination: gave up cluster", "cluster", id, "reason", reason)
	c.opts.Handler.Disown(id)
	return cl
}

func (c *Coordinator) dropAll(reason string) {
	for _, id := range c.held() {
		c.dropClaim(id, reason)
	}
}

// release gives a claim up and marks its Lease free, so the next owner
// takes it at once.
func (c *Coordinator) release(ctx context.Context, id, reason string) {
	cl := c.dropClaim(id, reason)
	if cl == nil {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, c.callTimeout())
	defer cancel()
	l := cl.lease.DeepCopy()
	l.Spec.HolderIdentity = nil
	if _, err := c.opts.Client.CoordinationV1().Leases(c.opts.Namespace).Update(callCtx, l, metav1.UpdateOptions{}); err != nil {
		c.log.Warn("coordination: release claim (it expires by itself)", "cluster", id, "err", err)
	}
}

// leave releases every claim and deletes the membership Lease (graceful
// shutdown).
func (c *Coordinator) leave(ctx context.Context) {
	for _, id := range c.held() {
		c.release(ctx, id, "shutting down")
	}
	if c.member == nil {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, c.callTimeout())
	defer cancel()
	leases := c.opts.Client.CoordinationV1().Leases(c.opts.Namespace)
	rv := c.member.ResourceVersion
	err := leases.Delete(callCtx, c.member.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	if apierrors.IsConflict(err) {
		// Changed since the last renewal: deleted only while it is still
		// this incarnation's (another process's duplicate notice).
		var cur *coordv1.Lease
		if cur, err = leases.Get(callCtx, c.member.Name, metav1.GetOptions{}); err == nil {
			if holderOf(cur) != c.opts.ReplicaID || cur.Annotations[IncarnationAnnotation] != c.incarnation {
				c.log.Info("coordination: left; the membership lease is another incarnation's now", "replica", c.opts.ReplicaID)
				return
			}
			rv = cur.ResourceVersion
			err = leases.Delete(callCtx, c.member.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		}
	}
	if err != nil && !apierrors.IsNotFound(err) {
		c.log.Warn("coordination: delete membership lease (it expires by itself)", "err", err)
		return
	}
	c.log.Info("coordination: left", "replica", c.opts.ReplicaID)
}
