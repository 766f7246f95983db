package deploy

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// namespace is the namespace of the base.
const namespace = "driftwatch"

// manifests is the base built with kustomize.
type manifests struct {
	yaml []byte
	objs []*unstructured.Unstructured
}

// kustomizations are the folders of this package that kustomize builds.
func kustomizations() []string { return []string{"base", "overlays/example"} }

// build runs `kubectl kustomize dir` with the kubectl of the control-plane
// binaries and decodes its output.
func build(t *testing.T, dir string) manifests {
	t.Helper()
	kubectl := filepath.Join(lctest.BinDir(t), "kubectl")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	m := manifests{yaml: out}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode kustomize output: %v", err)
		}
		if len(u.Object) > 0 {
			m.objs = append(m.objs, &u)
		}
	}
	return m
}

// one returns the only object of kind, converted to out.
func (m manifests) one(t *testing.T, kind string, out any) *unstructured.Unstructured {
	t.Helper()
	var found *unstructured.Unstructured
	for _, o := range m.objs {
		if o.GetKind() == kind {
			if found != nil {
				t.Fatalf("two %s objects: %s and %s", kind, found.GetName(), o.GetName())
			}
			found = o
		}
	}
	if found == nil {
		t.Fatalf("no %s in the base", kind)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(found.Object, out); err != nil {
		t.Fatalf("%s %s: %v", kind, found.GetName(), err)
	}
	return found
}

// flag returns the value of --name=value in args.
func flag(t *testing.T, args []string, name string) string {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	t.Fatalf("container args %v: no --%s=", args, name)
	return ""
}

// mountOf returns the volume mounted at the folder holding file, and the
// file's name in it.
func mountOf(t *testing.T, c corev1.Container, vols []corev1.Volume, file string) (corev1.Volume, string) {
	t.Helper()
	dir, name := path.Split(file)
	for _, vm := range c.VolumeMounts {
		if strings.TrimSuffix(dir, "/") == vm.MountPath {
			if !vm.ReadOnly {
				t.Errorf("mount %s of %s is writable", vm.MountPath, file)
			}
			for _, v := range vols {
				if v.Name == vm.Name {
					return v, name
				}
			}
			t.Fatalf("mount %s: no volume %s", vm.MountPath, vm.Name)
		}
	}
	t.Fatalf("%s: no volume mounted at %s", file, dir)
	return corev1.Volume{}, ""
}

// TestManifests checks the built base and overlays without a cluster: what
// they contain, least-privilege RBAC, a hardened Pod, probes on the probe
// listener, and a config that parses and points at the mounted files.
func TestManifests(t *testing.T) {
	for _, dir := range kustomizations() {
		t.Run(dir, func(t *testing.T) { checkManifests(t, build(t, dir)) })
	}
}

// checkManifests checks one built kustomization.
func checkManifests(t *testing.T, m manifests) {

	var kinds []string
	for _, o := range m.objs {
		kinds = append(kinds, o.GetKind())
		if o.GetKind() == "Namespace" {
			if o.GetName() != namespace {
				t.Errorf("namespace %s, want %s", o.GetName(), namespace)
			}
			continue
		}
		if o.GetNamespace() != namespace {
			t.Errorf("%s %s is in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), namespace)
		}
	}
	slices.Sort(kinds)
	want := []string{"ConfigMap", "Deployment", "Namespace", "PodDisruptionBudget", "Role", "RoleBinding", "Service", "ServiceAccount"}
	if !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v (nothing cluster-wide but the Namespace)", kinds, want)
	}

	t.Run("rbac", func(t *testing.T) {
		var role rbacv1.Role
		m.one(t, "Role", &role)
		allowed := map[string][]string{
			"coordination.k8s.io/leases": {"create", "delete", "get", "list", "update", "watch"},
			"/configmaps":                {"create", "delete", "get", "list", "patch"},
		}
		seen := map[string]bool{}
		for _, r := range role.Rules {
			if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
				t.Errorf("rule %+v: unexpected resourceNames or nonResourceURLs", r)
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					key := g + "/" + res
					verbs := slices.Sorted(slices.Values(r.Verbs))
					if want, ok := allowed[key]; !ok || !slices.Equal(verbs, want) {
						t.Errorf("role grants %v on %s, want exactly %v", verbs, key, want)
					}
					seen[key] = true
				}
			}
		}
		for key := range allowed {
			if !seen[key] {
				t.Errorf("role grants nothing on %s", key)
			}
		}
		var rb rbacv1.RoleBinding
		m.one(t, "RoleBinding", &rb)
		var sa corev1.ServiceAccount
		m.one(t, "ServiceAccount", &sa)
		if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name {
			t.Errorf("role binding refers to %s %s, want Role %s", rb.RoleRef.Kind, rb.RoleRef.Name, role.Name)
		}
		wantSubj := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: namespace}}
		if !slices.Equal(rb.Subjects, wantSubj) {
			t.Errorf("role binding subjects %+v, want %+v", rb.Subjects, wantSubj)
		}
	})

	var dep appsv1.Deployment
	m.one(t, "Deployment", &dep)
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("%d containers and %d init containers, want one container", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]

	t.Run("deployment", func(t *testing.T) {
		var sa corev1.ServiceAccount
		m.one(t, "ServiceAccount", &sa)
		if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 3 {
			t.Errorf("replicas %v, want 3", dep.Spec.Replicas)
		}
		// A config change replaces every replica at once: new Pods that
		// old owners refuse are never ready, so a rolling update of one
		// would never finish.
		if dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("strategy %q, want Recreate", dep.Spec.Strategy.Type)
		}
		if pod.ServiceAccountName != sa.Name {
			t.Errorf("serviceAccountName %q, want %q", pod.ServiceAccountName, sa.Name)
		}
		psc := pod.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
			t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", psc)
		}
		sc := c.SecurityContext
		switch {
		case sc == nil:
			t.Fatal("container has no securityContext")
		case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Error("root filesystem not read-only")
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Error("privilege escalation allowed")
		case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
			t.Error("container runAsNonRoot not set")
		case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
			t.Errorf("capabilities %+v, want drop ALL and add none", sc.Capabilities)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
				t.Errorf("no %s request", r)
			}
		}

		// Probes on the probe listener, the API on its own port.
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		portOf := func(listen string) int32 {
			_, p, ok := strings.Cut(listen, ":")
			if !ok {
				t.Fatalf("listen address %q has no port", listen)
			}
			for _, n := range ports {
				if p == strconv.Itoa(int(n)) {
					return n
				}
			}
			t.Fatalf("listen address %q: no container port %s", listen, p)
			return 0
		}
		probePort := portOf(flag(t, c.Args, "probe-listen"))
		apiPort := portOf(flag(t, c.Args, "listen"))
		if probePort == apiPort {
			t.Errorf("probe and API listeners share port %d", apiPort)
		}
		for _, p := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{
			{"liveness", c.LivenessProbe, "/healthz"},
			{"readiness", c.ReadinessProbe, "/readyz"},
			{"startup", c.StartupProbe, "/healthz"},
		} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("no %s HTTP probe", p.name)
				continue
			}
			g := p.probe.HTTPGet
			n := g.Port.IntVal
			if g.Port.Type == intstr.String {
				n = ports[g.Port.StrVal]
			}
			if g.Path != p.path || n != probePort {
				t.Errorf("%s probe %s on port %v (%d), want %s on the probe port %d", p.name, g.Path, g.Port.String(), n, p.path, probePort)
			}
		}

		// The replica id from the downward API.
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_NAME" })
		if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil || c.Env[i].ValueFrom.FieldRef.FieldPath != "metadata.name" {
			t.Error("no POD_NAME from metadata.name")
		}

		// Token and TLS files from Secrets, not readable by others.
		for _, f := range []string{"token-file", "tls-cert-file", "tls-key-file"} {
			v, _ := mountOf(t, c, pod.Volumes, flag(t, c.Args, f))
			if v.Secret == nil {
				t.Errorf("--%s: volume %s is not a Secret", f, v.Name)
			} else if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode&0o037 != 0 {
				t.Errorf("--%s: Secret volume %s mode %v: group may only read, others nothing", f, v.Name, v.Secret.DefaultMode)
			}
		}

		// Service and PodDisruptionBudget select the Pods; the Service
		// targets named container ports.
		pl := dep.Spec.Template.Labels
		var svc corev1.Service
		m.one(t, "Service", &svc)
		for k, v := range svc.Spec.Selector {
			if pl[k] != v {
				t.Errorf("service selector %s=%s does not match the pod labels %v", k, v, pl)
			}
		}
		for _, p := range svc.Spec.Ports {
			if _, ok := ports[p.TargetPort.StrVal]; !ok {
				t.Errorf("service port %s targets %s, not a named container port", p.Name, p.TargetPort.String())
			}
		}
		var pdb policyv1.PodDisruptionBudget
		m.one(t, "PodDisruptionBudget", &pdb)
		if pdb.Spec.Selector == nil || !slices.Equal(sortedPairs(pdb.Spec.Selector.MatchLabels), sortedPairs(dep.Spec.Selector.MatchLabels)) {
			t.Errorf("PDB selector %v, want the Deployment's %v", pdb.Spec.Selector, dep.Spec.Selector.MatchLabels)
		}
		if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
			t.Errorf("PDB maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
		}
	})

	t.Run("config", func(t *testing.T) {
		file := flag(t, c.Args, "file")
		v, key := mountOf(t, c, pod.Volumes, file)
		var cm corev1.ConfigMap
		m.one(t, "ConfigMap", &cm)
		if v.ConfigMap == nil || v.ConfigMap.Name != cm.Name {
			t.Fatalf("--file %s: volume %s is not the ConfigMap %s", file, v.Name, cm.Name)
		}
		data, ok := cm.Data[key]
		if !ok {
			t.Fatalf("ConfigMap %s has no key %s", cm.Name, key)
		}
		cfg, err := config.Parse(file, []byte(data), config.LoadOptions{Getenv: func(string) string { return "" }, HomeDir: "/nonexistent"})
		if err != nil {
			t.Fatalf("config in ConfigMap %s key %s:\n%v", cm.Name, key, err)
		}
		if len(cfg.Clusters) == 0 {
			t.Fatal("config has no cluster")
		}
		for _, cl := range cfg.Clusters {
			kv, kkey := mountOf(t, c, pod.Volumes, cl.Kubeconfig)
			if kv.Secret == nil {
				t.Errorf("cluster %s: kubeconfig %s is not on a Secret volume", cl.ID, cl.Kubeconfig)
			}
			if kkey != cl.ID {
				t.Errorf("cluster %s: kubeconfig key %s, want the cluster id", cl.ID, kkey)
			}
		}
		// The coordination namespace is the one the Role grants.
		if !regexp.MustCompile(`(?m)^\s+namespace: ` + namespace + `\b`).MatchString(data) {
			t.Errorf("config does not put coordination in namespace %s", namespace)
		}
	})
}

func sortedPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// TestManifestsServerDryRun applies every object of the base with
// server-side dry-run to a real control plane (the namespace is created
// for real first), creates a Pod from the Deployment's template with
// dry-run in the namespace that enforces the restricted Pod Security
// Standard, runs the README's `kubectl apply -k` command with
// --dry-run=server, and checks on the real authorizer what the service
// account may and may not do.
func TestManifestsServerDryRun(t *testing.T) {
	m := build(t, "base")
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	cfg := lc.RESTConfig()
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	ctx := t.Context()

	var ns corev1.Namespace
	m.one(t, "Namespace", &ns)
	ns.ResourceVersion = ""
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}

	apply := func(o *unstructured.Unstructured, dryRun bool) error {
		gvk := o.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return err
		}
		body, err := o.MarshalJSON()
		if err != nil {
			return err
		}
		opts := metav1.PatchOptions{FieldManager: "deploy-test", Force: ptr(true)}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if o.GetNamespace() != "" {
			ri = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
		}
		_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, body, opts)
		return err
	}
	for _, o := range m.objs {
		if err := apply(o, true); err != nil {
			t.Errorf("server-side dry-run apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}

	// A Pod of the template passes the restricted Pod Security Standard the
	// namespace enforces.
	var dep appsv1.Deployment
	m.one(t, "Deployment", &dep)
	podObj := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "driftwatch-dry-run", Namespace: namespace, Labels: dep.Spec.Template.Labels},
		Spec:       dep.Spec.Template.Spec,
	}
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, podObj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("dry-run create of a Pod from the template in namespace %s: %v", namespace, err)
	}
	// The check can fail: a root Pod is refused there.
	rootPod := podObj.DeepCopy()
	rootPod.Spec.SecurityContext.RunAsNonRoot = ptr(false)
	rootPod.Spec.SecurityContext.RunAsUser = ptr(int64(0))
	rootPod.Spec.Containers[0].SecurityContext.RunAsNonRoot = nil
	if _, err := cs.CoreV1().Pods(namespace).Create(ctx, rootPod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Errorf("dry-run create of a root Pod = %v, want refused by the restricted policy", err)
	}

	// The README's command.
	kubectl := filepath.Join(lctest.BinDir(t), "kubectl")
	cmdCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, dir := range kustomizations() {
		out, err := exec.CommandContext(cmdCtx, kubectl, "--kubeconfig", lc.Kubeconfig, "apply", "-k", dir, "--server-side", "--dry-run=server").CombinedOutput()
		if err != nil {
			t.Errorf("kubectl apply -k %s --server-side --dry-run=server: %v\n%s", dir, err, out)
		} else if n := strings.Count(string(out), "serverside-applied (server dry run)"); n != len(m.objs) {
			t.Errorf("kubectl apply -k %s: %d objects applied, want %d:\n%s", dir, n, len(m.objs), out)
		}
	}

	// RBAC on the real authorizer: apply the account, role and binding for
	// real and ask what the account may do.
	for _, o := range m.objs {
		switch o.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding":
			if err := apply(o, false); err != nil {
				t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	var sa corev1.ServiceAccount
	m.one(t, "ServiceAccount", &sa)
	user := "system:serviceaccount:" + namespace + ":" + sa.Name
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	for _, tt := range []struct {
		group, resource, verb, ns string
		want                      bool
	}{
		{"coordination.k8s.io", "leases", "create", namespace, true},
		{"coordination.k8s.io", "leases", "update", namespace, true},
		{"coordination.k8s.io", "leases", "watch", namespace, true},
		{"", "configmaps", "patch", namespace, true},
		{"", "configmaps", "list", namespace, true},
		{"coordination.k8s.io", "leases", "list", "", false},
		{"coordination.k8s.io", "leases", "create", "kube-system", false},
		{"", "configmaps", "get", "default", false},
		{"", "configmaps", "update", namespace, false},
		{"", "secrets", "get", namespace, false},
		{"", "secrets", "list", "", false},
		{"", "pods", "list", namespace, false},
		{"", "nodes", "list", "", false},
		{"apps", "deployments", "create", namespace, false},
		{"rbac.authorization.k8s.io", "roles", "escalate", namespace, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: tt.group, Resource: tt.resource, Verb: tt.verb, Namespace: tt.ns},
		}}
		// The authorizer learns of the binding just applied through its own
		// informers, so a grant is asked again until it shows (the first
		// answers can come before the binding reached its cache); a refusal
		// is asked once, after the grants have shown.
		var got *authorizationv1.SubjectAccessReview
		for deadline := time.Now().Add(30 * time.Second); ; {
			var err error
			got, err = cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("subject access review: %v", err)
			}
			if got.Status.Allowed == tt.want || !tt.want || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got.Status.Allowed != tt.want {
			t.Errorf("%s %s.%s in namespace %q: allowed %v, want %v", tt.verb, tt.resource, tt.group, tt.ns, got.Status.Allowed, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestStaticBuild runs the Dockerfile's build command and checks that the
// binary is static (no program interpreter, no shared library) and runs;
// and that the Dockerfile uses that command on a distroless nonroot base,
// with the config path the Deployment mounts.
func TestStaticBuild(t *testing.T) {
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := string(df)
	for _, want := range []string{
		"\nRUN scripts/build-static.sh /out/driftwatch \"${VERSION}\"\n",
		"\nFROM gcr.io/distroless/static:nonroot\n",
		"\nUSER nonroot:nonroot\n",
		"\nENTRYPOINT [\"/driftwatch\", \"serve\"]\n",
		"\nCMD [\"--file\", \"/etc/driftwatch/config/driftwatch.yaml\"]\n",
	} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("Dockerfile has no line %q", strings.TrimSpace(want))
		}
	}
	script, err := os.ReadFile("../scripts/build-static.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "CGO_ENABLED=0 go build ") {
		t.Error("scripts/build-static.sh does not build with CGO_ENABLED=0")
	}

	bin := filepath.Join(t.TempDir(), "driftwatch")
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../scripts/build-static.sh", bin, "v0.0.0-test")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1") // the script must turn it off itself
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/build-static.sh: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("binary has a program interpreter (dynamically linked)")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("binary imports shared libraries %v (%v)", libs, err)
	}
	out, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "v0.0.0-test") {
		t.Errorf("driftwatch version = %q, %v; want the stamped version", out, err)
	}
}
