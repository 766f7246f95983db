package drift

import (
	"encoding/json"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smd "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/driftwatch/driftwatch/hub"
)

// widgetOpenAPI is the OpenAPI v3 schema an apiserver publishes for the
// custom resource Widget (example.com/v1) of the CRD in
// clusters/testdata: listeners an associative list keyed by port and
// protocol (protocol defaulted to TCP), tags a set, args atomic, selector
// a free-form map, config open (x-kubernetes-preserve-unknown-fields).
const widgetOpenAPI = `{
  "type": "object",
  "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}],
  "properties": {
    "apiVersion": {"type": "string"},
    "kind": {"type": "string"},
    "metadata": {"type": "object"},
    "spec": {"type": "object", "properties": {
      "replicas": {"type": "integer"},
      "listeners": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
        "items": {"type": "object", "required": ["port"], "properties": {
          "port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}, "name": {"type": "string"}}}},
      "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
      "args": {"type": "array", "items": {"type": "string"}},
      "selector": {"type": "object", "additionalProperties": {"type": "string"}},
      "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    }},
    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
  }
}`

// widgetSchema returns the Schema of Widget, converted from its OpenAPI as
// the apiserver's own field manager converts it.
func widgetSchema(tb testing.TB) Schema {
	tb.Helper()
	var s spec.Schema
	if err := json.Unmarshal([]byte(widgetOpenAPI), &s); err != nil {
		tb.Fatal(err)
	}
	types, err := schemaconv.ToSchemaFromOpenAPI(map[string]*spec.Schema{"com.example.v1.Widget": &s}, false)
	if err != nil {
		tb.Fatal(err)
	}
	name := "com.example.v1.Widget"
	return NewSchema(typed.ParseableType{Schema: types, TypeRef: smd.TypeRef{NamedType: &name}})
}

// obj builds an unstructured object from YAML-like JSON.
func obj(tb testing.TB, s string) *unstructured.Unstructured {
	tb.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(s)); err != nil {
		tb.Fatal(err)
	}
	return u
}

// edit returns a copy of u changed by f.
func edit(u *unstructured.Unstructured, f func(m map[string]any)) *unstructured.Unstructured {
	c := u.DeepCopy()
	f(c.Object)
	return c
}

// at returns the value at a path of map keys and list indexes of m.
func at(m any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			mm, _ := m.(map[string]any)
			m = mm[k]
		case int:
			l, _ := m.([]any)
			if k >= len(l) {
				return nil
			}
			m = l[k]
		}
	}
	return m
}

const (
	statefulSetDesired = `{"apiVersion": "apps/v1", "kind": "StatefulSet",
	  "metadata": {"name": "db", "namespace": "shop", "labels": {"app.kubernetes.io/managed-by": "driftwatch"}},
	  "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
	    "template": {"metadata": {"labels": {"app": "db"}},
	      "spec": {"containers": [{"name": "db", "image": "postgres:17", "env": [{"name": "PGDATA", "value": "/data"}]}]}},
	    "volumeClaimTemplates": [{"metadata": {"name": "data"},
	      "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}`
	// As the apiserver returns it: defaults in the spec, the template and
	// the claim template (apiVersion, kind, volumeMode, status).
	statefulSetLive = `{"apiVersion": "apps/v1", "kind": "StatefulSet",
	  "metadata": {"name": "db", "namespace": "shop", "uid": "1", "resourceVersion": "9", "generation": 1,
	    "labels": {"app.kubernetes.io/managed-by": "driftwatch"}},
	  "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
	    "podManagementPolicy": "OrderedReady", "revisionHistoryLimit": 10,
	    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
	    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
	    "template": {"metadata": {"labels": {"app": "db"}},
	      "spec": {"containers": [{"name": "db", "image": "postgres:17", "env": [{"name": "PGDATA", "value": "/data"}],
	          "imagePullPolicy": "IfNotPresent", "resources": {}, "terminationMessagePath": "/dev/termination-log",
	          "terminationMessagePolicy": "File"}],
	        "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
	        "securityContext": {}, "terminationGracePeriodSeconds": 30}},
	    "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
	      "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
	      "status": {"phase": "Pending"}}]},
	  "status": {"replicas": 0, "availableReplicas": 0}}`

	cronJobDesired = `{"apiVersion": "batch/v1", "kind": "CronJob",
	  "metadata": {"name": "report", "namespace": "shop", "labels": {"app.kubernetes.io/managed-by": "driftwatch"}},
	  "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
	    "containers": [{"name": "job", "image": "report:1", "args": ["--all"]}]}}}}}}`
	cronJobLive = `{"apiVersion": "batch/v1", "kind": "CronJob",
	  "metadata": {"name": "report", "namespace": "shop", "labels": {"app.kubernetes.io/managed-by": "driftwatch"}},
	  "spec": {"schedule": "0 * * * *", "concurrencyPolicy": "Allow", "suspend": false,
	    "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
	    "jobTemplate": {"metadata": {"creationTimestamp": null}, "spec": {"template": {"metadata": {"creationTimestamp": null},
	      "spec": {"restartPolicy": "OnFailure", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
	        "containers": [{"name": "job", "image": "report:1", "args": ["--all"], "imagePullPolicy": "IfNotPresent",
	          "resources": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}]}}}}},
	  "status": {}}`

	hpaDesired = `{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
	  "metadata": {"name": "web", "namespace": "shop", "labels": {"app.kubernetes.io/managed-by": "driftwatch"}},
	  "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 10,
	    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
	      {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "500m"}}}]}}`
	// The apiserver spells 500m its own way only when asked; here a
	// client wrote 0.5, the same quantity.
	hpaLive = `{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
	  "metadata": {"name": "web", "namespace": "shop", "labels": {"app.kubernetes.io/managed-by": "driftwatch"}},
	  "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 10,
	    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
	      {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "0.5"}}}],
	    "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
	      "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]},
	      "scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}},
	  "status": {"currentReplicas": 2, "desiredReplicas": 2}}`

	roleDesired = `{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
	  "metadata": {"name": "reader", "namespace": "shop", "labels": {"app.kubernetes.io/managed-by": "driftwatch"}},
	  "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}`

	serviceDesired = `{"apiVersion": "v1", "kind": "Service",
	  "metadata": {"name": "web", "namespace": "shop", "labels": {"app.kubernetes.io/managed-by": "driftwatch"}},
	  "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}`
	serviceLive = `{"apiVersion": "v1", "kind": "Service",
	  "metadata": {"name": "web", "namespace": "shop", "labels": {"app.kubernetes.io/managed-by": "driftwatch"}},
	  "spec": {"selector": {"app": "web"}, "clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"], "type": "ClusterIP",
	    "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
	    "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]},
	  "status": {"loadBalancer": {}}}`

	widgetDesired = `{"apiVersion": "example.com/v1", "kind": "Widget",
	  "metadata": {"name": "w", "namespace": "shop", "labels": {"app.kubernetes.io/managed-by": "driftwatch"}},
	  "spec": {"replicas": 1, "listeners": [{"port": 80, "name": "http"}], "tags": ["a", "b"], "args": ["-v"],
	    "selector": {"app": "w"}, "config": {"mode": "fast"}}}`
	widgetLive = `{"apiVersion": "example.com/v1", "kind": "Widget",
	  "metadata": {"name": "w", "namespace": "shop", "labels": {"app.kubernetes.io/managed-by": "driftwatch"}},
	  "spec": {"replicas": 1, "listeners": [{"port": 80, "name": "http", "protocol": "TCP"}], "tags": ["b", "a"], "args": ["-v"],
	    "selector": {"app": "w"}, "config": {"mode": "fast", "tuning": {"x": 1}}},
	  "status": {"ready": true}}`
)

// TestClassifyKinds classifies kinds beyond the first three along their
// schemas: the built-in one for built-in kinds, a CRD's for a custom
// resource. The projection of the live object equals desired's own
// exactly when in sync.
func TestClassifyKinds(t *testing.T) {
	widget := widgetSchema(t)
	sts, stsLive := obj(t, statefulSetDesired), obj(t, statefulSetLive)
	cj, cjLive := obj(t, cronJobDesired), obj(t, cronJobLive)
	hpa, hpaL := obj(t, hpaDesired), obj(t, hpaLive)
	role := obj(t, roleDesired)
	svc, svcLive := obj(t, serviceDesired), obj(t, serviceLive)
	w, wLive := obj(t, widgetDesired), obj(t, widgetLive)
	stsCtr := []any{"spec", "template", "spec", "containers", 0}
	stsClaim := []any{"spec", "volumeClaimTemplates", 0}
	cjCtr := []any{"spec", "jobTemplate", "spec", "template", "spec", "containers", 0}
	set := func(m map[string]any, v any, path ...any) {
		parent := at(m, path[:len(path)-1]...)
		switch k := path[len(path)-1].(type) {
		case string:
			parent.(map[string]any)[k] = v
		case int:
			parent.([]any)[k] = v
		}
	}
	appendTo := func(m map[string]any, v any, path ...any) {
		l, _ := at(m, path...).([]any)
		set(m, append(l, v), path...)
	}
	tests := []struct {
		name            string
		desired, actual *unstructured.Unstructured
		schema          *Schema // nil: the built-in one (Classify)
		class           hub.DriftClass
		fields          []diff
	}{
		{name: "StatefulSet in sync with defaults in the claim template",
			desired: sts, actual: stsLive, class: hub.DriftNone},
		{name: "StatefulSet env var added",
			desired: sts, actual: edit(stsLive, func(m map[string]any) {
				appendTo(m, map[string]any{"name": "DEBUG", "value": "1"}, append(stsCtr, "env")...)
			}), class: hub.DriftAdded, fields: []diff{{
				text: "+spec.template.spec.containers[db].env[DEBUG]={name: DEBUG, value: 1}", pointer: "/spec/template/spec/containers/0/env/1"}}},
		{name: "StatefulSet claim size changed (atomic list, by index)",
			desired: sts, actual: edit(stsLive, func(m map[string]any) {
				set(m, "2Gi", append(stsClaim, "spec", "resources", "requests", "storage")...)
			}), class: hub.DriftModified, fields: []diff{{text: "spec.volumeClaimTemplates[0].spec.resources.requests.storage: 1Gi -> 2Gi"}}},
		{name: "StatefulSet claim template added: the atomic list differs whole",
			desired: sts, actual: edit(stsLive, func(m map[string]any) {
				appendTo(m, map[string]any{"metadata": map[string]any{"name": "logs"}}, "spec", "volumeClaimTemplates")
			}), class: hub.DriftModified, fields: []diff{{text: "spec.volumeClaimTemplates: " +
				text(sts.Object["spec"].(map[string]any)["volumeClaimTemplates"]) + " -> " +
				"[{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}, volumeMode: Filesystem}, status: {phase: Pending}}, {metadata: {name: logs}}]"}}},
		{name: "StatefulSet pod template restarted (annotation added): not ours",
			desired: sts, actual: edit(stsLive, func(m map[string]any) {
				set(m, map[string]any{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}, "spec", "template", "metadata", "annotations")
				set(m, map[string]any{"app": "db", "pod-template-hash": "x"}, "spec", "template", "metadata", "labels")
			}), class: hub.DriftNone},
		{name: "StatefulSet matchLabels gains a key",
			desired: sts, actual: edit(stsLive, func(m map[string]any) {
				set(m, "x", "spec", "selector", "matchLabels", "tier")
			}), class: hub.DriftAdded, fields: []diff{{text: "+spec.selector.matchLabels.tier=x", pointer: "/spec/selector/matchLabels/tier"}}},
		{name: "CronJob in sync with defaults", desired: cj, actual: cjLive, class: hub.DriftNone},
		{name: "CronJob job container image changed",
			desired: cj, actual: edit(cjLive, func(m map[string]any) { set(m, "report:2", append(cjCtr, "image")...) }),
			class: hub.DriftModified, fields: []diff{{text: "spec.jobTemplate.spec.template.spec.containers[job].image: report:1 -> report:2"}}},
		{name: "CronJob job container added",
			desired: cj, actual: edit(cjLive, func(m map[string]any) {
				appendTo(m, map[string]any{"name": "sidecar", "image": "x"}, "spec", "jobTemplate", "spec", "template", "spec", "containers")
			}), class: hub.DriftAdded, fields: []diff{{
				text: "+spec.jobTemplate.spec.template.spec.containers[sidecar]={image: x, name: sidecar}", pointer: "/spec/jobTemplate/spec/template/spec/containers/1"}}},
		{name: "HPA in sync: defaulted behavior, 500m as 0.5 in a metric target", desired: hpa, actual: hpaL, class: hub.DriftNone},
		{name: "HPA metric target changed",
			desired: hpa, actual: edit(hpaL, func(m map[string]any) {
				set(m, int64(50), "spec", "metrics", 0, "resource", "target", "averageUtilization")
			}), class: hub.DriftModified, fields: []diff{{text: "spec.metrics[0].resource.target.averageUtilization: 70 -> 50"}}},
		{name: "HPA metric added: the atomic list differs whole",
			desired: hpa, actual: edit(hpaL, func(m map[string]any) {
				appendTo(m, map[string]any{"type": "Resource", "resource": map[string]any{"name": "memory"}}, "spec", "metrics")
			}), class: hub.DriftModified, fields: []diff{{text: "spec.metrics: " + text(hpa.Object["spec"].(map[string]any)["metrics"]) + " -> " +
				"[{resource: {name: cpu, target: {averageUtilization: 70, type: Utilization}}, type: Resource}, {pods: {metric: {name: rps}, target: {averageValue: 0.5, type: AverageValue}}, type: Pods}, {resource: {name: memory}, type: Resource}]"}}},
		{name: "Role in sync", desired: role, actual: role.DeepCopy(), class: hub.DriftNone},
		{name: "Role verb added (atomic list)",
			desired: role, actual: edit(role, func(m map[string]any) { appendTo(m, "delete", "rules", 0, "verbs") }),
			class: hub.DriftModified, fields: []diff{{text: "rules[0].verbs: [get, list] -> [get, list, delete]"}}},
		{name: "Role rule added (atomic list)",
			desired: role, actual: edit(role, func(m map[string]any) {
				appendTo(m, map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get"}}, "rules")
			}), class: hub.DriftModified, fields: []diff{{text: "rules: [{apiGroups: [], resources: [configmaps], verbs: [get, list]}] -> " +
				"[{apiGroups: [], resources: [configmaps], verbs: [get, list]}, {apiGroups: [], resources: [secrets], verbs: [get]}]"}}},
		{name: "Service ports without protocol in sync", desired: svc, actual: svcLive, class: hub.DriftNone},
		{name: "Service port without protocol: target changed, port added",
			desired: svc, actual: edit(svcLive, func(m map[string]any) {
				set(m, "web", "spec", "ports", 0, "targetPort")
				appendTo(m, map[string]any{"port": int64(443), "protocol": "TCP", "targetPort": int64(8443)}, "spec", "ports")
			}), class: hub.DriftModified, fields: []diff{
				{text: "+spec.ports[443/TCP]={port: 443, protocol: TCP, targetPort: 8443}", pointer: "/spec/ports/1"},
				{text: "spec.ports[80/TCP].targetPort: 8080 -> web"},
			}},
		{name: "Service port switched to UDP",
			desired: svc, actual: edit(svcLive, func(m map[string]any) { set(m, "UDP", "spec", "ports", 0, "protocol") }),
			class: hub.DriftModified, fields: []diff{
				{text: "+spec.ports[80/UDP]={name: http, port: 80, protocol: UDP, targetPort: 8080}", pointer: "/spec/ports/0"},
				{text: "spec.ports[80/TCP]: {name: http, port: 80, targetPort: 8080} -> <none>", lacked: "/spec/ports</spec/ports/0"},
			}},
		{name: "custom resource in sync: defaulted key, set order, open config", schema: &widget,
			desired: w, actual: wLive, class: hub.DriftNone},
		{name: "custom resource listener added and renamed", schema: &widget,
			desired: w, actual: edit(wLive, func(m map[string]any) {
				set(m, "web", "spec", "listeners", 0, "name")
				appendTo(m, map[string]any{"port": int64(443), "protocol": "TCP"}, "spec", "listeners")
			}), class: hub.DriftModified, fields: []diff{
				{text: "+spec.listeners[443/TCP]={port: 443, protocol: TCP}", pointer: "/spec/listeners/1"},
				{text: "spec.listeners[80/TCP].name: http -> web"},
			}},
		{name: "custom resource set item added and removed, selector key added", schema: &widget,
			desired: w, actual: edit(wLive, func(m map[string]any) {
				set(m, []any{"b", "c"}, "spec", "tags")
				set(m, "x", "spec", "selector", "tier")
			}), class: hub.DriftModified, fields: []diff{
				{text: "+spec.selector.tier=x", pointer: "/spec/selector/tier"},
				{text: "+spec.tags[c]=c", pointer: "/spec/tags/1"},
				{text: "spec.tags[a]: a -> <none>", lacked: "/spec/tags</spec/tags/0"},
			}},
		{name: "custom resource without its schema: lists atomic, nothing added", schema: &Schema{},
			desired: w, actual: edit(wLive, func(m map[string]any) {
				appendTo(m, map[string]any{"port": int64(443), "protocol": "TCP"}, "spec", "listeners")
				set(m, "x", "spec", "selector", "tier")
			}), class: hub.DriftModified, fields: []diff{
				{text: "spec.listeners: [{name: http, port: 80}] -> [{name: http, port: 80, protocol: TCP}, {port: 443, protocol: TCP}]"},
				{text: "spec.tags[0]: a -> b"},
				{text: "spec.tags[1]: b -> a"},
			}},
		{name: "custom resource by Classify: client-go does not know it",
			desired: w, actual: wLive, class: hub.DriftModified, fields: []diff{
				{text: "spec.tags[0]: a -> b"},
				{text: "spec.tags[1]: b -> a"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := schemaOf(tt.desired.Object)
			if tt.schema != nil {
				s = *tt.schema
			}
			before := tt.actual.DeepCopy()
			d, err := ClassifyWith(tt.desired, tt.actual, "", Ignore{}, s)
			if err != nil {
				t.Fatal(err)
			}
			if tt.schema == nil {
				if c := Classify(tt.desired, tt.actual, ""); !reflect.DeepEqual(c, d) {
					t.Errorf("Classify = %v, ClassifyWith the built-in schema %v", c, d)
				}
			}
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
			own := ProjectWith(tt.desired, tt.desired, s)
			live := ProjectWith(tt.desired, tt.actual, s)
			if same := reflect.DeepEqual(own, live); same != (tt.class == hub.DriftNone) {
				t.Errorf("projections equal: %v, want %v\n live: %v\n own:  %v", same, tt.class == hub.DriftNone, live, own)
			}
			if !reflect.DeepEqual(before, tt.actual) {
				t.Error("the live object was modified")
			}
		})
	}
}

// TestSchemaKinds: every kind of a cluster's core workload set has a
// built-in schema, and a custom resource has none.
func TestSchemaKinds(t *testing.T) {
	for _, o := range []string{statefulSetDesired, cronJobDesired, hpaDesired, roleDesired, serviceDesired} {
		u := obj(t, o)
		if _, ok := BuiltinSchema(u.GroupVersionKind()); !ok {
			t.Errorf("%v: no built-in schema", u.GroupVersionKind())
		}
	}
	if _, ok := BuiltinSchema(obj(t, widgetDesired).GroupVersionKind()); ok {
		t.Error("Widget: a built-in schema")
	}
	if (Schema{}).Known() || !widgetSchema(t).Known() {
		t.Error("Known: want false for the zero Schema, true for a CRD's")
	}
}

// TestPinWith pins fields of a custom resource found by their schema's
// keys: a listener by port and defaulted protocol, a tag by value.
func TestPinWith(t *testing.T) {
	s := widgetSchema(t)
	desired := obj(t, widgetDesired).Object
	live := edit(obj(t, widgetLive), func(m map[string]any) {
		m["spec"].(map[string]any)["listeners"].([]any)[0].(map[string]any)["name"] = "web"
	}).Object
	fields := mustPaths(t, "spec.listeners[80/TCP].name", "spec.tags[a]", "spec.args[0]")
	if !PinWith(desired, live, fields, s) {
		t.Fatal("want changed")
	}
	if got := at(desired, "spec", "listeners", 0, "name"); got != "web" {
		t.Errorf("listener name = %v, want web", got)
	}
	// Without the schema the listener is not found by key.
	desired = obj(t, widgetDesired).Object
	PinWith(desired, live, fields[:1], Schema{})
	if got := at(desired, "spec", "listeners", 0, "name"); got != "http" {
		t.Errorf("listener name without a schema = %v, want http", got)
	}
}

// TestAttributeCustomResource attributes drift in a custom resource's
// associative list to the manager whose managedFields own the item.
func TestAttributeCustomResource(t *testing.T) {
	s := widgetSchema(t)
	live := edit(obj(t, widgetLive), func(m map[string]any) {
		l := m["spec"].(map[string]any)["listeners"].([]any)
		m["spec"].(map[string]any)["listeners"] = append(l, map[string]any{"port": int64(443), "protocol": "TCP"})
	})
	d, _ := ClassifyWith(obj(t, widgetDesired), live, "", Ignore{}, s)
	paths, err := FieldsV1Paths([]byte(`{"f:spec":{"f:listeners":{"k:{\"port\":443,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:protocol":{}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := Attribute(d, []FieldOwner{{Manager: "kubectl-edit", Operation: "Update", Time: at, Fields: paths}}, kubeobj.FieldManager)
	if a == nil || a.Manager != "kubectl-edit" || !slices.Equal(a.Fields, []string{"spec.listeners[443/TCP]"}) {
		t.Fatalf("attribution = %+v, want kubectl-edit on spec.listeners[443/TCP]", a)
	}
}
