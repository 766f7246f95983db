package hub

import (
	"errors"
	"fmt"
)

// DefaultHubID is the id of a hub whose configuration names none.
const DefaultHubID = "driftwatch"

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
