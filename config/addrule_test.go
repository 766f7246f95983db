package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// testRule is a rule as the TUI proposes it.
const testRule = `ignore:
  - name: "demo-autoscaler"
    managers: ["demo-autoscaler"]
    paths: ["spec.replicas"]
    kinds: [Deployment]
`

// TestAddIgnoreRule: the rule lands in the application's ignore list (made
// when missing), every other line stays as it was, and the result parses
// with the rule in place.
func TestAddIgnoreRule(t *testing.T) {
	tests := []struct {
		file, app, golden string
	}{
		{"new-list", "web", "new-list.web.after.yaml"},
		{"new-list", "pay", "new-list.pay.after.yaml"},
		{"existing-list", "web", "existing-list.web.after.yaml"},
		{"existing-list", "pay", "existing-list.pay.after.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			path := filepath.Join("testdata", "addrule", tt.file+".before.yaml")
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			after, err := AddIgnoreRule(path, before, tt.app, testRule)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("addrule", tt.golden), after)
			// Nothing removed: every line of before is still there, in order.
			rest := string(after)
			for _, l := range strings.SplitAfter(string(before), "\n") {
				i := strings.Index(rest, l)
				if i < 0 {
					t.Fatalf("line %q lost or reordered", l)
				}
				rest = rest[i+len(l):]
			}
			f, err := parseApps(after)
			if err != nil {
				t.Fatalf("after the edit: %v\n%s", err, after)
			}
			if !f[tt.app] {
				t.Fatalf("application %s has no rule for demo-autoscaler after the edit:\n%s", tt.app, after)
			}
		})
	}
}

// parseApps decodes applications' ignore rules without validating the
// rest (the test files have no clusters section) and reports which
// application has a rule for demo-autoscaler.
func parseApps(data []byte) (map[string]bool, error) {
	var doc struct {
		Applications []struct {
			ID     string `yaml:"id"`
			Ignore []struct {
				Managers []string `yaml:"managers"`
			} `yaml:"ignore"`
		} `yaml:"applications"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	out := make(map[string]bool)
	for _, a := range doc.Applications {
		for _, r := range a.Ignore {
			for _, m := range r.Managers {
				if m == "demo-autoscaler" {
					out[a.ID] = true
				}
			}
		}
	}
	return out, nil
}

func TestAddIgnoreRuleErrors(t *testing.T) {
	tests := []struct {
		name, data, app, want string
	}{
		{"no such application", "applications:\n  - id: web\n", "pay", `no application "pay"`},
		{"flow ignore list", "applications:\n  - id: web\n    ignore: []\n", "web", "not a block list"},
		{"no applications", "hub:\n  id: x\n", "web", "applications: not a block list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := AddIgnoreRule("c.yaml", []byte(tt.data), tt.app, testRule)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "c.yaml") {
				t.Fatalf("error = %v, want c.yaml: ...%s", err, tt.want)
			}
		})
	}
}

func TestAddIgnoreRuleBounds(t *testing.T) {
	src := "applications:\n  - id: web\n    env:\n" + keys("      ", 0, maxMappingKeys+1)
	_, err := AddIgnoreRule("config.yaml", []byte(src), "web", "ignore:\n  - name: x\n")
	want := fmt.Sprintf("config.yaml:%d:7: a mapping has more than %d keys", 4+maxMappingKeys, maxMappingKeys)
	if err == nil || err.Error() != want {
		t.Errorf("AddIgnoreRule error = %v, want %q", err, want)
	}
}
