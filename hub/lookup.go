package hub

import "errors"

// ErrUnknownCluster is returned for a cluster the hub does not know.
var ErrUnknownCluster = errors.New("unknown cluster")

// ErrUnknownApplication is returned for an application the hub does not
// know.
var ErrUnknownApplication = errors.New("unknown application")

// The lookups below let callers (the HTTP API) refuse an action on an id
// the hub does not manage before it records anything: PauseCluster,
// SetApplicationPolicy and Hold accept any id and would otherwise keep
// state (and metrics) for a cluster or application that does not exist.

// KnowsCluster reports whether the hub manages a cluster: a desired (or
// decommissioning) object lives on it, or it has reported its health (every
// configured cluster does once its watch manager starts).
func (h *Hub) KnowsCluster(cluster string) bool {
	if _, ok := h.store.clusterHealth(cluster); ok {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.nodes.inCluster(cluster) {
		if n.managed() {
			return true
		}
	}
	return false
}

// KnowsApplication reports whether a desired (or decommissioning) object
// belongs to an application.
func (h *Hub) KnowsApplication(app string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.nodes.all() {
		if n.managed() && n.of().Application == app {
			return true
		}
	}
	return false
}

// KnowsNode reports whether a NodeID is desired or being decommissioned.
func (h *Hub) KnowsNode(id NodeID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nodes.at(id).managed()
}

// KnowsTarget reports whether a hold target names something the hub
// manages: a known NodeID, application or cluster (see KnowsNode,
// KnowsApplication, KnowsCluster). An invalid target is unknown.
func (h *Hub) KnowsTarget(t HoldTarget) bool {
	if t.Valid() != nil {
		return false
	}
	switch t.Scope {
	case HoldNode:
		id, _ := ParseNodeID(t.Name)
		return h.KnowsNode(id)
	case HoldApplication:
		return h.KnowsApplication(t.Name)
	default:
		return h.KnowsCluster(t.Name)
	}
}
