package diff

import (
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// TestDryRun: with Options.DryRun each drifted object's repair is sent to
// its apiserver as a dry run. On real control planes: a repair a
// ValidatingAdmissionPolicy denies, and a change to an immutable field,
// would fail (exit 5, the reasons shown); the same change on an object
// that allows its recreation, and an object whose namespace is missing,
// say what the repair would do first; an in-sync object is not asked, and
// without DryRun nothing is.
func TestDryRun(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c1 := f.clients["c1"]
	// A policy that refuses mode=prod in the web ConfigMap, as a
	// platform team's would; then someone sets another mode (allowed),
	// which the repair would set back (denied).
	policy := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "no-prod"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: new(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
			Validations: []admissionv1.Validation{{Expression: "!has(object.data) || !('mode' in object.data) || object.data.mode != 'prod'", Message: "mode prod is frozen"}},
		}}
	if _, err := c1.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "no-prod"},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "no-prod", ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}}}
	if _, err := c1.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the policy in force", func() error {
		cm, err := c1.CoreV1().ConfigMaps(f.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data["mode"] = "debug"
		if cm, err = c1.CoreV1().ConfigMaps(f.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
		cm.Data["mode"] = "prod"
		_, err = c1.CoreV1().ConfigMaps(f.ns).Update(ctx, cm, metav1.UpdateOptions{})
		return testwait.Check(err != nil && strings.Contains(err.Error(), "mode prod is frozen"), "mode prod: %v", err)
	})
	// A desired selector change (immutable) on c1's web Deployment, and
	// the same on c2's with its recreation allowed; a ConfigMap in a
	// namespace that does not exist.
	var specs []hub.NodeSpec
	for _, s := range f.specs {
		if s.Kind == hub.KindDeployment && s.Name == "web" {
			u, err := kubeobj.Object(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
				if err := unstructured.SetNestedField(u.Object, "v2", append(path, "track")...); err != nil {
					t.Fatal(err)
				}
			}
			if s.ID.Cluster == "c2" {
				a := u.GetAnnotations()
				a[kubeobj.RecreateAnnotation] = kubeobj.RecreateEnabled
				u.SetAnnotations(a)
			}
			s.Body = kubeobj.MustEncodeBody(u)
		}
		specs = append(specs, s)
		if s.Kind == hub.KindConfigMap && s.ID.Cluster == "c2" && s.Name == "web" {
			u, err := kubeobj.Object(s)
			if err != nil {
				t.Fatal(err)
			}
			u.SetNamespace("nowhere")
			a := u.GetAnnotations()
			id := hub.NewNodeID("c2", "nowhere", "web", hub.KindConfigMap)
			a[kubeobj.NodeIDAnnotation] = id.String()
			u.SetAnnotations(a)
			specs = append(specs, hub.NodeSpec{ID: id, Namespace: "nowhere", Name: "web", Kind: hub.KindConfigMap, Application: s.Application, Body: kubeobj.MustEncodeBody(u)})
		}
	}
	f.specs = specs
	for i := range f.cls {
		f.cls[i].Namespaces = append(f.cls[i].Namespaces, "nowhere")
	}

	rep := f.run(t, f.cls, Options{})
	for _, o := range rep.Objects {
		if o.WouldFail != nil || o.DryRunNote != "" {
			t.Errorf("without DryRun, %s was asked: %v %q", o.ID, o.WouldFail, o.DryRunNote)
		}
	}
	if got := rep.ExitCode(); got != ExitDrift {
		t.Errorf("without DryRun: exit %d, want %d", got, ExitDrift)
	}

	rep = f.run(t, f.cls, Options{DryRun: true})
	want := map[string]struct{ fail, note string }{
		"c1:" + f.ns + "/web:configmap":  {fail: "mode prod is frozen"},
		"c1:" + f.ns + "/web:deployment": {fail: "spec.selector"},
		"c2:" + f.ns + "/web:deployment": {note: "would be deleted and recreated"},
		"c2:nowhere/web:configmap":       {note: `its namespace "nowhere" would be created first`},
	}
	for _, o := range rep.Objects {
		w, ok := want[o.ID.String()]
		switch {
		case !ok:
			if o.WouldFail != nil || o.DryRunNote != "" {
				t.Errorf("%s (%s): %v %q, want nothing", o.ID, o.Class, o.WouldFail, o.DryRunNote)
			}
		case w.fail != "":
			if o.WouldFail == nil || !strings.Contains(o.WouldFail.Error(), w.fail) {
				t.Errorf("%s: would fail with %v, want %q", o.ID, o.WouldFail, w.fail)
			}
		default:
			if o.WouldFail != nil || !strings.Contains(o.DryRunNote, w.note) {
				t.Errorf("%s: %v %q, want the note %q", o.ID, o.WouldFail, o.DryRunNote, w.note)
			}
		}
		delete(want, o.ID.String())
	}
	if len(want) > 0 {
		t.Errorf("not in the report: %v", want)
	}
	if got := rep.ExitCode(); got != ExitWouldFail {
		t.Errorf("exit %d, want %d", got, ExitWouldFail)
	}
	out := text(t, rep)
	if !strings.Contains(out, "! dry run: the repair would fail: ") || !strings.Contains(out, "2 whose repair would fail (dry run)") {
		t.Errorf("text:\n%s", out)
	}
	// Nothing was written: the selector is the old one, the namespace
	// still missing.
	d, err := c1.AppsV1().Deployments(f.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Spec.Selector.MatchLabels["track"]; ok {
		t.Error("the dry run changed the selector")
	}
	if _, err := f.clients["c2"].CoreV1().Namespaces().Get(ctx, "nowhere", metav1.GetOptions{}); err == nil {
		t.Error("the dry run created the namespace")
	}
}
