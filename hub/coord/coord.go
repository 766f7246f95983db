package coord

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
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

// Replica is one live replica as this one sees it.
type Replica struct {
	// ID is the replica id; Address its API address.
	ID, Address string
	// Self is true for this replica.
	Self bool
	// Clusters are the clusters it holds, sorted.
	Clusters []string
}

// View is what this replica knows of the others.
type View struct {
	// Replicas are the live replicas, sorted by id.
	Replicas []Replica
	// Owners maps each claimed cluster to the replica holding it.
	Owners map[string]string
}

// Coordinator is one replica's membership and claims: it renews its
// membership Lease, computes its share of the clusters over the live
// replicas (Owner), acquires the claims of its share once they are free,
// releases those that left it, and fences the writes to its clusters
// (Guard).
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

	// Owned by the loop.
	incarnation string
	member      *coordv1.Lease
	renewStart  time.Time
	renewTry    time.Time
	observed    map[string]observation
	// lastSeen is when a replica's membership was last seen renewed, kept
	// after it is evicted (takeover times are measured from it).
	lastSeen map[string]time.Time
	nextWake time.Time
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

// Owns reports whether this replica holds a valid claim on the cluster now.
func (c *Coordinator) Owns(cluster string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claims[cluster] != nil && time.Now().Before(c.validUntil)
}

// View returns the live replicas and the owner of each claimed cluster.
func (c *Coordinator) View() View {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := View{Replicas: slices.Clone(c.view.Replicas), Owners: maps.Clone(c.view.Owners)}
	return v
}

// Guard fences one write to a cluster: it fails (wrapping ErrNotOwner)
// unless this replica holds the cluster's claim and its membership was
// renewed less than RenewDeadline ago, by the monotonic clock. The
// returned context ends when the claim is given up or its validity runs
// out; call done once the write has returned.
func (c *Coordinator) Guard(ctx context.Context, cluster string) (context.Context, func(), error) {
	c.mu.Lock()
	cl := c.claims[cluster]
	until := c.validUntil
	if cl == nil || !time.Now().Before(until) {
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
func (c *Coordinator) Run(ctx context.Context) error {
	sel := labels.SelectorFromSet(labels.Set{HubLabel: c.opts.HubID}).String()
	factory := informers.NewSharedInformerFactoryWithOptions(c.opts.Client, 0,
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
		c.cycle(ctx, lister)
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

// cycle renews the membership when due, then brings the claims in line
// with the assignment over the live replicas.
func (c *Coordinator) cycle(ctx context.Context, lister coordlisters.LeaseLister) {
	now := time.Now()
	if !c.renewStart.IsZero() && now.Sub(c.renewStart) >= c.opts.RenewDeadline && c.holding() {
		c.dropAll(fmt.Sprintf("membership not renewed for %v (renewDeadline %v)", now.Sub(c.renewStart).Round(time.Millisecond), c.opts.RenewDeadline))
	}
	if c.member == nil || now.Sub(c.renewTry) >= c.opts.RetryPeriod {
		c.renew(ctx)
	}
	c.nextWake = c.renewTry.Add(c.opts.RetryPeriod)
	if c.member == nil || time.Since(c.renewStart) >= c.opts.RenewDeadline {
		return
	}
	if c.holding() {
		c.nextWake = earliest(c.nextWake, c.renewStart.Add(c.opts.RenewDeadline))
	}

	leases, err := lister.List(labels.Everything())
	if err != nil {
		c.log.Error("coordination: list leases", "err", err)
		return
	}
	now = time.Now()
	members := map[string]member{c.opts.ReplicaID: {c.incarnation, c.member.Annotations[AddressAnnotation]}}
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
			members[holder] = member{l.Annotations[IncarnationAnnotation], l.Annotations[AddressAnnotation]}
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
	live := slices.Sorted(maps.Keys(members))
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
		if !mine[id] {
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
	c.publishView(members, claimLeases)
}

// member is a live replica as seen in its membership Lease.
type member struct{ inc, addr string }

// publishView stores what View returns: the live replicas, and the holder
// of each claim whose holder is live in the incarnation that took it.
func (c *Coordinator) publishView(members map[string]member, claims map[string]*coordv1.Lease) {
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
		reps = append(reps, Replica{ID: id, Address: members[id].addr, Self: id == c.opts.ReplicaID, Clusters: cl})
	}
	c.view = View{Replicas: reps, Owners: owners}
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

// callTimeout bounds one Lease call.
func (c *Coordinator) callTimeout() time.Duration { return c.opts.RetryPeriod }

// renew renews this replica's membership Lease, or (re)joins with a new
// incarnation. A renewal refused because the Lease changed or is gone
// means the others evicted this replica: every claim is dropped before it
// joins again.
func (c *Coordinator) renew(ctx context.Context) {
	start := time.Now()
	c.renewTry = start
	callCtx, cancel := context.WithTimeout(ctx, c.callTimeout())
	defer cancel()
	leases := c.opts.Client.CoordinationV1().Leases(c.opts.Namespace)
	now := metav1.NewMicroTime(start)
	var out *coordv1.Lease
	var err error
	if c.member == nil {
		c.incarnation = rand.Text()[:16]
		l := c.newLease(memberName(c.opts.HubID, c.opts.ReplicaID), kindReplica)
		c.mu.Lock()
		l.Annotations[AddressAnnotation] = c.address
		c.mu.Unlock()
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		out, err = leases.Create(callCtx, l, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// This replica's own Lease from an earlier process (same id):
			// taken over with the new incarnation, so the claims of the
			// earlier one are free for this one at once.
			var old *coordv1.Lease
			if old, err = leases.Get(callCtx, l.Name, metav1.GetOptions{}); err == nil {
				l.ResourceVersion = old.ResourceVersion
				out, err = leases.Update(callCtx, l, metav1.UpdateOptions{})
			}
		}
	} else {
		l := c.member.DeepCopy()
		l.Spec.RenewTime = &now
		out, err = leases.Update(callCtx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			c.metrics.renewFailures.Inc()
			c.log.Error("coordination: this replica was evicted (its membership lease changed or is gone); giving up every cluster and joining again", "err", err)
			c.dropAll("evicted")
			c.member = nil
			c.renewTry = time.Time{}
			c.wake()
			return
		}
	}
	if err != nil {
		c.metrics.renewFailures.Inc()
		c.log.Warn("coordination: renew membership", "err", err, "sinceLastRenewal", time.Since(c.renewStart).Round(time.Millisecond))
		return
	}
	if c.member == nil {
		c.log.Info("coordination: joined", "replica", c.opts.ReplicaID, "incarnation", c.incarnation)
	}
	c.member = out
	c.renewStart = start
	c.mu.Lock()
	c.validUntil = start.Add(c.opts.RenewDeadline)
	c.mu.Unlock()
	c.metrics.renewals.Inc()
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
	rv := c.member.ResourceVersion
	err := c.opts.Client.CoordinationV1().Leases(c.opts.Namespace).Delete(callCtx, c.member.Name,
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	if err != nil && !apierrors.IsNotFound(err) {
		c.log.Warn("coordination: delete membership lease (it expires by itself)", "err", err)
		return
	}
	c.log.Info("coordination: left", "replica", c.opts.ReplicaID)
}
