package hub

import (
	"errors"
	"strings"
	"testing"
)

func TestParseNodeID(t *testing.T) {
	tests := []struct {
		in   string
		want NodeID
		err  bool
	}{
		{in: "prod-eu:casehub/inventory:deployment", want: NodeID{"prod-eu", "casehub/inventory", KindDeployment}},
		{in: "c1:node-a:node", want: NodeID{"c1", "node-a", "node"}},
		{in: "c1:acme:eu/app:service", want: NodeID{"c1", "acme:eu/app", KindService}},
		{in: "c1:a:b:c:configmap", want: NodeID{"c1", "a:b:c", KindConfigMap}},
		{in: "", err: true},
		{in: "c1", err: true},
		{in: "c1:deployment", err: true},
		{in: ":ns/x:deployment", err: true},
		{in: "c1::deployment", err: true},
		{in: "c1:ns/x:", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseNodeID(tt.in)
			if tt.err {
				if !errors.Is(err, ErrInvalidNodeID) {
					t.Fatalf("ParseNodeID(%q) error = %v, want ErrInvalidNodeID", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseNodeID(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseNodeID(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			if got.String() != tt.in {
				t.Fatalf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func TestNodeIDParts(t *testing.T) {
	id := NewNodeID("prod-eu", "casehub", "inventory", KindDeployment)
	if id.String() != "prod-eu:casehub/inventory:deployment" {
		t.Fatalf("String() = %q", id)
	}
	if id.Namespace() != "casehub" || id.Name() != "inventory" {
		t.Fatalf("Namespace/Name = %q/%q", id.Namespace(), id.Name())
	}
	cs := NewNodeID("c", "", "ns1", "namespace")
	if cs.Namespace() != "" || cs.Name() != "ns1" || cs.String() != "c:ns1:namespace" {
		t.Fatalf("cluster-scoped id = %#v", cs)
	}
	var back NodeID
	if err := back.UnmarshalText([]byte(id.String())); err != nil || back != id {
		t.Fatalf("UnmarshalText = %#v, %v", back, err)
	}
}

// FuzzNodeIDRoundTrip checks that String and ParseNodeID are exact inverses:
// every string that parses prints back unchanged, and every valid NodeID
// parses back to itself.
func FuzzNodeIDRoundTrip(f *testing.F) {
	for _, s := range []string{
		"prod-eu:casehub/inventory:deployment",
		"c1:acme:eu/app:service",
		"a:b:c",
		"::",
		"x:y",
		"c:ns/n:configmap:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseNodeID(s)
		if err != nil {
			return
		}
		if !id.Valid() {
			t.Fatalf("ParseNodeID(%q) = %#v, which is not Valid", s, id)
		}
		if got := id.String(); got != s {
			t.Fatalf("ParseNodeID(%q).String() = %q", s, got)
		}
		again, err := ParseNodeID(id.String())
		if err != nil || again != id {
			t.Fatalf("round trip of %#v = %#v, %v", id, again, err)
		}
	})
}

// TestCompareText: NodeIDs order as their text forms do, also where the
// field-by-field order differs (a cluster id that is a prefix of another).
func TestCompareText(t *testing.T) {
	ids := []NodeID{
		{"a", "ns/x", KindService}, {"a-b", "ns/x", KindService}, {"a", "ns/x", KindConfigMap},
		{"a", "ns", KindDeployment}, {"a", "ns/x:y", KindService}, {"a", "ns/x", "servic"},
		{"b", "a", "a"}, {"a", "ns/x", KindService},
	}
	for _, a := range ids {
		for _, b := range ids {
			if got, want := CompareText(a, b), strings.Compare(a.String(), b.String()); got != want {
				t.Errorf("CompareText(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func FuzzCompareText(f *testing.F) {
	f.Add("a", "ns/x", "service", "a-b", "ns/x", "service")
	f.Add("a", "x", "y", "a", "x:", "y")
	f.Fuzz(func(t *testing.T, c1, r1, k1, c2, r2, k2 string) {
		a, b := NodeID{c1, r1, Kind(k1)}, NodeID{c2, r2, Kind(k2)}
		if got, want := CompareText(a, b), strings.Compare(a.String(), b.String()); got != want {
			t.Fatalf("CompareText(%q, %q) = %d, want %d", a, b, got, want)
		}
	})
}

func TestKindSlug(t *testing.T) {
	for _, tc := range []struct {
		group, kind string
		want        Kind
	}{
		{"", "ConfigMap", "configmap"},
		{"", "Namespace", "namespace"},
		{"apps", "Deployment", "deployment"},
		{"apps", "StatefulSet", "statefulset.apps"},
		{"autoscaling", "HorizontalPodAutoscaler", "horizontalpodautoscaler.autoscaling"},
		{"cert-manager.io", "Certificate", "certificate.cert-manager.io"},
		{"example.com", "Deployment", "deployment.example.com"},
	} {
		got := KindSlug(tc.group, tc.kind)
		if got != tc.want {
			t.Errorf("KindSlug(%q, %q) = %q, want %q", tc.group, tc.kind, got, tc.want)
		}
		g, k := got.GroupKind()
		if g != tc.group || k != strings.ToLower(tc.kind) {
			t.Errorf("%q.GroupKind() = %q, %q, want %q, %q", got, g, k, tc.group, strings.ToLower(tc.kind))
		}
	}
}
