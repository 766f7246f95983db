package coord

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func fakeClusters(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("c%02d", i))
	}
	return out
}

// TestDuplicateReplicaID: a second process with the id of a live replica
// exits (Run returns ErrDuplicateReplica naming the id) within a renewal
// period or two, without taking anything; the first keeps every cluster,
// logs a warning, and its Lease is its own again.
func TestDuplicateReplicaID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCoordination()
		clusters := fakeClusters(4)
		a := startFakeNode(t, f, "r1", "h1", clusters)
		settle(time.Second)
		if !sameSet(a.owned(), clusters) || a.c.Ready() != nil {
			t.Fatalf("r1 owns %v (ready: %v), want every cluster", a.owned(), a.c.Ready())
		}
		inc := f.lease(t, memberName(testHub, "r1")).Annotations[IncarnationAnnotation]

		start := time.Now()
		dup := startFakeNode(t, f, "r1", "h1", clusters)
		var err error
		select {
		case err = <-dup.done:
			close(dup.done)
		case <-time.After(3 * fakeLease):
			t.Fatal("the duplicate still runs after three lease durations")
		}
		took := time.Since(start)
		if !errors.Is(err, ErrDuplicateReplica) || !strings.Contains(err.Error(), `"r1"`) || !strings.Contains(err.Error(), inc) {
			t.Fatalf("duplicate's Run = %v, want ErrDuplicateReplica naming r1 and incarnation %s", err, inc)
		}
		if limit := 2 * a.c.opts.RetryPeriod; took > limit {
			t.Errorf("duplicate detected after %v, want within %v (two renewal periods)", took, limit)
		}
		if owned := dup.owned(); len(owned) > 0 {
			t.Errorf("the duplicate owned %v", owned)
		}

		settle(fakeLease)
		if !sameSet(a.owned(), clusters) || a.c.Ready() != nil {
			t.Errorf("r1 after the duplicate: owns %v (ready: %v), want every cluster", a.owned(), a.c.Ready())
		}
		l := f.lease(t, memberName(testHub, "r1"))
		if l.Annotations[IncarnationAnnotation] != inc || l.Annotations[DuplicateAnnotation] != "" {
			t.Errorf("r1's Lease annotations %v, want incarnation %s and no duplicate notice", l.Annotations, inc)
		}
		if !strings.Contains(a.logs.String(), "another process started with this replica's id") {
			t.Errorf("r1 logged no warning about the duplicate:\n%s", a.logs)
		}
		if got := testutil.ToFloat64(a.c.metrics.duplicates); got != 1 {
			t.Errorf("r1's duplicates metric %v, want 1", got)
		}
		if err := a.stop(); err != nil {
			t.Errorf("r1: Run = %v", err)
		}
	})
}

// TestSameIDAfterCrash: a process whose id's membership Lease was left by
// a process that died (never renewed again) joins once that Lease stayed
// unchanged for a lease duration, not before, and takes the clusters.
func TestSameIDAfterCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCoordination()
		now := metav1.NewMicroTime(time.Now())
		secs := int32(fakeLease / time.Second)
		id := "r1"
		left := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: memberName(testHub, id), Namespace: testNS,
				Labels:      map[string]string{HubLabel: testHub, KindLabel: kindReplica},
				Annotations: map[string]string{IncarnationAnnotation: "crashed"}},
			Spec: coordv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
		}
		if _, err := f.cs.CoordinationV1().Leases(testNS).Create(t.Context(), left, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		clusters := fakeClusters(3)
		start := time.Now()
		n := startFakeNode(t, f, id, "h1", clusters)
		settle(fakeLease / 2)
		if err := n.c.Ready(); err == nil || !strings.Contains(err.Error(), "joining") || !strings.Contains(err.Error(), "crashed") {
			t.Errorf("Ready while it waits = %v, want joining, naming the other incarnation", err)
		}
		for !sameSet(n.owned(), clusters) {
			if time.Since(start) > 2*fakeLease {
				t.Fatalf("owns %v after %v", n.owned(), time.Since(start))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if took := time.Since(start); took < fakeLease || took > fakeLease+n.c.opts.RetryPeriod {
			t.Errorf("joined after %v, want between %v and %v", took, fakeLease, fakeLease+n.c.opts.RetryPeriod)
		}
		if inc := f.lease(t, memberName(testHub, id)).Annotations[IncarnationAnnotation]; inc == "crashed" || inc != n.c.incarnation {
			t.Errorf("membership Lease incarnation %q, want the new process's", inc)
		}
		if !strings.Contains(n.logs.String(), "taking over this replica id's membership lease") {
			t.Errorf("no log of the takeover:\n%s", n.logs)
		}
	})
}

// TestRefusedDesiredState: a replica started with another desired state
// takes no cluster while the owners agree on theirs (Ready says why, every
// view shows it refused); reloaded with their config, it takes its share.
// A rolling change moves the fleet: a replica reloaded first is refused at
// once (its guarded writes fail as SetDesiredHash returns), and the
// config in force changes when most owners run the new one.
func TestRefusedDesiredState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCoordination()
		clusters := fakeClusters(12)
		a := startFakeNode(t, f, "a", "h1", clusters)
		settle(time.Second)
		b := startFakeNode(t, f, "b", "h1", clusters)
		settle(time.Second)
		share := func(n *fakeNode, live ...string) []string { return Assign(n.id, clusters, live) }
		if !sameSet(a.owned(), share(a, "a", "b")) || !sameSet(b.owned(), share(b, "a", "b")) {
			t.Fatalf("a owns %v, b owns %v: not their shares", a.owned(), b.owned())
		}

		z := startFakeNode(t, f, "z", "h2", clusters)
		settle(fakeLease)
		if owned := z.owned(); len(owned) > 0 {
			t.Errorf("z (another desired state) owns %v", owned)
		}
		err := z.c.Ready()
		if err == nil || !strings.Contains(err.Error(), "refuses clusters") || !strings.Contains(err.Error(), "h2") || !strings.Contains(err.Error(), "h1") {
			t.Errorf("z: Ready = %v, want a refusal naming both hashes", err)
		}
		if got := testutil.ToFloat64(z.c.metrics.refused); got != 1 {
			t.Errorf("z's refused gauge %v", got)
		}
		if !strings.Contains(z.logs.String(), "this replica refuses clusters") {
			t.Errorf("z logged no refusal:\n%s", z.logs)
		}
		for _, n := range []*fakeNode{a, b, z} {
			v := n.c.View()
			for _, r := range v.Replicas {
				if want := map[bool]Standing{true: StandingRefused, false: StandingActive}[r.ID == "z"]; r.Standing != want || (r.Reason == "") != (want == StandingActive) {
					t.Errorf("%s sees %s %s (%q)", n.id, r.ID, r.Standing, r.Reason)
				}
			}
			if v.Reference != "h1" || len(v.Owners) != len(clusters) {
				t.Errorf("%s: reference %q, owners %v", n.id, v.Reference, v.Owners)
			}
		}
		if !sameSet(a.owned(), share(a, "a", "b")) || !sameSet(b.owned(), share(b, "a", "b")) {
			t.Errorf("z's join moved clusters: a owns %v, b owns %v", a.owned(), b.owned())
		}

		// z reloaded with the owners' config takes its share.
		z.c.SetDesiredHash("h1")
		settle(time.Second)
		for _, n := range []*fakeNode{a, b, z} {
			if !sameSet(n.owned(), share(n, "a", "b", "z")) || n.c.Ready() != nil {
				t.Errorf("after z's reload: %s owns %v (ready %v), want %v", n.id, n.owned(), n.c.Ready(), share(n, "a", "b", "z"))
			}
		}

		// Rolling change to h3: z first. It is refused the moment
		// SetDesiredHash returns, then gives its clusters up.
		zs := z.owned()
		if len(zs) == 0 {
			t.Fatal("z owns nothing: the test needs a share")
		}
		z.c.SetDesiredHash("h3")
		if _, _, err := z.c.Guard(t.Context(), zs[0]); !errors.Is(err, ErrNotOwner) {
			t.Errorf("z's Guard(%s) right after its reload to another config: %v, want refused", zs[0], err)
		}
		settle(time.Second)
		if owned := z.owned(); len(owned) > 0 {
			t.Errorf("z, alone on h3, owns %v", owned)
		}
		if !sameSet(a.owned(), share(a, "a", "b")) || !sameSet(b.owned(), share(b, "a", "b")) {
			t.Errorf("a owns %v, b owns %v, want everything between them", a.owned(), b.owned())
		}
		// b next: owners a (h1) and b (h3) tie; a joined first, so h1
		// stays in force and b gives its clusters up too.
		b.c.SetDesiredHash("h3")
		settle(time.Second)
		if !sameSet(a.owned(), clusters) || len(b.owned())+len(z.owned()) > 0 {
			t.Errorf("after b's reload: a owns %v, b %v, z %v; want a alone", a.owned(), b.owned(), z.owned())
		}
		// a last: every replica on h3, all share again.
		a.c.SetDesiredHash("h3")
		settle(time.Second)
		for _, n := range []*fakeNode{a, b, z} {
			if !sameSet(n.owned(), share(n, "a", "b", "z")) || n.c.Ready() != nil {
				t.Errorf("after the rolling change: %s owns %v (ready %v), want %v", n.id, n.owned(), n.c.Ready(), share(n, "a", "b", "z"))
			}
		}
		if l := f.lease(t, memberName(testHub, "a")); l.Annotations[DesiredHashAnnotation] != "h3" {
			t.Errorf("a's Lease publishes hash %q, want h3", l.Annotations[DesiredHashAnnotation])
		}
		noHandlerErrorsFake(t, a, b, z)
	})
}

// TestFencedWhileCoordinationDown: when the coordination apiserver stops
// answering, a replica is fenced once its renew deadline passes: Ready
// says coordination is unreachable, the view names no owner and lists
// only itself, Guard refuses; once it answers again the replicas share
// the clusters again.
func TestFencedWhileCoordinationDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCoordination()
		clusters := fakeClusters(6)
		a := startFakeNode(t, f, "a", "h1", clusters)
		b := startFakeNode(t, f, "b", "h1", clusters)
		settle(2 * time.Second)
		if len(a.c.View().Owners) != len(clusters) {
			t.Fatalf("owners %v before the outage", a.c.View().Owners)
		}
		f.down.Store(true)
		settle(a.c.opts.RenewDeadline + time.Second)
		for _, n := range []*fakeNode{a, b} {
			err := n.c.Ready()
			if err == nil || !strings.Contains(err.Error(), "coordination unreachable") {
				t.Errorf("%s: Ready while the coordination apiserver is down = %v", n.id, err)
			}
			v := n.c.View()
			if len(v.Owners) > 0 || v.Standing != StandingFenced || len(v.Replicas) != 1 || !v.Replicas[0].Self || v.Replicas[0].Standing != StandingFenced || len(v.Replicas[0].Clusters) > 0 {
				t.Errorf("%s's view while fenced: %+v", n.id, v)
			}
			if owned := n.owned(); len(owned) > 0 {
				t.Errorf("%s still manages %v", n.id, owned)
			}
			for _, id := range clusters {
				if _, _, err := n.c.Guard(t.Context(), id); !errors.Is(err, ErrNotOwner) {
					t.Errorf("%s: Guard(%s) while fenced: %v", n.id, id, err)
				}
			}
		}
		f.down.Store(false)
		settle(2 * fakeLease)
		for _, n := range []*fakeNode{a, b} {
			if err := n.c.Ready(); err != nil {
				t.Errorf("%s: Ready after the outage = %v", n.id, err)
			}
		}
		if got := len(a.owned()) + len(b.owned()); got != len(clusters) {
			t.Errorf("after the outage a owns %v, b owns %v", a.owned(), b.owned())
		}
		if v := a.c.View(); len(v.Owners) != len(clusters) {
			t.Errorf("owners after the outage: %v", v.Owners)
		}
		noHandlerErrorsFake(t, a, b)
	})
}

func noHandlerErrorsFake(t *testing.T, nodes ...*fakeNode) {
	t.Helper()
	for _, n := range nodes {
		if _, _, _, errs := n.h.snapshot(); len(errs) > 0 {
			t.Errorf("%s: handler calls out of order: %v", n.id, errs)
		}
	}
}

// TestMissingNamespace: a replica whose coordination namespace does not
// exist is not ready and says so in one sentence, logged once and then at
// most every failureLogInterval (with how many times it failed since),
// never with an absurd duration; once the namespace exists it joins and
// takes its clusters.
func TestMissingNamespace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCoordination()
		f.noNamespace.Store(true)
		clusters := fakeClusters(3)
		a := startFakeNode(t, f, "a", "h1", clusters)
		settle(time.Minute)
		const says = `coordination namespace "` + testNS + `" does not exist on the coordination cluster: create it`
		err := a.c.Ready()
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Fatalf("Ready without the namespace = %v, want it to say %q", err, says)
		}
		if v := a.c.View(); v.Standing != StandingJoining || len(a.owned()) > 0 {
			t.Errorf("standing %s, owns %v, want joining with nothing", v.Standing, a.owned())
		}
		const logged = "does not exist on the coordination cluster: create it" // quotes escaped in the log
		if n := strings.Count(a.logs.String(), logged); n != 1 {
			t.Errorf("said %d times in a minute, want once:\n%s", n, a.logs.String())
		}
		settle(failureLogInterval)
		logs := a.logs.String()
		if n := strings.Count(logs, logged); n != 2 || !strings.Contains(logs, "repeatedSinceLastLog=") {
			t.Errorf("said %d times in %v, want twice, the second with the repeats:\n%s", n, failureLogInterval+time.Minute, logs)
		}
		if strings.Contains(logs, "9223372036854775807") || strings.Contains(logs, "2562047h") {
			t.Errorf("an absurd duration in the logs:\n%s", logs)
		}
		f.noNamespace.Store(false)
		settle(2 * fakeLease)
		if err := a.c.Ready(); err != nil {
			t.Errorf("Ready once the namespace exists = %v", err)
		}
		if got := a.owned(); !sameSet(got, clusters) {
			t.Errorf("owns %v once the namespace exists, want %v", got, clusters)
		}
	})
}
