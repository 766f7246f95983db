//go:build !unix

package manifest

// limitSelf does nothing where the platform has no resource limits: the
// parent's timeout alone bounds a render.
func limitSelf(mem uint64) error { return nil }
