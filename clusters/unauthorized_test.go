package clusters

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sourcegraph/conc"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// fakeAPIServer answers a manager's requests as an apiserver would: /readyz,
// lists of the managed kinds and watches that stay open, each path
// answered with the status code code returns (200: the normal answer).
type fakeAPIServer struct {
	code func(r *http.Request) int
}

func (f fakeAPIServer) RoundTrip(r *http.Request) (*http.Response, error) {
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": []string{"application/json"}}, Request: r}
	if code := f.code(r); code != http.StatusOK {
		reason := map[int]string{401: "Unauthorized", 403: "Forbidden"}[code]
		resp.StatusCode = code
		resp.Body = io.NopCloser(strings.NewReader(fmt.Sprintf(
			`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"%s","reason":"%s","code":%d}`, strings.ToLower(reason), reason, code)))
		return resp, nil
	}
	switch {
	case r.URL.Path == "/readyz":
		resp.Body = io.NopCloser(strings.NewReader("ok"))
	case r.URL.Query().Get("watch") == "true":
		pr, pw := io.Pipe()
		context.AfterFunc(r.Context(), func() { _ = pw.Close() })
		resp.Body = pr
	default:
		kind, version := "ConfigMapList", "v1"
		switch {
		case strings.HasSuffix(r.URL.Path, "/deployments"):
			kind, version = "DeploymentList", "apps/v1"
		case strings.HasSuffix(r.URL.Path, "/services"):
			kind = "ServiceList"
		}
		resp.Body = io.NopCloser(strings.NewReader(fmt.Sprintf(`{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"1"},"items":[]}`, kind, version)))
	}
	return resp, nil
}

// TestUnauthorizedState: a cluster whose apiserver refuses the credentials
// (401 anywhere), or refuses them the whole API (403 on /readyz, or on
// every list the watch needs), is unauthorized; one forbidden kind leaves
// it degraded.
func TestUnauthorizedState(t *testing.T) {
	readyz := func(r *http.Request) bool { return r.URL.Path == "/readyz" }
	tests := []struct {
		name    string
		code    func(r *http.Request) int
		want    hub.ClusterState
		message []string
	}{
		{"healthy", func(*http.Request) int { return 200 }, hub.ClusterSynced, nil},
		{"401 everywhere", func(*http.Request) int { return 401 }, hub.ClusterUnauthorized,
			[]string{`cluster "c1"`, "unauthorized", "rejected the kubeconfig's credentials", "/readyz"}},
		{"401 on the lists and watches", func(r *http.Request) int {
			if readyz(r) {
				return 200
			}
			return 401
		}, hub.ClusterUnauthorized, []string{`cluster "c1"`, "unauthorized", "configmaps", `namespace "a"`}},
		{"403 on /readyz", func(r *http.Request) int {
			if readyz(r) {
				return 403
			}
			return 200
		}, hub.ClusterUnauthorized, []string{`cluster "c1"`, "unauthorized", "403", "the whole API"}},
		{"403 on every list", func(r *http.Request) int {
			if readyz(r) {
				return 200
			}
			return 403
		}, hub.ClusterUnauthorized, []string{`cluster "c1"`, "unauthorized", "none of the managed kinds", "deployments", "services", "configmaps"}},
		{"403 on one kind", func(r *http.Request) int {
			if strings.HasSuffix(r.URL.Path, "/deployments") {
				return 403
			}
			return 200
		}, hub.ClusterDegraded, []string{`cluster "c1"`, "forbidden", "deployments"}},
	}
	kubeconfig := stubKubeconfig(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := ClusterConfig{ID: "c1", Kubeconfig: kubeconfig, Namespaces: []string{"a", "b"},
					WrapTransport: func(http.RoundTripper) http.RoundTripper { return fakeAPIServer{code: tt.code} }}
				sink := newRecordingSink()
				m := newManager(cfg, sink, testLogger(t), fastHealth, nil)
				ctx, cancel := context.WithCancel(t.Context())
				var wg conc.WaitGroup
				wg.Go(func() { _ = m.Run(ctx) })
				time.Sleep(20 * time.Second)
				h := m.Health()
				cancel()
				wg.Wait()
				if h.State != tt.want {
					t.Fatalf("state %s (%s), want %s", h.State, h.LastError, tt.want)
				}
				for _, w := range tt.message {
					if !strings.Contains(h.LastError, w) {
						t.Errorf("last error %q does not mention %q", h.LastError, w)
					}
				}
				if sink.state("c1") != tt.want {
					t.Errorf("reported state %s, want %s", sink.state("c1"), tt.want)
				}
			})
		})
	}
}

// TestUnauthorizedOnRealCluster: on a real apiserver (token
// authentication, RBAC), a kubeconfig with a token the apiserver does not
// know (401) and a user RBAC grants nothing (403 on every list) make their
// clusters unauthorized while the admin's is synced; rotating the admin
// token under a running manager makes it unauthorized (the credentials
// expired), and its new kubeconfig makes it synced again.
func TestUnauthorizedOnRealCluster(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1, Users: []string{"nobody"}})
	lc := set.Clusters[0]
	createNamespace(t, kubernetes.NewForConfigOrDie(lc.RESTConfig()), "creds")
	dir := t.TempDir()
	withToken := func(name string, token func(old string) string) string {
		t.Helper()
		kc, err := clientcmd.LoadFromFile(lc.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range kc.AuthInfos {
			u.Token = token(u.Token)
		}
		path := filepath.Join(dir, name)
		if err := clientcmd.WriteToFile(*kc, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sink := newRecordingSink()
	cfg := func(id, kubeconfig string) ClusterConfig {
		return ClusterConfig{ID: id, Kubeconfig: kubeconfig, Namespaces: []string{"creds"}}
	}
	r := runRegistry(t, sink,
		cfg("admin", withToken("admin", func(old string) string { return old })),
		cfg("wrong", withToken("wrong", func(old string) string { return "expired-" + old })),
		cfg("nobody", lc.UserKubeconfig("nobody")))
	sink.waitFor(t, 30*time.Second, "admin synced, wrong and nobody unauthorized", func() bool {
		return sink.state("admin") == hub.ClusterSynced && sink.state("wrong") == hub.ClusterUnauthorized &&
			sink.state("nobody") == hub.ClusterUnauthorized
	})
	sink.mu.Lock()
	wrong, nobody := sink.health["wrong"].LastError, sink.health["nobody"].LastError
	sink.mu.Unlock()
	for _, want := range []string{`cluster "wrong"`, "unauthorized", "credentials"} {
		if !strings.Contains(wrong, want) {
			t.Errorf("wrong token: error %q does not mention %q", wrong, want)
		}
	}
	for _, want := range []string{`cluster "nobody"`, "unauthorized", "none of the managed kinds", "forbidden", "configmaps", `namespace "creds"`} {
		if !strings.Contains(nobody, want) {
			t.Errorf("no RBAC: error %q does not mention %q", nobody, want)
		}
	}

	// The admin token is rotated under the running manager: its token
	// expired.
	sink.mu.Lock()
	gen := sink.health["admin"].Generation
	sink.mu.Unlock()
	if _, err := lc.RotateAdminToken(t.Context()); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, 60*time.Second, "admin unauthorized after the rotation", func() bool { return sink.state("admin") == hub.ClusterUnauthorized })
	if err := r.Update(cfg("admin", withToken("admin-rotated", func(old string) string { return old }))); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, 60*time.Second, "admin synced with the new token", func() bool {
		h := sink.health["admin"]
		return h.State == hub.ClusterSynced && h.Generation > gen
	})
}
