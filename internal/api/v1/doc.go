// Package apiv1 is version 1 of the wire format of driftwatch's HTTP API
// (apiVersion "driftwatch.io/v1"): the JSON documents the API answers and
// streams, with camelCase field names, their conversions from and to the
// hub's types, and the snapshot deltas of the watch stream (Diff and
// Delta.Apply).
//
// The hub's types are free to change; these are not. Adding, removing or
// renaming a field here is a change of the wire format: it must be made in
// internal/api/openapi.yaml too (a test compares the two), and a breaking change
// needs a new version package beside this one.
//
// The package is named apiv1, not v1, so that it reads unambiguously next to
// package api and the many Kubernetes packages named v1, without an import
// alias.
//
// Conventions: lists are always present (an empty list, never null); times
// are RFC 3339 and left out when unknown (omitzero); durations are Go
// duration strings ("1.5s", see Duration); enumerations are strings.
package apiv1
