// Package drift compares a desired Kubernetes object with its live state and
// says who changed it. It holds pure functions only (no I/O): Classify sorts
// the difference into a hub.DriftClass with the differing fields, walking
// the objects along the schema of their kind (a Schema: structured-merge-diff
// types, client-go's built-in ones by default, or a cluster's for custom
// resources with ClassifyWith, ProjectWith and PinWith),
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
// by "/" in key-name order, a key field the item omits taken at its schema
// default), set items by value and atomic list items by index. Which lists
// are keyed, and by what, comes from the Schema alone (x-kubernetes-list-type
// and x-kubernetes-list-map-keys, or patch merge keys for built-in kinds),
// as server-side apply and managedFields use it.
package drift
