package coord

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// TestAppliedRevisions: the revisions record starts empty, keeps one entry
// per source (a later record of a source replaces it, the others stay),
// survives a concurrent writer (the update is retried on conflict), and a
// record someone broke is an error naming the Lease, then replaced by the
// next record.
func TestAppliedRevisions(t *testing.T) {
	f := newFakeCoordination()
	newCoord := func(id string) *Coordinator {
		c, err := New(Options{Client: f.cs, Namespace: testNS, HubID: testHub, ReplicaID: id, Handler: &recorder{}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := newCoord("a"), newCoord("b")
	ctx := context.Background()
	got, err := a.AppliedRevisions(ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("before any record: %v, %v; want empty, nil", got, err)
	}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	web := AppliedRevision{Source: "web", URL: "https://git.example/web.git", Ref: "main", Commit: "c1", Replica: "a", At: t0}
	infra := AppliedRevision{Source: "infra", URL: "https://git.example/infra.git", Ref: "v1", Commit: "i1", Replica: "a", At: t0}
	if err := a.RecordRevisions(ctx, []AppliedRevision{web, infra}); err != nil {
		t.Fatal(err)
	}
	web2 := web
	web2.Commit, web2.Replica, web2.At = "c2", "b", t0.Add(time.Minute)
	// b's first update meets a conflict (another writer got in between):
	// it reads again and retries.
	var conflicts atomic.Int32
	f.cs.PrependReactor("update", "leases", func(act k8stesting.Action) (bool, runtime.Object, error) {
		l := act.(k8stesting.UpdateAction).GetObject().(*coordv1.Lease)
		if l.Name == revisionsName(testHub) && conflicts.Add(1) == 1 {
			cur := f.lease(t, l.Name).DeepCopy()
			cur.Annotations["touched"] = "yes"
			cur.ResourceVersion = "999" + cur.ResourceVersion // another writer's version
			if err := f.cs.Tracker().Update(leasesResource, cur, testNS); err != nil {
				t.Error(err)
			}
		}
		return false, nil, nil
	})
	if err := b.RecordRevisions(ctx, []AppliedRevision{web2}); err != nil {
		t.Fatal(err)
	}
	if n := conflicts.Load(); n < 2 {
		t.Errorf("updates of the record: %d, want a retry after the conflict", n)
	}
	got, err = a.AppliedRevisions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := got["web"]; g.Commit != "c2" || g.Replica != "b" || !g.At.Equal(web2.At) {
		t.Errorf("web = %+v, want b's c2", g)
	}
	if g := got["infra"]; g.Commit != "i1" || g.URL != infra.URL {
		t.Errorf("infra = %+v, want a's i1 kept", g)
	}
	l := f.lease(t, revisionsName(testHub))
	if l.Labels[KindLabel] != kindRevisions || l.Labels[HubLabel] != testHub {
		t.Errorf("labels %v", l.Labels)
	}

	// Broken by hand: reading it is an error naming the Lease; the next
	// record replaces it.
	l = l.DeepCopy()
	l.Annotations[RevisionsAnnotation] = `{"not": "a list"`
	if _, err := f.cs.CoordinationV1().Leases(testNS).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AppliedRevisions(ctx); err == nil || !strings.Contains(err.Error(), revisionsName(testHub)) {
		t.Errorf("broken record: err %v, want one naming the Lease", err)
	}
	if err := a.RecordRevisions(ctx, []AppliedRevision{web}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.AppliedRevisions(ctx); err != nil || len(got) != 1 || got["web"].Commit != "c1" {
		t.Errorf("after replacing the broken record: %v, %v", got, err)
	}
	// Undo: an entry still ours goes back to the previous one (or away);
	// one another replica wrote since stays.
	prev, err := a.AppliedRevisions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	web3 := web
	web3.Commit, web3.At = "c3", t0.Add(2*time.Minute)
	docs := AppliedRevision{Source: "docs", URL: "u", Ref: "main", Commit: "d1", Replica: "a", At: t0}
	if err := a.RecordRevisions(ctx, []AppliedRevision{web3, docs}); err != nil {
		t.Fatal(err)
	}
	if err := a.UndoRevisions(ctx, []AppliedRevision{web3, docs}, prev); err != nil {
		t.Fatal(err)
	}
	if got, err := a.AppliedRevisions(ctx); err != nil || len(got) != 1 || got["web"].Commit != "c1" {
		t.Errorf("after undo: %v, %v; want web back at c1 and docs gone", got, err)
	}
	if err := a.RecordRevisions(ctx, []AppliedRevision{web3}); err != nil {
		t.Fatal(err)
	}
	if err := b.RecordRevisions(ctx, []AppliedRevision{web2}); err != nil {
		t.Fatal(err)
	}
	if err := a.UndoRevisions(ctx, []AppliedRevision{web3}, prev); err != nil {
		t.Fatal(err)
	}
	if got, err := a.AppliedRevisions(ctx); err != nil || got["web"].Commit != "c2" {
		t.Errorf("undo after another replica's record: %v, %v; want b's c2 kept", got, err)
	}

	for _, bad := range []string{`[{"source":"web"}]`, strings.Repeat(" ", maxRevisionsBytes+1)} {
		l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: testNS, Annotations: map[string]string{RevisionsAnnotation: bad}}}
		if _, err := parseRevisions(l); err == nil {
			t.Errorf("parseRevisions(%.40q): no error", bad)
		}
	}

	// The coordination cluster down: an error naming the Lease.
	f.down.Store(true)
	if _, err := a.AppliedRevisions(ctx); err == nil || !strings.Contains(err.Error(), revisionsName(testHub)) {
		t.Errorf("down: read err %v", err)
	}
	if err := a.RecordRevisions(ctx, []AppliedRevision{web}); err == nil || !strings.Contains(err.Error(), revisionsName(testHub)) {
		t.Errorf("down: record err %v", err)
	}
}
