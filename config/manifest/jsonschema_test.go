package manifest

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestJSONSchemaInitIsLazy: the JSON Schema validator of the Helm SDK and
// the Helm source (go.mod replaces it with the patched copy in
// internal/third_party/jsonschema) compiles its drafts' meta-schemas on
// first use, not when the program starts. The start of this test binary,
// traced by the runtime (GODEBUG=inittrace=1), shows the package's init
// allocating a few KB; upstream's allocates 1.7 MB, so the test fails if
// the replacement stops being used.
func TestJSONSchemaInitIsLazy(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -test.run=^$: %v\n%s", os.Args[0], err, out)
	}
	m := regexp.MustCompile(`init github\.com/santhosh-tekuri/jsonschema/v6 @[^,]+, [^,]+ clock, (\d+) bytes`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no init line of github.com/santhosh-tekuri/jsonschema/v6 in the trace:\n%s", out)
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	if n > 256<<10 {
		t.Errorf("the jsonschema package's init allocates %d bytes; want the meta-schemas compiled on first use (a few KB at start)", n)
	}
}

// TestValidateSchemaFirstUse: values are validated against a chart's
// schema, and a schema that breaks its draft's meta-schema is refused,
// from several goroutines at once. In this package's test binary this is
// the first use of the validator (the Helm tests run after it), so it is
// also the lazy compilation of the meta-schemas, raced (go test -race).
func TestValidateSchemaFirstUse(t *testing.T) {
	const (
		schema  = `{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}}`
		invalid = `{"$schema": "http://json-schema.org/draft-07/schema#", "type": 5}`
	)
	var wg sync.WaitGroup
	errs := make([][3]error, 8)
	for i := range errs {
		wg.Go(func() {
			errs[i][0] = validateSchema([]byte(schema), map[string]any{"replicas": 2})
			errs[i][1] = validateSchema([]byte(schema), map[string]any{"replicas": 0})
			errs[i][2] = validateSchema([]byte(invalid), map[string]any{})
		})
	}
	wg.Wait()
	for i, e := range errs {
		if e[0] != nil {
			t.Errorf("goroutine %d: valid values refused: %v", i, e[0])
		}
		if e[1] == nil || !strings.Contains(e[1].Error(), "minimum") {
			t.Errorf("goroutine %d: replicas 0 against minimum 1: err = %v, want one naming the minimum", i, e[1])
		}
		if e[2] == nil || !strings.Contains(e[2].Error(), "invalid schema") {
			t.Errorf("goroutine %d: a schema whose type is 5: err = %v, want invalid schema", i, e[2])
		}
	}
}
