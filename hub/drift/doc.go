// Package drift compares a desired Kubernetes object with its live state and
// says who changed it. It holds pure functions only (no I/O): Classify sorts
// the difference into a hub.DriftClass with the differing fields,
// FieldsV1Paths reads the field paths a managedFields entry owns, and
// Attribute matches the two to name the field manager behind a drift.
// ClassifyIgnoring sets apart the differences ignore rules cover (by field
// path, or by the field's current owner: CurrentOwner), and Pin keeps their
// live values in an object about to be applied.
//
// Field paths name one field of an object in the form users read, and in the
// same form for drift and for managedFields, so the two can be matched:
// dotted field names from the object root ("spec.replicas"), list items
// keyed by their merge key in brackets ("spec.template.spec.containers[app]
// .image", "...env[DEBUG]", "spec.ports[80/TCP]"; several key values joined
// by "/" in key-name order), set items by value and atomic list items by
// index. The merge keys come from one table (see mergeKeys).
package drift
