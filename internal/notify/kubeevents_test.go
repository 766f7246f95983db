package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/driftwatch/driftwatch/hub"
)

// fakeRecorder records the events written on objects; answers, when set,
// are the results of the calls in turn (then success).
type fakeRecorder struct {
	mu      sync.Mutex
	events  []Event
	answers []error
}

func (r *fakeRecorder) RecordEvent(_ context.Context, ev Event) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	if len(r.answers) > 0 {
		err := r.answers[0]
		r.answers = r.answers[1:]
		return err != nil && !errors.Is(err, ErrDropped) && !strings.Contains(err.Error(), "forbidden"), err
	}
	return false, nil
}

func (r *fakeRecorder) written() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// startKubeEvents runs a notifier that writes Kubernetes events only.
func startKubeEvents(t *testing.T, k KubernetesEvents) (*Notifier, *fakeSource, *prometheus.Registry, func()) {
	t.Helper()
	return runNotifier(t, Options{KubernetesEvents: &k, HubID: "hq"})
}

// TestKubernetesEvents: the events about objects are written through the
// recorder, filtered as a webhook's; events about clusters are not (no
// object carries them); a refused write is not retried and a transient
// one is; a dropped one counts as dropped, not as a failure.
func TestKubernetesEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &fakeRecorder{answers: []error{errors.New("etcdserver: request timed out"), nil, errors.New(`events is forbidden: User "u" cannot create resource "events"`),
			fmt.Errorf("cluster refused: %w", ErrDropped)}}
		n, src, reg, stop := startKubeEvents(t, KubernetesEvents{Recorder: rec, Filter: Filter{Types: []EventType{EventRepaired, EventClusterUnreachable, EventStuck}}})
		defer stop()
		stuck := node(cm, hub.StatusStuck, 0)
		for _, s := range []*hub.Snapshot{
			snap(1, hub.ClusterSynced, node(web, hub.StatusInSync, 0), node(cm, hub.StatusInSync, 0)),
			snap(2, hub.ClusterUnreachable, node(web, hub.StatusRepaired, 1), node(cm, hub.StatusWarnOnly, 0)), // repaired; unreachable; unrepaired (filtered out)
			snap(3, hub.ClusterSynced, node(web, hub.StatusRepaired, 2), stuck),
			snap(4, hub.ClusterSynced, node(web, hub.StatusRepaired, 3), stuck),
		} {
			src.ch <- s
			synctest.Wait()
			time.Sleep(time.Minute) // past any backoff
			synctest.Wait()
		}
		var got []string
		for _, ev := range rec.written() {
			got = append(got, string(ev.Type)+" "+ev.NodeID)
		}
		// The first repair's write timed out and was tried again.
		want := []string{"drift-repaired " + web.String(), "drift-repaired " + web.String(), "drift-repaired " + web.String(),
			"stuck " + cm.String(), "drift-repaired " + web.String()}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("written\n%q\nwant\n%q", got, want)
		}
		st := n.Status()[0]
		if st.Name != KubernetesEventsName || st.Sent != 2 || st.Failed != 1 || st.Dropped != 1 {
			t.Errorf("status %+v: want 2 written, 1 refused, 1 dropped", st)
		}
		if got := testutil.ToFloat64(mustVec(t, reg, "driftwatch_notification_retries_total")); got != 1 {
			t.Errorf("retries = %v, want 1", got)
		}
	})
}

// TestKubernetesEventsNeedARecorder: the sink needs its recorder, and its
// name is its own.
func TestKubernetesEventsNeedARecorder(t *testing.T) {
	src := &fakeSource{ch: make(chan *hub.Snapshot)}
	if _, err := New(Options{Source: src, KubernetesEvents: &KubernetesEvents{}}); err == nil {
		t.Error("no recorder accepted")
	}
	_, err := New(Options{Source: src, KubernetesEvents: &KubernetesEvents{Recorder: &fakeRecorder{}},
		Webhooks: []Webhook{{Name: KubernetesEventsName, URL: "https://h/x"}}, Client: &http.Client{}})
	if err == nil || !strings.Contains(err.Error(), KubernetesEventsName) {
		t.Errorf("a webhook named %s: %v", KubernetesEventsName, err)
	}
}

// TestKubernetesReason: each event about an object has its reason and
// type.
func TestKubernetesReason(t *testing.T) {
	for typ, want := range map[EventType]string{EventRepaired: "DriftRepaired Normal", EventUnrepaired: "DriftNotRepaired Warning",
		EventRepairFailed: "RepairFailed Warning", EventContested: "Contested Warning", EventStuck: "RolloutStuck Warning"} {
		if r, k := KubernetesReason(typ); r+" "+k != want {
			t.Errorf("%s: %s %s, want %s", typ, r, k, want)
		}
	}
	if len(ObjectEventTypes()) != 5 {
		t.Errorf("object event types %v", ObjectEventTypes())
	}
}
