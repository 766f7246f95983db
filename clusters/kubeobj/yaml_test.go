package kubeobj

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestMarshalYAMLRendersAnyString: a value holding characters the YAML
// reader refuses raw (DEL, C1 controls, U+FEFF, U+FFFE, U+FFFF) renders as
// escapes, and renders back to the same string; everything else renders
// exactly as sigs.k8s.io/yaml renders it.
func TestMarshalYAMLRendersAnyString(t *testing.T) {
	hostile := "a\x7fb\u0085c\u009bd\x1be\ufefff\ufffeg\uffffh\u2028i é ✓"
	obj := map[string]any{
		"data": map[string]any{"k": hostile, "n": "123", "b": true, "i": int64(3), "f": 1.5},
		"list": []any{"x", "true", "a: b", ""},
	}
	if _, err := yaml.Marshal(obj); err == nil {
		t.Fatal("sigs.k8s.io/yaml renders the hostile value now: this helper may be dropped")
	}
	y, err := MarshalYAML(obj)
	if err != nil {
		t.Fatalf("MarshalYAML: %v", err)
	}
	for _, c := range []string{"\x7f", "\u0085", "\u009b", "\x1b", "\ufeff", "\ufffe", "\uffff"} {
		if strings.Contains(string(y), c) {
			t.Errorf("YAML holds %q raw:\n%s", c, y)
		}
	}
	var back map[string]any
	if err := yaml.Unmarshal(y, &back); err != nil {
		t.Fatalf("the YAML does not read back: %v\n%s", err, y)
	}
	if got := back["data"].(map[string]any)["k"]; got != hostile {
		t.Errorf("read back %q, want %q", got, hostile)
	}

	plain := map[string]any{"spec": map[string]any{"replicas": int64(3), "args": []any{"--x=1", "true", "multi\nline\n", "é"}}, "metadata": map[string]any{"labels": map[string]any{"on": "on", "~": "~"}}}
	want, err := yaml.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	got, err := MarshalYAML(plain)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("plain content renders\n%s\nwant (sigs.k8s.io/yaml)\n%s", got, want)
	}
	if j := []byte(`{"a":"b"}`); &escapeYAMLUnprintable(j)[0] != &j[0] {
		t.Error("JSON without such characters was copied")
	}
}

// TestJSONToYAMLNamesItsError: a document that is not JSON is an error
// that says what failed.
func TestJSONToYAMLNamesItsError(t *testing.T) {
	if _, err := JSONToYAML([]byte(`{"a":`)); err == nil || !strings.Contains(err.Error(), "convert to YAML") {
		t.Errorf("err = %v, want a conversion error", err)
	}
}
