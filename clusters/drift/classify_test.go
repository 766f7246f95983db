package drift

import (
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/hub"
)

func desiredDeployment() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "shop",
			"labels":      map[string]any{kubeobj.ManagedByLabel: "driftwatch", "app": "web"},
			"annotations": map[string]any{kubeobj.NodeIDAnnotation: "c1:shop/web:deployment"},
		},
		"spec": map[string]any{
			"replicas": int64(3),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{
					"containers": []any{map[string]any{
						"name":      "app",
						"image":     "nginx:1",
						"args":      []any{"--port", "8080"},
						"ports":     []any{map[string]any{"name": "http", "containerPort": int64(8080), "protocol": "TCP"}},
						"env":       []any{map[string]any{"name": "MODE", "value": "prod"}},
						"resources": map[string]any{"limits": map[string]any{"cpu": "500m", "memory": "128Mi"}},
					}},
					"volumes": []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}},
				},
			},
		},
	}}
}

// liveDeployment returns a copy of the desired object as the apiserver
// would return it: with defaults, status, foreign labels and annotations, and
// equal quantities spelled differently (500m as 0.5); mutate edits it.
func liveDeployment(mutate func(m map[string]any)) *unstructured.Unstructured {
	u := desiredDeployment().DeepCopy()
	md := u.Object["metadata"].(map[string]any)
	md["resourceVersion"] = "42"
	md["uid"] = "0a1b"
	md["labels"].(map[string]any)["team"] = "other"
	md["annotations"].(map[string]any)["deployment.kubernetes.io/revision"] = "1"
	md["finalizers"] = []any{"example.com/hold"}
	spec := u.Object["spec"].(map[string]any)
	spec["progressDeadlineSeconds"] = int64(600)
	spec["replicas"] = float64(3) // numbers compare by value
	c := container(u.Object)
	c["imagePullPolicy"] = "IfNotPresent"
	c["terminationMessagePath"] = "/dev/termination-log"
	c["resources"] = map[string]any{"limits": map[string]any{"cpu": "0.5", "memory": "128Mi"}}
	u.Object["status"] = map[string]any{"replicas": int64(1), "readyReplicas": int64(0)}
	if mutate != nil {
		mutate(u.Object)
	}
	return u
}

func podSpec(m map[string]any) map[string]any {
	return m["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
}

func container(m map[string]any) map[string]any {
	return podSpec(m)["containers"].([]any)[0].(map[string]any)
}

func labels(m map[string]any) map[string]any {
	return m["metadata"].(map[string]any)["labels"].(map[string]any)
}

func desiredConfigMap() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "n", "labels": map[string]any{kubeobj.ManagedByLabel: "driftwatch"}},
		"data":     map[string]any{"a": "1"},
	}}
}

func liveConfigMap(mutate func(m map[string]any)) *unstructured.Unstructured {
	u := desiredConfigMap().DeepCopy()
	u.Object["metadata"].(map[string]any)["resourceVersion"] = "7"
	if mutate != nil {
		mutate(u.Object)
	}
	return u
}

func desiredService() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{kubeobj.ManagedByLabel: "driftwatch"}},
		"spec": map[string]any{
			"selector": map[string]any{"app": "web"},
			"ports":    []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080)}},
		},
	}}
}

func liveService(mutate func(m map[string]any)) *unstructured.Unstructured {
	u := desiredService().DeepCopy()
	spec := u.Object["spec"].(map[string]any)
	spec["clusterIP"] = "10.0.0.12"
	spec["type"] = "ClusterIP"
	spec["ports"].([]any)[0].(map[string]any)["protocol"] = "TCP"
	if mutate != nil {
		mutate(u.Object)
	}
	return u
}

// secretEnv is the env entry of a variable read from a Secret, as config
// compiles secretEnv.
func secretEnv(name, secret, key string) map[string]any {
	return map[string]any{"name": name, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": secret, "key": key}}}
}

// withEnv returns the desired Deployment with the given env entries.
func withEnv(env ...any) *unstructured.Unstructured {
	u := desiredDeployment()
	container(u.Object)["env"] = env
	return u
}

// liveEnv returns the live Deployment with the given env entries.
func liveEnv(env ...any) *unstructured.Unstructured {
	return liveDeployment(func(m map[string]any) { container(m)["env"] = env })
}

// diff is the part of a hub.FieldDiff a test checks: its text and pointer.
type diff struct {
	text    string
	pointer string
	// lacked is, for an item of ours a live list lacks, its list's live
	// pointer and its desired pointer: "ListPointer<DesiredPointer".
	lacked string
}

// diffString formats f as the tests' diffs (see diff).
func diffString(f hub.FieldDiff) string {
	s := f.String() + " @" + f.Pointer
	if f.ListPointer != "" || f.DesiredPointer != "" {
		s += " " + f.ListPointer + "<" + f.DesiredPointer
	}
	return s
}

// wantString formats d as diffString formats the field it describes.
func (d diff) wantString() string {
	s := d.text + " @" + d.pointer
	if d.lacked != "" {
		s += " " + d.lacked
	}
	return s
}

// checkPointers checks that only added entries have a pointer, and that
// the items of ours a live list lacks have both of theirs.
func checkPointers(t *testing.T, fields []hub.FieldDiff) {
	t.Helper()
	for _, f := range fields {
		if f.Added != (f.Pointer != "") {
			t.Errorf("field %s: Added %v but pointer %q", f.Path, f.Added, f.Pointer)
		}
		if (f.ListPointer == "") != (f.DesiredPointer == "") || (f.ListPointer != "" && (f.Added || f.Actual != none)) {
			t.Errorf("field %s: list pointer %q, desired pointer %q, added %v, actual %q", f.Path, f.ListPointer, f.DesiredPointer, f.Added, f.Actual)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name      string
		desired   *unstructured.Unstructured
		actual    *unstructured.Unstructured
		managedBy string
		class     hub.DriftClass
		fields    []diff
	}{
		{name: "in sync with defaults, status, foreign labels and 500m as 0.5",
			desired: desiredDeployment(), actual: liveDeployment(nil), class: hub.DriftNone},
		{name: "status differs: not drift",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				m["status"] = map[string]any{"replicas": int64(7), "conditions": []any{map[string]any{"type": "Available"}}}
			}), class: hub.DriftNone},
		{name: "foreign label and annotation changed: not drift",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				labels(m)["team"] = "ops"
				labels(m)["added-by-someone"] = "x"
				m["metadata"].(map[string]any)["annotations"].(map[string]any)["note"] = "hi"
			}), class: hub.DriftNone},
		{name: "desired status is ignored",
			desired: func() *unstructured.Unstructured {
				u := desiredConfigMap()
				u.Object["status"] = map[string]any{"x": "y"}
				return u
			}(), actual: liveConfigMap(nil), class: hub.DriftNone},
		// volumes is an associative list (x-kubernetes-list-type map,
		// keyed by name) like containers: a volume someone adds is drift.
		{name: "extra volume: matched by name, added",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				ps := podSpec(m)
				ps["volumes"] = append(ps["volumes"].([]any), map[string]any{"name": "cache", "emptyDir": map[string]any{}})
			}), class: hub.DriftAdded, fields: []diff{{
				text: "+spec.template.spec.volumes[cache]={emptyDir: {}, name: cache}", pointer: "/spec/template/spec/volumes/1"}}},
		{name: "missing", desired: desiredDeployment(), actual: nil, class: hub.DriftMissing},
		{name: "deleting",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				m["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
				m["spec"].(map[string]any)["replicas"] = int64(1)
			}), class: hub.DriftDeleting},
		{name: "scaled",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) { m["spec"].(map[string]any)["replicas"] = int64(1) }),
			class: hub.DriftModified, fields: []diff{{text: "spec.replicas: 3 -> 1"}}},
		{name: "image changed",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) { container(m)["image"] = "evil:2" }),
			class: hub.DriftModified, fields: []diff{{text: "spec.template.spec.containers[app].image: nginx:1 -> evil:2"}}},
		{name: "quantity changed",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				container(m)["resources"] = map[string]any{"limits": map[string]any{"cpu": "2", "memory": "0.125Gi"}}
			}), class: hub.DriftModified, fields: []diff{{text: "spec.template.spec.containers[app].resources.limits.cpu: 500m -> 2"}}},
		{name: "unparsable quantity compares as text",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				container(m)["resources"] = map[string]any{"limits": map[string]any{"cpu": "lots", "memory": "128Mi"}}
			}), class: hub.DriftModified, fields: []diff{{text: "spec.template.spec.containers[app].resources.limits.cpu: 500m -> lots"}}},
		{name: "field removed",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) { delete(container(m), "image") }),
			class: hub.DriftModified, fields: []diff{{text: "spec.template.spec.containers[app].image: nginx:1 -> <none>"}}},
		{name: "top-level field missing",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) { delete(m, "spec") }),
			class: hub.DriftModified, fields: []diff{{text: "spec: " + text(desiredDeployment().Object["spec"]) + " -> <none>"}}},
		{name: "map replaced by a scalar",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				m["spec"].(map[string]any)["selector"] = "app=web"
			}), class: hub.DriftModified, fields: []diff{{text: "spec.selector: {matchLabels: {app: web}} -> app=web"}}},
		{name: "list replaced by a scalar",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) { container(m)["args"] = "--port=8080" }),
			class: hub.DriftModified, fields: []diff{{text: "spec.template.spec.containers[app].args: [--port, 8080] -> --port=8080"}}},
		{name: "atomic list item changed",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) { container(m)["args"] = []any{"--port", "9090"} }),
			class: hub.DriftModified, fields: []diff{{text: "spec.template.spec.containers[app].args[1]: 8080 -> 9090"}}},
		{name: "atomic list grew",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				container(m)["args"] = []any{"--port", "8080", "--debug"}
			}), class: hub.DriftModified, fields: []diff{{text: "spec.template.spec.containers[app].args: [--port, 8080] -> [--port, 8080, --debug]"}}},
		{name: "our container removed",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				podSpec(m)["containers"] = []any{map[string]any{"name": "other", "image": "x"}}
			}), class: hub.DriftModified, fields: []diff{
				{text: "+spec.template.spec.containers[other]={image: x, name: other}", pointer: "/spec/template/spec/containers/0"},
				{text: "spec.template.spec.containers[app]: " + text(container(desiredDeployment().Object)) + " -> <none>",
					lacked: "/spec/template/spec/containers</spec/template/spec/containers/0"},
			}},
		{name: "env var added",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				c := container(m)
				c["env"] = append(c["env"].([]any), map[string]any{"name": "DEBUG", "value": "true"})
			}), class: hub.DriftAdded, fields: []diff{{
				text:    "+spec.template.spec.containers[app].env[DEBUG]={name: DEBUG, value: true}",
				pointer: "/spec/template/spec/containers/0/env/1"}}},
		{name: "container added",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				ps := podSpec(m)
				ps["containers"] = append(ps["containers"].([]any), map[string]any{"name": "sidecar", "image": "x"})
			}), class: hub.DriftAdded, fields: []diff{{
				text:    "+spec.template.spec.containers[sidecar]={image: x, name: sidecar}",
				pointer: "/spec/template/spec/containers/1"}}},
		{name: "init container added to a list we left out is not compared",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				podSpec(m)["initContainers"] = []any{map[string]any{"name": "init", "image": "x"}}
			}), class: hub.DriftNone},
		{name: "port added (protocol defaults to TCP)",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				c := container(m)
				c["ports"] = append(c["ports"].([]any), map[string]any{"containerPort": int64(9090)})
			}), class: hub.DriftAdded, fields: []diff{{
				text:    "+spec.template.spec.containers[app].ports[9090/TCP]={containerPort: 9090}",
				pointer: "/spec/template/spec/containers/0/ports/1"}}},
		{name: "UDP port with the same number is another port",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				c := container(m)
				c["ports"] = []any{map[string]any{"containerPort": int64(8080), "protocol": "UDP", "name": "http"}}
			}), class: hub.DriftModified, fields: []diff{
				{text: "+spec.template.spec.containers[app].ports[8080/UDP]={containerPort: 8080, name: http, protocol: UDP}",
					pointer: "/spec/template/spec/containers/0/ports/0"},
				{text: "spec.template.spec.containers[app].ports[8080/TCP]: {containerPort: 8080, name: http, protocol: TCP} -> <none>",
					lacked: "/spec/template/spec/containers/0/ports</spec/template/spec/containers/0/ports/0"},
			}},
		{name: "env and ports added to a container that declares none",
			desired: func() *unstructured.Unstructured {
				u := desiredDeployment()
				c := container(u.Object)
				delete(c, "env")
				delete(c, "ports")
				return u
			}(), actual: liveDeployment(func(m map[string]any) {
				container(m)["env"] = []any{map[string]any{"name": "MODE", "value": "prod"}, map[string]any{"name": "X", "value": "1"}}
			}), class: hub.DriftAdded, fields: []diff{
				{text: "+spec.template.spec.containers[app].env[MODE]={name: MODE, value: prod}", pointer: "/spec/template/spec/containers/0/env/0"},
				{text: "+spec.template.spec.containers[app].env[X]={name: X, value: 1}", pointer: "/spec/template/spec/containers/0/env/1"},
				{text: "+spec.template.spec.containers[app].ports[8080/TCP]={containerPort: 8080, name: http, protocol: TCP}", pointer: "/spec/template/spec/containers/0/ports/0"},
			}},
		{name: "env value edited and var added",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				container(m)["env"] = []any{map[string]any{"name": "MODE", "value": "dev"}, map[string]any{"name": "X", "value": "1"}}
			}), class: hub.DriftModified, fields: []diff{
				{text: "spec.template.spec.containers[app].env[MODE].value: prod -> dev"},
				{text: "+spec.template.spec.containers[app].env[X]={name: X, value: 1}", pointer: "/spec/template/spec/containers/0/env/1"},
			}},
		{name: "secretKeyRef in sync",
			desired: withEnv(map[string]any{"name": "MODE", "value": "prod"}, secretEnv("DB_PASSWORD", "db", "password")),
			actual:  liveEnv(map[string]any{"name": "MODE", "value": "prod"}, secretEnv("DB_PASSWORD", "db", "password")),
			class:   hub.DriftNone},
		{name: "secretKeyRef key changed",
			desired: withEnv(secretEnv("DB_PASSWORD", "db", "password")),
			actual:  liveEnv(secretEnv("DB_PASSWORD", "db", "root-password")),
			class:   hub.DriftModified, fields: []diff{{text: "spec.template.spec.containers[app].env[DB_PASSWORD].valueFrom.secretKeyRef.key: password -> root-password"}}},
		{name: "secretKeyRef Secret changed",
			desired: withEnv(secretEnv("DB_PASSWORD", "db", "password")),
			actual:  liveEnv(secretEnv("DB_PASSWORD", "other-db", "password")),
			class:   hub.DriftModified, fields: []diff{{text: "spec.template.spec.containers[app].env[DB_PASSWORD].valueFrom.secretKeyRef.name: db -> other-db"}}},
		{name: "secretKeyRef replaced by a plain value: the value is removed before the repair",
			desired: withEnv(map[string]any{"name": "MODE", "value": "prod"}, secretEnv("DB_PASSWORD", "db", "password")),
			actual:  liveEnv(map[string]any{"name": "MODE", "value": "prod"}, map[string]any{"name": "DB_PASSWORD", "value": "hunter2"}),
			class:   hub.DriftModified, fields: []diff{
				{text: "spec.template.spec.containers[app].env[DB_PASSWORD].valueFrom: {secretKeyRef: {key: password, name: db}} -> <none>"},
				{text: "+spec.template.spec.containers[app].env[DB_PASSWORD].value=hunter2", pointer: "/spec/template/spec/containers/0/env/1/value"},
			}},
		{name: "secretKeyRef replaced by a configMapKeyRef: the whole valueFrom is removed before the repair",
			desired: withEnv(secretEnv("DB_PASSWORD", "db", "password")),
			actual: liveEnv(map[string]any{"name": "DB_PASSWORD", "valueFrom": map[string]any{
				"configMapKeyRef": map[string]any{"name": "db", "key": "password"}}}),
			class: hub.DriftModified, fields: []diff{
				{text: "spec.template.spec.containers[app].env[DB_PASSWORD].valueFrom.secretKeyRef: {key: password, name: db} -> <none>"},
				{text: "+spec.template.spec.containers[app].env[DB_PASSWORD].valueFrom.configMapKeyRef={key: password, name: db}",
					pointer: "/spec/template/spec/containers/0/env/0/valueFrom"},
			}},
		{name: "plain value replaced by a secretKeyRef",
			desired: withEnv(map[string]any{"name": "MODE", "value": "prod"}),
			actual:  liveEnv(secretEnv("MODE", "s", "k")),
			class:   hub.DriftModified, fields: []diff{
				{text: "spec.template.spec.containers[app].env[MODE].value: prod -> <none>"},
				{text: "+spec.template.spec.containers[app].env[MODE].valueFrom={secretKeyRef: {key: k, name: s}}", pointer: "/spec/template/spec/containers/0/env/0/valueFrom"},
			}},
		{name: "empty value (left out of the object) set from a Secret",
			desired: withEnv(map[string]any{"name": "EMPTY"}),
			actual:  liveEnv(secretEnv("EMPTY", "s", "k")),
			class:   hub.DriftAdded, fields: []diff{
				{text: "+spec.template.spec.containers[app].env[EMPTY].valueFrom={secretKeyRef: {key: k, name: s}}", pointer: "/spec/template/spec/containers/0/env/0/valueFrom"},
			}},
		{name: "empty value given a value",
			desired: withEnv(map[string]any{"name": "EMPTY"}),
			actual:  liveEnv(map[string]any{"name": "EMPTY", "value": "x"}),
			class:   hub.DriftAdded, fields: []diff{
				{text: "+spec.template.spec.containers[app].env[EMPTY].value=x", pointer: "/spec/template/spec/containers/0/env/0/value"},
			}},
		{name: "secretKeyRef made optional: a field we do not set is not compared",
			desired: withEnv(secretEnv("DB_PASSWORD", "db", "password")),
			actual: liveEnv(map[string]any{"name": "DB_PASSWORD", "valueFrom": map[string]any{
				"secretKeyRef": map[string]any{"name": "db", "key": "password", "optional": true}}}),
			class: hub.DriftNone},
		{name: "secret env var removed",
			desired: withEnv(map[string]any{"name": "MODE", "value": "prod"}, secretEnv("DB_PASSWORD", "db", "password")),
			actual:  liveEnv(map[string]any{"name": "MODE", "value": "prod"}),
			class:   hub.DriftModified, fields: []diff{
				{text: "spec.template.spec.containers[app].env[DB_PASSWORD]: {name: DB_PASSWORD, valueFrom: {secretKeyRef: {key: password, name: db}}} -> <none>",
					lacked: "/spec/template/spec/containers/0/env</spec/template/spec/containers/0/env/1"},
			}},
		{name: "secret env var added by someone",
			desired: withEnv(map[string]any{"name": "MODE", "value": "prod"}),
			actual:  liveEnv(map[string]any{"name": "MODE", "value": "prod"}, secretEnv("STOLEN", "other-app", "token")),
			class:   hub.DriftAdded, fields: []diff{
				{text: "+spec.template.spec.containers[app].env[STOLEN]={name: STOLEN, valueFrom: {secretKeyRef: {key: token, name: other-app}}}", pointer: "/spec/template/spec/containers/0/env/1"},
			}},
		{name: "label value changed",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) { labels(m)["app"] = "other" }),
			class: hub.DriftModified, fields: []diff{{text: "metadata.labels.app: web -> other"}}},
		{name: "annotation removed",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) {
				delete(m["metadata"].(map[string]any)["annotations"].(map[string]any), kubeobj.NodeIDAnnotation)
			}), class: hub.DriftModified, fields: []diff{{text: "metadata.annotations." + kubeobj.NodeIDAnnotation + ": c1:shop/web:deployment -> <none>"}}},
		{name: "unlabelled",
			desired: desiredDeployment(), actual: liveDeployment(func(m map[string]any) { delete(labels(m), kubeobj.ManagedByLabel) }),
			class: hub.DriftUnlabelled, fields: []diff{{text: "metadata.labels." + kubeobj.ManagedByLabel + ": driftwatch -> <none>"}}},
		{name: "unlabelled: no labels at all",
			desired: desiredConfigMap(), actual: liveConfigMap(func(m map[string]any) { delete(m["metadata"].(map[string]any), "labels") }),
			class: hub.DriftUnlabelled, fields: []diff{{text: "metadata.labels." + kubeobj.ManagedByLabel + ": driftwatch -> <none>"}}},
		{name: "labelled by another manager value",
			desired: desiredConfigMap(), actual: liveConfigMap(func(m map[string]any) { labels(m)[kubeobj.ManagedByLabel] = "helm" }),
			class: hub.DriftUnlabelled, fields: []diff{{text: "metadata.labels." + kubeobj.ManagedByLabel + ": driftwatch -> helm"}}},
		{name: "custom managed-by value",
			desired: func() *unstructured.Unstructured {
				u := desiredConfigMap()
				labels(u.Object)[kubeobj.ManagedByLabel] = "dw-eu"
				return u
			}(), actual: liveConfigMap(func(m map[string]any) { labels(m)[kubeobj.ManagedByLabel] = "dw-eu" }),
			managedBy: "dw-eu", class: hub.DriftNone},
		{name: "ConfigMap key added",
			desired: desiredConfigMap(), actual: liveConfigMap(func(m map[string]any) { m["data"] = map[string]any{"a": "1", "drift": "yes"} }),
			class: hub.DriftAdded, fields: []diff{{text: "+data.drift=yes", pointer: "/data/drift"}}},
		{name: "ConfigMap key added with a pointer to escape",
			desired: desiredConfigMap(), actual: liveConfigMap(func(m map[string]any) { m["data"] = map[string]any{"a": "1", "x/y~z": "1"} }),
			class: hub.DriftAdded, fields: []diff{{text: "+data.x/y~z=1", pointer: "/data/x~1y~0z"}}},
		{name: "ConfigMap binaryData added",
			desired: func() *unstructured.Unstructured {
				u := desiredConfigMap()
				u.Object["binaryData"] = map[string]any{"b": "AAE="}
				return u
			}(), actual: liveConfigMap(func(m map[string]any) { m["binaryData"] = map[string]any{"b": "AAE=", "c": "AA=="} }),
			class: hub.DriftAdded, fields: []diff{{text: "+binaryData.c=AA==", pointer: "/binaryData/c"}}},
		{name: "ConfigMap value changed",
			desired: desiredConfigMap(), actual: liveConfigMap(func(m map[string]any) { m["data"] = map[string]any{"a": "2"} }),
			class: hub.DriftModified, fields: []diff{{text: "data.a: 1 -> 2"}}},
		{name: "ConfigMap data emptied",
			desired: desiredConfigMap(), actual: liveConfigMap(func(m map[string]any) { delete(m, "data") }),
			class: hub.DriftModified, fields: []diff{{text: "data: {a: 1} -> <none>"}}},
		{name: "Service in sync with defaults",
			desired: desiredService(), actual: liveService(nil), class: hub.DriftNone},
		// A Service's selector is an atomic map: a key someone adds
		// narrows the pods it selects, and an apply of ours removes it.
		{name: "Service selector gains a key: added",
			desired: desiredService(), actual: liveService(func(m map[string]any) {
				m["spec"].(map[string]any)["selector"].(map[string]any)["tier"] = "x"
			}), class: hub.DriftAdded, fields: []diff{{text: "+spec.selector.tier=x", pointer: "/spec/selector/tier"}}},
		{name: "Service port added",
			desired: desiredService(), actual: liveService(func(m map[string]any) {
				spec := m["spec"].(map[string]any)
				spec["ports"] = append(spec["ports"].([]any), map[string]any{"port": int64(443), "protocol": "TCP"})
			}), class: hub.DriftAdded, fields: []diff{{text: "+spec.ports[443/TCP]={port: 443, protocol: TCP}", pointer: "/spec/ports/1"}}},
		{name: "Service target port changed",
			desired: desiredService(), actual: liveService(func(m map[string]any) {
				m["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["targetPort"] = "http"
			}), class: hub.DriftModified, fields: []diff{{text: "spec.ports[80/TCP].targetPort: 8080 -> http"}}},
		// A port number changed by hand: our entry, keyed by port and
		// protocol, is gone and another one with its name took its place.
		{name: "Service port number replaced",
			desired: desiredService(), actual: liveService(func(m map[string]any) {
				m["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["port"] = int64(81)
			}), class: hub.DriftModified, fields: []diff{
				{text: "+spec.ports[81/TCP]={name: http, port: 81, protocol: TCP, targetPort: 8080}", pointer: "/spec/ports/0"},
				{text: "spec.ports[80/TCP]: {name: http, port: 80, targetPort: 8080} -> <none>", lacked: "/spec/ports</spec/ports/0"},
			}},
		// The pointers of a lacked item: the live list's, and the item's
		// index in desired (here not its live neighbour's).
		{name: "one of two Service ports replaced, live order differs",
			desired: func() *unstructured.Unstructured {
				u := desiredService()
				spec := u.Object["spec"].(map[string]any)
				spec["ports"] = append(spec["ports"].([]any), map[string]any{"name": "grpc", "port": int64(9090)})
				return u
			}(), actual: liveService(func(m map[string]any) {
				spec := m["spec"].(map[string]any)
				spec["ports"] = []any{
					map[string]any{"name": "grpc", "port": int64(9090), "protocol": "TCP", "targetPort": int64(9090)},
					map[string]any{"name": "grpc-web", "port": int64(9091), "protocol": "TCP", "targetPort": int64(9091)},
					map[string]any{"name": "http", "port": int64(81), "protocol": "TCP", "targetPort": int64(8080)},
				}
			}), class: hub.DriftModified, fields: []diff{
				{text: "+spec.ports[81/TCP]={name: http, port: 81, protocol: TCP, targetPort: 8080}", pointer: "/spec/ports/2"},
				{text: "+spec.ports[9091/TCP]={name: grpc-web, port: 9091, protocol: TCP, targetPort: 9091}", pointer: "/spec/ports/1"},
				{text: "spec.ports[80/TCP]: {name: http, port: 80, targetPort: 8080} -> <none>", lacked: "/spec/ports</spec/ports/0"},
			}},
		{name: "env var renamed in the second container, live containers in another order",
			desired: func() *unstructured.Unstructured {
				u := desiredDeployment()
				ps := podSpec(u.Object)
				ps["containers"] = append(ps["containers"].([]any), map[string]any{"name": "sidecar", "image": "x",
					"env": []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "B", "value": "2"}}})
				return u
			}(), actual: liveDeployment(func(m map[string]any) {
				ps := podSpec(m)
				ps["containers"] = []any{map[string]any{"name": "sidecar", "image": "x",
					"env": []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "C", "value": "2"}}},
					ps["containers"].([]any)[0]}
			}), class: hub.DriftModified, fields: []diff{
				{text: "+spec.template.spec.containers[sidecar].env[C]={name: C, value: 2}", pointer: "/spec/template/spec/containers/0/env/1"},
				{text: "spec.template.spec.containers[sidecar].env[B]: {name: B, value: 2} -> <none>",
					lacked: "/spec/template/spec/containers/0/env</spec/template/spec/containers/1/env/1"},
			}},
		{name: "bool, float and null values",
			desired: &unstructured.Unstructured{Object: map[string]any{
				"metadata": map[string]any{"labels": map[string]any{kubeobj.ManagedByLabel: "driftwatch"}},
				"spec":     map[string]any{"paused": false, "ratio": 0.5, "opt": nil, "n": int32(2)},
			}},
			actual: &unstructured.Unstructured{Object: map[string]any{
				"metadata": map[string]any{"labels": map[string]any{kubeobj.ManagedByLabel: "driftwatch"}},
				"spec":     map[string]any{"paused": true, "ratio": 0.25, "opt": "x", "n": "2"},
			}},
			class: hub.DriftModified, fields: []diff{
				{text: "spec.n: 2 -> 2"},
				{text: "spec.opt: null -> x"},
				{text: "spec.paused: false -> true"},
				{text: "spec.ratio: 0.5 -> 0.25"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Classify(tt.desired, tt.actual, tt.managedBy)
			if d.Class != tt.class {
				t.Fatalf("class = %s, want %s (fields %v)", d.Class, tt.class, d.Fields)
			}
			var got, want []string
			for _, f := range d.Fields {
				got = append(got, diffString(f))
			}
			for _, f := range tt.fields {
				want = append(want, f.wantString())
			}
			slices.Sort(got)
			slices.Sort(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("fields =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			checkPointers(t, d.Fields)
		})
	}
}

// TestItemKeys checks the keys the built-in schemas give list items
// against the keys managedFields uses: the key of an item is the KeyString
// of its key fields (with the schema's defaults), so drift paths and
// managedFields paths match.
func TestItemKeys(t *testing.T) {
	podSpec := func(f ...string) []string { return slices.Concat([]string{"spec", "template", "spec"}, f) }
	ctr := func(f ...string) []string { return podSpec(slices.Concat([]string{"containers", "*"}, f)...) }
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	svc := schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	tests := []struct {
		gvk  schema.GroupVersionKind
		path []string
		item map[string]any
		kind listKind
		want string
	}{
		{deploy, podSpec("containers"), map[string]any{"name": "app", "image": "x"}, keyedList, "app"},
		{deploy, podSpec("initContainers"), map[string]any{"name": "init"}, keyedList, "init"},
		{deploy, ctr("env"), map[string]any{"name": "DEBUG", "value": "1"}, keyedList, "DEBUG"},
		{deploy, ctr("ports"), map[string]any{"containerPort": int64(8080), "protocol": "UDP"}, keyedList, "8080/UDP"},
		{deploy, ctr("ports"), map[string]any{"containerPort": float64(8080)}, keyedList, "8080/TCP"},
		{svc, []string{"spec", "ports"}, map[string]any{"port": int64(443), "targetPort": int64(8443)}, keyedList, "443/TCP"},
		{deploy, podSpec("volumes"), map[string]any{"name": "data"}, keyedList, "data"},
		{deploy, ctr("volumeMounts"), map[string]any{"name": "data", "mountPath": "/d"}, keyedList, "/d"},
		{deploy, ctr("envFrom"), map[string]any{"prefix": "X_"}, atomicList, ""},
		{deploy, ctr("args"), nil, atomicList, ""},
		{svc, []string{"spec", "ipFamilies"}, nil, atomicList, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.path, ".")+"/"+tt.want, func(t *testing.T) {
			s, ok := BuiltinSchema(tt.gvk)
			if !ok {
				t.Fatalf("no built-in schema for %v", tt.gvk)
			}
			ty := s.root
			for _, p := range tt.path {
				if p == "*" {
					ty = ty.list().elem
					continue
				}
				ty = ty.field(p)
			}
			l := ty.list()
			if l.kind != tt.kind {
				t.Fatalf("list kind = %v, want %v", l.kind, tt.kind)
			}
			if l.kind != keyedList {
				return
			}
			got, complete := l.itemKey(tt.item)
			if got != tt.want || !complete {
				t.Fatalf("key = %q (complete %v), want %q", got, complete, tt.want)
			}
			// The same key as managedFields spells it.
			key := map[string]any{}
			for _, f := range l.keys {
				v, _ := l.keyValue(tt.item, f)
				key[f] = v
			}
			if ks := KeyString(key); ks != got {
				t.Fatalf("KeyString = %q, item key %q", ks, got)
			}
		})
	}
}

// BenchmarkClassify measures the watch path's comparison: a Deployment in
// sync and one with drift (by client-go's built-in schema, as Classify
// finds it), and a custom resource along its CRD's schema.
func BenchmarkClassify(b *testing.B) {
	desired := desiredDeployment()
	drifted := liveDeployment(func(m map[string]any) {
		m["spec"].(map[string]any)["replicas"] = int64(1)
		c := container(m)
		c["env"] = append(c["env"].([]any), map[string]any{"name": "DEBUG", "value": "1"})
	})
	inSync := liveDeployment(nil)
	BuiltinSchema(desired.GroupVersionKind()) // built once, outside the timings
	b.Run("deployment-in-sync", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Classify(desired, inSync, "driftwatch")
		}
	})
	b.Run("deployment-drifted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Classify(desired, drifted, "driftwatch")
		}
	})
	w, wLive := obj(b, widgetDesired), obj(b, widgetLive)
	s := widgetSchema(b)
	b.Run("custom-resource", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ClassifyWith(w, wLive, "driftwatch", Ignore{}, s)
		}
	})
}
