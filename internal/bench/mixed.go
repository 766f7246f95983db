package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/driftgen"
	"github.com/driftwatch/driftwatch/internal/localcluster"
)

// mixedNamespace holds the namespaced objects of --mode mixed (apart from
// the three kinds' bench namespace, which its baseline uses).
const mixedNamespace = "bench-mixed"

// MixedMinObjects is the fewest objects --mode mixed manages per cluster:
// the CustomResourceDefinition and one object of each of the 11 other
// kinds (mixedKinds).
const MixedMinObjects = 12

// The custom resource of --mode mixed: its kind, group and the
// CustomResourceDefinition that defines it.
const (
	widgetGroup = "bench.example.com"
	widgetCRD   = "widgets." + widgetGroup
)

// mixedKind is one kind of --mode mixed: what its objects look like, where
// the apiserver serves them, and the field edit the bench drifts them
// with.
type mixedKind struct {
	apiVersion, kind string
	// resource is the kind's plural resource name.
	resource string
	// prefix starts the names of its objects and names its source.
	prefix string
	// body is the object's YAML after its metadata, for the object of
	// index i named name (in block style, two-space indents).
	body func(name string, i int) string
	// edit is a JSON merge patch that changes a field the hub applies.
	edit string
}

// gvr is the kind's group, version and resource.
func (k mixedKind) gvr() schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(k.apiVersion)
	return gv.WithResource(k.resource)
}

// slug is the NodeID slug of the kind.
func (k mixedKind) slug() hub.Kind {
	gv, _ := schema.ParseGroupVersion(k.apiVersion)
	return hub.KindSlug(gv.Group, k.kind)
}

// doc is the YAML document of object i of the kind, named name, without a
// namespace (the source gives it one).
func (k mixedKind) doc(name string, i int) string {
	return fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  labels:\n    app: %s\n%s", k.apiVersion, k.kind, name, name, k.body(name, i))
}

// mixedKinds are the kinds of --mode mixed's namespaced objects, in the
// order their objects are dealt: ten built-in kinds of seven API groups
// and a custom resource (Widget, defined by widgetCRDDoc). Each object is
// about the size a team would write (a container, a rule, a few keys).
func mixedKinds() []mixedKind {
	return []mixedKind{
		{apiVersion: "v1", kind: "ConfigMap", resource: "configmaps", prefix: "cm",
			body: func(name string, i int) string {
				return fmt.Sprintf("data:\n  MODE: bench\n  INDEX: %q\n  LOG_LEVEL: info\n", fmt.Sprint(i))
			},
			edit: `{"data":{"MODE":"tampered"}}`},
		{apiVersion: "v1", kind: "Secret", resource: "secrets", prefix: "secret",
			body: func(name string, i int) string {
				return fmt.Sprintf("type: Opaque\ndata:\n  TOKEN: %s\n", base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("token-%s-%d", name, i))))
			},
			edit: `{"data":{"TOKEN":"dGFtcGVyZWQ="}}`},
		{apiVersion: "v1", kind: "ServiceAccount", resource: "serviceaccounts", prefix: "sa",
			body: func(string, int) string { return "automountServiceAccountToken: false\n" },
			edit: `{"automountServiceAccountToken":true}`},
		{apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", resource: "roles", prefix: "role",
			body: func(string, int) string {
				return "rules:\n  - apiGroups: [\"\"]\n    resources: [configmaps, secrets]\n    verbs: [get, list, watch]\n"
			},
			edit: `{"rules":[{"apiGroups":[""],"resources":["configmaps","secrets"],"verbs":["*"]}]}`},
		{apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", resource: "rolebindings", prefix: "rb",
			body: func(name string, _ int) string {
				return fmt.Sprintf("roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: %s\nsubjects:\n  - kind: ServiceAccount\n    name: %s\n", name, name)
			},
			edit: `{"subjects":[{"kind":"ServiceAccount","name":"intruder"}]}`},
		{apiVersion: "apps/v1", kind: "StatefulSet", resource: "statefulsets", prefix: "sts",
			body: func(name string, _ int) string {
				return fmt.Sprintf(`spec:
  serviceName: %[1]s
  replicas: 1
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
        - name: db
          image: registry.example/db:3.2.0
          ports:
            - name: sql
              containerPort: 5432
          env:
            - name: MODE
              value: primary
  volumeClaimTemplates:
    - metadata:
        name: data
      spec:
        accessModes: [ReadWriteOnce]
        resources:
          requests:
            storage: 1Gi
`, name)
			},
			edit: `{"spec":{"replicas":0}}`},
		{apiVersion: "batch/v1", kind: "CronJob", resource: "cronjobs", prefix: "cj",
			body: func(_ string, i int) string {
				return fmt.Sprintf(`spec:
  schedule: "%d 3 * * *"
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: backup
              image: registry.example/backup:1.0.4
              args: [--target, s3://backups/bench]
`, i%60)
			},
			edit: `{"spec":{"schedule":"*/5 * * * *"}}`},
		{apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler", resource: "horizontalpodautoscalers", prefix: "hpa",
			body: func(name string, _ int) string {
				return fmt.Sprintf(`spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: StatefulSet
    name: %s
  minReplicas: 1
  maxReplicas: 3
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: 75
`, name)
			},
			edit: `{"spec":{"maxReplicas":9}}`},
		{apiVersion: "policy/v1", kind: "PodDisruptionBudget", resource: "poddisruptionbudgets", prefix: "pdb",
			body: func(name string, _ int) string {
				return fmt.Sprintf("spec:\n  minAvailable: 1\n  selector:\n    matchLabels:\n      app: %s\n", name)
			},
			edit: `{"spec":{"minAvailable":2}}`},
		{apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", resource: "networkpolicies", prefix: "netpol",
			body: func(name string, _ int) string {
				return fmt.Sprintf(`spec:
  podSelector:
    matchLabels:
      app: %s
  policyTypes: [Ingress]
  ingress:
    - from:
        - podSelector:
            matchLabels:
              role: frontend
      ports:
        - protocol: TCP
          port: 5432
`, name)
			},
			edit: `{"spec":{"podSelector":{"matchLabels":{"app":"tampered"}}}}`},
		{apiVersion: widgetGroup + "/v1", kind: "Widget", resource: "widgets", prefix: "widget",
			body: func(_ string, i int) string {
				return fmt.Sprintf("spec:\n  size: %d\n  color: blue\n  parts:\n    - name: axle\n      count: 1\n    - name: gear\n      count: %d\n", 1+i%5, 1+i%3)
			},
			edit: `{"spec":{"size":99}}`},
	}
}

// widgetCRDDoc is the CustomResourceDefinition of the Widget kind.
const widgetCRDDoc = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + widgetCRD + `
spec:
  group: ` + widgetGroup + `
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    listKind: WidgetList
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size:
                  type: integer
                color:
                  type: string
                parts:
                  type: array
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [name]
                  items:
                    type: object
                    required: [name]
                    properties:
                      name:
                        type: string
                      count:
                        type: integer
`

// crdKind is the CustomResourceDefinition's own kind (applied, never
// drifted).
func crdKind() mixedKind {
	return mixedKind{apiVersion: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", resource: "customresourcedefinitions"}
}

// mixedKindsBySlug returns the kinds of --mode mixed by NodeID slug, the
// CustomResourceDefinition's included.
func mixedKindsBySlug() map[hub.Kind]mixedKind {
	crd := crdKind()
	out := map[hub.Kind]mixedKind{crd.slug(): crd}
	for _, k := range mixedKinds() {
		out[k.slug()] = k
	}
	return out
}

// mixedCounts deals objects objects over the kinds: the
// CustomResourceDefinition, then the rest as evenly as it goes (the
// first kinds get one more). It returns the count per kind, in
// mixedKinds order.
func mixedCounts(objects int) []int {
	kinds := mixedKinds()
	rest := max(objects-1, 0)
	out := make([]int, len(kinds))
	for i := range out {
		out[i] = rest / len(kinds)
		if i < rest%len(kinds) {
			out[i]++
		}
	}
	return out
}

// mixedFiles returns the manifest files of --mode mixed with objects
// objects per cluster, by path relative to the config's folder: the
// CustomResourceDefinition in mixed/crds/widgets.yaml, and one file per
// kind, mixed/<prefix>.yaml, of multi-document YAML.
func mixedFiles(objects int) map[string]string {
	files := map[string]string{filepath.Join("mixed", "crds", "widgets.yaml"): widgetCRDDoc}
	counts := mixedCounts(objects)
	for k, kind := range mixedKinds() {
		var sb strings.Builder
		fmt.Fprintf(&sb, "# %d %s objects, generated by driftwatch bench --mode mixed\n", counts[k], kind.kind)
		for i := range counts[k] {
			sb.WriteString("---\n")
			sb.WriteString(kind.doc(fmt.Sprintf("%s-%05d", kind.prefix, i+1), i))
		}
		files[filepath.Join("mixed", kind.prefix+".yaml")] = sb.String()
	}
	return files
}

// mixedConfig returns the text of the config of --mode mixed: every
// local cluster (labelled bench=true) and plain-files sources, one for
// the CustomResourceDefinition and one per kind, each file of mixedFiles,
// the namespaced objects in mixedNamespace.
func mixedConfig(set *localcluster.Set, qps float64, workers int) string {
	var sb strings.Builder
	writeHubSection(&sb, "driftwatch bench --mode mixed", qps, workers)
	for _, lc := range set.Clusters {
		fmt.Fprintf(&sb, "  - id: %s\n    kubeconfig: %s\n    labels: {bench: \"true\"}\n", lc.Name, lc.Kubeconfig)
	}
	sb.WriteString("sources:\n  - id: mixed-crds\n    path: mixed/crds\n    selector: bench=true\n")
	for _, k := range mixedKinds() {
		fmt.Fprintf(&sb, "  - id: mixed-%s\n    path: mixed/%s.yaml\n    selector: bench=true\n    namespace: %s\n", k.prefix, k.prefix, mixedNamespace)
	}
	return sb.String()
}

// MixedActions lists the drifts --mode mixed makes on every kind: deletes,
// edits of a field the hub applies, and label removals.
func MixedActions(hub.Kind) []driftgen.Action {
	return []driftgen.Action{driftgen.ActionDelete, driftgen.ActionEdit, driftgen.ActionUnlabel}
}

// dynamicDrifter makes the drifts of --mode mixed with the dynamic client,
// as the drift generator's field manager: a delete, the kind's field edit
// (a JSON merge patch), or the managed-by label's removal.
type dynamicDrifter struct {
	clients map[string]dynamic.Interface
	kinds   map[hub.Kind]mixedKind
}

// Do makes one drift.
func (d dynamicDrifter) Do(ctx context.Context, t driftgen.Target, a driftgen.Action) driftgen.Drift {
	out := driftgen.Drift{At: time.Now(), ID: t.ID, Action: a}
	c, ok := d.clients[t.ID.Cluster]
	if !ok {
		out.Err = fmt.Errorf("cluster %q: no client", t.ID.Cluster)
		return out
	}
	k, ok := d.kinds[t.ID.Kind]
	if !ok {
		out.Err = fmt.Errorf("%s: kind %s is not one of the mixed kinds", t.ID, t.ID.Kind)
		return out
	}
	var ri dynamic.ResourceInterface = c.Resource(k.gvr())
	if ns := t.ID.Namespace(); ns != "" {
		ri = c.Resource(k.gvr()).Namespace(ns)
	}
	opts := metav1.PatchOptions{FieldManager: driftgen.FieldManager}
	var err error
	switch a {
	case driftgen.ActionDelete:
		err = ri.Delete(ctx, t.ID.Name(), metav1.DeleteOptions{})
	case driftgen.ActionEdit:
		_, err = ri.Patch(ctx, t.ID.Name(), types.MergePatchType, []byte(k.edit), opts)
	case driftgen.ActionUnlabel:
		_, err = ri.Patch(ctx, t.ID.Name(), types.MergePatchType, []byte(`{"metadata":{"labels":{"`+kubeobj.ManagedByLabel+`":null}}}`), opts)
	default:
		err = fmt.Errorf("action %q does not apply to %s", a, k.kind)
	}
	if err != nil {
		out.Err = fmt.Errorf("%s %s: %w", a, t.ID, err)
	}
	return out
}

// mixedFloorKinds returns the resources the raw watch of --mode mixed
// watches in its namespace, by NodeID slug: every drifted kind.
func mixedFloorKinds() map[hub.Kind]schema.GroupVersionResource {
	out := map[hub.Kind]schema.GroupVersionResource{}
	for _, k := range mixedKinds() {
		out[k.slug()] = k.gvr()
	}
	return out
}

// kindCount is how many managed objects of one kind a cluster has.
type kindCount struct {
	// Kind is the NodeID slug (statefulset.apps).
	Kind string `json:"kind"`
	// N is the number of objects.
	N int `json:"n"`
}

// kindCounts returns m as kindCounts sorted by kind.
func kindCounts(m map[hub.Kind]int) []kindCount {
	out := make([]kindCount, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, kindCount{Kind: string(k), N: m[k]})
	}
	return out
}
