package api

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
	"github.com/driftwatch/driftwatch/internal/rescue"
)

// defaultReplicaPoll is ReplicaClient's default period for the list of
// replicas and the health of each.
const defaultReplicaPoll = 2 * time.Second

// replicaProbeTimeout is the least time a replica's API has to answer the
// health check, or the list of replicas, before it is shown unreachable.
const replicaProbeTimeout = 5 * time.Second

// ReplicaClient is one view of a hub that runs as several replicas, through
// the API of any of them (or of a Service in front of them): it lists the
// replicas from the replica it reaches first, watches every replica at the
// API address its membership Lease advertises (with the token and CA of
// the first), and merges their snapshots (Merge). Actions on a cluster
// or one of its NodeIDs go to the replica that manages it, straight from
// this client with the caller's own token: no replica relays a token to
// another. Application policies and application holds live in the intent
// the replicas share and go to the first replica.
type ReplicaClient struct {
	first *Client
	poll  time.Duration
	// probeTimeout is replicaProbeTimeout (tests shorten it): every
	// request of the client's own (the list, the health checks) gives up
	// after max(poll, probeTimeout), so a replica that stops answering is
	// shown unreachable instead of freezing the view.
	probeTimeout time.Duration
	// merge is Merge (tests make it panic).
	merge func(apiv1.ReplicaList, map[string]*hub.Snapshot, map[string]error) *hub.Snapshot

	mu      sync.Mutex
	list    apiv1.ReplicaList
	clients map[string]*Client // by replica id
}

// NewReplicaClient returns a client of the replicas reached through c;
// poll is how often it refreshes the list of replicas and checks each
// one's API (default 2s).
func NewReplicaClient(c *Client, poll time.Duration) *ReplicaClient {
	if poll <= 0 {
		poll = defaultReplicaPoll
	}
	return &ReplicaClient{first: c, poll: poll, probeTimeout: replicaProbeTimeout, merge: Merge, clients: make(map[string]*Client)}
}

// timeout is how long a request of the client's own may take.
func (rc *ReplicaClient) timeout() time.Duration { return max(rc.poll, rc.probeTimeout) }

// refresh re-reads the list of replicas and returns it, waiting at most
// timeout for the first replica.
func (rc *ReplicaClient) refresh(ctx context.Context) (apiv1.ReplicaList, error) {
	ctx, cancel := context.WithTimeout(ctx, rc.timeout())
	defer cancel()
	l, err := rc.first.Replicas(ctx)
	if err != nil {
		return apiv1.ReplicaList{}, err
	}
	rc.mu.Lock()
	rc.list = l
	rc.mu.Unlock()
	return l, nil
}

// client returns the client of a replica: the first one when the replica
// advertises no address, else one for its address.
func (rc *ReplicaClient) client(r apiv1.Replica) (*Client, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if c, ok := rc.clients[r.ID]; ok && (r.Address == "" || c.base == rc.baseOf(r.Address)) {
		return c, nil
	}
	if r.Address == "" {
		rc.clients[r.ID] = rc.first
		return rc.first, nil
	}
	// The address comes from a Lease, which whoever may write Leases in
	// the namespace can change: the token goes there only as it would go
	// to a --server (never over plain http to another machine), and never
	// over plain http when the first replica is reached over https.
	base := rc.baseOf(r.Address)
	if strings.HasPrefix(rc.first.base, "https://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("replica %q: address %q from its Lease is not https, unlike %s: not used", r.ID, base, rc.first.base)
	}
	c, err := NewClientWithOptions(base, rc.first.opts)
	if err != nil {
		return nil, fmt.Errorf("replica %q: address from its Lease: %w", r.ID, err)
	}
	rc.clients[r.ID] = c
	return c, nil
}

// baseOf is the URL of a replica's API address: the address when it is a
// URL (as serve advertises it), else host:port in the first one's scheme.
func (rc *ReplicaClient) baseOf(addr string) string {
	if strings.Contains(addr, "://") {
		return strings.TrimRight(addr, "/")
	}
	u, err := url.Parse(rc.first.base)
	if err != nil {
		return "http://" + addr
	}
	return u.Scheme + "://" + addr
}

// owner returns the client of the replica that manages cluster (the first
// one when none does). A list not known yet is read first, for at most
// timeout: an action never waits for good on a replica that stopped
// answering.
func (rc *ReplicaClient) owner(cluster string) (*Client, error) {
	rc.mu.Lock()
	l := rc.list
	rc.mu.Unlock()
	if len(l.Replicas) == 0 {
		var err error
		if l, err = rc.refresh(context.Background()); err != nil {
			return nil, err
		}
	}
	for _, r := range l.Replicas {
		for _, c := range r.Clusters {
			if c == cluster {
				return rc.client(r)
			}
		}
	}
	return rc.first, nil
}

// Subscribe starts receiving the merged view of the replicas: a new one
// after every snapshot of any replica and every poll. A panic in the view
// is logged to the first client's ClientOptions.Logger and the view starts
// again after a poll period, its watches reconnected. The returned func
// stops every watch and waits for the goroutines.
func (rc *ReplicaClient) Subscribe() (<-chan *hub.Snapshot, func()) {
	out := make(chan *hub.Snapshot, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg conc.WaitGroup
	wg.Go(func() {
		rescue.Loop(ctx, rc.first.opts.Logger, "the replicas' view", rc.poll, func(ctx context.Context) { rc.run(ctx, out) })
	})
	return out, func() { cancel(); wg.Wait() }
}

// Snapshot returns the merged view of the replicas once (see Merge): the
// list of replicas, then every replica's snapshot at once, each for at
// most ResponseTimeout; a replica that does not answer is shown
// unreachable with its clusters, as Subscribe's view shows it. Only the
// list failing is an error.
func (rc *ReplicaClient) Snapshot(ctx context.Context) (*hub.Snapshot, error) {
	l, err := rc.refresh(ctx)
	if err != nil {
		return nil, err
	}
	snaps := make([]*hub.Snapshot, len(l.Replicas))
	errs := make([]error, len(l.Replicas))
	var wg conc.WaitGroup
	for i, r := range l.Replicas {
		c, err := rc.client(r)
		if err != nil {
			errs[i] = err
			continue
		}
		wg.Go(func() {
			// A panic reading one replica is that replica's error.
			if err := rescue.Call(rc.first.opts.Logger, "a replica's snapshot", func() {
				sctx, cancel := context.WithTimeout(ctx, c.ResponseTimeout())
				defer cancel()
				snaps[i], errs[i] = c.Snapshot(sctx)
			}); err != nil {
				snaps[i], errs[i] = nil, err
			}
			if errs[i] != nil {
				errs[i] = fmt.Errorf("replica %q: %w", r.ID, errs[i])
			}
		})
	}
	wg.Wait()
	byID, errByID := make(map[string]*hub.Snapshot, len(l.Replicas)), make(map[string]error)
	for i, r := range l.Replicas {
		if errs[i] != nil {
			errByID[r.ID] = errs[i]
			continue
		}
		byID[r.ID] = snaps[i]
	}
	return rc.merge(l, byID, errByID), nil
}

// update is a snapshot of one replica.
type update struct {
	replica string
	snap    *hub.Snapshot
}

// watch is one replica's subscription and its forwarder.
type watch struct {
	client *Client
	cancel context.CancelFunc
	wg     *conc.WaitGroup
}

// run owns the replicas' subscriptions until ctx ends.
func (rc *ReplicaClient) run(ctx context.Context, out chan *hub.Snapshot) {
	updates := make(chan update)
	watches := map[string]*watch{}
	defer func() {
		for _, w := range watches {
			w.cancel()
			w.wg.Wait()
		}
	}()
	snaps := map[string]*hub.Snapshot{}
	errs := map[string]error{}
	var list apiv1.ReplicaList
	t := time.NewTicker(rc.poll)
	defer t.Stop()
	// follow watches the replicas of l and stops the watches of the others.
	follow := func(l apiv1.ReplicaList) {
		live := map[string]bool{}
		for _, r := range l.Replicas {
			live[r.ID] = true
			c, err := rc.client(r)
			if err != nil {
				errs[r.ID] = err
				continue
			}
			if w, ok := watches[r.ID]; ok && w.client == c {
				continue
			} else if ok {
				w.cancel()
				w.wg.Wait()
			}
			watches[r.ID] = startWatch(ctx, r.ID, c, updates)
		}
		for id, w := range watches {
			if !live[id] {
				w.cancel()
				w.wg.Wait()
				delete(watches, id)
				delete(snaps, id)
				delete(errs, id)
			}
		}
	}
	// probe checks every watched replica's API at once, each for at most
	// rc.timeout(): a replica that does not answer is unreachable.
	probe := func() {
		ids := make([]string, 0, len(watches))
		for id := range watches {
			ids = append(ids, id)
		}
		res := make([]error, len(ids))
		var wg conc.WaitGroup
		for i, id := range ids {
			c := watches[id].client
			wg.Go(func() {
				pctx, pcancel := context.WithTimeout(ctx, rc.timeout())
				defer pcancel()
				if _, err := c.Replicas(pctx); err != nil {
					res[i] = fmt.Errorf("replica %q: %w", id, err)
				}
			})
		}
		wg.Wait()
		for i, id := range ids {
			errs[id] = res[i]
		}
	}
	// resync re-reads the list (bounded: a first replica that stops
	// answering must not freeze the view) and checks every replica.
	resync := func() {
		if l, err := rc.refresh(ctx); err == nil {
			list = l
			follow(l)
		} // else keep the last list; the peers' checks below still run
		probe()
	}
	publish := func() {
		m := rc.merge(list, snaps, errs)
		select {
		case <-out:
		default:
		}
		out <- m
	}
	resync()
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-updates:
			snaps[u.replica] = u.snap
		case <-t.C:
			resync()
		}
		if ctx.Err() == nil {
			publish()
		}
	}
}

// startWatch subscribes to one replica and forwards its snapshots to
// updates until ctx ends or the watch is cancelled.
func startWatch(ctx context.Context, id string, c *Client, updates chan<- update) *watch {
	wctx, cancel := context.WithCancel(ctx)
	w := &watch{client: c, cancel: cancel, wg: &conc.WaitGroup{}}
	ch, stop := c.Subscribe()
	w.wg.Go(func() {
		defer stop()
		for {
			select {
			case <-wctx.Done():
				return
			case s := <-ch:
				select {
				case updates <- update{replica: id, snap: s}:
				case <-wctx.Done():
					return
				}
			}
		}
	})
	return w
}

// RepairNow asks the replica that manages the NodeID's cluster to repair
// it now.
func (rc *ReplicaClient) RepairNow(id hub.NodeID) error {
	c, err := rc.owner(id.Cluster)
	if err != nil {
		return err
	}
	return c.RepairNow(id)
}

// NodeDetail reads one NodeID's detail from the replica that manages its
// cluster (see Client.NodeDetail).
func (rc *ReplicaClient) NodeDetail(ctx context.Context, id hub.NodeID) (apiv1.NodeDetail, error) {
	c, err := rc.owner(id.Cluster)
	if err != nil {
		return apiv1.NodeDetail{}, err
	}
	return c.NodeDetail(ctx, id)
}

// Node reads one NodeID's status and desired object from the replica that
// manages its cluster.
func (rc *ReplicaClient) Node(ctx context.Context, id hub.NodeID) (hub.NodeStatus, error) {
	c, err := rc.owner(id.Cluster)
	if err != nil {
		return hub.NodeStatus{}, err
	}
	return c.Node(ctx, id)
}

// PauseCluster pauses or resumes repairs through the replica that manages
// the cluster.
func (rc *ReplicaClient) PauseCluster(cluster string, paused bool) error {
	c, err := rc.owner(cluster)
	if err != nil {
		return err
	}
	return c.PauseCluster(cluster, paused)
}

// PauseClusterNote pauses repairs with a note through the replica that
// manages the cluster (see Client.PauseClusterNote).
func (rc *ReplicaClient) PauseClusterNote(cluster string, note hub.SwitchNote) error {
	c, err := rc.owner(cluster)
	if err != nil {
		return err
	}
	return c.PauseClusterNote(cluster, note)
}

// SetApplicationPolicy sets an application's policy through the first
// replica (the policy is in the shared intent).
func (rc *ReplicaClient) SetApplicationPolicy(app string, p hub.Policy) error {
	return rc.first.SetApplicationPolicy(app, p)
}

// SetApplicationPolicyNote sets an application's policy with a note
// through the first replica (see Client.SetApplicationPolicyNote).
func (rc *ReplicaClient) SetApplicationPolicyNote(app string, p hub.Policy, note hub.SwitchNote) error {
	return rc.first.SetApplicationPolicyNote(app, p, note)
}

// holdClient is the client a hold on t goes to: the owner of its cluster
// for a cluster or NodeID, else the first replica.
func (rc *ReplicaClient) holdClient(t hub.HoldTarget) (*Client, error) {
	switch t.Scope {
	case hub.HoldCluster:
		return rc.owner(t.Name)
	case hub.HoldNode:
		id, err := hub.ParseNodeID(t.Name)
		if err != nil {
			return nil, err
		}
		return rc.owner(id.Cluster)
	}
	return rc.first, nil
}

// Hold places a hold through the replica that manages its target.
func (rc *ReplicaClient) Hold(t hub.HoldTarget, ttl time.Duration, reason string) (hub.Hold, error) {
	c, err := rc.holdClient(t)
	if err != nil {
		return hub.Hold{}, err
	}
	return c.Hold(t, ttl, reason)
}

// ReleaseHold releases a hold through the replica that manages its target.
func (rc *ReplicaClient) ReleaseHold(t hub.HoldTarget) error {
	c, err := rc.holdClient(t)
	if err != nil {
		return err
	}
	return c.ReleaseHold(t)
}
