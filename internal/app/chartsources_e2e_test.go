package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/e2etest"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// webChart is a chart whose ConfigMap carries the chart's version and a
// value.
func webChart(value string) map[string]string {
	return map[string]string{
		"values.yaml":       fmt.Sprintf("value: %q\n", value),
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-web\ndata:\n  value: {{ .Values.value | quote }}\n  chart: {{ .Chart.Version | quote }}\n",
	}
}

// TestChartRepositoryEndToEnd: a source whose chart comes from a Helm
// chart repository served over HTTP, applied to a real cluster with the
// latest version its range picks and values beside the config; a new
// version in the range reaches the cluster at the next poll, or at once
// on a reload of the config; one outside the range is not taken; while the repository
// is down the last good version stays in force and the source is stale;
// a restarted hub on the same state folder starts from its cache while
// the repository is still down.
func TestChartRepositoryEndToEnd(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	repo := e2etest.NewChartRepo(t)
	repo.Publish("web", "1.0.0", "1.0", webChart("one"))
	repo.Publish("web", "1.1.0-rc.1", "1.1", webChart("prerelease"))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "values-prod.yaml"), []byte("value: from-the-values-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cl := set.Clusters[0]
	cfgText := fmt.Sprintf(`hub:
  id: e2e
  stateFile: state.db
clusters:
  - {id: %s, kubeconfig: %s}
sources:
  - id: web
    helm:
      repo: %s
      chart: web
      version: "~1"
      interval: 10m
      valuesFiles: [values-prod.yaml]
    clusters: [%s]
    namespace: default
`, cl.Name, cl.Kubeconfig, repo.URL(), cl.Name)
	path := filepath.Join(dir, "driftwatch.yaml")
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startGitApp(t, path, dir)
	web := hub.NewNodeID(cl.Name, "default", "web-web", hub.KindConfigMap)
	applied := func(n hub.NodeStatus) bool { return n.Status == hub.StatusInSync || n.Status == hub.StatusRepaired }
	revIs := func(rev string) func(*hub.Snapshot) bool {
		return func(s *hub.Snapshot) bool {
			r, ok := revisionOf(s, "web")
			return ok && r.Commit == rev
		}
	}
	v1 := "1.0.0@" + repo.Digest("web", "1.0.0")
	s := a.waitSnap(t, 90*time.Second, "version 1.0.0 applied", func(s *hub.Snapshot) bool {
		n, _ := s.Node(web)
		return revIs(v1)(s) && applied(n)
	})
	if r, _ := revisionOf(s, "web"); r.Ref != "~1" || r.URL != repo.URL()+" web" || r.Subject != "chart web (app 1.0)" || r.Error != "" || r.LastFetch.IsZero() {
		t.Errorf("revision: %+v", r)
	}
	if n, _ := s.Node(web); n.Spec == nil || !strings.HasPrefix(n.Spec.Revision, v1) {
		t.Errorf("web's revision: %+v", n.Spec)
	}
	k := kubernetes.NewForConfigOrDie(cl.RESTConfig())
	data := func() map[string]string {
		cm, err := k.CoreV1().ConfigMaps("default").Get(t.Context(), "web-web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}
	waitData := func(chart, value string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for d := data(); d["chart"] != chart || d["value"] != value; d = data() {
			if time.Now().After(deadline) {
				t.Fatalf("web-web: %v, want chart %s and value %s", d, chart, value)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The values file beside the config wins over the chart's values.yaml.
	waitData("1.0.0", "from-the-values-file")

	// A new version in the range: taken at the next poll, or at once on
	// a reload of the config, as here.
	repo.Publish("web", "1.2.0", "1.2", map[string]string{
		"values.yaml":       "value: two\n",
		"templates/cm.yaml": webChart("")["templates/cm.yaml"],
	})
	if err := a.Reload(false); err != nil {
		t.Fatal(err)
	}
	v12 := "1.2.0@" + repo.Digest("web", "1.2.0")
	a.waitSnap(t, 60*time.Second, "version 1.2.0 applied", func(s *hub.Snapshot) bool {
		n, _ := s.Node(web)
		return revIs(v12)(s) && applied(n) && n.Spec != nil && strings.HasPrefix(n.Spec.Revision, v12)
	})
	waitData("1.2.0", "from-the-values-file")
	s = a.waitSnap(t, 30*time.Second, "the feed saying the desired state changed", func(s *hub.Snapshot) bool {
		for _, e := range s.Feed {
			if e.ID == web && e.Who == "desired changed (web@1.2.0)" {
				return true
			}
		}
		return false
	})
	// An upgrade is not drift: nothing repaired, nobody blamed.
	if n, _ := s.Node(web); n.Repairs != 0 || n.Status == hub.StatusRepaired || n.LastRepair == nil || n.LastRepair.DesiredChange != "desired changed (web@1.2.0)" {
		t.Errorf("web after the upgrade: status %s, %d repairs, last write %+v", n.Status, n.Repairs, n.LastRepair)
	}

	// A version outside the range is not taken.
	repo.Publish("web", "2.0.0", "2.0", webChart("major"))
	before := repo.Requests("index.yaml")
	a.git.Trigger("web")
	deadline := time.Now().Add(30 * time.Second)
	for repo.Requests("index.yaml") == before {
		if time.Now().After(deadline) {
			t.Fatal("the triggered poll never asked for the index")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if repo.Requests("web-2.0.0.tgz") != 0 {
		t.Error("version 2.0.0, outside ~1, was downloaded")
	}

	// The repository down: the last good version stays, the source is
	// stale and says why.
	repo.Down(true)
	a.git.Trigger("web")
	s = a.waitSnap(t, 60*time.Second, "the source stale while its repository is down", func(s *hub.Snapshot) bool {
		r, _ := revisionOf(s, "web")
		return r.Commit == v12 && strings.Contains(r.Error, "503")
	})
	if r, _ := revisionOf(s, "web"); r.Since.IsZero() {
		t.Errorf("stale source without since: %+v", r)
	}
	waitData("1.2.0", "from-the-values-file")

	// A restart while the repository is still down starts from the cache.
	a.stop()
	b := startGitApp(t, path, dir)
	b.waitSnap(t, 90*time.Second, "the restarted hub in sync at 1.2.0 from its cache", func(s *hub.Snapshot) bool {
		n, _ := s.Node(web)
		return revIs(v12)(s) && applied(n)
	})
	waitData("1.2.0", "from-the-values-file")
	if n := repo.Requests("web-1.2.0.tgz"); n != 1 {
		t.Errorf("the 1.2.0 archive was downloaded %d times, want once (then cached)", n)
	}
}
