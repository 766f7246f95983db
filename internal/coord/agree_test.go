package coord

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReference(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name     string
		ms       []memberInfo
		want     string
		eligible []string
		refused  string // a replica refusal must name ("" when none)
	}{
		{name: "nobody", want: ""},
		{name: "one replica", ms: []memberInfo{{id: "a", hash: "h1", since: at(0)}}, want: "h1", eligible: []string{"a"}},
		{
			name: "a newcomer with another config is outvoted by the owners",
			ms: []memberInfo{
				{id: "a", hash: "h1", since: at(0), owner: true},
				{id: "b", hash: "h1", since: at(1), owner: true},
				{id: "z", hash: "h2", since: at(2)},
			},
			want: "h1", eligible: []string{"a", "b"}, refused: "z",
		},
		{
			name: "owners decide even when the newcomers are more",
			ms: []memberInfo{
				{id: "a", hash: "h1", since: at(0), owner: true},
				{id: "x", hash: "h2", since: at(1)},
				{id: "y", hash: "h2", since: at(2)},
			},
			want: "h1", eligible: []string{"a"}, refused: "x",
		},
		{
			name: "no owner yet: most of the live replicas",
			ms: []memberInfo{
				{id: "a", hash: "h1", since: at(0)},
				{id: "b", hash: "h2", since: at(1)},
				{id: "c", hash: "h2", since: at(2)},
			},
			want: "h2", eligible: []string{"b", "c"}, refused: "a",
		},
		{
			name: "a tie goes to the replica that joined first",
			ms: []memberInfo{
				{id: "a", hash: "h2", since: at(5), owner: true},
				{id: "b", hash: "h1", since: at(1), owner: true},
			},
			want: "h1", eligible: []string{"b"}, refused: "a",
		},
		{
			name: "a tie at the same join time goes to the smaller id",
			ms: []memberInfo{
				{id: "b", hash: "h1", since: at(1), owner: true},
				{id: "a", hash: "h2", since: at(1), owner: true},
			},
			want: "h2", eligible: []string{"a"}, refused: "b",
		},
		{
			name: "rolling reload: most owners run the new config",
			ms: []memberInfo{
				{id: "a", hash: "new", since: at(0), owner: true},
				{id: "b", hash: "new", since: at(1), owner: true},
				{id: "c", hash: "old", since: at(2), owner: true},
			},
			want: "new", eligible: []string{"a", "b"}, refused: "c",
		},
		{
			name: "replicas publishing no hash agree with every other and do not vote",
			ms: []memberInfo{
				{id: "a", since: at(0), owner: true},
				{id: "b", hash: "h2", since: at(1)},
			},
			want: "h2", eligible: []string{"a", "b"},
		},
		{
			name: "nobody publishes a hash",
			ms:   []memberInfo{{id: "a", since: at(0)}, {id: "b", since: at(1)}},
			want: "", eligible: []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := reference(tt.ms)
			if ref != tt.want {
				t.Fatalf("reference = %q, want %q", ref, tt.want)
			}
			if got := eligible(tt.ms, ref); !slices.Equal(got, tt.eligible) {
				t.Errorf("eligible = %v, want %v", got, tt.eligible)
			}
			for _, m := range tt.ms {
				why := refusal(m.id, tt.ms, ref)
				if (why != "") != (m.id == tt.refused || !slices.Contains(tt.eligible, m.id)) {
					t.Errorf("refusal(%s) = %q", m.id, why)
				}
				if m.id == tt.refused && (!strings.Contains(why, short(m.hash)) || !strings.Contains(why, short(ref))) {
					t.Errorf("refusal(%s) = %q: names neither its hash nor the reference", m.id, why)
				}
			}
		})
	}
}

// TestSightingJudge checks how a joining replica judges a membership Lease
// of its own id that another incarnation wrote: a renewal (or another
// incarnation) within the lease duration is a duplicate; a Lease that
// stays unchanged for the lease duration (or its own, longer, one) is
// taken over.
func TestSightingJudge(t *testing.T) {
	lease := func(inc string, renew time.Time, secs int32) *coordv1.Lease {
		rt := metav1.NewMicroTime(renew)
		return &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{IncarnationAnnotation: inc}},
			Spec:       coordv1.LeaseSpec{RenewTime: &rt, LeaseDurationSeconds: &secs},
		}
	}
	const d = 10 * time.Second
	renewed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		later func() *coordv1.Lease // the Lease seen after wait
		wait  time.Duration
		want  joinVerdict
	}{
		{"unchanged, before the lease duration", func() *coordv1.Lease { return lease("old", renewed, 10) }, d - time.Millisecond, joinWait},
		{"unchanged for the lease duration", func() *coordv1.Lease { return lease("old", renewed, 10) }, d, joinTake},
		{"renewed within the lease duration", func() *coordv1.Lease { return lease("old", renewed.Add(2*time.Second), 10) }, 2 * time.Second, joinDuplicate},
		{"renewed, seen after the lease duration", func() *coordv1.Lease { return lease("old", renewed.Add(2*time.Second), 10) }, 3 * d, joinDuplicate},
		{"another incarnation wrote it", func() *coordv1.Lease { return lease("third", renewed, 10) }, time.Second, joinDuplicate},
		{"its own longer lease duration is waited for", func() *coordv1.Lease { return lease("old", renewed, 30) }, 20 * time.Second, joinWait},
		{"its own longer lease duration, passed", func() *coordv1.Lease { return lease("old", renewed, 30) }, 30 * time.Second, joinTake},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var s sighting
				first := lease("old", renewed, *tt.later().Spec.LeaseDurationSeconds)
				v, again := s.judge(first, time.Now(), d)
				if v != joinWait || time.Until(again) < d {
					t.Fatalf("first sight: %v, judge again in %v", v, time.Until(again))
				}
				time.Sleep(tt.wait)
				if got, _ := s.judge(tt.later(), time.Now(), d); got != tt.want {
					t.Errorf("after %v: verdict %v, want %v", tt.wait, got, tt.want)
				}
			})
		})
	}
}
