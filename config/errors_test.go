package config

import (
	"errors"
	"strings"
	"testing"
)

// testOptions expands ~ and environment variables hermetically.
func testOptions() LoadOptions {
	env := map[string]string{"KUBE_DIR": "/etc/kube", "CLUSTER": "prod-eu"}
	return LoadOptions{Getenv: func(k string) string { return env[k] }, HomeDir: "/home/ops"}
}

// parseErrors parses src as config.yaml and returns its ErrorList.
func parseErrors(t *testing.T, src string) ErrorList {
	t.Helper()
	cfg, err := Parse("config.yaml", []byte(src), testOptions())
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Parse error = %v (%T), want an ErrorList", err, err)
	}
	if cfg != nil {
		t.Errorf("Parse returned a config along with errors")
	}
	return list
}

// TestValidationErrors has one case per class of problem; the golden file of
// each holds the exact error output.
func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
	}{
		{name: "syntax", src: "hub:\n  id: [a, b\nclusters: []\n"},
		{name: "tab-indent", src: "hub:\n\tid: x\n"},
		{name: "empty", src: "# nothing but a comment\n"},
		{name: "not-a-mapping", src: "- hub\n- clusters\n"},
		{name: "two-documents", src: "hub: {id: a}\n---\nhub: {id: b}\n"},
		{name: "unknown-fields", src: `hub:
  workerz: 3
  colour: blue
clusters:
  - id: a
    kubeconfig: k
    label: {env: prod}
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
    replica: 2
    Port: 80
    service: {prot: 80}
    resources: {request: {cpu: 1m}}
clustrs: []
`},
		{name: "duplicate-keys", src: `hub:
  id: a
  id: b
clusters: []
clusters: []
`},
		{name: "type-errors", src: `hub:
  resync: 300
  qps: fast
  workers: 2.5
clusters:
  - id: a
    kubeconfig: [k]
    namespaces: ns
    labels: [env, prod]
applications:
  - id: x
    namespace: ns
    clusters: a
    image: {name: nginx}
    replicas: "three"
    port: true
    env: {A: [1]}
    service: 80
`},
		{name: "not-lists", src: "clusters: {id: a}\napplications: app\n"},
		{name: "missing-required", src: `clusters:
  - labels: {env: prod}
applications:
  - replicas: 2
`},
		{name: "empty-values", src: `clusters:
  - id: ""
    kubeconfig:
applications:
  - id: x
    namespace: ~
    clusters: [a, ~]
    image: ""
`},
		{name: "invalid-names", src: `hub:
  id: My_Hub
clusters:
  - id: Prod_EU
    kubeconfig: k
    namespaces: [casehub, Case.Hub]
  - id: prod:eu
    kubeconfig: k
applications:
  - id: inventory.v2
    namespace: "-ns"
    clusters: [Prod_EU]
    image: nginx
  - id: 1app
    namespace: ns
    clusters: [Prod_EU]
    image: nginx
    port: 80
  - id: a-very-long-application-name-that-goes-on-and-on-past-sixty-three
    namespace: ns
    clusters: [Prod_EU]
    image: "nginx latest"
`},
		{name: "duplicate-ids", src: `clusters:
  - id: a
    kubeconfig: k
  - id: b
    kubeconfig: k
  - id: a
    kubeconfig: k2
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
  - id: x
    namespace: other
    clusters: [b]
    image: nginx
`},
		{name: "cluster-references", src: `clusters:
  - id: prod-eu
    kubeconfig: k
  - id: prod-us
    kubeconfig: k
applications:
  - id: x
    namespace: ns
    clusters: [prod-eu, prod-ue, staging, prod-eu]
    image: nginx
  - id: y
    namespace: ns
    clusters: []
    image: nginx
`},
		{name: "targets", src: `clusters:
  - id: a
    kubeconfig: k
    labels: {env: prod}
applications:
  - id: both
    namespace: ns
    clusters: [a]
    selector: env=prod
    image: nginx
  - id: neither
    namespace: ns
    image: nginx
  - id: bad-selector
    namespace: ns
    selector: "env in (prod"
    image: nginx
  - id: no-match
    namespace: ns
    selector: env=staging,region=eu
    image: nginx
  - id: empty-selector
    namespace: ns
    selector: ""
    image: nginx
`},
		{name: "namespaces", src: `clusters:
  - id: a
    kubeconfig: k
    labels: {env: prod}
    namespaces: [casehub, web]
  - id: b
    kubeconfig: k
    labels: {env: prod}
    namespaces: [casehub, casehub]
  - id: c
    kubeconfig: k
    labels: {env: prod}
applications:
  - id: x
    namespace: billing
    selector: env=prod
    image: nginx
  - id: y
    namespace: web
    clusters: [a, b, c]
    image: nginx
`},
		{name: "policies", src: `hub:
  policy: Repair
clusters:
  - id: a
    kubeconfig: k
    policy: ignore
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
    policy: wran
`},
		{name: "durations", src: `hub:
  resync: 5 minutes
  decommissionTimeout: -2m
clusters: []
`},
		{name: "numbers", src: `hub:
  qps: 0
  burst: 0
  workers: 0
clusters:
  - id: a
    kubeconfig: k
    qps: -1
    burst: 99999999999
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
    replicas: -1
    port: 0
    progressDeadlineSeconds: 0
`},
		{name: "quantities", src: `clusters:
  - id: a
    kubeconfig: k
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
    resources:
      requests: {cpu: 2, memory: 12 GB, mem: 1Gi, gpu: 1}
      limits: {cpu: 1, memory: -1Gi, example.com/gpu: 1}
`},
		{name: "labels-annotations", src: `clusters:
  - id: a
    kubeconfig: k
    labels: {"bad key": prod, region: "eu west", example.com/tier: "1"}
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
    labels: {app: other, app.kubernetes.io/managed-by: me, driftwatch.io/team: t, team: "-core"}
    annotations: {driftwatch.io/node-id: x, "a b": c, example.com/ok: fine}
    nodeSelector: {disk: "s s d"}
`},
		{name: "env-config", src: `clusters:
  - id: a
    kubeconfig: k
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
    env: {1BAD: x, "A=B": y, GOOD: z}
    config: {"a/b": x, ok.key: y}
`},
		{name: "secret-env", src: `clusters:
  - id: a
    kubeconfig: k
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
    env: {MODE: prod, DB_PASSWORD: hunter2}
    secretEnv:
      DB_PASSWORD: db/password
      1BAD: db/password
      NO_SLASH: db-password
      EMPTY:
      NO_NAME: /password
      NO_KEY: "db/"
      BAD_NAME: Db_Creds/password
      BAD_KEY: db/pass:word
      TWO_SLASHES: db/pass/word
      BOTH_BAD: -db/..
      GOOD: db-credentials.v1/password_2
  - id: y
    namespace: ns
    clusters: [a]
    image: nginx
    secretEnv: [DB_PASSWORD]
  - id: z
    namespace: ns
    clusters: [a]
    image: nginx
    secretEnv: {TOKEN: {secret: api, key: token}}
    secretenv: {}
`},
		{name: "service", src: `clusters:
  - id: a
    kubeconfig: k
applications:
  - id: no-port
    namespace: ns
    clusters: [a]
    image: nginx
    service: {type: clusterip}
  - id: bad-ports
    namespace: ns
    clusters: [a]
    image: nginx
    port: 8080
    service: {port: 70000, targetPort: 0, type: ExternalName}
`},
		{name: "kubeconfig-paths", src: `clusters:
  - id: a
    kubeconfig: ${UNSET_DIR}/config
  - id: b
    kubeconfig: ~other/.kube/config
  - id: c
    kubeconfig: $UNSET_A/$UNSET_B
`},
		{name: "tenancy", src: `clusters:
  - id: a
    kubeconfig: k
applications:
  - id: x
    tenancy: "acme:eu:"
    namespace: ns
    clusters: [a]
    image: nginx
  - id: y
    tenancy: "acme corp"
    namespace: ns
    clusters: [a]
    image: nginx
`},
		{name: "aliases", src: `clusters:
  - id: a
    kubeconfig: k
    labels: *missing
applications:
  - <<: *nope
    id: x
  - <<: 3
    id: y
    namespace: ns
    clusters: [a]
    image: nginx
`},
		{name: "alias-self", src: `hub: &h {<<: [*h, *h], id: *h}
x: &a {k: 1}
y: &b {<<: [*a, *a]}
applications: [{<<: *b}]
`},
		{name: "alias-recursion", src: `hub: &h {<<: [*h, *h], id: *h}
x: &a {k: 1}
y: &b {<<: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]}
z: &c {<<: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]}
w: &d {<<: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]}
v: &e {<<: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]}
applications: [{<<: *e}]
`},
		{name: "managed-by", src: "hub:\n  managedBy: \"drift watch\"\nclusters: []\n"},
		{name: "no-clusters", src: "hub:\n  id: lonely\napplications: []\n"},
		{name: "no-clusters-empty-lists", src: "clusters:\nclusterAPI: []\n"},
		{name: "clusterapi-fields", src: `clusterAPI:
  - name: Mgmt_1
    kubeconfig: ${UNSET_DIR}/mgmt.yaml
    context: [admin]
    namespaces: [fleet, Fleet, fleet]
    selector: "tier in (gold"
    labels: {"bad key": x, env: "a b"}
    policy: fix
    idTemplte: "{{.Name}}"
  - kubeconfig: ""
    namespaces: fleet
  - name: ok
    kubeconfig: k
    selector: 3
    labels: [env]
clusterApi: []
`},
		{name: "clusterapi-names", src: `clusters:
  - id: prod-eu
    kubeconfig: k
clusterAPI:
  - name: mgmt
    kubeconfig: k
  - name: prod-eu
    kubeconfig: k
  - name: mgmt
    kubeconfig: k
`},
		{name: "clusterapi-id-templates", src: `clusterAPI:
  - {name: a, kubeconfig: k, idTemplate: "{{.Name"}
  - {name: b, kubeconfig: k, idTemplate: "{{.Cluster}}-{{.Name}}"}
  - {name: c, kubeconfig: k, idTemplate: "{{upper .Name}}"}
  - {name: d, kubeconfig: k, idTemplate: "{{.Namespace}}/{{.Name}}"}
  - {name: e, kubeconfig: k, idTemplate: "{{if false}}{{.Name}}{{end}}"}
  - {name: f, kubeconfig: k, idTemplate: ""}
  - {name: g, kubeconfig: k, idTemplate: "Capi-{{.Name}}"}
  - {name: h, kubeconfig: k, idTemplate: "{{range 1000000000}}{{$.Name}}{{end}}"}
`},
		{name: "clusterapi-targets", src: `clusters:
  - id: a
    kubeconfig: k
    labels: {env: prod}
clusterAPI:
  - name: mgmt
    kubeconfig: k
    labels: {source: capi}
applications:
  - id: discovered
    namespace: ns
    selector: env=staging
    image: nginx
  - id: listed
    namespace: ns
    clusters: [a, mgmt, b]
    image: nginx
  - id: bad-selector
    namespace: ns
    selector: "source in (capi"
    image: nginx
`},
		{name: "hub-safety", src: `hub:
  pruneLimit: 0
  stateFile: ""
  prunelimit: 5
clusters:
  - id: a
    kubeconfig: /k
    stateFile: /tmp/x
`},
		{name: "hub-safety-types", src: `hub:
  pruneLimit: many
  stateFile: ~other/state.db
clusters:
  - id: a
    kubeconfig: /k
`},
		{name: "hub-state-env", src: `hub:
  stateFile: ${STATE_DIR}/hub.db
  pruneLimit: -3
clusters:
  - id: a
    kubeconfig: /k
`},
		{name: "ignore-rules", src: `hub:
  ignore:
    - name: nothing
    - paths: [/spec//replicas, "containers[app"]
      kinds: [Pod, apps/StatefulSet, StatefulSet.apps]
clusters:
  - id: a
    kubeconfig: /k
applications:
  - id: x
    namespace: ns
    clusters: [a]
    image: nginx
    ignore:
      - managers: [""]
      - paths: /spec/replicas
      - pathz: [/spec/replicas]
`},
		{name: "not-a-list-clusterapi", src: "clusterAPI: {name: mgmt}\napplications:\n  - {id: x, namespace: ns, selector: env=prod, image: nginx}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := parseErrors(t, tt.src)
			if len(list) == 0 {
				t.Fatal("no errors")
			}
			for _, e := range list {
				if e.Line == 0 || e.Column == 0 {
					t.Errorf("error without a position: %v", e)
				}
			}
			golden(t, "errors/"+tt.name+".golden", []byte(list.Error()+"\n"))
		})
	}
}

// TestTenMistakes checks that a config with ten different mistakes reports
// all ten, each at the right line and column.
func TestTenMistakes(t *testing.T) {
	src := `hub:
  resync: soon
  workerz: 4
clusters:
  - id: prod-eu
    kubeconfig: ~/.kube/prod.yaml
    labels: {env: prod}
    namespaces: [casehub]
  - id: prod-eu
    kubeconfig: ~/.kube/other.yaml
applications:
  - id: inventory
    namespace: billing
    clusters: [prod-eu, prod-xx]
    image: nginx:1.27
    replicas: three
  - id: web
    namespace: casehub
    selector: env=staging
    image: nginx
    policy: fix
    resources: {requests: {cpu: lots}}
  - id: Web_2
    namespace: casehub
    clusters: [prod-eu]
    image: nginx
`
	want := []struct {
		line, col int
		field     string
		msg       string
	}{
		{2, 11, "hub.resync", "invalid duration"},
		{3, 3, "hub.workerz", `did you mean "workers"?`},
		{9, 9, "clusters[1].id", "duplicate cluster id"},
		{13, 16, "applications[0].namespace", `not managed on cluster "prod-eu"`},
		{14, 25, "applications[0].clusters[1]", `unknown cluster "prod-xx"`},
		{16, 15, "applications[0].replicas", "want an integer"},
		{19, 15, "applications[1].selector", "matches no cluster"},
		{21, 13, "applications[1].policy", "invalid policy"},
		{22, 33, "applications[1].resources.requests[cpu]", "invalid quantity"},
		{23, 9, "applications[2].id", "invalid name"},
	}
	list := parseErrors(t, src)
	if len(list) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(list), len(want), list)
	}
	for _, w := range want {
		var got *Error
		for _, e := range list {
			if e.Field == w.field {
				got = e
			}
		}
		if got == nil {
			t.Errorf("no error for %s; got:\n%v", w.field, list)
			continue
		}
		if got.Line != w.line || got.Column != w.col || !strings.Contains(got.Msg, w.msg) || got.File != "config.yaml" {
			t.Errorf("error for %s = %v, want config.yaml:%d:%d and a message with %q", w.field, got, w.line, w.col, w.msg)
		}
	}
	for i := 1; i < len(list); i++ {
		a, b := list[i-1], list[i]
		if a.Line > b.Line || a.Line == b.Line && a.Column > b.Column {
			t.Errorf("errors not sorted by position: %v before %v", a, b)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "c.yaml", Line: 3, Column: 7, Field: "applications[2].service.port", Msg: "bad"}, "c.yaml:3:7: applications[2].service.port: bad"},
		{Error{File: "c.yaml", Line: 1, Column: 1, Msg: "config is empty"}, "c.yaml:1:1: config is empty"},
		{Error{Line: 2, Column: 4, Field: "hub", Msg: "bad"}, "2:4: hub: bad"},
		{Error{Field: "hub", Msg: "bad"}, "hub: bad"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
	list := ErrorList{&tests[0].err, &tests[1].err}
	if got, want := list.Error(), tests[0].want+"\n"+tests[1].want; got != want {
		t.Errorf("ErrorList.Error() = %q, want %q", got, want)
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"replicas", "namespace", "progressDeadlineSeconds", "port", "memory", "cpu"}
	tests := []struct{ in, want string }{
		{"replica", "replicas"},
		{"Replicas", "replicas"},
		{"namspace", "namespace"},
		{"progressDeadline", "progressDeadlineSeconds"},
		{"prot", "port"},
		{"mem", "memory"},
		{"colour", ""},
		{"x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := suggest(tt.in, known); got != tt.want {
				t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
