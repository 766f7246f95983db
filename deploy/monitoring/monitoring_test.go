package monitoring

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// PromtoolVersion is the version of github.com/prometheus/prometheus whose
// promtool scripts/build-binaries.sh builds (Prometheus tags its Go module
// v0.x.y for release 3.x.y).
const PromtoolVersion = "v0.316.0"

// Files of this folder.
const (
	rulesFile     = "driftwatch.rules.yaml"
	rulesTestFile = "driftwatch.rules_test.yaml"
	operatorFile  = "prometheusrule.yaml"
	dashboardFile = "grafana-dashboard.json"
)

// metricSources are the Go files that define the exported metrics.
var metricSources = []string{"../../hub/metrics.go", "../../internal/notify/metrics.go"}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

type rule struct {
	Record, Alert, Expr, For string
	Labels, Annotations      map[string]string
}

type group struct {
	Name  string
	Rules []rule
}

func readRules(t *testing.T) []group {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Groups []group }
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return f.Groups
}

// TestPrometheusRuleMatchesRulesFile: the PrometheusRule carries exactly
// the groups of the plain rules file.
func TestPrometheusRuleMatchesRulesFile(t *testing.T) {
	plain := readYAML(t, rulesFile)
	op := readYAML(t, operatorFile)
	if op["apiVersion"] != "monitoring.coreos.com/v1" || op["kind"] != "PrometheusRule" {
		t.Errorf("%s: apiVersion %v kind %v", operatorFile, op["apiVersion"], op["kind"])
	}
	spec, _ := op["spec"].(map[string]any)
	if !reflect.DeepEqual(spec["groups"], plain["groups"]) {
		t.Errorf("%s's spec.groups differ from %s: regenerate it", operatorFile, rulesFile)
	}
}

var (
	metricName  = regexp.MustCompile(`\bdriftwatch_[a-z0-9_]+`)
	definedName = regexp.MustCompile(`Name:\s*"(driftwatch_[a-z0-9_]+)"`)
)

// exported returns the metric names the hub and the notifier export.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, f := range metricSources {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range definedName.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
	}
	if len(names) < 10 {
		t.Fatalf("found only %d metric definitions in %v", len(names), metricSources)
	}
	return names
}

// unknownMetrics lists the driftwatch_ names expr uses that no metric
// defines (a histogram's _bucket, _count and _sum count as its own).
func unknownMetrics(expr string, known map[string]bool) []string {
	var out []string
	for _, n := range metricName.FindAllString(expr, -1) {
		base := n
		for _, suf := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(n, suf); ok && known[b] {
				base = b
			}
		}
		if !known[base] {
			out = append(out, n)
		}
	}
	return out
}

// TestRulesUseExportedMetrics: every alert and recording rule reads
// metrics the hub exports, and every alert says how bad it is.
func TestRulesUseExportedMetrics(t *testing.T) {
	known := exported(t)
	var alerts []string
	for _, g := range readRules(t) {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			if (r.Alert == "") == (r.Record == "") || r.Expr == "" {
				t.Errorf("group %s: rule %q needs exactly one of alert and record, and an expr", g.Name, name)
			}
			if bad := unknownMetrics(r.Expr, known); len(bad) > 0 {
				t.Errorf("rule %s uses metrics the hub does not export: %v", name, bad)
			}
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
				if !slices.Contains([]string{"info", "warning", "critical"}, r.Labels["severity"]) {
					t.Errorf("alert %s: severity %q", r.Alert, r.Labels["severity"])
				}
				if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
					t.Errorf("alert %s lacks a summary or description", r.Alert)
				}
			}
		}
	}
	for _, want := range []string{"DriftwatchClusterUnreachable", "DriftwatchNodeIDsFailed", "DriftwatchNodeIDsStuck",
		"DriftwatchNodeIDsContested", "DriftwatchRepairLatencySLOBurnFast", "DriftwatchRepairLatencySLOBurnSlow"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s", want)
		}
	}
	// The rule tests cover every alert.
	b, err := os.ReadFile(rulesTestFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		if !strings.Contains(string(b), "alertname: "+a+"\n") {
			t.Errorf("%s has no test of alert %s", rulesTestFile, a)
		}
	}
}

// TestDashboard: the dashboard is valid JSON, its panels have unique ids
// and queries, and the queries read exported metrics or the rules'
// recordings.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string
		Title  string
		Panels []struct {
			ID      int
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: uid %q, title %q, %d panels", dashboardFile, d.UID, d.Title, len(d.Panels))
	}
	known := exported(t)
	records := map[string]bool{}
	for _, g := range readRules(t) {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = true
			}
		}
	}
	recording := regexp.MustCompile(`\bdriftwatch:[a-z0-9_:]+`)
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if bad := unknownMetrics(tg.Expr, known); len(bad) > 0 {
				t.Errorf("panel %q uses metrics the hub does not export: %v", p.Title, bad)
			}
			for _, r := range recording.FindAllString(tg.Expr, -1) {
				if !records[r] {
					t.Errorf("panel %q uses the recording %s that no rule records", p.Title, r)
				}
			}
		}
	}
}

// promtool returns the promtool binary: $DRIFTWATCH_PROMTOOL, else the one
// scripts/build-binaries.sh builds into its cache. Without it the test is
// skipped under plain `go test`, and fails under scripts/test.sh (which
// sets DRIFTWATCH_BIN_DIR after building everything).
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DRIFTWATCH_PROMTOOL"); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "driftwatch", "promtool-"+PromtoolVersion, "bin", "promtool")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("DRIFTWATCH_BIN_DIR") != "" {
			t.Fatalf("promtool not found at %s: run scripts/build-binaries.sh", p)
		}
		t.Skip("promtool rule tests: run scripts/test.sh (needs promtool, built by scripts/build-binaries.sh)")
	}
	return p
}

// TestPromtoolVersionInStep: the build script builds the promtool this
// test looks for.
func TestPromtoolVersionInStep(t *testing.T) {
	b, err := os.ReadFile("../../scripts/build-binaries.sh")
	if err != nil {
		t.Fatal(err)
	}
	if want := `PROMTOOL_VERSION="${PROMTOOL_VERSION:-` + PromtoolVersion + `}"`; !strings.Contains(string(b), want) {
		t.Errorf("scripts/build-binaries.sh does not set %s", want)
	}
}

// TestPromtool: promtool accepts the rules file and its unit tests pass.
func TestPromtool(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", rulesFile},
		{"test", "rules", rulesTestFile},
	} {
		out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			continue
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}
