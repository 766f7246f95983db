package hub

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is the lowercase kind of a managed object, the slug of its NodeID.
type Kind string

// The kinds driftwatch manages.
const (
	KindDeployment Kind = "deployment"
	KindService    Kind = "service"
	KindConfigMap  Kind = "configmap"
)

// Kinds lists the kinds the applications compile to, in a stable order.
// Manifest sources add any other kind (see KindSlug).
func Kinds() []Kind { return []Kind{KindDeployment, KindService, KindConfigMap} }

// legacyGroups are the API groups of slugs without a group: the kinds of
// the core group ("" ) have none, and the Deployment keeps the slug it had
// before any kind could be managed, so state files stay valid.
var legacyGroups = map[string]string{"deployment": "apps"}

// KindSlug returns the NodeID slug of an object's API group and kind:
// the lowercase kind for the core group ("configmap", "namespace") and for
// Deployments ("deployment"), else kind.group in lowercase
// ("statefulset.apps", "certificate.cert-manager.io"), so every group and
// kind has its own slug.
func KindSlug(group, kind string) Kind {
	k := strings.ToLower(kind)
	if group == "" || legacyGroups[k] == group {
		return Kind(k)
	}
	return Kind(k + "." + strings.ToLower(group))
}

// GroupKind splits a slug into its API group and lowercase kind (the
// inverse of KindSlug; the kind keeps KindSlug's lowercase).
func (k Kind) GroupKind() (group, kind string) {
	s := string(k)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return s[i+1:], s[:i]
	}
	return legacyGroups[s], s
}

// NodeID identifies one managed object across every cluster. Its canonical
// text form is clusterId:resource:slug, for example
// prod-eu:casehub/inventory:deployment. Resource is namespace/name for
// namespaced objects and name for cluster-scoped ones; it is parsed from both
// ends, so a resource that embeds a colon (a tenancy ID such as acme:eu) still
// round-trips. NodeID is comparable and can key maps and queues.
type NodeID struct {
	Cluster  string
	Resource string
	Kind     Kind
}

// ErrInvalidNodeID is wrapped by every ParseNodeID error.
var ErrInvalidNodeID = errors.New("invalid node id")

// NewNodeID returns the NodeID of a namespaced object.
func NewNodeID(cluster, namespace, name string, kind Kind) NodeID {
	res := name
	if namespace != "" {
		res = namespace + "/" + name
	}
	return NodeID{Cluster: cluster, Resource: res, Kind: kind}
}

// String returns the canonical text form clusterId:resource:slug.
func (id NodeID) String() string {
	return id.Cluster + ":" + id.Resource + ":" + string(id.Kind)
}

// CompareText orders NodeIDs as their text forms (String) compare, without
// building them: -1, 0 or +1.
func CompareText(a, b NodeID) int {
	as := [...]string{a.Cluster, ":", a.Resource, ":", string(a.Kind)}
	bs := [...]string{b.Cluster, ":", b.Resource, ":", string(b.Kind)}
	i, j, ai, bj := 0, 0, 0, 0
	for {
		for i < len(as) && ai == len(as[i]) {
			i, ai = i+1, 0
		}
		for j < len(bs) && bj == len(bs[j]) {
			j, bj = j+1, 0
		}
		switch {
		case i == len(as) && j == len(bs):
			return 0
		case i == len(as):
			return -1
		case j == len(bs):
			return 1
		}
		if ca, cb := as[i][ai], bs[j][bj]; ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
		ai, bj = ai+1, bj+1
	}
}

// MarshalText implements encoding.TextMarshaler with the canonical form.
func (id NodeID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseNodeID.
func (id *NodeID) UnmarshalText(b []byte) error {
	p, err := ParseNodeID(string(b))
	if err != nil {
		return err
	}
	*id = p
	return nil
}

// Namespace returns the namespace part of Resource, or "" for a
// cluster-scoped resource.
func (id NodeID) Namespace() string {
	ns, _, ok := strings.Cut(id.Resource, "/")
	if !ok {
		return ""
	}
	return ns
}

// Name returns the name part of Resource.
func (id NodeID) Name() string {
	_, name, ok := strings.Cut(id.Resource, "/")
	if !ok {
		return id.Resource
	}
	return name
}

// Valid reports whether id has the parts ParseNodeID requires, so that
// ParseNodeID(id.String()) == id.
func (id NodeID) Valid() bool {
	return id.Cluster != "" && !strings.Contains(id.Cluster, ":") &&
		id.Kind != "" && !strings.Contains(string(id.Kind), ":") &&
		id.Resource != ""
}

// ParseNodeID parses the canonical text form. The cluster runs up to the first
// colon and the slug starts after the last one; everything between is the
// resource, which may itself contain colons.
func ParseNodeID(s string) (NodeID, error) {
	first := strings.IndexByte(s, ':')
	last := strings.LastIndexByte(s, ':')
	if first < 0 || first == last {
		return NodeID{}, fmt.Errorf("%w %q: want cluster:resource:kind", ErrInvalidNodeID, s)
	}
	id := NodeID{Cluster: s[:first], Resource: s[first+1 : last], Kind: Kind(s[last+1:])}
	switch {
	case id.Cluster == "":
		return NodeID{}, fmt.Errorf("%w %q: empty cluster", ErrInvalidNodeID, s)
	case id.Resource == "":
		return NodeID{}, fmt.Errorf("%w %q: empty resource", ErrInvalidNodeID, s)
	case id.Kind == "":
		return NodeID{}, fmt.Errorf("%w %q: empty kind", ErrInvalidNodeID, s)
	}
	return id, nil
}
