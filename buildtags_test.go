package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// noGoPluginsTag is kustomize's build tag that leaves its Go plugin loader
// out of the binary (sigs.k8s.io/kustomize/api/internal/plugins/loader).
const noGoPluginsTag = "kustomize_disable_go_plugin_support"

// TestBuildsLeaveOutGoPlugins checks that kustomize's build tag still keeps
// Go's plugin package out of driftwatch (with it, a cgo build links every
// exported method and externally), and that every build of driftwatch the
// project's scripts make, and the test script's own builds, use the tag.
func TestBuildsLeaveOutGoPlugins(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-tags", noGoPluginsTag, ".")
	// The tag alone decides, whatever GOFLAGS the test runs with.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -tags %s .: %v", noGoPluginsTag, err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "sigs.k8s.io/kustomize/api/krusty") {
		t.Fatalf("go list -deps: kustomize's krusty is not linked; this test checks nothing (%d packages)", len(deps))
	}
	if slices.Contains(deps, "plugin") {
		t.Errorf("built with -tags %s, driftwatch still links Go's plugin package: kustomize renamed or dropped the tag", noGoPluginsTag)
	}

	// Each `go build` of driftwatch in scripts/ carries the tag; test.sh
	// exports it in GOFLAGS for its vet, staticcheck and test builds.
	goBuild := regexp.MustCompile(`(^|[\s;&(])go build `)
	scripts, err := filepath.Glob("scripts/*.sh")
	if err != nil {
		t.Fatal(err)
	}
	builds := 0
	for _, path := range scripts {
		if filepath.Base(path) == "build-binaries.sh" {
			continue // builds the control planes and tools, not driftwatch
		}
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "log ") || !goBuild.MatchString(line) {
				continue
			}
			if strings.Contains(line, "summarize") {
				continue // stress-bench.sh's report summarizer, a program of its own
			}
			builds++
			if !strings.Contains(line, "-tags "+noGoPluginsTag) {
				t.Errorf("%s:%d: builds driftwatch without -tags %s: %s", path, i+1, noGoPluginsTag, line)
			}
		}
	}
	if builds < 5 {
		t.Errorf("found %d builds of driftwatch in scripts/, want at least 5 (stress-bench, screenshots, bench-ab twice, build-static)", builds)
	}
	testSh, err := os.ReadFile("scripts/test.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(testSh), "\nexport GOFLAGS=\"${GOFLAGS:+${GOFLAGS} }-tags="+noGoPluginsTag+"\"\n") {
		t.Errorf("scripts/test.sh does not export GOFLAGS with -tags=%s", noGoPluginsTag)
	}
}
