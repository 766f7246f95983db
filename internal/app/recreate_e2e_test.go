package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// TestImmutableChangeRecreated: a source's new commit changes a
// Deployment's selector and a Job's template, which the apiserver keeps
// immutable. Without recreate the repairs fail, naming the field and how to
// allow the recreation, and the objects stay as they were; with
// `recreate: true` on the source each is deleted in the foreground (its
// pods first) and created anew with the new spec, then in sync.
func TestImmutableChangeRecreated(t *testing.T) {
	f := newSourceFixture(t)
	lc := f.lc
	write := func(sel, arg string) {
		t.Helper()
		f.manifest(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 1
  selector: {matchLabels: {app: `+sel+`}}
  template:
    metadata: {labels: {app: `+sel+`}}
    spec:
      containers: [{name: c, image: nginx}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, args: [`+arg+`]}]
`)
	}
	config := func(recreate bool) string {
		return f.config(t, "imm", fmt.Sprintf("    recreate: %v\n", recreate))
	}
	write("v1", "v1")
	a := startApp(t, config(false), nil)
	a.waitSnap(t, 60*time.Second, "every object created and in sync", allInSync(2))
	ctx := t.Context()
	c := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	api := hub.NewNodeID(lc.Name, "imm", "api", hub.KindDeployment)
	job := hub.NewNodeID(lc.Name, "imm", "migrate", "job.batch")
	uids := func() (string, string) {
		t.Helper()
		d, err := c.AppsV1().Deployments("imm").Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j, err := c.BatchV1().Jobs("imm").Get(ctx, "migrate", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(d.UID), string(j.UID)
	}
	apiUID, jobUID := uids()

	write("v2", "v2")
	if err := a.Reload(false); err != nil {
		t.Fatal(err)
	}
	a.waitSnap(t, 30*time.Second, "both repairs failing, naming the field and how to allow the recreation", func(s *hub.Snapshot) bool {
		for id, field := range map[hub.NodeID]string{api: "spec.selector", job: "spec.template"} {
			n, ok := s.Node(id)
			if !ok || n.Status != hub.StatusFailed || !strings.Contains(n.Reason, field) || !strings.Contains(n.Reason, "recreate: true") {
				return false
			}
		}
		return true
	})
	if a2, j2 := uids(); a2 != apiUID || j2 != jobUID {
		t.Fatal("an object was recreated without recreate")
	}

	t0 := time.Now()
	config(true)
	if err := a.Reload(false); err != nil {
		t.Fatal(err)
	}
	s := a.waitSnap(t, 60*time.Second, "both recreated and in sync", func(s *hub.Snapshot) bool {
		return repairedAfter(api, t0)(s) && repairedAfter(job, t0)(s) && allInSync(2)(s)
	})
	var recreated []string
	for _, e := range s.Feed {
		if e.Action == "recreate" {
			recreated = append(recreated, e.ID.String())
		}
	}
	if len(recreated) != 2 {
		t.Errorf("feed lines of recreations: %v, want one for each", recreated)
	}
	a2, j2 := uids()
	if a2 == apiUID || j2 == jobUID {
		t.Errorf("not recreated: uids %s %s, were %s %s", a2, j2, apiUID, jobUID)
	}
	testwait.For(t, 30*time.Second, "the new spec in force", func() error {
		d, err := c.AppsV1().Deployments("imm").Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		j, err := c.BatchV1().Jobs("imm").Get(ctx, "migrate", metav1.GetOptions{})
		if err != nil {
			return err
		}
		return testwait.Check(d.Spec.Selector.MatchLabels["app"] == "v2" && j.Spec.Template.Spec.Containers[0].Args[0] == "v2",
			"selector %v, args %v", d.Spec.Selector.MatchLabels, j.Spec.Template.Spec.Containers[0].Args)
	})
}
