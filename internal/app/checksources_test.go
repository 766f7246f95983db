package app

import (
	"bytes"
	"strings"
	"testing"
)

// The plan lists each manifest source (how it renders and from where, its
// targets, its objects per cluster and their kinds), and -o yaml prints
// the source objects.
func TestCheckPlanShowsSources(t *testing.T) {
	const path = "../../config/examples/sources.yaml"
	env := func(out, errOut *bytes.Buffer) Env {
		return Env{Getenv: func(string) string { return "" }, Stdout: out, Stderr: errOut}
	}
	var out, errOut bytes.Buffer
	if err := Check(CheckOptions{File: path, Output: FormatText, SkipKubeconfigs: true}, env(&out, &errOut)); err != nil {
		t.Fatalf("check: %v\n%s", err, errOut.String())
	}
	plan := out.String()
	for _, want := range []string{
		"source shop\n",
		"kustomize:     sources/kustomize/overlays/${cluster.labels.env}\n",
		"clusters:      dev, staging, production\n",
		"on production: 7 objects: ConfigMap, CronJob.batch, Deployment.apps, HorizontalPodAutoscaler.autoscaling, Service, StatefulSet.apps\n",
		"source cache\n",
		"helm:          sources/charts/cache\n",
		"release:       cache in cache\n",
		"selector:      env in (staging, production)\n",
		"on staging:    2 objects: Deployment.apps, Service\n",
		"source platform\n",
		"path:          sources/platform\n",
		"namespaces: cache, platform, shop (from the applications and sources)",
		"production:shop/db:statefulset.apps",
		"3 clusters, 0 applications, 3 sources, 40 objects",
	} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %q:\n%s", want, plan)
		}
	}
	if strings.Contains(errOut.String(), "WARNING") {
		t.Errorf("warnings: %s", errOut.String())
	}

	out.Reset()
	if err := Check(CheckOptions{File: path, Output: FormatYAML, SkipKubeconfigs: true}, env(&out, &errOut)); err != nil {
		t.Fatalf("check -o yaml: %v\n%s", err, errOut.String())
	}
	for _, want := range []string{
		"# production:shop/report:cronjob.batch\napiVersion: batch/v1\nkind: CronJob\n",
		"driftwatch.io/prune: disabled",
		"driftwatch.io/node-id: dev:platform/nightly:backup.example.com",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-o yaml lacks %q", want)
		}
	}
}
