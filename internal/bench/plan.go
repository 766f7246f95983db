// Package bench measures driftwatch against the floor it competes with: it
// plans drift on a seeded schedule, makes it from a client of its own (the
// drift generator, with its own field manager), watches the managed
// namespaces with an independent raw watch, and pairs each drift with what
// that watch and the hub saw:
//
//   - floor: the drift call's start to the raw watch event showing the change;
//   - detect: the drift call's start to the hub classifying the drift;
//   - repair: the drift call's start to the first raw watch event showing the
//     object as desired again.
//
// The `driftwatch bench` command wires it to local control planes and the
// hub; this package holds the parts that do not need the command.
package bench

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/driftgen"
)

// Target is a managed object the schedule may drift.
type Target struct {
	ID hub.NodeID
	// Desired is the decoded desired object (read-only): the raw watch
	// compares live objects with it to see the repair.
	Desired *unstructured.Unstructured
}

// Step is one planned drift.
type Step struct {
	// Seq is the step's index in the plan.
	Seq int
	// Offset is when the drift is due, from the start of the run.
	Offset time.Duration
	Target Target
	Action driftgen.Action
}

// Actions lists the drifts the benchmark makes on a kind: deletes, scales,
// image edits and label removals.
func Actions(k hub.Kind) []driftgen.Action {
	if k == hub.KindDeployment {
		return []driftgen.Action{driftgen.ActionDelete, driftgen.ActionScale, driftgen.ActionImage, driftgen.ActionUnlabel}
	}
	return []driftgen.Action{driftgen.ActionDelete, driftgen.ActionUnlabel}
}

// Plan returns a deterministic schedule of drifts drifts over the targets:
// the same targets and seed give the same steps. Drift j goes to the j-th
// cluster in sorted order, round-robin, so every cluster sees ratePerCluster
// drifts per second; within a cluster, targets are taken from a seeded
// permutation, so no object drifts twice before every other object of its
// cluster drifted once.
func Plan(targets []Target, drifts int, ratePerCluster float64, seed uint64) []Step {
	return PlanWith(targets, drifts, ratePerCluster, seed, Actions)
}

// PlanWith is Plan with the drifts of each kind chosen from actions(kind)
// (Plan uses Actions; --mode mixed, MixedActions).
func PlanWith(targets []Target, drifts int, ratePerCluster float64, seed uint64, actions func(hub.Kind) []driftgen.Action) []Step {
	byCluster := groupByCluster(targets)
	names := sortedKeys(byCluster)
	if len(names) == 0 || drifts <= 0 {
		return nil
	}
	type stream struct {
		rng  *rand.Rand
		perm []int
		next int
	}
	streams := make([]*stream, len(names))
	for i, name := range names {
		rng := clusterRand(seed, name)
		streams[i] = &stream{rng: rng, perm: rng.Perm(len(byCluster[name]))}
	}
	steps := make([]Step, 0, drifts)
	for j := range drifts {
		c := j % len(names)
		s := streams[c]
		if s.next == len(s.perm) {
			s.perm, s.next = s.rng.Perm(len(s.perm)), 0
		}
		t := byCluster[names[c]][s.perm[s.next]]
		s.next++
		acts := actions(t.ID.Kind)
		i := j / len(names)
		var off time.Duration
		if ratePerCluster > 0 {
			off = time.Duration(float64(i) / ratePerCluster * float64(time.Second))
		}
		steps = append(steps, Step{Seq: j, Offset: off, Target: t, Action: acts[s.rng.IntN(len(acts))]})
	}
	return steps
}

// BurstPlan returns n deletes of distinct objects of one cluster, all due at
// once, chosen by a seeded permutation (all of them when n is at least the
// cluster's object count).
func BurstPlan(targets []Target, cluster string, n int, seed uint64) []Step {
	ts := groupByCluster(targets)[cluster]
	perm := clusterRand(seed^0xb5, cluster).Perm(len(ts))
	n = min(n, len(ts))
	steps := make([]Step, 0, n)
	for i := range n {
		steps = append(steps, Step{Seq: i, Target: ts[perm[i]], Action: driftgen.ActionDelete})
	}
	return steps
}

// groupByCluster groups targets by cluster, each group sorted by NodeID.
func groupByCluster(targets []Target) map[string][]Target {
	out := make(map[string][]Target)
	for _, t := range targets {
		out[t.ID.Cluster] = append(out[t.ID.Cluster], t)
	}
	for _, ts := range out {
		slices.SortFunc(ts, func(a, b Target) int { return strings.Compare(a.ID.String(), b.ID.String()) })
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// clusterRand is a random source for one cluster: the same seed and cluster
// name give the same stream, independent of the other clusters.
func clusterRand(seed uint64, cluster string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(cluster))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// Fingerprint returns a short hash of a plan's targets, actions and
// offsets: two runs with the same fingerprint made the same drifts.
func Fingerprint(steps []Step) string {
	h := fnv.New64a()
	for _, s := range steps {
		fmt.Fprintf(h, "%d %s %s %d\n", s.Seq, s.Target.ID, s.Action, s.Offset)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// OthersPlan returns the drifts the burst run makes on every cluster but
// the burst's while the burst is repaired: Plan's actions and order over
// the other clusters' targets, ratePerCluster drifts per second on each
// for window (at least one each). It is empty with no other cluster.
func OthersPlan(targets []Target, burstCluster string, ratePerCluster float64, window time.Duration, seed uint64) []Step {
	var others []Target
	clusters := make(map[string]bool)
	for _, t := range targets {
		if t.ID.Cluster != burstCluster {
			others = append(others, t)
			clusters[t.ID.Cluster] = true
		}
	}
	if len(clusters) == 0 || ratePerCluster <= 0 {
		return nil
	}
	perCluster := max(1, int(ratePerCluster*window.Seconds()))
	return Plan(others, perCluster*len(clusters), ratePerCluster, seed^0x07)
}
