package config

import (
	"slices"
	"testing"
)

// TestAliasesResolve checks that an alias refers to the last anchor of its
// name before it, nested anchors included, and that an alias inside the
// node it refers to is refused, however deep.
func TestAliasesResolve(t *testing.T) {
	src := `clusters:
  - id: a
    kubeconfig: k
    labels: &l {env: one}
  - id: b
    kubeconfig: k
    labels: *l
  - &c
    id: c
    kubeconfig: k
    labels: &l {env: two}
  - id: d
    kubeconfig: k
    labels: *l
applications:
  - id: x
    namespace: ns
    selector: env=two
    image: nginx
`
	cfg, err := Parse("config.yaml", []byte(src), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"one", "one", "two", "two"} {
		if got := cfg.Clusters[i].Labels["env"]; got != want {
			t.Errorf("clusters[%d] env = %q, want %q", i, got, want)
		}
	}

	list := parseErrors(t, "hub: &h\n  ignore:\n    - &r\n      name: *h\n")
	want := "config.yaml:4:13: hub.ignore[0].name: alias *h is inside the node it refers to"
	if !slices.ContainsFunc(list, func(e *Error) bool { return e.Error() == want }) {
		t.Errorf("errors =\n%v\nwant among them %q", list, want)
	}
}
