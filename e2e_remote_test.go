package main

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/api"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// cliRun is one run of the command line in this process: its exit code,
// standard output and standard error.
type cliRun struct {
	code        int
	out, errOut string
}

// runCLI runs args with the token in $DRIFTWATCH_TOKEN.
func runCLI(t *testing.T, token string, args ...string) cliRun {
	t.Helper()
	return runCLIEnv(t, map[string]string{app.TokenEnv: token}, args...)
}

// runCLIEnv runs args in the environment env.
func runCLIEnv(t *testing.T, env map[string]string, args ...string) cliRun {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	var out, errOut strings.Builder
	code := exitCode(run(t.Context(), args, getenv, &out, &errOut), &errOut)
	return cliRun{code: code, out: out.String(), errOut: errOut.String()}
}

// testHubCommands: status, pause, resume, hold, release, repair and policy
// pull the hub's switches from a shell, against a serve on a real
// apiserver: a paused cluster leaves a deleted object deleted until a
// manual repair or the resume, a viewer may look but not act, unknown
// targets are named, and a hub that is not there is said so.
func testHubCommands(t *testing.T, path string, set *localcluster.Set) {
	s := startServe(t, path, t.TempDir(), "--token-file", writeTokenFile(t, 0o600))
	operator, err := api.NewClientWithOptions(s.api, api.ClientOptions{Token: e2eOperator})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(set.Clusters[0].RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cluster := set.Clusters[0].Name
	cm := hub.NewNodeID(cluster, "sec", "web", hub.KindConfigMap)
	snapshot := func() *hub.Snapshot {
		snap, err := operator.Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	waitFor := func(what string, ok func(*hub.Snapshot) bool) {
		t.Helper()
		testwait.For(t, 30*time.Second, what, func() error {
			snap, err := operator.Snapshot(t.Context())
			if err != nil {
				return testwait.Stop(err)
			}
			return testwait.Check(ok(snap), "not yet")
		})
	}
	status := func(n *hub.Snapshot, id hub.NodeID) hub.Status {
		for _, s := range n.Nodes {
			if s.ID == id {
				return s.Status
			}
		}
		return ""
	}
	waitFor("3 NodeIDs in sync", allInSync(3))
	hubArgs := func(args ...string) []string { return append(args, "--server", s.api) }

	// In sync: status says so, exit 0 also with --exit-code; a viewer may ask.
	r := runCLI(t, e2eViewer, hubArgs("status", "--exit-code")...)
	if r.code != 0 || !strings.Contains(r.out, "all clusters synced, every object in sync") || !regexp.MustCompile(`(?m)^`+cluster+` +synced +watch +3 +3 +0 +0 +0 +0 +0$`).MatchString(r.out) {
		t.Fatalf("status in sync: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	// $DRIFTWATCH_SERVER names the hub when --server does not.
	r = runCLIEnv(t, map[string]string{app.TokenEnv: e2eViewer, "DRIFTWATCH_SERVER": s.api}, "status")
	if r.code != 0 || !strings.Contains(r.out, "hub e2e at "+s.api) {
		t.Fatalf("status at $DRIFTWATCH_SERVER: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	// A viewer may not act; the refusal names the role.
	r = runCLI(t, e2eViewer, hubArgs("pause", cluster)...)
	if r.code != 1 || !strings.Contains(r.errOut, "operator") {
		t.Fatalf("pause with a viewer token: exit %d\n%s", r.code, r.errOut)
	}
	if snapshot().Clusters[0].Paused {
		t.Fatal("a viewer paused the cluster")
	}

	// Paused: a deleted object stays deleted and is listed; --exit-code fails.
	r = runCLI(t, e2eOperator, hubArgs("pause", cluster, "--reason", "INC-7: restore")...)
	if r.code != 0 || !strings.Contains(r.out, "cluster "+cluster+" paused") {
		t.Fatalf("pause: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if c := snapshot().Clusters[0]; !c.Paused || c.PausedBy != "alice" || c.PauseReason != "INC-7: restore" {
		t.Fatalf("cluster after pause --reason = %+v, want paused by alice (the token's name) with the reason", c)
	}
	if err := kc.CoreV1().ConfigMaps("sec").Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the deleted ConfigMap shown paused", func(n *hub.Snapshot) bool { return status(n, cm) == hub.StatusPaused })
	if exists(t, kc, cm) {
		t.Fatal("a paused cluster's deleted object came back")
	}
	r = runCLI(t, e2eViewer, hubArgs("status", "--exit-code")...)
	if r.code != 1 || !strings.Contains(r.out, "by alice: INC-7: restore") || !strings.Contains(r.out, "NEEDS ATTENTION (1)") || !strings.Contains(r.out, cm.String()) {
		t.Fatalf("status while paused: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	r = runCLI(t, e2eViewer, hubArgs("status", "-o", "json")...)
	var rep app.StatusReport
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != 0 {
		t.Fatalf("status -o json: exit %d, %v\n%s%s", r.code, err, r.out, r.errOut)
	}
	if !rep.NeedsAttention || len(rep.Clusters) != 1 || !rep.Clusters[0].Paused || rep.AttentionTotal != 1 ||
		rep.Attention[0].ID != cm.String() || rep.Attention[0].Status != string(hub.StatusPaused) {
		t.Fatalf("status -o json while paused: %+v", rep)
	}

	// describe shows it as the node view does; -o json the API's document;
	// a NodeID the hub does not manage is named.
	r = runCLI(t, e2eViewer, hubArgs("describe", cm.String())...)
	if r.code != 0 || !regexp.MustCompile(`(?m)^node +`+regexp.QuoteMeta(cm.String())+`$`).MatchString(r.out) ||
		!regexp.MustCompile(`(?m)^status +paused`).MatchString(r.out) || !strings.Contains(r.out, "PAUSED") ||
		!regexp.MustCompile(`(?m)^cluster +paused \S+ ago by alice: INC-7: restore$`).MatchString(r.out) ||
		!strings.Contains(r.out, "DRIFT missing") || !strings.Contains(r.out, "DESIRED\n  v1 ConfigMap sec/web") {
		t.Fatalf("describe %s: exit %d\n%s%s", cm, r.code, r.out, r.errOut)
	}
	r = runCLI(t, e2eViewer, hubArgs("describe", "-o", "json", cm.String())...)
	var detail struct {
		Status  struct{ ID, Status string }
		Desired map[string]any
		Cluster struct {
			ID          string
			Paused      bool
			PauseReason string
		}
	}
	if err := json.Unmarshal([]byte(r.out), &detail); err != nil || r.code != 0 || detail.Status.ID != cm.String() ||
		detail.Status.Status != string(hub.StatusPaused) || detail.Desired["kind"] != "ConfigMap" ||
		detail.Cluster.ID != cluster || !detail.Cluster.Paused || detail.Cluster.PauseReason != "INC-7: restore" {
		t.Fatalf("describe -o json: exit %d, %v\n%s%s", r.code, err, r.out, r.errOut)
	}
	nope := hub.NewNodeID(cluster, "sec", "nope", hub.KindConfigMap)
	if r = runCLI(t, e2eViewer, hubArgs("describe", nope.String())...); r.code != 1 || !strings.Contains(r.errOut, nope.String()+": the hub does not manage it") {
		t.Fatalf("describe %s: exit %d\n%s%s", nope, r.code, r.out, r.errOut)
	}

	// A manual repair goes past the pause, once.
	r = runCLI(t, e2eOperator, hubArgs("repair", cm.String())...)
	if r.code != 0 || !strings.Contains(r.out, "repair of "+cm.String()+" requested") {
		t.Fatalf("repair: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	testwait.For(t, 30*time.Second, "the ConfigMap repaired past the pause", func() error {
		return testwait.Check(exists(t, kc, cm), "still deleted")
	})
	r = runCLI(t, e2eOperator, hubArgs("resume", cluster)...)
	if r.code != 0 || !strings.Contains(r.out, "cluster "+cluster+" resumed") || snapshot().Clusters[0].Paused {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	// Holds: placed with a reason, listed by status, released once.
	r = runCLI(t, e2eOperator, hubArgs("hold", "cluster", cluster, "--for", "10m", "--reason", "INC-1: restore")...)
	if r.code != 0 || !strings.Contains(r.out, "cluster "+cluster+" held until") || !strings.Contains(r.out, "INC-1: restore") {
		t.Fatalf("hold: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if r = runCLI(t, e2eViewer, hubArgs("status")...); !strings.Contains(r.out, "HOLDS\n  cluster "+cluster+" until") ||
		!strings.Contains(r.out, ") by alice: INC-1: restore") {
		t.Fatalf("status with a hold:\n%s%s", r.out, r.errOut)
	}
	if r = runCLI(t, e2eOperator, hubArgs("release", "cluster", cluster)...); r.code != 0 || len(snapshot().Holds) != 0 {
		t.Fatalf("release: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if r = runCLI(t, e2eOperator, hubArgs("release", "cluster", cluster)...); r.code != 1 {
		t.Fatalf("a second release: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	// Policy: warn, then back to the config's.
	if r = runCLI(t, e2eOperator, hubArgs("policy", "web", "warn", "--reason", "INC-8: vendor scaling")...); r.code != 0 || snapshot().AppPolicies["web"] != hub.PolicyWarn {
		t.Fatalf("policy web warn: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if n := snapshot().AppPolicyNotes["web"]; n.By != "alice" || n.Reason != "INC-8: vendor scaling" {
		t.Fatalf("override note %+v, want alice's (the token's name) with the reason", n)
	}
	if r = runCLI(t, e2eViewer, hubArgs("status")...); !strings.Contains(r.out, "OVERRIDES\n  application web warn-only since ") ||
		!strings.Contains(r.out, " by alice: INC-8: vendor scaling") {
		t.Fatalf("status with an override:\n%s%s", r.out, r.errOut)
	}
	if r = runCLI(t, e2eOperator, hubArgs("policy", "web", "config")...); r.code != 0 || snapshot().AppPolicies["web"] != "" {
		t.Fatalf("policy web config: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	// Unknown targets are named; the others still act.
	r = runCLI(t, e2eOperator, hubArgs("pause", "nope", cluster)...)
	if r.code != 1 || !strings.Contains(r.errOut, `cluster "nope"`) || !snapshot().Clusters[0].Paused {
		t.Fatalf("pause nope %s: exit %d\n%s%s", cluster, r.code, r.out, r.errOut)
	}
	if r = runCLI(t, e2eOperator, hubArgs("resume", "--all")...); r.code != 0 || snapshot().Clusters[0].Paused || !strings.Contains(r.out, "cluster "+cluster+" resumed") {
		t.Fatalf("resume --all: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if r = runCLI(t, e2eOperator, hubArgs("resume", "--all")...); r.code != 0 || r.out != "no cluster is paused\n" {
		t.Fatalf("resume --all with none paused: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if r = runCLI(t, e2eOperator, hubArgs("policy", "nope", "warn")...); r.code != 1 || !strings.Contains(r.errOut, `application "nope"`) {
		t.Fatalf("policy nope warn: exit %d\n%s", r.code, r.errOut)
	}
	waitFor("everything in sync again", allInSync(3))

	// The feed from a shell: what happened, oldest first, by cluster or
	// NodeID; -o json a line each; an unknown cluster named.
	r = runCLI(t, e2eViewer, hubArgs("log", cluster)...)
	if r.code != 0 || !regexp.MustCompile(`(?m)^\S+  `+regexp.QuoteMeta(cm.String())+`  missing  paused`).MatchString(r.out) {
		t.Fatalf("log %s: exit %d\n%s%s", cluster, r.code, r.out, r.errOut)
	}
	if r = runCLI(t, e2eViewer, hubArgs("log", "--since", "1h", "-o", "json", cm.String())...); r.code != 0 {
		t.Fatalf("log -o json: exit %d\n%s", r.code, r.errOut)
	}
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	for _, l := range lines {
		var e struct{ ID, Action string }
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.ID != cm.String() {
			t.Fatalf("log -o json: a line %q: %v", l, err)
		}
	}
	if len(lines) < 2 {
		t.Fatalf("log -o json of %s: %d lines, want the pause and the repair at least:\n%s", cm, len(lines), r.out)
	}
	if r = runCLI(t, e2eViewer, hubArgs("log", "nope")...); r.code != 1 || !strings.Contains(r.errOut, "unknown cluster nope") {
		t.Fatalf("log nope: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	// -f prints each new entry as the hub sees it, until interrupted.
	followed := &syncBuffer{}
	ctx, interrupt := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		var errOut strings.Builder
		getenv := func(k string) string { return map[string]string{app.TokenEnv: e2eViewer}[k] }
		done <- exitCode(run(ctx, hubArgs("log", "-f", "--since", "1s", cluster+":sec/"), getenv, followed, &errOut), &errOut)
	}()
	// Most likely the delete comes after the first print, and its entries
	// by the stream; either way they are printed.
	time.Sleep(500 * time.Millisecond)
	if err := kc.CoreV1().ConfigMaps("sec").Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	repaired := regexp.MustCompile(`(?m)^\S+  ` + regexp.QuoteMeta(cm.String()) + `  missing  apply \S+$`)
	testwait.For(t, 30*time.Second, "log -f prints the repair", func() error {
		return testwait.Check(repaired.MatchString(followed.String()), "printed:\n%s", followed.String())
	})
	interrupt()
	if code := <-done; code != 0 {
		t.Fatalf("log -f interrupted: exit %d\n%s", code, followed.String())
	}
	waitFor("everything in sync again", allInSync(3))

	// The shell's completion reads the hub: clusters, NodeIDs, holds.
	complete := func(args ...string) []string {
		t.Helper()
		// The word being completed is the last one: the flags go before it.
		r := runCLI(t, e2eViewer, append([]string{"__complete", args[0], "--server", s.api}, args[1:]...)...)
		lines := strings.Split(strings.TrimSpace(r.out), "\n")
		if r.code != 0 || len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
			t.Fatalf("__complete %v: exit %d\n%s%s", args, r.code, r.out, r.errOut)
		}
		return lines[:len(lines)-1]
	}
	if got := complete("pause", ""); !slices.Equal(got, []string{cluster}) {
		t.Errorf("pause <tab>: %q", got)
	}
	if got := complete("repair", cluster+":sec/web:c"); !slices.Equal(got, []string{cm.String()}) {
		t.Errorf("repair %s:sec/web:c<tab>: %q", cluster, got)
	}
	if got := complete("hold", "cl"); !slices.Equal(got, []string{"cluster"}) {
		t.Errorf("hold cl<tab>: %q", got)
	}
	if got := complete("policy", "web", ""); !slices.Equal(got, []string{"warn", "repair", "config"}) {
		t.Errorf("policy web <tab>: %q", got)
	}
	if got := complete("release", "cluster", ""); len(got) != 0 {
		t.Errorf("release cluster <tab> with no hold: %q", got)
	}

	// No hub there: said so, exit 1.
	r = runCLI(t, e2eOperator, "status", "--server", "http://127.0.0.1:1")
	if r.code != 1 || !strings.Contains(r.errOut, "no hub answers at http://127.0.0.1:1") {
		t.Fatalf("status of no hub: exit %d\n%s", r.code, r.errOut)
	}
}
