package clusters

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// applyAnswer is what the transport saw of one server-side apply: the
// Accept header sent and the size of the answer's body.
type applyAnswer struct {
	accept string
	bytes  int
}

// answerRecorder records every server-side apply's Accept header and the
// size of its answer.
type answerRecorder struct {
	mu      sync.Mutex
	answers []applyAnswer
}

func (a *answerRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || req.Method != http.MethodPatch || types.PatchType(req.Header.Get("Content-Type")) != types.ApplyPatchType {
			return resp, err
		}
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		a.mu.Lock()
		a.answers = append(a.answers, applyAnswer{accept: req.Header.Get("Accept"), bytes: len(body)})
		a.mu.Unlock()
		return resp, nil
	})
}

func (a *answerRecorder) take() []applyAnswer {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.answers
	a.answers = nil
	return out
}

// bigConfigMap is the manifest of a ConfigMap holding about size bytes.
func bigConfigMap(ns, name string, size int, fill string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  blob: %s\n", name, ns, strings.Repeat(fill, size))
}

// TestApplyAnswersCarryMetadataOnly: the hub's server-side applies ask for
// metadata-only answers (as=PartialObjectMetadata), so a 256 KiB
// ConfigMap's create and repair each come back in a few KB, for a
// namespaced typed kind and a cluster-scoped generic one, and the
// resourceVersion the repair reports is the object's.
func TestApplyAnswersCarryMetadataOnly(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "answers"
	createNamespace(t, admin, ns)
	var rec answerRecorder
	cc := clusterConfig(lc, ns)
	cc.HubID = hub.DefaultHubID
	cc.Kinds = []schema.GroupVersionKind{{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}}
	cc.WrapTransport = rec.wrap
	_, be := runRegistryFor(t, cc)
	ctx := t.Context()

	const size = 256 << 10
	cm := genericSpec(t, lc.Name, bigConfigMap(ns, "big", size, "a"))
	role := genericSpec(t, lc.Name, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: answers-reader\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get]\n")
	check := func(what string, spec hub.NodeSpec, res hub.RepairResult) {
		t.Helper()
		answers := rec.take()
		if len(answers) == 0 {
			t.Fatalf("%s: no apply seen", what)
		}
		for _, a := range answers {
			if !strings.Contains(a.accept, "as=PartialObjectMetadata") {
				t.Errorf("%s: apply sent Accept %q, want a metadata-only answer", what, a.accept)
			}
			if a.bytes > 16<<10 {
				t.Errorf("%s: the answer was %d bytes, want the metadata alone (under 16 KiB)", what, a.bytes)
			}
		}
		st, err := be.ReadState(ctx, spec, true)
		if err != nil {
			t.Fatal(err)
		}
		if res.Version == "" || res.Version != st.Version {
			t.Errorf("%s: the repair reported resourceVersion %q, the object has %q", what, res.Version, st.Version)
		}
	}
	for _, s := range []hub.NodeSpec{cm, role} {
		res, err := be.Repair(ctx, s, hub.State{Fresh: true}, hub.Drift{Class: hub.DriftMissing})
		if err != nil {
			t.Fatalf("create %s: %v", s.ID, err)
		}
		check("create "+s.ID.String(), s, res)
	}

	// An edit of the big ConfigMap: the repair (pinned to the version it
	// read) also comes back as metadata.
	if _, err := admin.CoreV1().ConfigMaps(ns).Patch(ctx, "big", types.MergePatchType, []byte(`{"data":{"blob":"edited"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	var st hub.State
	var d hub.Drift
	testwait.For(t, 10*time.Second, "the cache to show the edit", func() error {
		st, d = readDetect(t, be, cm, false)
		return testwait.Check(!d.InSync(), "in sync")
	})
	res, err := be.Repair(ctx, cm, st, d)
	if err != nil {
		t.Fatal(err)
	}
	check("repair "+cm.ID.String(), cm, res)
	got, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data["blob"]) != size {
		t.Errorf("repaired blob is %d bytes, want %d", len(got.Data["blob"]), size)
	}
}

// BenchmarkApplyAnswer measures what the answer to a server-side apply
// costs the client, on a real apiserver: the same applies (each changes
// an annotation, so each is a write) answered with the whole object, as
// client-go's typed client asks, and with its metadata alone, as the hub
// asks (applyPatch). B/op and allocs/op are the client's; answer-B/op is
// the answer's body on the wire.
func BenchmarkApplyAnswer(b *testing.B) {
	set := lctest.Start(b, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "answers"
	createNamespace(b, admin, ns)
	var rec answerRecorder
	rc := lc.RESTConfig()
	rc.QPS, rc.Burst = -1, 0
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.WrapTransport = rec.wrap
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		b.Fatal(err)
	}
	typed, err := kubernetes.NewForConfigAndClient(rc, hc)
	if err != nil {
		b.Fatal(err)
	}
	mc, err := metadata.NewForConfigAndClient(metadata.ConfigFor(rc), hc)
	if err != nil {
		b.Fatal(err)
	}
	deployment := func(i int) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":%q,"annotations":{"rev":"%d"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"nginx:1.27","ports":[{"containerPort":80}],"env":[{"name":"A","value":"b"}],"resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}}}`, ns, i)
	}
	blob := strings.Repeat("x", 64<<10)
	configMap := func(i int) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"blob","namespace":%q,"annotations":{"rev":"%d"}},"data":{"blob":%q}}`, ns, i, blob)
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: "driftwatch", Force: &force}
	for _, obj := range []struct {
		name, object string
		gvr          schema.GroupVersionResource
		body         func(int) []byte
		full         func(name string, body []byte) error
	}{
		{"deployment", "web", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, deployment, func(name string, body []byte) error {
			_, err := typed.AppsV1().Deployments(ns).Patch(b.Context(), name, types.ApplyPatchType, body, opts)
			return err
		}},
		{"configmap-64KiB", "blob", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, configMap, func(name string, body []byte) error {
			_, err := typed.CoreV1().ConfigMaps(ns).Patch(b.Context(), name, types.ApplyPatchType, body, opts)
			return err
		}},
	} {
		name := obj.object
		for _, answer := range []string{"whole", "metadata"} {
			b.Run(obj.name+"/"+answer, func(b *testing.B) {
				rec.take()
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					body := obj.body(i)
					var err error
					if answer == "whole" {
						err = obj.full(name, body)
					} else {
						_, err = mc.Resource(obj.gvr).Namespace(ns).Patch(b.Context(), name, types.ApplyPatchType, body, opts)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				answers := rec.take()
				total := 0
				for _, a := range answers {
					total += a.bytes
				}
				if len(answers) > 0 {
					b.ReportMetric(float64(total)/float64(len(answers)), "answer-B/op")
				}
			})
		}
	}
}
