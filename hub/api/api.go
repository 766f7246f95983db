// Package api serves a hub over HTTP: health and readiness probes,
// Prometheus metrics, JSON snapshots, a server-sent-events stream of
// snapshots for attached terminal UIs, and the UI's actions (repair now,
// pause a cluster, warn-only per application).
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// Options configure the handler.
type Options struct {
	// ReadOnly rejects every action with 403.
	ReadOnly bool
	// Ready reports whether the hub is ready (all clusters attempted and
	// the loop running); nil means always ready.
	Ready func() error
	// Logger receives request errors. Default: discard.
	Logger *slog.Logger
}

// Handler returns the HTTP handler of h:
//
//	GET  /healthz                           liveness
//	GET  /readyz                            readiness
//	GET  /metrics                           Prometheus metrics
//	GET  /api/v1/snapshot                   the latest snapshot (JSON)
//	GET  /api/v1/watch                      snapshots as server-sent events
//	GET  /api/v1/nodes/{id}                 one NodeID's status and desired object
//	POST /api/v1/nodes/{id}/repair          repair now
//	POST /api/v1/clusters/{id}/pause        pause repairs on a cluster
//	POST /api/v1/clusters/{id}/resume       resume repairs
//	POST /api/v1/applications/{id}/policy   body {"policy":"warn"|"repair"|""}
func Handler(h *hub.Hub, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{h: h, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", h.MetricsHandler())
	mux.HandleFunc("GET /api/v1/snapshot", s.snapshot)
	mux.HandleFunc("GET /api/v1/watch", s.watch)
	mux.HandleFunc("GET /api/v1/nodes/{id}", s.node)
	mux.HandleFunc("POST /api/v1/nodes/{id}/repair", s.action(s.repair))
	mux.HandleFunc("POST /api/v1/clusters/{id}/pause", s.action(s.pause(true)))
	mux.HandleFunc("POST /api/v1/clusters/{id}/resume", s.action(s.pause(false)))
	mux.HandleFunc("POST /api/v1/applications/{id}/policy", s.action(s.policy))
	return mux
}

type server struct {
	h    *hub.Hub
	opts Options
}

func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	fmt.Fprintln(w, "ok")
}

func (s *server) snapshot(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.h.Snapshot())
}

// watch streams snapshots as server-sent events ("data: {json}\n\n"), at
// most as often as the hub publishes them.
func (s *server) watch(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch, cancel := s.h.Subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case snap := <-ch:
			b, err := json.Marshal(snap)
			if err != nil {
				s.opts.Logger.Error("encode snapshot", "err", err)
				return
			}
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// NodeDetail is the JSON form of one NodeID: its status and desired object.
type NodeDetail struct {
	Status  hub.NodeStatus
	Desired map[string]any `json:",omitempty"`
}

func (s *server) node(w http.ResponseWriter, r *http.Request) {
	id, err := hub.ParseNodeID(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	st, ok := s.h.Snapshot().Node(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("%s: %w", id, hub.ErrUnknownNode))
		return
	}
	d := NodeDetail{Status: st}
	if st.Spec != nil && st.Spec.Object != nil {
		d.Desired = st.Spec.Object.Object
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *server) action(f func(r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.ReadOnly {
			writeError(w, http.StatusForbidden, errors.New("read-only mode: actions are disabled"))
			return
		}
		if err := f(r); err != nil {
			code := http.StatusBadRequest
			if errors.Is(err, hub.ErrUnknownNode) {
				code = http.StatusNotFound
			}
			writeError(w, code, err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]string{"status": "accepted"})
	}
}

func (s *server) repair(r *http.Request) error {
	id, err := hub.ParseNodeID(r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.h.RepairNow(id)
}

func (s *server) pause(paused bool) func(r *http.Request) error {
	return func(r *http.Request) error {
		s.h.PauseCluster(r.PathValue("id"), paused)
		return nil
	}
}

// PolicyRequest is the body of the application policy action.
type PolicyRequest struct {
	Policy hub.Policy `json:"policy"`
}

func (s *server) policy(r *http.Request) error {
	var req PolicyRequest
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<16)).Decode(&req); err != nil {
		return fmt.Errorf("policy body: %w", err)
	}
	switch req.Policy {
	case "", hub.PolicyRepair, hub.PolicyWarn:
	default:
		return fmt.Errorf("policy %q: want repair, warn or empty", req.Policy)
	}
	s.h.SetApplicationPolicy(r.PathValue("id"), req.Policy)
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}
