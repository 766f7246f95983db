// Package api serves a hub over HTTP: health and readiness probes,
// Prometheus metrics, JSON snapshots, a server-sent-events stream of
// snapshots for attached terminal UIs, the UI's actions (repair now, pause a
// cluster, warn-only per application, holds) and config reloads.
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
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
	// Reload reloads the hub's config; allowPrune lets it decommission
	// every managed object of a cluster or more than the prune limit. An
	// error wrapping hub.ErrPruneRefused answers 409 Conflict, any other
	// error means the config was rejected (422). Nil: reloads answer 501.
	Reload func(allowPrune bool) error
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
//	GET  /api/v1/holds                      the active holds
//	POST /api/v1/holds                      body {"scope","name","ttl","reason"}: 201 and the hold
//	DELETE /api/v1/holds/{scope}/{name...}  release a hold: 204, 404 when none
//	POST /api/v1/reload[?allowPrune=true]   reload the config: 200, 409 prune refused, 422 invalid
//
// Actions answer 500 when the hub could not record them durably (they
// still hold until the hub stops).
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
	mux.HandleFunc("GET /api/v1/holds", s.holds)
	mux.HandleFunc("POST /api/v1/holds", s.hold)
	mux.HandleFunc("DELETE /api/v1/holds/{scope}/{name...}", s.releaseHold)
	mux.HandleFunc("POST /api/v1/reload", s.reload)
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

// statusError is an action error with its HTTP status.
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// internal marks an error of the hub itself (a durable write failed): 500.
func internal(err error) error {
	if err == nil {
		return nil
	}
	return &statusError{code: http.StatusInternalServerError, err: err}
}

// writeActionError answers an action's error: its status when it carries
// one, 404 for an unknown NodeID, else 400.
func writeActionError(w http.ResponseWriter, err error) {
	code := http.StatusBadRequest
	var se *statusError
	switch {
	case errors.As(err, &se):
		code = se.code
	case errors.Is(err, hub.ErrUnknownNode):
		code = http.StatusNotFound
	}
	writeError(w, code, err)
}

// readOnly answers 403 and reports true in read-only mode.
func (s *server) readOnly(w http.ResponseWriter) bool {
	if s.opts.ReadOnly {
		writeError(w, http.StatusForbidden, errors.New("read-only mode: actions are disabled"))
	}
	return s.opts.ReadOnly
}

func (s *server) action(f func(r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.readOnly(w) {
			return
		}
		if err := f(r); err != nil {
			writeActionError(w, err)
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
		return internal(s.h.PauseCluster(r.PathValue("id"), paused))
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
	return internal(s.h.SetApplicationPolicy(r.PathValue("id"), req.Policy))
}

// HoldRequest is the body of POST /api/v1/holds.
type HoldRequest struct {
	// Scope is node, application or cluster.
	Scope hub.HoldScope `json:"scope"`
	// Name is the NodeID, application id or cluster id.
	Name string `json:"name"`
	// TTL is how long the hold lasts, as a Go duration ("30m").
	TTL string `json:"ttl"`
	// Reason says why (required).
	Reason string `json:"reason"`
}

// holds answers the active holds (an empty list when there are none).
func (s *server) holds(w http.ResponseWriter, _ *http.Request) {
	hs := s.h.Snapshot().Holds
	if hs == nil {
		hs = []hub.Hold{}
	}
	writeJSON(w, http.StatusOK, hs)
}

// hold places a hold and answers it with 201.
func (s *server) hold(w http.ResponseWriter, r *http.Request) {
	if s.readOnly(w) {
		return
	}
	var req HoldRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("hold body: %w", err))
		return
	}
	if req.TTL == "" {
		writeError(w, http.StatusBadRequest, errors.New(`hold: ttl is required, e.g. "30m"`))
		return
	}
	ttl, err := time.ParseDuration(req.TTL)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("hold: ttl %q: want a Go duration such as 30m or 2h", req.TTL))
		return
	}
	hd, err := s.h.Hold(hub.HoldTarget{Scope: req.Scope, Name: req.Name}, ttl, req.Reason)
	switch {
	case err != nil && hd.Until.IsZero():
		// Refused before anything changed: a bad target, ttl or reason.
		writeError(w, http.StatusBadRequest, err)
	case err != nil:
		// The hold holds in this run but could not be recorded.
		writeError(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusCreated, hd)
	}
}

// releaseHold ends a hold: 204, or 404 when there is no active hold on the
// target.
func (s *server) releaseHold(w http.ResponseWriter, r *http.Request) {
	if s.readOnly(w) {
		return
	}
	t := hub.HoldTarget{Scope: hub.HoldScope(r.PathValue("scope")), Name: r.PathValue("name")}
	if err := t.Valid(); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	active := false
	for _, hd := range s.h.Snapshot().Holds {
		active = active || hd.Target == t
	}
	if err := s.h.ReleaseHold(t); err != nil {
		code := http.StatusInternalServerError // released, but not recorded
		if !active {
			code = http.StatusNotFound
		}
		writeError(w, code, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// reload asks the app to reload its config; allowPrune=true confirms a
// change the prune guard would refuse.
func (s *server) reload(w http.ResponseWriter, r *http.Request) {
	if s.readOnly(w) {
		return
	}
	if s.opts.Reload == nil {
		writeError(w, http.StatusNotImplemented, errors.New("this hub cannot reload its config"))
		return
	}
	allow := false
	if v := r.URL.Query().Get("allowPrune"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("allowPrune %q: want true or false", v))
			return
		}
		allow = b
	}
	switch err := s.opts.Reload(allow); {
	case errors.Is(err, hub.ErrPruneRefused):
		writeError(w, http.StatusConflict, err)
	case err != nil:
		writeError(w, http.StatusUnprocessableEntity, err)
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "reloaded"})
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}
