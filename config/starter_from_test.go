package config

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/driftwatch/driftwatch/hub"
)

// fromDir is the folder of the starter's --from test folders.
const fromDir = "testdata/starter/from"

// TestInspectStarterFolder: the layout of a folder decides the source's
// kind (plain files, a kustomization, base/overlays, a chart, one file),
// every rendering is counted by kind, and folders that are empty,
// unreadable or do not render are errors naming the folder.
func TestInspectStarterFolder(t *testing.T) {
	shop := map[string]int{"Service": 2, "ConfigMap": 1, "CronJob": 1, "Deployment": 1, "HorizontalPodAutoscaler": 1, "StatefulSet": 1}
	tests := []struct {
		name      string
		path      string
		namespace string
		setup     func(t *testing.T) string // makes the folder, instead of path
		kind      string
		id        string
		overlays  []string
		values    []string
		renders   []StarterRender
		wantErr   []string
	}{
		{name: "plain files", path: "plain", kind: "path", id: "plain",
			renders: []StarterRender{{Location: ".", Objects: 5, Unnamespaced: 2, // the PVC and the Backup (its CRD: namespaced)
				Kinds: map[string]int{"Backup": 1, "ClusterRole": 1, "CustomResourceDefinition": 1, "Namespace": 1, "PersistentVolumeClaim": 1}}}},
		{name: "one file", path: "plain/namespace.yaml", kind: "path", id: "namespace",
			renders: []StarterRender{{Location: ".", Objects: 1, Kinds: map[string]int{"Namespace": 1}}}},
		{name: "kustomization at the root", path: "kustomize", kind: "kustomize", id: "kustomize",
			renders: []StarterRender{{Location: ".", Objects: 7, Unnamespaced: 7, Kinds: shop}}},
		{name: "base and overlays", path: "overlays", kind: "kustomize", id: "overlays",
			overlays: []string{"dev", "production", "staging"},
			renders: []StarterRender{ // the overlays set namespace shop
				{Location: "overlays/dev", Objects: 7, Kinds: shop},
				{Location: "overlays/production", Objects: 7, Kinds: shop},
				{Location: "overlays/staging", Objects: 7, Kinds: shop},
			}},
		{name: "an overlay alone is a kustomization", path: "overlays/overlays/dev", kind: "kustomize", id: "dev",
			renders: []StarterRender{{Location: ".", Objects: 7, Kinds: shop}}},
		{name: "chart", path: "chart", namespace: "cache", kind: "helm", id: "chart", values: []string{"values-production.yaml"},
			renders: []StarterRender{{Location: ".", Objects: 2, Unnamespaced: 2, Kinds: map[string]int{"Deployment": 1, "Service": 1}}}},
		{name: "Kustomization file name, overlay folders that are no label value left out", kind: "kustomize", id: "my-app",
			setup: func(t *testing.T) string {
				dir := filepath.Join(t.TempDir(), "My_App")
				copyDir(t, filepath.Join(fromDir, "overlays"), dir)
				if err := os.Rename(filepath.Join(dir, "overlays", "dev"), filepath.Join(dir, "overlays", "not a label")); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(filepath.Join(dir, "overlays", "staging", "kustomization.yaml"), filepath.Join(dir, "overlays", "staging", "Kustomization")); err != nil {
					t.Fatal(err)
				}
				return dir
			},
			overlays: []string{"production", "staging"},
			renders: []StarterRender{
				{Location: "overlays/production", Objects: 7, Kinds: shop},
				{Location: "overlays/staging", Objects: 7, Kinds: shop},
			}},

		{name: "packaged chart", kind: "helm", id: "cache-0-1-0",
			setup: func(t *testing.T) string {
				return packChart(t, filepath.Join(fromDir, "chart"), filepath.Join(t.TempDir(), "cache-0.1.0.tgz"))
			},
			renders: []StarterRender{{Location: ".", Objects: 2, Unnamespaced: 2, Kinds: map[string]int{"Deployment": 1, "Service": 1}}}},

		{name: "empty folder", setup: func(t *testing.T) string { return t.TempDir() }, wantErr: []string{"empty folder"}},
		{name: "missing", path: "nope", wantErr: []string{fromDir + "/nope: no such file or directory"}},
		// A path that cannot be read, whoever runs the test (root reads
		// a folder whose mode is 0): one through a file.
		{name: "unreadable path", wantErr: []string{"not a directory"},
			setup: func(t *testing.T) string {
				file := filepath.Join(t.TempDir(), "file")
				if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
				return filepath.Join(file, "deploy")
			}},
		{name: "symlink loop", wantErr: []string{"too many levels of symbolic links"},
			setup: func(t *testing.T) string {
				p := filepath.Join(t.TempDir(), "loop")
				if err := os.Symlink(p, p); err != nil {
					t.Fatal(err)
				}
				return p
			}},
		{name: "kustomize's message", path: "broken", wantErr: []string{fromDir + "/broken: does not render (kustomize):", "missing.yaml"}},
		{name: "Helm's message", path: "brokenchart", wantErr: []string{fromDir + "/brokenchart: does not render (helm):", "nil pointer evaluating", "missing.key"}},
		{name: "no objects", path: "notes", wantErr: []string{fromDir + "/notes: no objects"}},
		{name: "a kustomization and a chart below", wantErr: []string{"does not render (path): ", "Kustomization has no metadata",
			"/deploy/base holds a kustomization, ", "/deploy/cache holds a chart: start from one of them)"},
			setup: func(t *testing.T) string {
				dir := filepath.Join(t.TempDir(), "deploy")
				copyDir(t, filepath.Join(fromDir, "kustomize"), filepath.Join(dir, "base"))
				copyDir(t, filepath.Join(fromDir, "chart"), filepath.Join(dir, "cache"))
				return dir
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(fromDir, tt.path)
			if tt.setup != nil {
				path = tt.setup(t)
			}
			f, err := InspectStarterFolder(t.Context(), path, tt.namespace, nil)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("want an error, got %+v", f)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				if !strings.Contains(err.Error(), filepath.Clean(path)) {
					t.Errorf("error %q does not name %s", err, path)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Kind != tt.kind || f.ID != tt.id || !reflect.DeepEqual(f.Overlays, tt.overlays) || !reflect.DeepEqual(f.ValuesFiles, tt.values) {
				t.Errorf("kind %q, id %q, overlays %q, values files %q; want %q, %q, %q, %q",
					f.Kind, f.ID, f.Overlays, f.ValuesFiles, tt.kind, tt.id, tt.overlays, tt.values)
			}
			if !reflect.DeepEqual(f.Renders, tt.renders) {
				t.Errorf("renders\n%+v\nwant\n%+v", f.Renders, tt.renders)
			}
		})
	}
}

// copyDir copies the folder src to dst (which must not exist).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// TestStarterFrom: a starter made from a folder of manifests loads, its
// one source (in policy warn, instead of the example) targets the
// clusters, with the folder's path relative to the config file; a
// base/overlays folder labels the clusters whose context names hold an
// overlay's name and selects them, or comments the source out when none
// does; the namespace is written only when some object sets none (a
// chart: when asked for).
func TestStarterFrom(t *testing.T) {
	contexts := []string{"kind-dev", "gke_shop_europe-west1_production", "minikube"}
	tests := []struct {
		name      string
		folder    string
		namespace string
		contexts  []string
		kind      string
		wantNS    string   // the source's namespace once loaded
		labels    []string // the clusters' env labels, in ids order
		targets   int      // the clusters the source targets
		objects   int      // compiled, on every cluster
		written   []string // in the starter
		unwritten []string
	}{
		{name: "plain files, no namespace asked", folder: "plain", kind: "path", targets: 3, objects: 15,
			written:   []string{"path: manifests/plain\n", "clusters: [gke-shop-europe-west1-production, kind-dev, minikube]", "# namespace: default", "policy: warn", "a source of\n# the manifests in manifests/plain."},
			unwritten: []string{"applications:", StarterApplication, "    labels: {env"}},
		{name: "plain files, a namespace for those that set none", folder: "plain", namespace: "backups", kind: "path", wantNS: "backups", targets: 3, objects: 15,
			written: []string{"    namespace: backups "}},
		{name: "kustomization", folder: "kustomize", namespace: "shop", kind: "kustomize", wantNS: "shop", targets: 3, objects: 21,
			written: []string{"kustomize: manifests/kustomize\n"}},
		{name: "base and overlays", folder: "overlays", namespace: "ignored", kind: "kustomize", targets: 2, objects: 14,
			labels: []string{"production", "dev", ""},
			written: []string{
				"kustomize: manifests/overlays/overlays/${cluster.labels.env}\n",
				"    selector: env ",
				"labels: {env: dev} ",
				"# labels: {env: <overlay>} # not guessed from the context name: one of dev, production or staging",
			},
			unwritten: []string{"namespace: ignored", "clusters: ["}},
		{name: "base and overlays, no context guessed", folder: "overlays", contexts: []string{"minikube"}, kind: "",
			labels:  []string{""},
			written: []string{"  # - id: overlays\n  #   kustomize: manifests/overlays/overlays/${cluster.labels.env}\n", "then uncomment the source"}},
		{name: "chart", folder: "chart", namespace: "cache", kind: "helm", wantNS: "cache", targets: 3, objects: 6,
			written:   []string{"    helm:\n      chart: manifests/chart\n", "#   - manifests/chart/values-production.yaml", "namespace: cache "},
			unwritten: []string{"chart/values.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			copyDir(t, filepath.Join(fromDir, tt.folder), filepath.Join(dir, "manifests", tt.folder))
			// Inspected from the config file's folder, as init does.
			t.Chdir(dir)
			f, err := InspectStarterFolder(t.Context(), filepath.Join("manifests", tt.folder), tt.namespace, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctxs := contexts
			if tt.contexts != nil {
				ctxs = tt.contexts
			}
			out, err := Starter(starterKubeconfig(ctxs...), StarterOptions{From: f, Namespace: tt.namespace})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.written {
				if !strings.Contains(string(out), w) {
					t.Errorf("the starter lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.unwritten {
				if strings.Contains(string(out), w) {
					t.Errorf("the starter has %q:\n%s", w, out)
				}
			}
			path := filepath.Join(dir, "driftwatch.yaml")
			if err := os.WriteFile(path, out, 0o600); err != nil {
				t.Fatal(err)
			}
			t.Chdir(t.TempDir()) // paths are the config file's, not the current folder's
			cfg, err := Load(path, LoadOptions{Getenv: func(string) string { return "" }, HomeDir: "/home/ops"})
			if err != nil {
				t.Fatalf("Load rejects the starter config: %v\n%s", err, out)
			}
			if len(cfg.Applications) != 0 {
				t.Errorf("applications %+v, want none", cfg.Applications)
			}
			var labels []string
			for _, c := range cfg.Clusters {
				labels = append(labels, c.Labels[StarterEnvLabel])
			}
			if tt.labels != nil && !reflect.DeepEqual(labels, tt.labels) {
				t.Errorf("env labels %q, want %q", labels, tt.labels)
			}
			if tt.kind == "" {
				if len(cfg.Sources) != 0 {
					t.Errorf("sources %+v, want the source commented out", cfg.Sources)
				}
				return
			}
			if len(cfg.Sources) != 1 {
				t.Fatalf("sources %+v, want one", cfg.Sources)
			}
			s := cfg.Sources[0]
			if s.ID != tt.folder || s.Kind() != tt.kind || s.Policy != hub.PolicyWarn || s.Namespace != tt.wantNS {
				t.Errorf("source %s: kind %s, policy %q, namespace %q; want %s, %s, warn, %q", s.ID, s.Kind(), s.Policy, s.Namespace, tt.folder, tt.kind, tt.wantNS)
			}
			if !strings.HasPrefix(s.Location(), filepath.Join(dir, "manifests", tt.folder)) {
				t.Errorf("the source renders %s, want %s", s.Location(), filepath.Join(dir, "manifests", tt.folder))
			}
			if s.Helm != nil && (s.Helm.Namespace != tt.wantNS || len(s.Helm.ValuesFiles) > 0) {
				t.Errorf("chart %+v: want namespace %s and no values files", s.Helm, tt.wantNS)
			}
			targets := 0
			for _, c := range cfg.Clusters {
				if s.Matches(c.Info()) {
					targets++
				}
			}
			if targets != tt.targets {
				t.Errorf("the source targets %d clusters, want %d", targets, tt.targets)
			}
			if n := len(Compile(cfg)); n != tt.objects {
				t.Errorf("compiles to %d objects, want %d", n, tt.objects)
			}
		})
	}
}

// TestStarterFromPath: the path is written as given (relative paths
// that leave the folder quoted as needed); ${ cannot be written.
func TestStarterFromPath(t *testing.T) {
	f, err := InspectStarterFolder(t.Context(), filepath.Join(fromDir, "overlays"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Starter(starterKubeconfig("dev"), StarterOptions{From: f, FromPath: "../deploy"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `kustomize: "../deploy/overlays/${cluster.labels.env}"`; !strings.Contains(string(out), want) {
		t.Errorf("the starter lacks %s:\n%s", want, out)
	}
	if _, err := Starter(starterKubeconfig("dev"), StarterOptions{From: f, FromPath: "a/${b}"}); err == nil || !strings.Contains(err.Error(), `"a/${b}"`) {
		t.Errorf("a path with ${: %v", err)
	}
	if _, err := Starter(starterKubeconfig("dev"), StarterOptions{From: &StarterFolder{Path: "x", Kind: "helm", ID: "x"}, Namespace: "Not_A_Label"}); err == nil || !strings.Contains(err.Error(), "Not_A_Label") {
		t.Errorf("an invalid namespace: %v", err)
	}
}

func TestStarterOverlay(t *testing.T) {
	overlays := []string{"dev", "prod", "production", "staging", "eu"}
	tests := map[string]string{
		"kind-dev":                         "dev",
		"gke_shop_europe-west1_production": "production", // europe holds eu, but not as a word
		"prod-eu":                          "",           // two overlays
		"PROD":                             "prod",
		"devbox":                           "dev", // not a word, but the only one
		"minikube":                         "",
		"arn:aws:eks:eu-west-1:1:cluster/staging": "", // eu and staging
		"staging-europe": "staging",
	}
	for ctx, want := range tests {
		if got := StarterOverlay(ctx, overlays); got != want {
			t.Errorf("StarterOverlay(%q) = %q, want %q", ctx, got, want)
		}
	}
}

func TestStarterSourceID(t *testing.T) {
	tests := map[string]string{
		"deploy":                "deploy",
		"./deploy/":             "deploy",
		"/srv/My_Chart-1.2.tgz": "my-chart-1-2",
		"web.yaml":              "web",
		"/":                     "manifests",
		"___":                   "manifests",
		"cluster":               "cluster",
	}
	for in, want := range tests {
		if got := StarterSourceID(in); got != want {
			t.Errorf("StarterSourceID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStarterRenderSummary(t *testing.T) {
	r := StarterRender{Objects: 4, Kinds: map[string]int{"Service": 2, "Deployment": 1, "ConfigMap": 1}}
	if got, want := r.Summary(), "4 objects: 2 Service, 1 ConfigMap, 1 Deployment"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	r = StarterRender{Objects: 1, Kinds: map[string]int{"Namespace": 1}}
	if got, want := r.Summary(), "1 object: 1 Namespace"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
}

// packChart writes the chart folder src as a .tgz at dst, as helm
// package does (the files under a folder named after the chart), and
// returns dst.
func packChart(t *testing.T, src, dst string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: "cache/" + filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err = errors.Join(err, tw.Close(), gz.Close()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}
