package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chartConfig is a config with one source whose chart comes from a
// repository; extra is added to its helm section.
func chartConfig(extra string) string {
	return `clusters:
  - {id: c1, kubeconfig: /k}
sources:
  - id: web
    helm:
      repo: https://charts.example.com/stable
      chart: mini
` + extra + `    clusters: [c1]
`
}

// fakeChartPull returns a hook that serves testdata/sources/mini as the
// pulled chart and records what it was asked.
func fakeChartPull(t *testing.T, asked *[]HelmChart) func(Hub, string, HelmChart) (GitCheckout, error) {
	t.Helper()
	chart, err := filepath.Abs(filepath.Join("testdata", "sources", "mini"))
	if err != nil {
		t.Fatal(err)
	}
	return func(_ Hub, id string, h HelmChart) (GitCheckout, error) {
		*asked = append(*asked, h)
		return GitCheckout{Dir: filepath.Dir(chart), Archive: chart, Commit: "0.1.0@sha256:" + strings.Repeat("ab", 32),
			Ref: "0.1.0", Time: time.Unix(1, 0), Message: "chart mini 0.1.0"}, nil
	}
}

func TestChartFromARepository(t *testing.T) {
	var asked []HelmChart
	opts := testOptions()
	opts.ChartPull = fakeChartPull(t, &asked)
	_, err := Parse("/etc/dw/config.yaml", []byte(chartConfig(
		"      version: \"~0.1\"\n      interval: 30s\n      timeout: 20s\n      auth: {usernameFile: user, passwordFile: pass}\n      caFile: ca.pem\n      valuesFiles: [values.yaml]\n")), opts)
	if err == nil || !strings.Contains(err.Error(), "values.yaml") {
		// The values file beside the config does not exist: the source
		// fails to render, naming it (a path beside the config, not in
		// the chart).
		t.Fatalf("Parse with a missing values file beside the config: %v", err)
	}
	if len(asked) != 1 {
		t.Fatalf("pulls asked: %d, want 1", len(asked))
	}
	h := asked[0]
	if h.Repo != "https://charts.example.com/stable" || h.Chart != "mini" || h.Version != "~0.1" || h.Interval != 30*time.Second ||
		h.Timeout != 20*time.Second || h.Auth.UsernameFile != "/etc/dw/user" || h.Auth.PasswordFile != "/etc/dw/pass" || h.CAFile != "/etc/dw/ca.pem" ||
		len(h.ValuesFiles) != 1 || h.ValuesFiles[0] != "/etc/dw/values.yaml" {
		t.Errorf("helm section: %+v", h)
	}

	asked = nil
	cfg, err := Parse("/etc/dw/config.yaml", []byte(chartConfig("      values: {replicas: 2}\n")), opts)
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	if len(asked) != 1 || asked[0].Interval != DefaultChartInterval || asked[0].Version != "" {
		t.Errorf("asked %+v: want the default interval %s and no version", asked, DefaultChartInterval)
	}
	co, ok := cfg.Sources[0].Checkout()
	if !ok || co.Ref != "0.1.0" {
		t.Errorf("checkout %+v, %v", co, ok)
	}
	specs := Compile(cfg)
	if len(specs) == 0 {
		t.Fatal("no objects rendered from the pulled chart")
	}
	for _, s := range specs {
		if want := "0.1.0@sha256:" + strings.Repeat("ab", 32) + " chart mini 0.1.0"; s.Revision != want {
			t.Errorf("%s: revision %q, want %q", s.ID, s.Revision, want)
		}
	}
	if !cfg.HasGitSources() {
		t.Error("HasGitSources: false for a chart from a repository, whose new versions parse the file again")
	}
}

func TestChartFromARepositoryErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"version without repo", strings.Replace(chartConfig("      version: 1.2.3\n"), "      repo: https://charts.example.com/stable\n", "", 1),
			"config.yaml:7:16: sources[0].helm.version: only with repo"},
		{"auth without repo", strings.Replace(chartConfig("      auth: {usernameFile: u, passwordFile: p}\n"), "      repo: https://charts.example.com/stable\n", "", 1),
			"sources[0].helm.auth: only with repo"},
		{"half auth", chartConfig("      auth: {usernameFile: u}\n"), "sources[0].helm.auth: set both usernameFile and passwordFile, or neither"},
		{"interval", chartConfig("      interval: 1s\n"), "sources[0].helm.interval: interval 1s is too short"},
		{"with git", strings.Replace(chartConfig(""), "    helm:\n", "    git: {url: https://git.example.com/a.git}\n    helm:\n", 1),
			"sources[0].helm.repo: a chart from a repository does not come from git too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []HelmChart
			opts := testOptions()
			opts.ChartPull = fakeChartPull(t, &asked)
			opts.GitCheckout = func(Hub, string, GitSource) (GitCheckout, error) { return GitCheckout{}, errors.New("not asked") }
			_, err := Parse("config.yaml", []byte(tc.src), opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestChartFromARepositoryWithoutPuller(t *testing.T) {
	_, err := Parse("config.yaml", []byte(chartConfig("")), testOptions())
	if err == nil || !strings.Contains(err.Error(), "sources[0].helm.repo: charts from a repository need a hub or check/diff to pull them") {
		t.Fatalf("error: %v", err)
	}
}

func TestChartPullFails(t *testing.T) {
	opts := testOptions()
	opts.ChartPull = func(Hub, string, HelmChart) (GitCheckout, error) {
		return GitCheckout{}, errors.New("https://charts.example.com/stable/index.yaml: 503 Service Unavailable")
	}
	if _, err := Parse("config.yaml", []byte(chartConfig("")), opts); err == nil || !strings.Contains(err.Error(), "sources[0].helm.repo: https://charts.example.com/stable/index.yaml: 503") {
		t.Fatalf("without isolation: %v", err)
	}
	opts.IsolateSources = true
	cfg, err := Parse("config.yaml", []byte(chartConfig("")), opts)
	if err != nil {
		t.Fatalf("isolated: %v", err)
	}
	if f := cfg.SourceFaults()["web"]; len(f) != 1 || !strings.Contains(f[0].Error(), "503") {
		t.Errorf("faults: %v", cfg.SourceFaults())
	}
	if specs := Compile(cfg); len(specs) != 0 {
		t.Errorf("specs of a chart never pulled: %d", len(specs))
	}
}
