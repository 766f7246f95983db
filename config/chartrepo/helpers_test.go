package chartrepo

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// makeChart returns the archive of a chart built with Helm's SDK. With
// padding > 0 it carries a template of that many random (incompressible)
// bytes.
func makeChart(t testing.TB, name, version, appVersion string, padding int) []byte {
	t.Helper()
	c := &chart.Chart{
		Metadata: &chart.Metadata{
			APIVersion: chart.APIVersionV2,
			Name:       name,
			Version:    version,
			AppVersion: appVersion,
			Type:       "application",
		},
		Templates: []*common.File{{
			Name: "templates/cm.yaml",
			Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"),
		}},
		Values: map[string]any{"replicas": 1},
	}
	if padding > 0 {
		b := make([]byte, padding)
		_, _ = rand.Read(b)
		c.Templates = append(c.Templates, &common.File{Name: "templates/NOTES.txt", Data: []byte(hex.EncodeToString(b)[:padding])})
	}
	dir := t.TempDir()
	path, err := chartutil.Save(c, dir)
	if err != nil {
		t.Fatalf("save chart: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sha returns "sha256:<hex>" of b.
func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// entry is one version of index.yaml.
type entry struct {
	name, version, appVersion string
	url                       string // as written in the index
	digest                    string // "" for none
	created                   time.Time
}

// testRepo is a Helm chart repository served under /repo.
type testRepo struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	files    map[string][]byte // path → content
	entries  []entry
	extra    string // appended to index.yaml
	user     string // basic auth required when set
	pass     string
	noLength bool          // serve without Content-Length
	etag     bool          // serve index.yaml with an ETag, 304 when it matches
	notMod   int           // 304s served
	hang     chan struct{} // when set, every request waits for it
	hits     map[string]int
	auths    []string // Authorization headers received
	redirect map[string]string
}

// newTestRepo starts a repository (TLS when tlsOn).
func newTestRepo(t *testing.T, tlsOn bool) *testRepo {
	r := &testRepo{t: t, files: map[string][]byte{}, hits: map[string]int{}, redirect: map[string]string{}}
	h := http.HandlerFunc(r.serve)
	if tlsOn {
		r.srv = httptest.NewTLSServer(h)
	} else {
		r.srv = httptest.NewServer(h)
	}
	t.Cleanup(func() {
		r.mu.Lock()
		if r.hang != nil {
			close(r.hang)
			r.hang = nil
		}
		r.mu.Unlock()
		r.srv.Close()
	})
	return r
}

// url is the repository's URL.
func (r *testRepo) url() string { return r.srv.URL + "/repo" }

// add builds a chart version, serves its archive at charts/<name>-<version>.tgz
// (relative to the repository) and lists it in the index with its digest.
func (r *testRepo) add(name, version string, created time.Time) []byte {
	data := makeChart(r.t, name, version, "app-"+version, 0)
	r.addArchive(entry{name: name, version: version, appVersion: "app-" + version, created: created}, data)
	return data
}

// addArchive serves data for e; an empty url and digest are filled in.
func (r *testRepo) addArchive(e entry, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.url == "" {
		e.url = fmt.Sprintf("charts/%s-%s.tgz", e.name, e.version)
	}
	if e.digest == "" {
		e.digest = strings.TrimPrefix(sha(data), "sha256:")
	}
	if e.digest == "-" {
		e.digest = ""
	}
	if !strings.Contains(e.url, "://") {
		r.files["/repo/"+e.url] = data
	}
	r.entries = append(r.entries, e)
}

// index renders index.yaml.
func (r *testRepo) index() []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n")
	byName := map[string][]entry{}
	var names []string
	for _, e := range r.entries {
		if _, ok := byName[e.name]; !ok {
			names = append(names, e.name)
		}
		byName[e.name] = append(byName[e.name], e)
	}
	for _, n := range names {
		fmt.Fprintf(&b, "  %s:\n", n)
		for _, e := range byName[n] {
			fmt.Fprintf(&b, "  - apiVersion: v2\n    name: %s\n    version: %q\n    appVersion: %q\n    urls:\n    - %s\n", e.name, e.version, e.appVersion, e.url)
			if e.digest != "" {
				fmt.Fprintf(&b, "    digest: %s\n", e.digest)
			}
			if !e.created.IsZero() {
				fmt.Fprintf(&b, "    created: %q\n", e.created.Format(time.RFC3339Nano))
			}
		}
	}
	b.WriteString("generated: \"2024-01-01T00:00:00Z\"\n")
	b.WriteString(r.extra)
	return []byte(b.String())
}

func (r *testRepo) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	hang := r.hang
	r.hits[req.URL.Path]++
	r.auths = append(r.auths, req.Header.Get("Authorization"))
	user, pass := r.user, r.pass
	noLength := r.noLength
	target, redirect := r.redirect[req.URL.Path]
	var body []byte
	var found bool
	if req.URL.Path == "/repo/index.yaml" {
		body, found = r.index(), true
	} else {
		body, found = r.files[req.URL.Path]
	}
	r.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-req.Context().Done():
		}
		return
	}
	if user != "" {
		u, p, ok := req.BasicAuth()
		if !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "go away, this text is the server's", http.StatusUnauthorized)
			return
		}
	}
	if redirect {
		http.Redirect(w, req, target, http.StatusFound)
		return
	}
	if !found {
		http.NotFound(w, req)
		return
	}
	if req.URL.Path == "/repo/index.yaml" && r.etagOn() {
		tag := `"` + sha(body) + `"`
		w.Header().Set("ETag", tag)
		if req.Header.Get("If-None-Match") == tag {
			r.mu.Lock()
			r.notMod++
			r.mu.Unlock()
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if noLength {
		// Written in pieces, flushed: chunked, no Content-Length.
		for len(body) > 0 {
			n := min(len(body), 512)
			_, _ = w.Write(body[:n])
			w.(http.Flusher).Flush()
			body = body[n:]
		}
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	_, _ = w.Write(body)
}

// etagOn reports whether index.yaml is served with an ETag.
func (r *testRepo) etagOn() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.etag
}

// hitCount returns how many requests path received.
func (r *testRepo) hitCount(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits[path]
}

// writeFile writes content to a new file in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// caFile writes the certificate of a TLS test server as a PEM file.
func caFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	cert := srv.Certificate()
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	return writeFile(t, t.TempDir(), "ca.pem", string(b))
}

// authFiles writes a user and password file.
func authFiles(t *testing.T, user, pass string) Auth {
	dir := t.TempDir()
	return Auth{UsernameFile: writeFile(t, dir, "user", user+"\n"), PasswordFile: writeFile(t, dir, "pass", pass+"\n")}
}

// open opens a Repo or fails the test.
func open(t *testing.T, o Options) *Repo {
	t.Helper()
	if o.CacheDir == "" {
		o.CacheDir = t.TempDir()
	}
	r, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}
