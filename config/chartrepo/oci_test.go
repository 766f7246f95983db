package chartrepo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// testRegistry is an in-process OCI registry (the distribution project's)
// on 127.0.0.1, plain HTTP, with basic auth when user is set.
type testRegistry struct {
	t    *testing.T
	srv  *httptest.Server
	host string
	user string
	pass string

	mu    sync.Mutex
	paths []string // requests received
}

// quietRegistry silences the registry's logger (logrus's standard one).
var quietRegistry sync.Once

func newTestRegistry(t *testing.T, user, pass string) *testRegistry {
	t.Helper()
	quietRegistry.Do(func() { logrus.SetOutput(io.Discard) })
	cfg := &configuration.Configuration{}
	cfg.Storage = configuration.Storage{"inmemory": configuration.Parameters{}}
	cfg.Log.Level = "error"
	cfg.Log.AccessLog.Disabled = true
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htpasswd := writeFile(t, t.TempDir(), "htpasswd", fmt.Sprintf("%s:%s\n", user, hash))
		cfg.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "test", "path": htpasswd}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	app := handlers.NewApp(ctx, cfg)
	reg := &testRegistry{t: t, user: user, pass: pass}
	reg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.mu.Lock()
		reg.paths = append(reg.paths, r.Method+" "+r.URL.Path)
		reg.mu.Unlock()
		app.ServeHTTP(w, r)
	}))
	reg.host = strings.TrimPrefix(reg.srv.URL, "http://")
	t.Cleanup(func() {
		reg.srv.Close()
		_ = app.Shutdown()
		cancel()
	})
	return reg
}

// requested reports whether a request's "METHOD path" contains s.
func (reg *testRegistry) requested(s string) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for _, p := range reg.paths {
		if strings.Contains(p, s) {
			return true
		}
	}
	return false
}

// push pushes a chart archive as Helm does: config, chart layer, manifest
// (with the created annotation), tagged with the version ("+" as "_").
func (reg *testRegistry) push(repoPath, name, version string, data []byte, created time.Time) ocispec.Descriptor {
	t := reg.t
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(reg.host + "/" + repoPath + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	ac := &auth.Client{Cache: auth.NewCache()}
	if reg.user != "" {
		ac.Credential = auth.StaticCredential(reg.host, auth.Credential{Username: reg.user, Password: reg.pass})
	}
	repo.Client = ac
	pushBlob := func(mediaType string, b []byte) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := repo.Push(ctx, d, bytes.NewReader(b)); err != nil {
			t.Fatalf("push blob: %v", err)
		}
		return d
	}
	cfg, _ := json.Marshal(map[string]string{"name": name, "version": version, "apiVersion": "v2"})
	m := ocispec.Manifest{
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    pushBlob(helmConfigMediaType, cfg),
		Layers:    []ocispec.Descriptor{pushBlob(helmChartMediaType, data)},
		Annotations: map[string]string{
			ocispec.AnnotationCreated: created.Format(time.RFC3339),
			ocispec.AnnotationTitle:   name,
		},
	}
	m.SchemaVersion = 2
	mb, _ := json.Marshal(m)
	md := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(mb), Size: int64(len(mb))}
	if err := repo.PushReference(ctx, md, bytes.NewReader(mb), strings.ReplaceAll(version, "+", "_")); err != nil {
		t.Fatalf("push manifest: %v", err)
	}
	return m.Layers[0]
}

func TestOCIVersions(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	archives := map[string][]byte{}
	for i, v := range []string{"0.1.0", "0.2.0", "0.2.1+build.5", "1.0.0-rc.1"} {
		archives[v] = makeChart(t, "demo", v, "app-"+v, 0)
		reg.push("charts", "demo", v, archives[v], t0.Add(time.Duration(i)*time.Hour))
	}
	url := "oci://" + reg.host + "/charts"
	for _, tc := range []struct{ version, want string }{
		{"~0.2", "0.2.1+build.5"},
		{"", "0.2.1+build.5"}, // the prerelease is skipped
		{"0.1.0", "0.1.0"},
		{"0.2.1+build.5", "0.2.1+build.5"},
		{">=0.1 <0.2.1", "0.2.0"},
		{"^1.0.0-0", "1.0.0-rc.1"},
	} {
		r := open(t, Options{URL: url, Chart: "demo", Version: tc.version, PlainHTTP: true})
		rev, err := r.Fetch(context.Background())
		if err != nil {
			t.Errorf("version %q: %v", tc.version, err)
			continue
		}
		data := archives[tc.want]
		if rev.Version != tc.want || rev.Digest != sha(data) || rev.AppVersion != "app-"+tc.want || rev.Downloaded != int64(len(data)) {
			t.Errorf("version %q: got %+v, want %s %s", tc.version, rev, tc.want, sha(data))
		}
		if wantURL := url + "/demo:" + strings.ReplaceAll(tc.want, "+", "_"); rev.URL != wantURL {
			t.Errorf("URL %q, want %q", rev.URL, wantURL)
		}
		if got, err := os.ReadFile(rev.Path); err != nil || !bytes.Equal(got, data) {
			t.Errorf("version %q: archive in the cache differs (%v)", tc.version, err)
		}
	}

	// Created comes from the manifest's annotation; a second Fetch
	// downloads nothing.
	r := open(t, Options{URL: url, Chart: "demo", Version: "0.2.0", PlainHTTP: true})
	rev, err := r.Fetch(context.Background())
	if err != nil || !rev.Created.Equal(t0.Add(time.Hour)) {
		t.Fatalf("rev %+v, err %v", rev, err)
	}
	again, err := r.Fetch(context.Background())
	if err != nil || again.Downloaded != 0 || again.ID() != rev.ID() {
		t.Errorf("second Fetch %+v %v", again, err)
	}

	// Not found: the versions are listed.
	r = open(t, Options{URL: url, Chart: "demo", Version: "~5", PlainHTTP: true})
	_, err = r.Fetch(context.Background())
	want := fmt.Sprintf(`chart demo version "~5" not found in %s (versions: 1.0.0-rc.1, 0.2.1+build.5, 0.2.0, 0.1.0)`, url)
	if !errors.Is(err, ErrNotFound) || err.Error() != want {
		t.Errorf("err\n%v\nwant\n%s", err, want)
	}
	r = open(t, Options{URL: url, Chart: "nosuch", PlainHTTP: true})
	if _, err = r.Fetch(context.Background()); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing chart: %v", err)
	}
}

func TestOCIBasicAuth(t *testing.T) {
	reg := newTestRegistry(t, "bob", "hunter2")
	data := makeChart(t, "demo", "1.0.0", "", 0)
	reg.push("team", "demo", "1.0.0", data, t0)
	url := "oci://" + reg.host + "/team"

	r := open(t, Options{URL: url, Chart: "demo", PlainHTTP: true, Auth: authFiles(t, "bob", "hunter2")})
	rev, err := r.Fetch(context.Background())
	if err != nil || rev.Digest != sha(data) {
		t.Fatalf("with credentials: %+v %v", rev, err)
	}

	r = open(t, Options{URL: url, Chart: "demo", PlainHTTP: true})
	_, err = r.Fetch(context.Background())
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), url) {
		t.Errorf("without credentials: %v", err)
	}
	r = open(t, Options{URL: url, Chart: "demo", PlainHTTP: true, Auth: authFiles(t, "bob", "wrong")})
	if _, err = r.Fetch(context.Background()); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("wrong password: %v", err)
	}
}

func TestOCILayerTooLarge(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	data := makeChart(t, "demo", "1.0.0", "", 20<<10)
	layer := reg.push("charts", "demo", "1.0.0", data, t0)
	r := open(t, Options{URL: "oci://" + reg.host + "/charts", Chart: "demo", PlainHTTP: true, MaxChartBytes: 8 << 10})
	_, err := r.Fetch(context.Background())
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "is over 8 KiB") {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
	if reg.requested("/blobs/" + layer.Digest.String()) {
		t.Error("the layer was fetched although its declared size is over the limit")
	}
	if !reg.requested("/manifests/1.0.0") {
		t.Error("the manifest was not read (the test proves nothing)")
	}
}

func TestOCINotAChart(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	reg.push("charts", "demo", "1.0.0", makeChart(t, "evil", "1.0.0", "", 0), t0)
	r := open(t, Options{URL: "oci://" + reg.host + "/charts", Chart: "demo", PlainHTTP: true})
	_, err := r.Fetch(context.Background())
	if !errors.Is(err, ErrNotChart) {
		t.Errorf("err %v, want ErrNotChart", err)
	}
}

func TestOCITimeout(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	r := open(t, Options{URL: "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/x", Chart: "demo", PlainHTTP: true, Timeout: 300 * time.Millisecond})
	_, err := r.Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("err %v, want a timeout", err)
	}
}
