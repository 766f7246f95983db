package clusters

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/hub"
)

// The shutdown of a cluster's watch manager waits only for what its context
// ends: these tests run a manager (client-go's informers and reflectors
// included) in a synctest bubble, against a transport that fails or hangs
// as an unreachable or overloaded apiserver would, cancel it, and check
// that it has returned once every goroutine of the bubble is blocked,
// before any timer (a retry backoff, a dial timeout) could fire. No wall
// clock is read: the end-to-end bound is checked on a real process
// (TestServeShutdownBounded in package main).

// stubKubeconfig writes a kubeconfig whose server is never dialled (the
// tests replace the transport).
func stubKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// stubTransport answers every request with answer, counting them.
type stubTransport struct {
	answer func(*http.Request) (*http.Response, error)
	calls  atomic.Int64
}

func (s *stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s.calls.Add(1)
	return s.answer(r)
}

// refused fails as a dial to a closed port does.
func refused(r *http.Request) (*http.Response, error) {
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// hang blocks until the request's context ends, as a call to an apiserver
// that never answers (a dropped SYN, a frozen process) does.
func hang(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// throttled answers 429 with a long Retry-After, as an apiserver shedding
// load does.
func throttled(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusTooManyRequests,
		Header:     http.Header{"Retry-After": []string{"30"}, "Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`)),
		Request:    r,
	}, nil
}

// TestManagerStopsWithoutWaitingForTheCluster runs managers of the three
// built-in kinds and, in the "discovery" cases, of a kind beyond them too:
// that one's REST mapping is discovered (client-go sends discovery on
// context.TODO()) before Run goes on, so its manager stops only if its
// discovery ends with it.
func TestManagerStopsWithoutWaitingForTheCluster(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(*http.Request) (*http.Response, error)
		kinds  []schema.GroupVersionKind
	}{
		{"refused", refused, nil},
		{"hanging", hang, nil},
		{"throttled", throttled, nil},
		{"hanging discovery", hang, []schema.GroupVersionKind{{Group: "batch", Version: "v1", Kind: "CronJob"}}},
		{"throttled discovery", throttled, []schema.GroupVersionKind{{Group: "batch", Version: "v1", Kind: "CronJob"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kubeconfig := stubKubeconfig(t)
			synctest.Test(t, func(t *testing.T) {
				stub := &stubTransport{answer: tc.answer}
				cfg := ClusterConfig{ID: "c1", Kubeconfig: kubeconfig, Namespaces: []string{"a", "b"}, Kinds: tc.kinds,
					WrapTransport: func(http.RoundTripper) http.RoundTripper { return stub }}
				sink := newRecordingSink()
				m := newManager(cfg, sink, testLogger(t), fastHealth, nil)
				ctx, cancel := context.WithCancel(t.Context())
				var wg conc.WaitGroup
				done := make(chan error, 1)
				wg.Go(func() { done <- m.Run(ctx) })
				// Long enough for the reflectors to be inside their retry
				// backoff (it grows to 30s) and for several probes.
				time.Sleep(45 * time.Second)
				if stub.calls.Load() == 0 {
					t.Fatal("the manager made no call")
				}
				cancel()
				synctest.Wait()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("Run: %v", err)
					}
				default:
					t.Error("Run still waits after its context ended, with every goroutine blocked: it waits for a timer")
					<-done // time moves on in the bubble
				}
				wg.Wait()
			})
		})
	}
}

// TestNamespacePruneCheckEndsWithItsCall: the check for objects driftwatch
// does not manage before a namespace prune (unmanagedIn) lists the kinds
// the cluster serves through discovery, which client-go sends without a
// context. Against an apiserver that never answers, the check returns once
// its caller's context ends, or once the manager's run does, rather than
// hold a hub's shutdown until the apiserver answers.
func TestNamespacePruneCheckEndsWithItsCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(call, life context.CancelFunc)
	}{
		{"the caller gives up", func(call, _ context.CancelFunc) { call() }},
		{"the manager stops", func(_, life context.CancelFunc) { life() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kubeconfig := stubKubeconfig(t)
			synctest.Test(t, func(t *testing.T) {
				stub := &stubTransport{answer: hang}
				cfg := ClusterConfig{ID: "c1", Kubeconfig: kubeconfig, Namespaces: []string{"a"},
					WrapTransport: func(http.RoundTripper) http.RoundTripper { return stub }}
				m := newManager(cfg, newRecordingSink(), testLogger(t), fastHealth, nil)
				life, stopLife := context.WithCancel(t.Context())
				defer stopLife()
				release, err := m.connect(life)
				if err != nil {
					t.Fatal(err)
				}
				defer release()
				call, stopCall := context.WithCancel(t.Context())
				defer stopCall()
				done := make(chan error, 1)
				var wg conc.WaitGroup
				wg.Go(func() {
					_, err := m.unmanagedIn(call, "a")
					done <- err
				})
				time.Sleep(time.Minute)
				if stub.calls.Load() == 0 {
					t.Fatal("the check sent no request")
				}
				tc.end(stopCall, stopLife)
				synctest.Wait()
				select {
				case err := <-done:
					if err == nil {
						t.Error("the check found the namespace empty without an answer")
					}
				default:
					t.Error("the check still waits for the apiserver after it was given up")
					stopCall()
					stopLife()
					<-done
				}
				wg.Wait()
			})
		})
	}
}

// TestRegistryStopsWithoutWaitingForClusters: the registry's Run returns
// once its context ends, without waiting out a restart backoff or a
// cluster's retries.
func TestRegistryStopsWithoutWaitingForClusters(t *testing.T) {
	kubeconfig := stubKubeconfig(t)
	synctest.Test(t, func(t *testing.T) {
		r := NewRegistry(newRecordingSink(), RegistryOptions{Logger: testLogger(t), Health: fastHealth, MinBackoff: 10 * time.Second, MaxBackoff: time.Minute})
		for i, answer := range []func(*http.Request) (*http.Response, error){refused, hang, throttled} {
			stub := &stubTransport{answer: answer}
			cfg := ClusterConfig{ID: "c" + string(rune('1'+i)), Kubeconfig: kubeconfig, Namespaces: []string{"a"},
				WrapTransport: func(http.RoundTripper) http.RoundTripper { return stub }}
			if err := r.Add(cfg); err != nil {
				t.Fatal(err)
			}
		}
		// A cluster whose manager fails at once sits in the restart
		// backoff.
		if err := r.Add(ClusterConfig{ID: "broken", Kubeconfig: filepath.Join(t.TempDir(), "missing")}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		var wg conc.WaitGroup
		wg.Go(func() { done <- r.Run(ctx) })
		time.Sleep(45 * time.Second)
		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Error("Registry.Run still waits after its context ended, with every goroutine blocked: it waits for a timer")
			<-done // time moves on in the bubble
		}
		wg.Wait()
	})
}

// TestConnTrackerCloseAll: CloseAll cancels the dials in flight (which
// net/http runs on a context of their own, detached from the request's),
// waits for them to return, closes the open connections and refuses new
// dials.
func TestConnTrackerCloseAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var peers []net.Conn
		dialed := make(chan struct{}, 1)
		release := make(chan struct{})
		tr := newConnTrackerWith(func(ctx context.Context, _, addr string) (net.Conn, error) {
			switch addr {
			case "blackhole:443": // a dial that never completes by itself
				<-ctx.Done()
				return nil, ctx.Err()
			case "late:443": // completes once released, whatever ctx says
				dialed <- struct{}{}
				<-release
			}
			c, peer := net.Pipe()
			peers = append(peers, peer)
			return c, nil
		})
		open, err := tr.DialContext(t.Context(), "tcp", "up:443")
		if err != nil {
			t.Fatal(err)
		}
		var wg conc.WaitGroup
		var blackholeErr, lateErr error
		var late net.Conn
		wg.Go(func() { _, blackholeErr = tr.DialContext(context.Background(), "tcp", "blackhole:443") })
		wg.Go(func() { late, lateErr = tr.DialContext(context.Background(), "tcp", "late:443") })
		<-dialed
		synctest.Wait()

		closed := make(chan struct{})
		go func() {
			defer close(closed)
			tr.CloseAll()
		}()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("CloseAll returned while a dial was still running")
		default:
		}
		if !errors.Is(blackholeErr, context.Canceled) {
			t.Fatalf("the hanging dial ended with %v, want context.Canceled", blackholeErr)
		}
		close(release) // the late dial completes after CloseAll began
		<-closed
		wg.Wait()
		if lateErr == nil || late != nil {
			t.Fatalf("a dial completed after CloseAll: conn %v, err %v (want net.ErrClosed)", late, lateErr)
		}
		if _, err := open.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("write on a connection after CloseAll: %v, want it closed", err)
		}
		if _, err := tr.DialContext(t.Context(), "tcp", "up:443"); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("dial after CloseAll: %v, want net.ErrClosed", err)
		}
		for _, p := range peers {
			_ = p.Close()
		}
	})
}

// TestInformersUseListAndWatch: the watch manager's informers fill their
// caches with LIST and WATCH, whose waits all end with the context, never
// with client-go's watch-list stream (see listWatchClient).
func TestInformersUseListAndWatch(t *testing.T) {
	kubeconfig := stubKubeconfig(t)
	synctest.Test(t, func(t *testing.T) {
		var watchList atomic.Int64
		stub := &stubTransport{answer: func(r *http.Request) (*http.Response, error) {
			if r.URL.Query().Get("sendInitialEvents") == "true" {
				watchList.Add(1)
			}
			return refused(r)
		}}
		cfg := ClusterConfig{ID: "c1", Kubeconfig: kubeconfig, Namespaces: []string{"a"},
			WrapTransport: func(http.RoundTripper) http.RoundTripper { return stub }}
		m := newManager(cfg, newRecordingSink(), testLogger(t), fastHealth, nil)
		ctx, cancel := context.WithCancel(t.Context())
		var wg conc.WaitGroup
		wg.Go(func() { _ = m.Run(ctx) })
		time.Sleep(10 * time.Second)
		cancel()
		wg.Wait()
		if n := watchList.Load(); n > 0 {
			t.Fatalf("%d watch-list requests (sendInitialEvents=true), want LIST and WATCH only", n)
		}
		if got := m.Health().State; got != hub.ClusterUnreachable {
			t.Fatalf("state %s, want %s", got, hub.ClusterUnreachable)
		}
	})
}
