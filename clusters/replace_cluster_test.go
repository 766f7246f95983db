package clusters

import (
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// serviceSpec is a desired ClusterIP Service with the given ports.
func serviceSpec(cluster, ns, name string, ports ...map[string]any) hub.NodeSpec {
	id := hub.NewNodeID(cluster, ns, name, hub.KindService)
	items := make([]any, len(ports))
	for i, p := range ports {
		items[i] = p
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{
			"name": name, "namespace": ns,
			"labels":      map[string]any{kubeobj.ManagedByLabel: kubeobj.DefaultManagedBy},
			"annotations": map[string]any{kubeobj.NodeIDAnnotation: id.String()},
		},
		"spec": map[string]any{"selector": map[string]any{"app": name}, "ports": items},
	}}
	return hub.NodeSpec{ID: id, Namespace: ns, Name: name, Kind: hub.KindService, Body: kubeobj.MustEncodeBody(obj)}
}

// servicePort is a desired Service port.
func servicePort(name string, port, target int64) map[string]any {
	return map[string]any{"name": name, "port": port, "targetPort": target, "protocol": "TCP"}
}

// TestReplacedPortOnARealControlPlane: someone rewrites the number of one
// of our Service's ports by hand (kubectl patch --type=json, replace
// /spec/ports/0/port). Our entry, keyed by port and protocol, is gone and
// another with its name took its place. Removing that entry first empties
// a list the apiserver requires (the only port: "spec.ports: Required
// value"); applying ours first duplicates the name ("Duplicate value").
// The repair removes the entry and adds ours in one JSON patch, then
// applies: the Service has its desired ports again, in sync, and stays so.
func TestReplacedPortOnARealControlPlane(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	admin := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	const ns = "replaced"
	createNamespace(t, admin, ns)
	_, be := runRegistryFor(t, clusterConfig(lc, ns))
	ctx := t.Context()

	type port struct {
		name   string
		port   int32
		target int32
	}
	tests := []struct {
		name    string
		service string
		ports   []map[string]any
		patch   string // the hand edit, a JSON patch
		want    []port
	}{
		{name: "the only port", service: "web",
			ports: []map[string]any{servicePort("http", 80, 8080)},
			patch: `[{"op":"replace","path":"/spec/ports/0/port","value":81}]`,
			want:  []port{{"http", 80, 8080}}},
		{name: "one of two ports", service: "api",
			ports: []map[string]any{servicePort("http", 80, 8080), servicePort("grpc", 9090, 9090)},
			patch: `[{"op":"replace","path":"/spec/ports/0/port","value":81}]`,
			want:  []port{{"grpc", 9090, 9090}, {"http", 80, 8080}}},
		{name: "the second of two ports, and a port added", service: "db",
			ports: []map[string]any{servicePort("http", 80, 8080), servicePort("grpc", 9090, 9090)},
			patch: `[{"op":"replace","path":"/spec/ports/1/port","value":9091},` +
				`{"op":"add","path":"/spec/ports/-","value":{"name":"debug","port":2345,"protocol":"TCP","targetPort":2345}}]`,
			want: []port{{"grpc", 9090, 9090}, {"http", 80, 8080}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := serviceSpec(lc.Name, ns, tt.service, tt.ports...)
			st, d := readDetect(t, be, spec, true)
			if _, err := be.Repair(ctx, spec, st, d); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.CoreV1().Services(ns).Patch(ctx, tt.service, types.JSONPatchType, []byte(tt.patch),
				metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
				t.Fatal(err)
			}
			st, d = readDetect(t, be, spec, true)
			if d.Class != hub.DriftModified || !hasAddedEntries(d) ||
				!slices.ContainsFunc(d.Fields, func(f hub.FieldDiff) bool { return f.ListPointer == "/spec/ports" }) {
				t.Fatalf("drift %s: want an added port and one of ours missing", d.Summary())
			}
			t.Logf("drift: %s", d.Summary())
			res, err := be.Repair(ctx, spec, st, d)
			if err != nil {
				t.Fatalf("repair: %v", err)
			}
			if res.Action != actionRemoveApply {
				t.Fatalf("action %q, want %q", res.Action, actionRemoveApply)
			}
			svc, err := admin.CoreV1().Services(ns).Get(ctx, tt.service, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []port
			for _, p := range svc.Spec.Ports {
				if p.Protocol != corev1.ProtocolTCP {
					t.Errorf("port %s: protocol %s", p.Name, p.Protocol)
				}
				got = append(got, port{p.Name, p.Port, p.TargetPort.IntVal})
			}
			slices.SortFunc(got, func(a, b port) int { return int(a.port - b.port) })
			slices.SortFunc(tt.want, func(a, b port) int { return int(a.port - b.port) })
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ports after the repair %v, want %v", got, tt.want)
			}
			st, d = readDetect(t, be, spec, true)
			if !d.InSync() {
				t.Fatalf("after the repair: %s", d.Summary())
			}
			// The apply took the ports over: the next repair is a plain
			// apply that changes nothing.
			res, err = be.Repair(ctx, spec, st, d)
			if err != nil || res.Action != actionApply {
				t.Fatalf("repair of the repaired Service: action %q, %v", res.Action, err)
			}
			if _, d = readDetect(t, be, spec, true); !d.InSync() {
				t.Fatalf("after a second repair: %s", d.Summary())
			}
		})
	}
}
