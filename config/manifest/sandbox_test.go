package manifest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain makes this test binary a render worker when a Sandbox
// starts it (see ServeWorker): the sandbox tests run it as their worker.
func TestMain(m *testing.M) {
	ServeWorker()
	os.Exit(m.Run())
}

// renderBoth renders r in process and in a sandbox and fails the test
// unless both give the same objects, origins and error.
func renderBoth(t *testing.T, r Request) ([]Object, error) {
	t.Helper()
	in, inErr := Render(t.Context(), r)
	r.Sandbox = Self()
	out, outErr := Render(t.Context(), r)
	if (inErr == nil) != (outErr == nil) || (inErr != nil && inErr.Error() != outErr.Error()) {
		t.Fatalf("errors differ:\n in process %v\n sandboxed  %v", inErr, outErr)
	}
	var inE, outE *Error
	if errors.As(inErr, &inE) != errors.As(outErr, &outE) || (inE != nil && *inE != *outE) {
		t.Fatalf("error types differ: in process %#v, sandboxed %#v", inE, outE)
	}
	if len(in) != len(out) {
		t.Fatalf("%d objects in process, %d sandboxed", len(in), len(out))
	}
	for i := range in {
		a, _ := json.Marshal(in[i].Object.Object)
		b, _ := json.Marshal(out[i].Object.Object)
		if string(a) != string(b) || in[i].Origin != out[i].Origin {
			t.Errorf("object %d differs:\n in process %s @%v\n sandboxed  %s @%v", i, a, in[i].Origin, b, out[i].Origin)
		}
	}
	return out, outErr
}

func TestSandboxRendersAsInProcess(t *testing.T) {
	dir := writeTree(t, helmChart())
	files := helmChart()
	files["templates/bad.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.missing.deeper }}\n"
	bad := writeTree(t, files)
	files = helmChart()
	files["templates/broken.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n"
	broken := writeTree(t, files)
	tgz := filepath.Join(t.TempDir(), "shop-0.1.0.tgz")
	writeTarGz(t, dir, "shop", tgz)
	podinfo := "testdata/podinfo/charts/podinfo"
	tests := []struct {
		name    string
		helm    Helm
		objects int
		err     string
	}{
		{name: "defaults", helm: Helm{Chart: dir, ReleaseName: "cache"}, objects: 3},
		{name: "values files and inline values of every type", helm: Helm{Chart: dir, ReleaseName: "r", Namespace: "shop",
			ValuesFiles: []string{filepath.Join(dir, "prod.yaml"), filepath.Join(dir, "big.yaml")},
			Values:      map[string]any{"color": "black", "replicas": float64(2), "sub": map[string]any{"enabled": true, "list": []any{1.5, "a", nil, false}}},
			KubeVersion: "1.37.2"}, objects: 3},
		{name: "archive", helm: Helm{Chart: tgz, ReleaseName: "r"}, objects: 3},
		{name: "podinfo with production values", helm: Helm{Chart: podinfo, ReleaseName: "front", Namespace: "web", KubeVersion: "1.37.2",
			ValuesFiles: []string{podinfo + "/values-prod.yaml"},
			Values:      map[string]any{"redis": map[string]any{"enabled": true}, "hpa": map[string]any{"enabled": true}}}, objects: 6},
		{name: "template error keeps its origin", helm: Helm{Chart: bad, ReleaseName: "r"}, err: "shop/templates/bad.yaml:4"},
		{name: "rendered YAML error keeps its origin", helm: Helm{Chart: broken, ReleaseName: "r"}, err: "shop/templates/broken.yaml"},
		{name: "schema", helm: Helm{Chart: dir, ReleaseName: "r", Values: map[string]any{"replicas": float64(0)}}, err: "values do not match values.schema.json"},
		{name: "release name", helm: Helm{Chart: dir, ReleaseName: "Bad_Name"}, err: `release name "Bad_Name"`},
		{name: "no chart", helm: Helm{Chart: filepath.Join(dir, "nope"), ReleaseName: "r"}, err: "load chart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.helm
			objs, err := renderBoth(t, Request{Helm: &h})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != tt.objects {
				t.Errorf("%d objects, want %d: %q", len(objs), tt.objects, summary(objs))
			}
		})
	}
}

// bombChart returns a chart whose one template loops three deep over a
// values list of n items; body is written at each innermost step.
func bombChart(t *testing.T, n int, body string) string {
	var vals strings.Builder
	vals.WriteString("items:\n")
	for range n {
		vals.WriteString("- 1\n")
	}
	return writeTree(t, map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		"values.yaml":       vals.String(),
		"templates/cm.yaml": "{{- range .Values.items }}{{- range $.Values.items }}{{- range $.Values.items }}" + body + "{{ end }}{{ end }}{{ end }}\n",
	})
}

// TestSandboxStopsATemplateThatEatsMemory renders a 12 KB chart whose
// template writes 16 bytes 2.7e10 times, with no function call the
// bounded engine could refuse: in process it grows the heap until the
// process dies (3.3 GiB after 9 s, then "cannot allocate memory", seen
// under a 4 GiB data limit). Sandboxed, the child dies at its limit and
// the render fails naming the chart and the limit.
func TestSandboxStopsATemplateThatEatsMemory(t *testing.T) {
	chart := bombChart(t, 3000, "xxxxxxxxxxxxxxxx")
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	sb := &Sandbox{Path: Self().Path, Args: Self().Args, MemoryLimit: 256 << 20, Timeout: time.Minute}
	start := time.Now()
	_, err := Render(t.Context(), Request{Helm: &Helm{Chart: chart, ReleaseName: "r"}, Sandbox: sb})
	if err == nil || !strings.Contains(err.Error(), "needed more than 256 MiB of memory: stopped") || !strings.Contains(err.Error(), chart) {
		t.Fatalf("error = %v, want the chart %s stopped at its memory limit", err, chart)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	t.Logf("stopped after %v: %v (this process's heap %d -> %d MiB)", time.Since(start).Round(time.Millisecond), err, before.HeapAlloc>>20, after.HeapAlloc>>20)
}

// TestSandboxStopsATemplateThatNeverEnds renders a chart whose template
// loops 2.7e10 times writing nothing: in process it runs for hours, as
// no context reaches text/template's range. Sandboxed, it is killed at
// the timeout.
func TestSandboxStopsATemplateThatNeverEnds(t *testing.T) {
	chart := bombChart(t, 3000, "")
	sb := &Sandbox{Path: Self().Path, Args: Self().Args, Timeout: 2 * time.Second}
	_, err := Render(t.Context(), Request{Helm: &Helm{Chart: chart, ReleaseName: "r"}, Sandbox: sb})
	if err == nil || !strings.Contains(err.Error(), "rendering took longer than 2s: stopped") || !strings.Contains(err.Error(), chart) {
		t.Fatalf("error = %v, want the chart %s stopped at its timeout", err, chart)
	}

	// The caller's own cancellation is its own error, not the timeout's.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	sb.Timeout = time.Minute
	if _, err := Render(ctx, Request{Helm: &Helm{Chart: chart, ReleaseName: "r"}, Sandbox: sb}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled: error = %v, want the context's", err)
	}
}

// TestSandboxTotalOutputBounded: a chart whose files are each within the
// file limit but hold more than eight files' worth in all is refused, in
// process and sandboxed alike.
func TestSandboxTotalOutputBounded(t *testing.T) {
	files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: wide\nversion: 0.1.0\n"}
	for i := range 10 {
		files["templates/cm"+string(rune('a'+i))+".yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x" + string(rune('a'+i)) + "}\ndata: {a: \"" + strings.Repeat("y", 900) + "\"}\n"
	}
	chart := writeTree(t, files)
	_, err := renderBoth(t, Request{Helm: &Helm{Chart: chart, ReleaseName: "r"}, MaxFileSize: 1024})
	if err == nil || !strings.Contains(err.Error(), "in all: the limit is 8192") {
		t.Fatalf("error = %v, want the total limit", err)
	}
}

// TestSandboxWorkerThatIsNone: a worker path that is not a driftwatch
// binary, or none at all, fails the render with an error naming it.
func TestSandboxWorkerThatIsNone(t *testing.T) {
	chart := writeTree(t, helmChart())
	for _, tt := range []struct{ path, want string }{
		{"/bin/true", "answered no render (is it a driftwatch binary?)"},
		{filepath.Join(t.TempDir(), "missing"), "missing: fork/exec"},
		{"/bin/false", "false failed (exit status 1)"},
	} {
		_, err := Render(t.Context(), Request{Helm: &Helm{Chart: chart, ReleaseName: "r"}, Sandbox: &Sandbox{Path: tt.path}})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), chart) {
			t.Errorf("%s: error = %v, want %q", tt.path, err, tt.want)
		}
	}
}

// TestSandboxWorkerOutOfThreads: a worker that dies because a new
// thread's stack no longer fits under its memory limit (glibc's EAGAIN,
// seen when a template eats memory on a loaded machine) is stopped for
// its memory, as one whose allocation failed.
func TestSandboxWorkerOutOfThreads(t *testing.T) {
	chart := writeTree(t, helmChart())
	worker := filepath.Join(t.TempDir(), "worker")
	script := "#!/bin/sh\necho 'runtime/cgo: pthread_create failed: Resource temporarily unavailable' >&2\nexit 2\n"
	if err := os.WriteFile(worker, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Render(t.Context(), Request{Helm: &Helm{Chart: chart, ReleaseName: "r"}, Sandbox: &Sandbox{Path: worker, MemoryLimit: 256 << 20}})
	if err == nil || !strings.Contains(err.Error(), "rendering needed more than 256 MiB of memory: stopped (no room left for a new thread)") {
		t.Fatalf("error = %v, want the memory limit", err)
	}
}

// TestServeWorkerRefusesBadInput: a worker without its limits, or
// given no request, says so and exits 2.
func TestServeWorkerRefusesBadInput(t *testing.T) {
	for _, tt := range []struct{ limits, in, want string }{
		{"", "", "want MEMORY,TIMEOUT,IDLE"},
		{"1024,x,5", "", "want MEMORY,TIMEOUT,IDLE"},
		{"1024,1000", "", "want MEMORY,TIMEOUT,IDLE"},
		{"2147483648,1000,1000", "{}", "no helm or kustomize request"},
		{"2147483648,1000,1000", `{"Kustomize": "k", "Helm": {"Chart": "c"}}`, "no helm or kustomize request"},
		{"2147483648,1000,1000", "[", "no helm or kustomize request"},
	} {
		var out, errOut strings.Builder
		if code := serveWorker(tt.limits, strings.NewReader(tt.in), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tt.want) || out.Len() != 0 {
			t.Errorf("%q %q: exit %d, stdout %q, stderr %q", tt.limits, tt.in, code, out.String(), errOut.String())
		}
	}
}

// workerPid returns the pid of sb's running worker, 0 without one.
func workerPid(sb *Sandbox) int {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.w == nil {
		return 0
	}
	return sb.w.cmd.Process.Pid
}

// TestSandboxWorkerLifecycle: one worker serves a Sandbox's renders in
// turn, concurrent callers included; a worker killed at its timeout is
// replaced at the next render; one that exited idle is replaced without
// an error.
func TestSandboxWorkerLifecycle(t *testing.T) {
	chart := writeTree(t, helmChart())
	endless := bombChart(t, 3000, "")
	sb := &Sandbox{Path: Self().Path, Args: Self().Args, Timeout: 2 * time.Second}
	render := func(c string) error {
		_, err := Render(t.Context(), Request{Helm: &Helm{Chart: c, ReleaseName: "r"}, Sandbox: sb})
		return err
	}
	if err := render(chart); err != nil {
		t.Fatal(err)
	}
	first := workerPid(sb)
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- render(chart) }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if pid := workerPid(sb); pid != first || pid == 0 {
		t.Fatalf("worker %d after five renders, %d after the first: want one worker", pid, first)
	}

	if err := render(endless); err == nil || !strings.Contains(err.Error(), "took longer than 2s") {
		t.Fatalf("endless chart: %v", err)
	}
	if pid := workerPid(sb); pid != 0 {
		t.Fatalf("worker %d still kept after it was killed", pid)
	}
	// A worker waits for its next request as long as its idle time, then
	// exits; the next render starts another.
	sb.idle = 100 * time.Millisecond
	if err := render(chart); err != nil {
		t.Fatalf("after a killed worker: %v", err)
	}
	second := workerPid(sb)
	if second == first || second == 0 {
		t.Fatalf("worker %d after the kill, %d before", second, first)
	}
	// Wait until it has exited (a zombie until the next render reaps it).
	for deadline := time.Now().Add(10 * time.Second); !exited(second); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("worker %d still running 10 s after its idle time", second)
		}
	}
	if err := render(chart); err != nil {
		t.Fatalf("after the worker's idle exit: %v", err)
	}
	if third := workerPid(sb); third == second || third == 0 {
		t.Fatalf("worker %d after the idle exit, %d before", third, second)
	}
}

// exited reports whether the process pid has exited and is not reaped
// yet (a zombie), from /proc.
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(after, "Z")
}

// TestSandboxBuildsAsInProcess: a kustomize build in the worker gives the
// objects, origins and errors of one in process.
func TestSandboxBuildsAsInProcess(t *testing.T) {
	dir := writeTree(t, kustomizeTree())
	files := kustomizeTree()
	files["outside/kustomization.yaml"] = "resources: [../base]\n"
	files["big/kustomization.yaml"] = "resources: [../base]\nnamePrefix: x-\n"
	other := writeTree(t, files)
	multiplied := multiplyingKustomizations(t, 2, 5) // 16 objects of 50 bytes from files of 50
	tests := []struct {
		name    string
		r       Request
		objects int
		err     string
	}{
		{name: "overlay", r: Request{Kustomize: filepath.Join(dir, "overlays/dev")}, objects: 3},
		{name: "overlay in its root", r: Request{Kustomize: filepath.Join(dir, "overlays/dev"), Root: dir}, objects: 3},
		{name: "base outside the root", r: Request{Kustomize: filepath.Join(other, "outside"), Root: filepath.Join(other, "outside")}, err: "does not exist in the source's root"},
		{name: "remote resource", r: Request{Kustomize: filepath.Join(dir, "overlays/gh")}, err: "remote reference"},
		{name: "no kustomization", r: Request{Kustomize: filepath.Join(other, "nope")}, err: "nope"},
		{name: "object limit", r: Request{Kustomize: filepath.Join(other, "big"), MaxObjects: 1}, err: "more than 1 objects: the limit of one source"},
		{name: "size limit", r: Request{Kustomize: multiplied, MaxFileSize: 100}, err: "built objects of more than 800 bytes in all: the limit of one render"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := renderBoth(t, tt.r)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != tt.objects {
				t.Errorf("%d objects, want %d: %q", len(objs), tt.objects, summary(objs))
			}
		})
	}
}

// multiplyingKustomizations writes levels of fanout kustomizations each
// including every kustomization of the next level under its own name
// prefix, over a base of one ConfigMap: the top one builds
// fanout^(levels-1) objects from a few kilobytes of files.
func multiplyingKustomizations(t *testing.T, fanout, levels int) string {
	files := map[string]string{
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
	}
	for l := range levels {
		for j := range fanout {
			res := []string{"../base"}
			if l < levels-1 {
				res = res[:0]
				for k := range fanout {
					res = append(res, fmt.Sprintf("../l%d-%d", l+1, k))
				}
			}
			files[fmt.Sprintf("l%d-%d/kustomization.yaml", l, j)] = fmt.Sprintf("resources: [%s]\nnamePrefix: p%d-\n", strings.Join(res, ", "), j)
		}
	}
	return filepath.Join(writeTree(t, files), "l0-0")
}

// TestSandboxStopsAKustomizationThatMultiplies: 34 small files of
// kustomizations including one another build 4^7 = 16,384 objects, for
// which kustomize spends minutes of CPU (4^6 took 45 s on 2 cores) before
// any limit of the render can count them; in the worker the build is
// stopped at its timeout.
func TestSandboxStopsAKustomizationThatMultiplies(t *testing.T) {
	k := multiplyingKustomizations(t, 4, 8)
	sb := Self()
	sb.Timeout = 2 * time.Second
	start := time.Now()
	_, err := Render(t.Context(), Request{Kustomize: k, Sandbox: sb})
	if err == nil || !strings.Contains(err.Error(), "kustomization "+k+": rendering took longer than 2s: stopped") {
		t.Fatalf("error = %v, want the build stopped at its timeout", err)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("stopped after %s", took)
	}
	// A small one of the same shape builds, in the worker too.
	objs, err := Render(t.Context(), Request{Kustomize: multiplyingKustomizations(t, 2, 4), Sandbox: sb})
	if err != nil || len(objs) != 8 {
		t.Errorf("2^3 objects: %v, %d objects", err, len(objs))
	}
}
