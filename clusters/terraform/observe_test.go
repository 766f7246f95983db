package terraform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/driftwatch/driftwatch/hub"
)

const (
	secret   = "s3cr3t-applied"
	tampered = "t4mp3red-value"
)

// planOf is a plan whose refreshed state holds the resources and whose
// drift holds the changes.
func planOf(state []*tfjson.StateResource, drift ...*tfjson.ResourceChange) *tfjson.Plan {
	return &tfjson.Plan{
		PriorState:    &tfjson.State{Values: &tfjson.StateValues{RootModule: &tfjson.StateModule{Resources: state}}},
		ResourceDrift: drift,
	}
}

func all(string) bool { return true }

// noSecret fails when a secret is in the hub's view of a resource.
func noSecret(t *testing.T, r *resource, d []hub.FieldDiff) {
	t.Helper()
	b, err := json.Marshal([]any{r.desired, r.actual, d, r.version, r.secret})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, tampered} {
		if strings.Contains(string(b), s) {
			t.Errorf("the value %q reached the hub: %s", s, b)
		}
	}
}

func TestObserveSensitiveAttributeChanged(t *testing.T) {
	key := []byte("k")
	applied := map[string]any{"name": "db", "password": secret}
	state := func(password string) *tfjson.StateResource {
		return &tfjson.StateResource{Address: "db_user.app", Type: "db_user", Mode: tfjson.ManagedResourceMode,
			AttributeValues: map[string]any{"name": "db", "password": password}, SensitiveValues: json.RawMessage(`{"password":true}`)}
	}

	// In sync: both sides redacted alike, no drift.
	obs := observe(planOf([]*tfjson.StateResource{state(secret)}), all, t.TempDir(), key, true)
	r := obs.res["db_user.app"]
	if d := diffValues(r.desired, r.actual); len(d) != 0 || r.secret != "" {
		t.Errorf("in sync: drift %+v, digest %q", d, r.secret)
	}
	noSecret(t, r, nil)

	// Changed outside: the plan's drift has the value applied (before,
	// marked sensitive), the refreshed state the new one.
	drift := &tfjson.ResourceChange{Address: "db_user.app", Type: "db_user", Mode: tfjson.ManagedResourceMode,
		Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionUpdate}, Before: applied,
			After: map[string]any{"name": "db", "password": tampered}, BeforeSensitive: map[string]any{"password": true},
			AfterSensitive: map[string]any{"password": true}}}
	obs = observe(planOf([]*tfjson.StateResource{state(tampered)}, drift), all, t.TempDir(), key, true)
	r = obs.res["db_user.app"]
	d := diffValues(r.desired, r.actual)
	want := hub.FieldDiff{Path: "password", Desired: redacted, Actual: sensitiveChanged}
	if len(d) != 1 || d[0] != want {
		t.Errorf("drift = %+v, want [%+v]", d, want)
	}
	if r.secret == "" {
		t.Error("no digest of the changed value: a second change would not show")
	}
	noSecret(t, r, d)

	// A second tampered value differs in its digest only.
	obs2 := observe(planOf([]*tfjson.StateResource{state(tampered + "2")}, drift), all, t.TempDir(), key, true)
	if r2 := obs2.res["db_user.app"]; r2.secret == r.secret || r2.secret == "" {
		t.Errorf("digests %q and %q: want two different ones", r.secret, r2.secret)
	}
}

// The local provider reports an edited file as gone: the file itself is
// read, and an edited sensitive_content is drift without its value.
func TestObserveSensitiveLocalFileEdited(t *testing.T) {
	dir := t.TempDir()
	applied := map[string]any{"filename": "secret.txt", "content": nil, "sensitive_content": secret, "id": "sha1-of-" + secret}
	drift := &tfjson.ResourceChange{Address: "local_file.secret", Type: "local_file", Mode: tfjson.ManagedResourceMode,
		Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionDelete}, Before: applied,
			BeforeSensitive: map[string]any{"sensitive_content": true}}}

	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	r := observe(planOf(nil, drift), all, dir, []byte("k"), true).res["local_file.secret"]
	if d := diffValues(r.desired, r.actual); !r.exists || len(d) != 0 {
		t.Errorf("file as applied: exists %v, drift %+v; want in sync", r.exists, d)
	}

	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	r = observe(planOf(nil, drift), all, dir, []byte("k"), true).res["local_file.secret"]
	d := diffValues(r.desired, r.actual)
	want := hub.FieldDiff{Path: "sensitive_content", Desired: redacted, Actual: sensitiveChanged}
	if !r.exists || len(d) != 1 || d[0] != want {
		t.Errorf("edited: exists %v, drift %+v; want [%+v]", r.exists, d, want)
	}
	noSecret(t, r, d)

	if err := os.Remove(filepath.Join(dir, "secret.txt")); err != nil {
		t.Fatal(err)
	}
	if r = observe(planOf(nil, drift), all, dir, []byte("k"), true).res["local_file.secret"]; r.exists {
		t.Error("deleted file: exists")
	}
}

func TestRedactPair(t *testing.T) {
	sens := map[string]bool{"a": true, "b": true, "c": true, "n": true}
	applied := map[string]any{"a": "x", "b": "y", "c": nil, "n": map[string]any{"k": "v"}, "plain": "p"}
	current := map[string]any{"a": "x", "b": "z", "c": nil, "n": map[string]any{"k": "w"}, "plain": "q"}
	d, a := redactPair(applied, current, sens)
	wantD := map[string]any{"a": redacted, "b": redacted, "c": nil, "n": redacted, "plain": "p"}
	wantA := map[string]any{"a": redacted, "b": sensitiveChanged, "c": nil, "n": sensitiveChanged, "plain": "q"}
	for k, v := range wantD {
		if d[k] != v {
			t.Errorf("desired[%s] = %v, want %v", k, d[k], v)
		}
	}
	for k, v := range wantA {
		if a[k] != v {
			t.Errorf("actual[%s] = %v, want %v", k, a[k], v)
		}
	}
	if _, a := redactPair(applied, nil, sens); a != nil {
		t.Errorf("gone: actual = %v, want nil", a)
	}
	if applied["a"] != "x" {
		t.Error("redactPair changed its input")
	}
}
