package capi

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sourcegraph/conc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// panickingHandler is a Handler that panics once for each call in panics
// ("up <id>", "gone <id>") and records the other calls (as callLog does).
type panickingHandler struct {
	mu     sync.Mutex
	panics map[string]bool
	log    callLog
}

// panicOnce panics if call is in h.panics, and takes it out. Callers hold
// h.mu.
func (h *panickingHandler) panicOnce(call string) {
	if h.panics[call] {
		delete(h.panics, call)
		panic(call + ": boom (test)")
	}
}

func (h *panickingHandler) ClusterUp(d Discovered) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.panicOnce("up " + d.ID)
	h.log.ClusterUp(d)
}

func (h *panickingHandler) ClusterGone(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.panicOnce("gone " + id)
	h.log.ClusterGone(id)
}

func (h *panickingHandler) calls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.log.calls)
}

// TestWorkerSurvivesHandlerPanic: a panic in the handler for one Cluster
// object (the hub compiles its desired state there) is recovered and
// logged with its stack; discovery goes on with the next cluster, the
// object is synced again after the queue's backoff and reported then (up,
// and gone once deleted), and the worker ends without a panic when the
// queue shuts down.
func TestWorkerSurvivesHandlerPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		var logMu sync.Mutex
		h := &panickingHandler{panics: map[string]bool{"up fleet-bad": true, "gone fleet-good": true}}
		d, err := New(Source{Name: "mgmt"}, h, slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil)))
		if err != nil {
			t.Fatal(err)
		}
		var deleted sync.Map // keys whose Cluster object is gone
		lookup := func(key string) (*unstructured.Unstructured, *corev1.Secret, error) {
			if _, ok := deleted.Load(key); ok {
				return nil, nil, nil
			}
			ns, name, _ := strings.Cut(key, "/")
			return provisionedCluster(ns, name), kubeconfigSecret(ns, name), nil
		}
		queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
		var wg conc.WaitGroup
		wg.Go(func() {
			for d.work(queue, clusterv1.GroupVersion.Version, lookup) {
			}
		})
		queue.Add("fleet/bad")
		queue.Add("fleet/good")
		time.Sleep(time.Second) // the first retry's backoff is 5ms
		synctest.Wait()
		if got, want := h.calls(), []string{"up fleet-good fleet/good", "up fleet-bad fleet/bad"}; !slices.Equal(got, want) {
			t.Errorf("handler calls %q, want %q (the next cluster, then the one that panicked, retried)", got, want)
		}
		if got, want := d.Known(), []string{"fleet-bad", "fleet-good"}; !slices.Equal(got, want) {
			t.Errorf("Known() = %q, want %q", got, want)
		}
		deleted.Store("fleet/good", true)
		queue.Add("fleet/good")
		time.Sleep(time.Second)
		synctest.Wait()
		if got := h.calls(); !slices.Equal(got[2:], []string{"gone fleet-good"}) {
			t.Errorf("handler calls after the deletion %q, want [gone fleet-good] (retried after the panic)", got[2:])
		}
		if got, want := d.Known(), []string{"fleet-bad"}; !slices.Equal(got, want) {
			t.Errorf("Known() = %q, want %q", got, want)
		}
		queue.ShutDown()
		wg.Wait() // re-panics if the worker died of the panic
		logMu.Lock()
		out := logs.String()
		logMu.Unlock()
		if !strings.Contains(out, "panic recovered") || !strings.Contains(out, "fleet/bad") || !strings.Contains(out, "work_test.go") {
			t.Errorf("the panic is not logged with its key and stack:\n%s", out)
		}
	})
}

// lockedWriter serialises the writes of a log handler into w.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
