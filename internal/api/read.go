package api

import (
	"fmt"
	"net/http"

	"github.com/driftwatch/driftwatch/hub"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
)

// Server is the HTTP API of a hub (see Handler) with an explicit lifecycle:
// Close ends its watch streams and stops their broadcaster. Serve it with
// an http.Server and, on shutdown, call Close before http.Server.Shutdown
// (an open watch stream never goes idle, so Shutdown alone would wait for
// its deadline).
type Server struct {
	handler http.Handler
	streams *streamer
}

// NewServer returns the API of h. It starts no goroutine: the watch
// stream's broadcaster runs while streams are open.
func NewServer(h Hub, opts Options) *Server {
	st := newStreamer(h, streamConfigOf(opts))
	opts.streams = st
	return &Server{handler: Handler(h, opts), streams: st}
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Close ends every open watch stream, answers new ones 503, and stops the
// stream's broadcaster, waiting for it. The other routes keep working. It
// always returns nil.
func (s *Server) Close() error {
	s.streams.close()
	return nil
}

func streamConfigOf(opts Options) streamConfig {
	return streamConfig{maxStreams: opts.MaxStreams, maxPerCaller: opts.MaxStreamsPerCaller, log: opts.Logger}
}

// watchHandler returns the handler of GET /api/v1/watch: the Server's
// streamer, or, for a bare Handler, one of its own. That one needs no
// stopping: its broadcaster runs only while streams are open, and streams
// end with their requests.
func (s *server) watchHandler() http.Handler {
	if s.opts.streams != nil {
		return s.opts.streams
	}
	return newStreamer(s.h, streamConfigOf(s.opts))
}

// snapshot answers the latest snapshot (an apiv1.Snapshot), with
// environment and Secret values redacted unless the caller is an operator.
func (s *server) snapshot(w http.ResponseWriter, r *http.Request) {
	snap := apiv1.FromSnapshot(s.h.Snapshot())
	if owners := s.replicaList().Owners(); len(owners) > 0 {
		for i := range snap.Clusters {
			snap.Clusters[i].Owner = owners[snap.Clusters[i].ID]
		}
	}
	if viewOf(r) == viewRedacted {
		snap = redactSnapshot(snap)
	}
	writeJSON(w, http.StatusOK, snap)
}

// replicaList returns the live replicas (none for a hub of one process).
func (s *server) replicaList() apiv1.ReplicaList {
	l := apiv1.ReplicaList{APIVersion: apiv1.APIVersion, Replicas: []apiv1.Replica{}}
	if s.opts.Replicas != nil {
		if rs := s.opts.Replicas(); rs != nil {
			l.Replicas = rs
		}
	}
	return l
}

// replicas answers the live replicas of a hub that runs as several, each
// with its API address and the clusters it manages (an apiv1.ReplicaList;
// its list is empty for a hub of one process).
func (s *server) replicas(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.replicaList())
}

// whoami answers who the request's token belongs to (an apiv1.Whoami);
// a hub in read-only mode answers viewer for every token, as it refuses
// every action.
func (s *server) whoami(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r)
	role := c.Role
	if s.opts.ReadOnly {
		role = RoleViewer
	}
	writeJSON(w, http.StatusOK, apiv1.Whoami{APIVersion: apiv1.APIVersion, Name: c.Name, Role: role.String()})
}

// node answers one NodeID's status and desired object (an
// apiv1.NodeDetail), with environment and Secret values redacted unless
// the caller is an operator.
func (s *server) node(w http.ResponseWriter, r *http.Request) {
	id, err := hub.ParseNodeID(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	view, ok := s.h.Snapshot().NodeView(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("%s: %w", id, hub.ErrUnknownNode))
		return
	}
	d := apiv1.NewNodeView(view)
	if viewOf(r) == viewRedacted {
		d = redactNodeDetail(d)
	}
	writeJSON(w, http.StatusOK, d)
}

// writeHolds answers the active holds (an apiv1.HoldList).
func writeHolds(w http.ResponseWriter, hs []hub.Hold) {
	writeJSON(w, http.StatusOK, apiv1.NewHoldList(hs))
}

// writeHold answers a hold just placed (an apiv1.HoldDocument) with code.
func writeHold(w http.ResponseWriter, code int, hd hub.Hold) {
	writeJSON(w, code, apiv1.NewHoldDocument(hd))
}
