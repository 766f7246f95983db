package hub

// HubAnnotation names the hub that owns an object: the goal compiler puts
// the hub id on every object it builds, and a backend refuses to delete an
// object whose annotation names another hub (two hubs sharing a managed-by
// value never prune each other's objects).
const HubAnnotation = "driftwatch.io/hub"

// OwnedByOther reports whether an object's annotations say that another hub
// owns it: the annotation is present and names a hub other than hubID. An
// object without the annotation (applied before it existed) is not.
func OwnedByOther(annotations map[string]string, hubID string) bool {
	owner, ok := annotations[HubAnnotation]
	return ok && owner != hubID
}
