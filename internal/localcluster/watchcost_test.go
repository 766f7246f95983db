package localcluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// BenchmarkCreateUnderWatches measures what watches held open cost an
// apiserver's writes: each iteration creates the same 2,000 labelled
// ConfigMaps in 100 namespaces (64 calls in flight) twice, once with no
// watch open and once while three label-selected watches per namespace
// (300, as a hub's informers of three kinds on 100 cluster entries of one
// apiserver) receive them, and reports the control plane's CPU per create
// of each and their ratio. The fleet bench's cold sync pays this beside
// its floor, which holds no watch. Run it with
//
//	go test -run '^$' -bench CreateUnderWatches -benchtime 5x ./internal/localcluster/
func BenchmarkCreateUnderWatches(b *testing.B) {
	set := lctest.Start(b, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	rc := lc.RESTConfig()
	rc.QPS, rc.Burst = -1, 0 // no client-side limit: the apiserver is measured
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		b.Fatal(err)
	}
	const (
		namespaces = 100
		perNS      = 20
		inFlight   = 64
		label      = "app.kubernetes.io/managed-by"
	)
	ctx := b.Context()
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%03d", i)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	selector := metav1.ListOptions{LabelSelector: label + "=driftwatch"}

	// watchAll opens three watches per namespace and drains them until
	// stop; seen counts the ConfigMaps' events.
	watchAll := func(wctx context.Context) (seen func() int, stop func()) {
		var (
			mu     sync.Mutex
			events int
			wg     sync.WaitGroup
			ws     []watch.Interface
		)
		for i := range namespaces {
			ns := fmt.Sprintf("w%03d", i)
			cm, err := cs.CoreV1().ConfigMaps(ns).Watch(wctx, selector)
			if err != nil {
				b.Fatal(err)
			}
			sec, err := cs.CoreV1().Secrets(ns).Watch(wctx, selector)
			if err != nil {
				b.Fatal(err)
			}
			svc, err := cs.CoreV1().Services(ns).Watch(wctx, selector)
			if err != nil {
				b.Fatal(err)
			}
			ws = append(ws, cm, sec, svc)
			wg.Add(3)
			go func() {
				defer wg.Done()
				for range cm.ResultChan() {
					mu.Lock()
					events++
					mu.Unlock()
				}
			}()
			for _, w := range []watch.Interface{sec, svc} {
				go func() {
					defer wg.Done()
					for range w.ResultChan() {
					}
				}()
			}
		}
		return func() int {
				mu.Lock()
				defer mu.Unlock()
				return events
			}, func() {
				for _, w := range ws {
					w.Stop()
				}
				wg.Wait()
			}
	}

	// round creates the ConfigMaps and returns the control plane's CPU
	// per create; the ConfigMaps are deleted and etcd compacted after,
	// outside the measure.
	round := func(watched bool) time.Duration {
		var seen func() int
		stop := func() {}
		if watched {
			seen, stop = watchAll(ctx)
		}
		if err := lc.Compact(ctx); err != nil {
			b.Fatal(err)
		}
		before, err := lc.CPUTime()
		if err != nil {
			b.Fatal(err)
		}
		jobs := make(chan int)
		var wg sync.WaitGroup
		errs := make(chan error, inFlight)
		for range inFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range jobs {
					cm := &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", j%perNS), Labels: map[string]string{label: "driftwatch"}},
						Data:       map[string]string{"key": fmt.Sprintf("value-%d", j)},
					}
					if _, err := cs.CoreV1().ConfigMaps(fmt.Sprintf("w%03d", j/perNS)).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				}
			}()
		}
		for j := range namespaces * perNS {
			jobs <- j
		}
		close(jobs)
		wg.Wait()
		if watched {
			// Every create's event reached its watch before the cost is
			// read (the apiserver's work for it is done).
			deadline := time.Now().Add(30 * time.Second)
			for seen() < namespaces*perNS && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := seen(); got != namespaces*perNS {
				b.Fatalf("the watches saw %d of %d creates", got, namespaces*perNS)
			}
		}
		after, err := lc.CPUTime()
		if err != nil {
			b.Fatal(err)
		}
		stop()
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
		for i := range namespaces {
			if err := cs.CoreV1().ConfigMaps(fmt.Sprintf("w%03d", i)).DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
				b.Fatal(err)
			}
		}
		return (after - before) / (namespaces * perNS)
	}

	var unwatched, watched time.Duration
	for b.Loop() {
		unwatched += round(false)
		watched += round(true)
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((unwatched/n).Microseconds())/1000, "cp-ms/create")
	b.ReportMetric(float64((watched/n).Microseconds())/1000, "cp-ms/watched-create")
	b.ReportMetric(float64(watched)/float64(unwatched), "watched/unwatched")
}
