package hub

import (
	"errors"
	"fmt"
	"strings"
)

// HubAnnotation names the hub that owns an object: the goal compiler puts
// the hub id on every object it builds, and a backend never repairs,
// adopts or deletes an object whose annotation names another hub (two hubs
// sharing a managed-by value never touch each other's objects).
const HubAnnotation = "driftwatch.io/hub"

// DefaultHubID is the id of a hub whose configuration names none.
const DefaultHubID = "driftwatch"

// FieldManagerFor returns the server-side apply field manager of the hub
// hubID: FieldManager ("driftwatch") for the default id (or none), so the
// field ownership that hubs with the default id recorded stays theirs, and
// "driftwatch-<hubID>" for any other id, so that two hubs on one cluster
// never share a field manager. A hub id is a DNS label (at most 63 bytes):
// the name stays well under the apiserver's limit of 128 printable
// characters.
func FieldManagerFor(hubID string) string {
	if hubID == "" || hubID == DefaultHubID {
		return FieldManager
	}
	return FieldManager + "-" + hubID
}

// IsHubFieldManager reports whether manager is the field manager of some
// driftwatch hub (see FieldManagerFor).
func IsHubFieldManager(manager string) bool {
	return manager == FieldManager || strings.HasPrefix(manager, FieldManager+"-") && len(manager) > len(FieldManager)+1
}

// OwnedByOther reports whether an object's annotations say that another hub
// owns it: the annotation is present and names a hub other than hubID. An
// object without the annotation (applied before it existed) is not.
func OwnedByOther(annotations map[string]string, hubID string) bool {
	owner, ok := annotations[HubAnnotation]
	return ok && owner != hubID
}

// ErrOwnedByOther is what every OwnedByOtherError unwraps to: a backend
// refused to write an object because another hub owns it.
var ErrOwnedByOther = errors.New("owned by another hub")

// OwnedByOtherError is the error of a backend call refused because the
// live object's HubAnnotation names another hub (Hub). Backends wrap it
// with the cluster, verb and object; errors.Is(err, ErrOwnedByOther) holds,
// and errors.As with a *OwnedByOtherError target finds the other hub.
type OwnedByOtherError struct {
	// Hub is the id the object's HubAnnotation names.
	Hub string
}

// Error says which hub owns the object.
func (e OwnedByOtherError) Error() string { return fmt.Sprintf("owned by hub %q", e.Hub) }

// Unwrap returns ErrOwnedByOther.
func (e OwnedByOtherError) Unwrap() error { return ErrOwnedByOther }
