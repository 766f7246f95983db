// Package intent keeps a hub's Intent (pauses, policy overrides, holds,
// pending decommissions and what it applied) in one local state file, so that
// what on-call engineers told the hub survives a restart. Store implements
// hub.IntentStore.
//
// ConfigMapStore is the same store kept in ConfigMaps of the coordination
// cluster instead, for replicated hubs: every replica reads and writes the
// same records, so a failover keeps them. Its records have the same JSON
// format, plus the time each policy override was set (which only replicas
// need: see hub.Intent.PolicySetAt); see its documentation for the layout.
//
// # Why bbolt
//
// The file is a bbolt database (go.etcd.io/bbolt): it is pure Go (no cgo), a
// single file, ACID with an fsync per committed transaction (every write
// method is one Update transaction, durable when it returns), it takes an
// exclusive lock on the file so that two hubs never share one state file, and
// it is the storage engine etcd uses, so it is well exercised.
//
// # Layout
//
// Top-level buckets, values JSON:
//
//	meta           version -> schema version, a JSON integer (2)
//	paused         cluster -> true
//	pauseNotes     cluster -> when it was paused, by whom and why
//	policyNotes    application -> when its override was set, by whom and why
//	policies       application -> policy, a JSON string
//	holds          HoldTarget.String() ("scope/name") -> hold
//	decommissions  NodeID text -> decommission record
//	applied        NodeID text -> spec reference
//
// Records are encoded through types of this package with explicit JSON
// names, so renaming a field of a hub type does not silently change the file
// format; any change to the format bumps the schema version.
//
// # Versions
//
// A file written with a newer schema version than this code knows is refused
// with an error wrapping ErrNewerSchema that names the file and both
// versions, and is not changed. A file with an older version is migrated in
// the opening transaction, one step per version (see migrations), so it is
// either fully migrated or untouched. A file without a meta bucket whose
// top-level buckets are all known is version 0; a new file is version 0 with
// no buckets and is brought to the current version by the same steps.
//
// # Locking
//
// Open waits up to Options.Timeout for bbolt's exclusive lock. While it holds
// the file a store writes a sidecar <path>.owner (mode 0600) with its pid,
// host name and start time, and removes it on Close. When the lock is not
// granted in time Open returns an error wrapping ErrLocked that includes the
// sidecar's content when it is readable. The lock is per open file, so a
// second Open of the same path in the same process is refused too.
//
// # Private files
//
// The state file (mode 0600), its folder (0700 when created) and the owner
// sidecar are opened through package internal/safefile: an existing file
// open to group or others is tightened; an existing folder keeps its mode
// and is refused when it belongs to another user or group or others may
// write to it; and a symbolic link at the state file's
// path, as its folder or as the sidecar is refused with an error naming it,
// never followed (bbolt opens the file through Options.OpenFile with
// O_NOFOLLOW). Such an error wraps neither ErrCorrupt nor ErrLocked.
//
// # Corruption
//
// A file that bbolt cannot open, that is truncated, or that fails bbolt's
// page consistency check at Open is reported with an error wrapping
// ErrCorrupt that names the path and says it was not reset: the store never
// recreates a state file, the operator moves it away. A record that does not
// decode is reported with its bucket and key. bbolt panics on some corrupt
// pages instead of returning an error; every transaction turns such a panic
// (and a memory fault on the mapped file) into an ErrCorrupt error. One case
// is left: if bbolt panics inside its own Open (a garbled freelist page), its
// memory mapping of the file, and with it the file lock, stays until the
// process exits, so retrying in the same process reports ErrLocked. Open
// checks the meta pages itself first so that the common case, a truncated
// file, is reported before bbolt maps it.
//
// An empty (zero-length) file is treated as a new one: bbolt initialises it
// itself while holding the exclusive lock, writing both meta pages in one
// write followed by fdatasync. There is no state in it to lose, and a crash
// during that write leaves meta pages that fail their checksum, which is
// reported as corrupt, never reset.
package intent
