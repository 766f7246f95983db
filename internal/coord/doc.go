// Package coord lets several replicas of one hub share its clusters, with
// Kubernetes Leases in a coordination cluster as the only shared state (no
// cluster layer of its own, as Argo CD's sharded application controller and
// Flux's sharding do).
//
// Each replica holds a membership Lease (holder: its replica id; an
// incarnation id and its API address as annotations) and renews it every
// RetryPeriod. A replica is live while the others see its Lease change
// within LeaseDuration, judged by their own monotonic clocks from the time
// they observed each change (the leader elector's rule: no clock skew
// enters). The clusters are divided among the live replicas by rendezvous
// hashing (Owner): a pure function, so every replica computes the same
// share, and a replica joining or leaving moves only the clusters it takes
// or held.
//
// Each cluster has a claim Lease. A replica acquires the claim of a
// cluster of its share when it is free (never held, released, or held by
// a replica that is gone), with the Lease's resourceVersion as a
// precondition, and releases the claims that left its share. A claim is
// held only while its holder's membership Lease carries the incarnation
// that took it, so renewing one membership Lease keeps every claim of the
// replica: writes per renewal period are one per replica, not one per
// cluster. A replica that stopped renewing is evicted by another (its
// membership Lease deleted with the observed resourceVersion as a
// precondition, which fails if it renewed meanwhile) before its claims are
// taken.
//
// Fencing: a replica writes to a cluster only through Guard, which checks,
// by the monotonic clock, that the last successful renewal started less
// than RenewDeadline ago (RenewDeadline < LeaseDuration, the difference is
// the margin), and cancels the write when the claim is given up. A paused
// or partitioned replica thus stops writing before anyone may take its
// clusters; until it renews again it is fenced (Standing): it holds no
// cluster and its View names no owner.
//
// One id, one process: a joining replica that finds its membership Lease
// held by another incarnation watches it; renewed within a lease duration,
// another live process has its id, and Run returns ErrDuplicateReplica
// after leaving a notice on that Lease, which its holder logs. Unchanged
// for a lease duration, its process is gone and the Lease is taken over.
//
// One desired state: each replica publishes a hash of its desired state on
// its membership Lease. Only the replicas whose hash is the reference (the
// hash most of the claim holders publish, else most of the live replicas;
// a tie goes to the replica that joined first) share the clusters; the
// others are refused: they hold no cluster, and Guard refuses their writes
// from the moment SetDesiredHash makes them disagree.
package coord
