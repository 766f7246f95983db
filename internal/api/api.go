// Package api serves a hub over HTTP. Handler is the API: JSON snapshots,
// a server-sent-events stream of snapshots for attached terminal UIs, the
// UI's actions (repair now, pause a cluster, warn-only per application,
// holds) and config reloads, each behind a bearer token with a role (see
// LoadTokens). ProbeHandler serves health and readiness probes and
// Prometheus metrics, without tokens, for a listener of their own. Client
// is the API's client.
package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// Options configure the handler.
type Options struct {
	// Tokens authenticate every request (see LoadTokens). Nil disables
	// authentication: every request is then an operator named "local".
	// Only tests of other code and in-process uses leave it nil; serve
	// always sets it.
	Tokens *Tokens
	// MaxBodyBytes caps the body of every write; a larger one answers 413.
	// Default 64 KiB.
	MaxBodyBytes int64
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
	// Logger receives request errors and a line per write. Default:
	// discard.
	Logger *slog.Logger
	// Replicas returns the live replicas of a hub that runs as several
	// (GET /api/v1/replicas, and the owner of each cluster of GET
	// /api/v1/snapshot). Nil: a hub of one process, with no replicas.
	Replicas func() []apiv1.Replica
	// MaxStreams caps the open watch streams; past it GET /api/v1/watch
	// answers 503 with Retry-After. Default 64.
	MaxStreams int
	// MaxStreamsPerCaller caps the open watch streams of one caller (a
	// token's role and name: tokens that share a name share the cap;
	// without Tokens every request is the one caller "local"), so one
	// token cannot take every stream; past it GET /api/v1/watch answers
	// 429 with Retry-After. Default 8, and never more than MaxStreams.
	MaxStreamsPerCaller int
	// GitWebhook serves POST /api/v1/webhooks/git, the push webhooks of
	// the Git manifest sources, which authenticates each request with the
	// sources' webhook secrets instead of a bearer token. Nil: the route
	// answers 404.
	GitWebhook http.Handler
	// streams is the watch stream of a Server (NewServer sets it); nil
	// gives Handler a stream of its own.
	streams *streamer
}

// defaultMaxBodyBytes is Options.MaxBodyBytes' default.
const defaultMaxBodyBytes = 64 << 10

// reloadWriteTimeout is how long a reload may take to answer, past the
// server's write timeout (the client waits a minute).
const reloadWriteTimeout = 2 * time.Minute

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	return o
}

// Handler returns the HTTP API of h (probes and metrics are served by
// ProbeHandler, on a listener of their own):
//
//	role      route
//	viewer    GET  /api/v1/snapshot                   the latest snapshot (JSON)
//	viewer    GET  /api/v1/watch                      snapshots as server-sent events
//	viewer    GET  /api/v1/nodes/{id}                 one NodeID's status and desired object
//	viewer    GET  /api/v1/replicas                   the live replicas and the clusters each manages
//	operator  POST /api/v1/nodes/{id}/repair          repair now (404 unknown NodeID, 421 another replica's cluster)
//	operator  POST /api/v1/clusters/{id}/pause        pause repairs on a cluster, optional body {"reason"} (404 unknown cluster)
//	operator  POST /api/v1/clusters/{id}/resume       resume repairs (404 unknown cluster)
//	operator  POST /api/v1/applications/{id}/policy   body {"policy":"warn"|"repair"|"", "reason"} (404 unknown application)
//	viewer    GET  /api/v1/holds                      the active holds
//	operator  POST /api/v1/holds                      body {"scope","name","ttl","reason"}: 201 and the hold (404 unknown target)
//	operator  DELETE /api/v1/holds/{scope}/{name...}  release a hold: 204, 404 when none
//	operator  POST /api/v1/reload[?allowPrune=true]   reload the config: 200, 409 prune refused, 422 invalid
//	(secret)  POST /api/v1/webhooks/git               a Git push webhook: 202 fetching, 204 nothing to fetch, 401 no secret matches
//
// The webhook route takes no bearer token: each request is authenticated
// by the webhook secret of a Git source (Options.GitWebhook).
//
// Every request needs "Authorization: Bearer <token>" with a token of
// Options.Tokens: without one, or with a wrong one, it answers 401 with
// "WWW-Authenticate: Bearer"; a viewer's write answers 403. Writes (every
// method but GET, HEAD and OPTIONS) are also refused with 403 when a
// browser sends them cross-site (http.CrossOriginProtection), with 415 when
// a body (required for policy and holds) is not application/json, and
// with 413 when the body is larger than Options.MaxBodyBytes. An id the
// hub does not manage answers 404 and changes nothing. Every write is
// logged at info with its method, path, status and the caller's role and
// name (never the token).
//
// Actions answer 500 when the hub could not record them durably (they
// still hold until the hub stops).
func Handler(h Hub, opts Options) http.Handler {
	opts = opts.withDefaults()
	s := &server{h: h, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/snapshot", s.snapshot)
	mux.Handle("GET /api/v1/watch", s.watchHandler())
	mux.HandleFunc("GET /api/v1/nodes/{id}", s.node)
	mux.HandleFunc("GET /api/v1/replicas", s.replicas)
	mux.HandleFunc("GET /api/v1/whoami", s.whoami)
	mux.Handle("POST /api/v1/nodes/{id}/repair", s.write(noBody, s.action(s.repair)))
	mux.Handle("POST /api/v1/clusters/{id}/pause", s.write(noBody, s.action(s.pause)))
	mux.Handle("POST /api/v1/clusters/{id}/resume", s.write(noBody, s.action(s.resume)))
	mux.Handle("POST /api/v1/applications/{id}/policy", s.write(jsonBody, s.action(s.policy)))
	mux.HandleFunc("GET /api/v1/holds", s.holds)
	mux.Handle("POST /api/v1/holds", s.write(jsonBody, s.hold))
	mux.Handle("DELETE /api/v1/holds/{scope}/{name...}", s.write(noBody, s.releaseHold))
	mux.Handle("POST /api/v1/reload", s.write(noBody, s.reload))
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusForbidden, errors.New("cross-origin request refused: the API does not accept writes from web pages"))
	}))
	authed := s.authenticate(cop.Handler(mux))
	if opts.GitWebhook == nil {
		return authed
	}
	top := http.NewServeMux()
	top.Handle("POST /api/v1/webhooks/git", opts.GitWebhook)
	top.Handle("/", authed)
	return top
}

// ProbeHandler returns the probes and metrics of h, which need no token:
//
//	GET  /healthz   liveness: "ok"
//	GET  /readyz    readiness: "ok", or 503 "not ready: <why>" (Options.Ready)
//	GET  /metrics   Prometheus metrics
//
// They reveal no desired state, but the metrics do name clusters, kinds
// and counts: serve them on a private network (a kubelet, a Prometheus),
// never where the API's users are. Of opts only Ready is used.
func ProbeHandler(h Metrics, opts Options) http.Handler {
	s := &server{opts: opts.withDefaults()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", h.MetricsHandler())
	return mux
}

type server struct {
	h    Hub
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
// one, 404 for an unknown NodeID, cluster or application, 413 for a body
// over the limit, else 400.
func writeActionError(w http.ResponseWriter, err error) {
	code := http.StatusBadRequest
	var se *statusError
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &se):
		code = se.code
	case errors.Is(err, hub.ErrUnknownNode), errors.Is(err, hub.ErrUnknownCluster), errors.Is(err, hub.ErrUnknownApplication):
		code = http.StatusNotFound
	case errors.As(err, &tooLarge):
		code = http.StatusRequestEntityTooLarge
	}
	writeError(w, code, err)
}

// decodeBody decodes a write's JSON body into v; what names the body in
// errors. The body is already capped by write (413 past it).
func decodeBody(r *http.Request, what string, v any) error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return fmt.Errorf("%s body: %w", what, err)
	}
	return nil
}

// action answers 202 when f succeeds, else its error (writeActionError).
func (s *server) action(f func(r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
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
	if err := s.misdirected(id.Cluster); err != nil {
		return err
	}
	return s.h.RepairNow(id)
}

// misdirected refuses, with 421 Misdirected Request naming the owner, an
// action only the replica that manages the cluster can carry out (a repair
// now: another replica does not watch the cluster). Actions recorded in
// the intent the replicas share (pauses, holds, policies) reach the owner
// from any replica and are not refused.
func (s *server) misdirected(cluster string) error {
	for _, r := range s.replicaList().Replicas {
		if !r.Self && slices.Contains(r.Clusters, cluster) {
			return &statusError{code: http.StatusMisdirectedRequest,
				err: fmt.Errorf("cluster %q is managed by replica %q at %s: send the request there", cluster, r.ID, r.Address)}
		}
	}
	return nil
}

// PauseRequest is the optional body of the pause action: why the cluster
// is paused. Who paused it is the caller's token name, never the body's.
type PauseRequest struct {
	Reason string `json:"reason,omitempty"`
}

// pause pauses a cluster the hub knows (404 otherwise: a pause would record
// the unknown id for good), with the body's reason and the caller's name
// as its note.
func (s *server) pause(r *http.Request) error {
	var req PauseRequest
	if err := decodeBody(r, "pause", &req); err != nil && !errors.Is(err, io.EOF) {
		return err // no body at all (io.EOF) is a pause without a reason
	}
	id := r.PathValue("id")
	if !s.h.KnowsCluster(id) {
		return fmt.Errorf("cluster %q: %w", id, hub.ErrUnknownCluster)
	}
	return noted(s.h.PauseClusterNote(id, hub.SwitchNote{By: callerOf(r).Name, Reason: req.Reason}))
}

// noted is the error of a switch set with a note: a note the hub refused
// (400, nothing changed), else a record that could not be written (500).
func noted(err error) error {
	if errors.Is(err, hub.ErrInvalidNote) {
		return err
	}
	return internal(err)
}

// resume resumes repairs on a cluster the hub knows (404 otherwise).
func (s *server) resume(r *http.Request) error {
	id := r.PathValue("id")
	if !s.h.KnowsCluster(id) {
		return fmt.Errorf("cluster %q: %w", id, hub.ErrUnknownCluster)
	}
	return internal(s.h.PauseCluster(id, false))
}

// PolicyRequest is the body of the application policy action.
type PolicyRequest struct {
	Policy hub.Policy `json:"policy"`
	// Reason says why (optional; not kept when the override is removed).
	// Who set it is the caller's token name, never the body's.
	Reason string `json:"reason,omitempty"`
}

// policy sets the policy of an application the hub knows; clearing one
// ("") is also allowed for an application that left the config but still
// has an override. Anything else on an unknown application answers 404.
func (s *server) policy(r *http.Request) error {
	var req PolicyRequest
	if err := decodeBody(r, "policy", &req); err != nil {
		return err
	}
	switch req.Policy {
	case "", hub.PolicyRepair, hub.PolicyWarn:
	default:
		return fmt.Errorf("policy %q: want repair, warn or empty", req.Policy)
	}
	app := r.PathValue("id")
	if !s.h.KnowsApplication(app) {
		if _, override := s.h.Snapshot().AppPolicies[app]; req.Policy != "" || !override {
			return fmt.Errorf("application %q: %w", app, hub.ErrUnknownApplication)
		}
	}
	return noted(s.h.SetApplicationPolicyNote(app, req.Policy, hub.SwitchNote{By: callerOf(r).Name, Reason: req.Reason}))
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

// holds answers the active holds (an apiv1.HoldList, empty when there are
// none).
func (s *server) holds(w http.ResponseWriter, _ *http.Request) {
	writeHolds(w, s.h.Snapshot().Holds)
}

// hold places a hold on a target the hub knows and answers it with 201;
// 404 for an unknown target.
func (s *server) hold(w http.ResponseWriter, r *http.Request) {
	var req HoldRequest
	if err := decodeBody(r, "hold", &req); err != nil {
		writeActionError(w, err)
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
	t := hub.HoldTarget{Scope: req.Scope, Name: req.Name}
	if err := t.Valid(); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if !s.h.KnowsTarget(t) {
		unknown := hub.ErrUnknownCluster
		switch t.Scope {
		case hub.HoldNode:
			unknown = hub.ErrUnknownNode
		case hub.HoldApplication:
			unknown = hub.ErrUnknownApplication
		}
		writeError(w, http.StatusNotFound, fmt.Errorf("hold %s: %w", t, unknown))
		return
	}
	hd, err := s.h.HoldAs(callerOf(r).Name, t, ttl, req.Reason)
	switch {
	case err != nil && hd.Until.IsZero():
		// Refused before anything changed: a bad target, ttl or reason.
		writeError(w, http.StatusBadRequest, err)
	case err != nil:
		// The hold holds in this run but could not be recorded.
		writeError(w, http.StatusInternalServerError, err)
	default:
		writeHold(w, http.StatusCreated, hd)
	}
}

// releaseHold ends a hold: 204, or 404 when there is no hold on the
// target. The hub decides which, in one step (hub.ErrNoHold): of two
// concurrent releases of one hold, one gets 204 and the other 404.
func (s *server) releaseHold(w http.ResponseWriter, r *http.Request) {
	t := hub.HoldTarget{Scope: hub.HoldScope(r.PathValue("scope")), Name: r.PathValue("name")}
	if err := t.Valid(); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := s.h.ReleaseHold(t); err != nil {
		code := http.StatusInternalServerError // released, but not recorded
		if errors.Is(err, hub.ErrNoHold) {
			code = http.StatusNotFound
		}
		writeError(w, code, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// reload asks the app to reload its config; allowPrune=true confirms a
// change the prune guard would refuse. A reload may take longer than the
// server's write timeout: its write deadline is extended to
// reloadWriteTimeout (ignored where the writer cannot).
func (s *server) reload(w http.ResponseWriter, r *http.Request) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(reloadWriteTimeout))
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
