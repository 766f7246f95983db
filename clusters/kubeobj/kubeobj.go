// Package kubeobj holds what driftwatch writes on and reads from Kubernetes
// objects: its ownership labels and annotations, its server-side apply
// field managers, and the JSON bodies of desired objects (a hub.NodeSpec's
// Body, opaque to the core). The Kubernetes backend, the goal compiler and
// the views that show an object's YAML use it; the core (package hub)
// does not.
package kubeobj

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/hub"
)

// Label and annotation keys driftwatch puts on every object it applies.
const (
	// ManagedByLabel marks an object as managed; the watch managers filter on
	// it server-side. Its value is configurable (default DefaultManagedBy).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// DefaultManagedBy is the default value of ManagedByLabel.
	DefaultManagedBy = "driftwatch"
	// NodeIDAnnotation holds the canonical NodeID of an applied object.
	NodeIDAnnotation = "driftwatch.io/node-id"
	// HubAnnotation names the hub that owns an object: the goal compiler
	// puts the hub id on every object it builds, and a backend never
	// repairs, adopts or deletes an object whose annotation names another
	// hub (two hubs sharing a managed-by value never touch each other's
	// objects).
	HubAnnotation = "driftwatch.io/hub"
	// ConfigHashAnnotation on a pod template holds the hash of the
	// application's config data, so a config change rolls the pods.
	ConfigHashAnnotation = "driftwatch.io/config-hash"
	// AppLabel is the minimal selector label shared by a Deployment's pods and
	// its Service.
	AppLabel = "app"
	// TenancyLabel carries an application's tenancy ID (sanitised).
	TenancyLabel = "driftwatch.io/tenancy"
	// ApplicationLabel carries the application (or manifest source) id.
	ApplicationLabel = "driftwatch.io/application"
	// FieldManager is the server-side apply field manager of a hub with
	// the default id; FieldManagerFor gives every hub's.
	FieldManager = "driftwatch"
	// PruneAnnotation set to PruneDisabled on a live object means it is
	// never pruned: a prune leaves it in place and stops managing it. The
	// compiler of manifest sources sets it on Namespaces,
	// CustomResourceDefinitions and PersistentVolumeClaims unless the
	// source enables their pruning; users may set it on any object.
	PruneAnnotation = "driftwatch.io/prune"
	// PruneDisabled is the PruneAnnotation value that disables pruning.
	PruneDisabled = "disabled"
	// RecreateAnnotation set to RecreateEnabled on a desired object lets
	// the hub delete and recreate the object when the apiserver refuses a
	// change to it as immutable (a Deployment's selector, a Job's
	// template): without it such a change fails, saying how to allow it.
	// The compiler of manifest sources sets it on the objects of a source
	// with `recreate: true`; users may set it on any object. An object
	// whose PruneAnnotation is PruneDisabled is never recreated.
	RecreateAnnotation = "driftwatch.io/recreate"
	// RecreateEnabled is the RecreateAnnotation value that allows it.
	RecreateEnabled = "enabled"
)

// FieldManagerFor returns the server-side apply field manager of the hub
// hubID: FieldManager ("driftwatch") for the default id (or none), so the
// field ownership that hubs with the default id recorded stays theirs, and
// "driftwatch-<hubID>" for any other id, so that two hubs on one cluster
// never share a field manager. A hub id is a DNS label (at most 63 bytes):
// the name stays well under the apiserver's limit of 128 printable
// characters.
func FieldManagerFor(hubID string) string {
	if hubID == "" || hubID == hub.DefaultHubID {
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

// Object decodes a spec's body (NodeSpec.JSON: packed or not) into a new object the caller owns (integers
// decode as int64, as in objects from the apiserver). A spec without a body
// has no object: Object then returns nil and no error.
func Object(s hub.NodeSpec) (*unstructured.Unstructured, error) {
	body, err := s.JSON()
	if err != nil || len(body) == 0 {
		return nil, err
	}
	m, err := Unmarshal(body)
	if err != nil {
		return nil, fmt.Errorf("node %s: decode desired object: %w", s.ID, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// EncodeBody returns u as a NodeSpec Body: its JSON with map keys sorted, so
// equal objects encode to equal bytes (see Marshal).
func EncodeBody(u *unstructured.Unstructured) ([]byte, error) {
	if u == nil {
		return nil, nil
	}
	b, err := Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return b, nil
}

// MustEncodeBody is EncodeBody for objects built in code, whose encoding
// cannot fail unless the code is wrong: it panics on an error.
func MustEncodeBody(u *unstructured.Unstructured) []byte {
	b, err := EncodeBody(u)
	if err != nil {
		panic(err)
	}
	return b
}
