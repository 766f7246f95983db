package clusters

import (
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestRegistryConcurrentUpdates: Update, Remove and Add of one cluster from
// many goroutines (before Run, so no manager starts) are serialised: an
// Update never fails with "already registered" (two Updates both removing
// the old entry and racing to add theirs), the cluster is registered at most
// once, and its final config is one that was given.
func TestRegistryConcurrentUpdates(t *testing.T) {
	const (
		id         = "c1"
		goroutines = 16
		rounds     = 200
	)
	cfgs := make([]ClusterConfig, goroutines)
	for i := range cfgs {
		cfgs[i] = ClusterConfig{
			ID: id, Kubeconfig: "/nonexistent/kubeconfig", Namespaces: []string{"apps"},
			QPS: float32(10 + i), Burst: 20 + i, Labels: map[string]string{"g": string(rune('a' + i))},
		}
	}
	sink := newRecordingSink()
	r := NewRegistry(sink, RegistryOptions{})
	if err := r.Add(cfgs[0]); err != nil {
		t.Fatal(err)
	}

	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		errs    []string
		addErrs []string
	)
	record := func(list *[]string, err error) {
		errMu.Lock()
		*list = append(*list, err.Error())
		errMu.Unlock()
	}
	given := func(c ClusterConfig) bool {
		for _, want := range cfgs {
			if reflect.DeepEqual(c, want) {
				return true
			}
		}
		return false
	}
	// A reader sees, at every moment, the cluster at most once and only
	// with a config that was given.
	stop := make(chan struct{})
	var readerErrs []string
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if ids := r.IDs(); len(ids) > 1 {
				readerErrs = append(readerErrs, "IDs() = "+strings.Join(ids, ","))
			}
			if c, ok := r.Config(id); ok && !given(c) {
				readerErrs = append(readerErrs, "Config() returned a config never given")
			}
		}
	}()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				// Alternate between this goroutine's config and a
				// neighbour's, so most Updates really change it.
				cfg := cfgs[(g+i)%goroutines]
				if err := r.Update(cfg); err != nil {
					record(&errs, err)
				}
				switch {
				case g%4 == 1 && i%10 == 0:
					r.Remove(id)
				case g%4 == 3 && i%10 == 5:
					// Add may find the cluster registered: that is its
					// documented error, not a failure.
					if err := r.Add(cfg); err != nil && !strings.Contains(err.Error(), "already registered") {
						record(&addErrs, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()

	if len(errs) > 0 {
		t.Fatalf("%d concurrent Updates failed, e.g. %s", len(errs), errs[0])
	}
	if len(addErrs) > 0 {
		t.Fatalf("%d Adds failed unexpectedly, e.g. %s", len(addErrs), addErrs[0])
	}
	ids := r.IDs()
	n := 0
	for _, got := range ids {
		if got == id {
			n++
		}
	}
	if n != 1 || len(ids) != 1 {
		// Every goroutine's last call is an Update, so the cluster is
		// registered exactly once.
		t.Fatalf("IDs() = %v, want [%s]", ids, id)
	}
	final, ok := r.Config(id)
	if !ok {
		t.Fatalf("Config(%q) not found", id)
	}
	if !given(final) {
		t.Fatalf("Config(%q) = %+v, not one of the configs given", id, final)
	}
	if len(readerErrs) > 0 {
		t.Fatalf("a concurrent reader saw %d bad states, e.g. %s", len(readerErrs), readerErrs[0])
	}
	// Update still replaces the config once the storm is over.
	next := cfgs[0]
	if reflect.DeepEqual(next, final) {
		next = cfgs[1]
	}
	if err := r.Update(next); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Config(id); !reflect.DeepEqual(got, next) {
		t.Fatalf("after a last Update, Config(%q) = %+v, want %+v", id, got, next)
	}
	if _, ok := r.Backend(id); ok {
		t.Fatal("a backend exists although Run was never called")
	}
}

// A reload that changes nothing of a cluster keeps its manager, even when
// the configuration carries an environment lookup (a func, never deeply
// equal to another).
func TestSameConfigIgnoresGetenv(t *testing.T) {
	a := ClusterConfig{ID: "c1", Kubeconfig: "/k", Getenv: func(string) string { return "" }}
	b := a
	b.Getenv = func(string) string { return "" }
	if !sameConfig(a, b) {
		t.Error("the same cluster with another Getenv counts as changed: every reload would restart it")
	}
	b.Kubeconfig = "/other"
	if sameConfig(a, b) {
		t.Error("a changed kubeconfig counts as the same")
	}
}
