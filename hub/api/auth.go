package api

import (
	"context"
	"net/http"
)

// Role is what a bearer token may do.
type Role int

// Roles, in increasing power.
const (
	// RoleNone is an unauthenticated request.
	RoleNone Role = iota
	// RoleViewer reads snapshots, nodes, holds and the watch stream.
	RoleViewer
	// RoleOperator also repairs, pauses, holds, sets policies and reloads.
	RoleOperator
)

// String returns the role's name as written in a token file.
func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	}
	return "none"
}

// callerKey is the request-context key of the authenticated caller.
type callerKey struct{}

// Caller is who made a request: the token's role and name.
type Caller struct {
	Role Role
	Name string
}

// withCaller returns ctx carrying c.
func withCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerOf returns the authenticated caller of r (RoleNone when none).
func callerOf(r *http.Request) Caller {
	c, _ := r.Context().Value(callerKey{}).(Caller)
	return c
}
