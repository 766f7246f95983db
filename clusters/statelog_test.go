package clusters

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sourcegraph/conc"
)

// switchableAPIServer answers as fakeAPIServer with the status code of
// its current mode, or fails every request as an unreachable apiserver.
type switchableAPIServer struct {
	mode atomic.Int32 // 0 healthy, 401 refused credentials, -1 unreachable
}

func (s *switchableAPIServer) RoundTrip(r *http.Request) (*http.Response, error) {
	switch m := s.mode.Load(); m {
	case -1:
		return nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	case 0:
		return fakeAPIServer{code: func(*http.Request) int { return http.StatusOK }}.RoundTrip(r)
	default:
		return fakeAPIServer{code: func(*http.Request) int { return int(m) }}.RoundTrip(r)
	}
}

// TestClusterStateLogLevels: a cluster becoming unreachable or
// unauthorized is logged as a warning; its recovery (synced) as info.
func TestClusterStateLogLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &switchableAPIServer{}
		cfg := ClusterConfig{ID: "c1", Kubeconfig: stubKubeconfig(t), Namespaces: []string{"a"},
			WrapTransport: func(http.RoundTripper) http.RoundTripper { return api }}
		var logs lockedBuffer
		log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		m := newManager(cfg, newRecordingSink(), log, fastHealth, nil)
		ctx, cancel := context.WithCancel(t.Context())
		var wg conc.WaitGroup
		wg.Go(func() { _ = m.Run(ctx) })
		for _, mode := range []int32{0, -1, 0, 401, 0} {
			api.mode.Store(mode)
			time.Sleep(20 * time.Second)
		}
		cancel()
		wg.Wait()

		type change struct{ state, level string }
		var got []change
		for line := range strings.Lines(logs.String()) {
			var rec struct{ Msg, Level, State string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			if rec.Msg == "cluster state" {
				got = append(got, change{rec.State, rec.Level})
			}
		}
		want := []change{{"synced", "INFO"}, {"unreachable", "WARN"}, {"synced", "INFO"}, {"unauthorized", "WARN"}, {"synced", "INFO"}}
		if len(got) != len(want) {
			t.Fatalf("state changes logged %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("state changes logged %v, want %v", got, want)
				break
			}
		}
	})
}
