package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/hub/intent"
	"github.com/driftwatch/driftwatch/internal/api"
	apiv1 "github.com/driftwatch/driftwatch/internal/api/v1"
	"github.com/driftwatch/driftwatch/internal/coord"
	"github.com/driftwatch/driftwatch/internal/e2etest"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
	"github.com/driftwatch/driftwatch/internal/testwait"
)

// replicaChildEnv, set to a config path, makes TestReplicas run `driftwatch
// serve -f PATH --replica-id $DRIFTWATCH_REPLICA_ID` in this process: the
// parent re-executes the test binary once per replica, so it can SIGKILL,
// SIGSTOP and SIGCONT them.
const (
	replicaChildEnv   = "DRIFTWATCH_REPLICA_CHILD"
	replicaIDEnv      = "DRIFTWATCH_REPLICA_ID"
	replicaLeaseEnv   = "DRIFTWATCH_REPLICA_LEASE"
	replicaTokensEnv  = "DRIFTWATCH_REPLICA_TOKENS"
	replicaLeaseNS    = "driftwatch"
	replicaAppNS      = "shop"
	replicaWorkloads  = 4
	replicaTestLease  = 3 * time.Second
	replicaRepairWait = 60 * time.Second
)

// haEnv is the clusters of TestReplicas: the first is the coordination
// cluster, the others are managed.
type haEnv struct {
	set      *localcluster.Set
	coord    kubernetes.Interface
	workload []*localcluster.Cluster
	admins   map[string]kubernetes.Interface
	dir      string
	lease    time.Duration
	// token is an operator token of every replica, in tokenFile.
	token, tokenFile string
}

// TestReplicas runs several `serve` processes as replicas of one hub on
// real control planes (one coordination cluster, four managed ones): every
// cluster is owned exactly once; a replica killed with SIGKILL has its
// clusters taken over, and drift made in the gap repaired; a replica
// stopped with SIGSTOP past its lease repairs nothing once continued; the
// clusters rebalance as replicas go from 1 to 3 and back to 1; a second
// process with a live replica's id exits; a replica with another config
// takes no cluster; while the coordination apiserver is down no replica is
// ready or names an owner.
func TestReplicas(t *testing.T) {
	if path := os.Getenv(replicaChildEnv); path != "" {
		ctx, stop := signal.NotifyContext(t.Context(), syscall.SIGTERM)
		err := run(ctx, []string{"serve", "-f", path, "--listen", "127.0.0.1:0", "--probe-listen", "127.0.0.1:0",
			"--replica-id", os.Getenv(replicaIDEnv), "--token-file", os.Getenv(replicaTokensEnv)}, os.Getenv, os.Stdout, os.Stderr)
		stop()
		if code := exitCode(err, os.Stderr); code != 0 {
			os.Exit(code)
		}
		return
	}
	set := lctest.Start(t, localcluster.Options{Count: 1 + replicaWorkloads})
	env := &haEnv{set: set, coord: kubernetes.NewForConfigOrDie(set.Clusters[0].RESTConfig()),
		workload: set.Clusters[1:], admins: make(map[string]kubernetes.Interface), dir: t.TempDir(), lease: replicaTestLease}
	if s := os.Getenv(replicaLeaseEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: %v", replicaLeaseEnv, err)
		}
		env.lease = d
	}
	tok, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	env.token, env.tokenFile = tok, filepath.Join(env.dir, "tokens")
	if err := os.WriteFile(env.tokenFile, []byte(tok+" operator test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range env.workload {
		env.admins[c.Name] = kubernetes.NewForConfigOrDie(c.RESTConfig())
	}
	if _, err := env.coord.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: replicaLeaseNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("KillFailover", func(t *testing.T) { testReplicaKill(t, env) })
	t.Run("StoppedReplicaIsFenced", func(t *testing.T) { testReplicaStop(t, env) })
	t.Run("Rebalance", func(t *testing.T) { testReplicaRebalance(t, env) })
	t.Run("RollingRestartKeepsIntent", func(t *testing.T) { testReplicaRollingRestart(t, env) })
	t.Run("TakeoverKeepsIntent", func(t *testing.T) { testReplicaTakeoverKeepsIntent(t, env) })
	t.Run("DuplicateIDExits", func(t *testing.T) { testReplicaDuplicateID(t, env) })
	t.Run("OtherConfigRefused", func(t *testing.T) { testReplicaOtherConfig(t, env) })
	t.Run("MissingNamespace", func(t *testing.T) { testReplicaMissingNamespace(t, env) })
	// Last: it stops the coordination cluster's apiserver.
	t.Run("CoordinationDown", func(t *testing.T) { testReplicaCoordinationDown(t, env) })
}

// config writes the config of hub hubID: the managed clusters, one
// application (a Deployment, a Service and a ConfigMap) in namespace ns.
func (e *haEnv) config(t *testing.T, hubID, ns string) string {
	t.Helper()
	return e.configApps(t, hubID, hubID+".yaml", ns, "app")
}

// configApps writes the config of hub hubID to file name in the test's
// folder: the managed clusters and the applications apps (ids) in ns.
func (e *haEnv) configApps(t *testing.T, hubID, name, ns string, apps ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "hub:\n  id: %s\n  workers: 4\n  stateFile: none\n  coordination:\n    kubeconfig: %s\n    namespace: %s\n    leaseDuration: %s\n",
		hubID, e.set.Clusters[0].Kubeconfig, replicaLeaseNS, e.lease)
	b.WriteString("clusters:\n")
	for _, c := range e.workload {
		fmt.Fprintf(&b, "  - id: %s\n    kubeconfig: %s\n    labels: {env: prod}\n", c.Name, c.Kubeconfig)
	}
	b.WriteString("applications:\n")
	for _, a := range apps {
		b.WriteString(e2etest.SafetyApp(a, ns))
	}
	path := filepath.Join(e.dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (e *haEnv) clusterIDs() []string {
	ids := make([]string, 0, len(e.workload))
	for _, c := range e.workload {
		ids = append(ids, c.Name)
	}
	return ids
}

// replicaProc is one replica process.
type replicaProc struct {
	*killChild
	id    string
	probe string // host:port of /metrics
	api   string // base URL of the API
}

// client returns an operator client of the replica's API.
func (r *replicaProc) client(t *testing.T, e *haEnv) *api.Client {
	t.Helper()
	c, err := api.NewClientWithOptions(r.api, api.ClientOptions{Token: e.token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startReplica starts `driftwatch serve` as replica id of the config at
// path and waits for its API and probe addresses.
func (e *haEnv) startReplica(t *testing.T, id, path string) *replicaProc {
	t.Helper()
	r := e.spawnReplica(t, id, path)
	p := r.killChild
	testwait.For(t, 30*time.Second, id+"'s probe address", func() error {
		if p.exited() {
			return testwait.Stop(fmt.Errorf("%s exited: %v\n%s", id, p.err, tail(p.stderr)))
		}
		f, err := os.Open(p.stdout)
		if err != nil {
			return testwait.Stop(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "probes and metrics on http://"); ok {
				r.probe = a
			}
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				r.api = a
			}
		}
		return testwait.Check(r.probe != "", "not printed yet")
	})
	return r
}

// spawnReplica starts `driftwatch serve` as replica id of the config at
// path, its output in a folder of its own.
func (e *haEnv) spawnReplica(t *testing.T, id, path string) *replicaProc {
	t.Helper()
	dir, err := os.MkdirTemp(e.dir, filepath.Base(path)+"-"+id+"-")
	if err != nil {
		t.Fatal(err)
	}
	p := &killChild{name: id, stdout: filepath.Join(dir, "stdout"), stderr: filepath.Join(dir, "stderr"), done: make(chan struct{})}
	out, err := os.Create(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errOut, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errOut.Close()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestReplicas$", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), replicaChildEnv+"="+path, replicaIDEnv+"="+id, "XDG_STATE_HOME="+dir, replicaTokensEnv+"="+e.tokenFile)
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s (%v): stdout:\n%s\nstderr:\n%s", id, p.err, tail(p.stdout), tail(p.stderr))
		}
	})
	return &replicaProc{killChild: p, id: id}
}

// stop ends a replica with SIGTERM and waits for a clean exit.
func (r *replicaProc) stop(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("%s: SIGTERM: %v", r.id, err)
	}
	if err := r.wait(t, 30*time.Second); err != nil {
		t.Fatalf("%s did not exit 0 on SIGTERM: %v", r.id, err)
	}
}

// metric returns the sum of a metric's series whose labels include
// match, from the replica's /metrics (0 when absent).
func (r *replicaProc) metric(t *testing.T, name string, match map[string]string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.probe+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: metrics: %v", r.id, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s: metrics: %v", r.id, err)
	}
	f := fams[name]
	if f == nil {
		return 0
	}
	sum := 0.0
	for _, m := range f.Metric {
		ok := true
		for k, v := range match {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			ok = ok && found
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// claims returns each claimed cluster's holder, read from the Leases.
func (e *haEnv) claims(t *testing.T, hubID string) map[string]string {
	t.Helper()
	l, err := e.coord.CoordinationV1().Leases(replicaLeaseNS).List(t.Context(), metav1.ListOptions{
		LabelSelector: coord.HubLabel + "=" + hubID + "," + coord.KindLabel + "=cluster"})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, x := range l.Items {
		if h := x.Spec.HolderIdentity; h != nil && *h != "" {
			out[x.Annotations[coord.ClusterAnnotation]] = *h
		}
	}
	return out
}

// waitOwned waits until every cluster is claimed by the replica that
// rendezvous hashing over live gives it, and the replicas' owned-cluster
// gauges add up to one owner per cluster with each replica's share; it
// returns how long that took.
func (e *haEnv) waitOwned(t *testing.T, hubID string, live []*replicaProc, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ids := make([]string, 0, len(live))
	for _, r := range live {
		ids = append(ids, r.id)
	}
	var last string
	for {
		got := e.claims(t, hubID)
		ok := len(got) == len(e.workload)
		for _, c := range e.clusterIDs() {
			ok = ok && got[c] == coord.Owner(c, ids)
		}
		if ok {
			for _, r := range live {
				want := float64(len(coord.Assign(r.id, e.clusterIDs(), ids)))
				if g := r.metric(t, "driftwatch_coordination_clusters_owned", nil); g != want {
					ok = false
					last = fmt.Sprintf("%s owns %v clusters by its gauge, want %v", r.id, g, want)
				}
			}
		} else {
			last = fmt.Sprintf("claims %v, want the owners of %v", got, ids)
		}
		if ok {
			return time.Since(start)
		}
		for _, r := range live {
			if r.exited() {
				t.Fatalf("%s exited: %v", r.id, r.err)
			}
		}
		if time.Since(start) > timeout {
			t.Fatalf("ownership not settled after %v: %s", timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// configMapUID returns the uid of the application's ConfigMap on a cluster
// ("" when it is missing).
func (e *haEnv) configMapUID(t *testing.T, cluster, ns string) types.UID {
	t.Helper()
	cm, err := e.admins[cluster].CoreV1().ConfigMaps(ns).Get(t.Context(), "app", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return cm.UID
}

// waitApplied waits until the application's ConfigMap exists on every
// cluster.
func (e *haEnv) waitApplied(t *testing.T, ns string) {
	t.Helper()
	testwait.For(t, replicaRepairWait, "the application applied on every cluster", func() error {
		for _, c := range e.clusterIDs() {
			if e.configMapUID(t, c, ns) == "" {
				return fmt.Errorf("cluster %s: not applied", c)
			}
		}
		return nil
	})
}

// drift deletes the application's ConfigMap on the clusters and returns
// the uids deleted.
func (e *haEnv) drift(t *testing.T, ns string, clusters []string) map[string]types.UID {
	t.Helper()
	old := make(map[string]types.UID)
	for _, c := range clusters {
		old[c] = e.configMapUID(t, c, ns)
		if err := e.admins[c].CoreV1().ConfigMaps(ns).Delete(t.Context(), "app", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("cluster %s: delete: %v", c, err)
		}
	}
	return old
}

// waitRepaired waits until each drifted ConfigMap exists again (a new
// uid) and returns when each came back, measured from since.
func (e *haEnv) waitRepaired(t *testing.T, ns string, old map[string]types.UID, since time.Time) map[string]time.Duration {
	t.Helper()
	took := make(map[string]time.Duration)
	deadline := time.Now().Add(replicaRepairWait)
	for len(took) < len(old) {
		for c, uid := range old {
			if _, done := took[c]; done {
				continue
			}
			if u := e.configMapUID(t, c, ns); u != "" && u != uid {
				took[c] = time.Since(since)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not repaired after %v: %d of %d clusters", replicaRepairWait, len(took), len(old))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return took
}

// testReplicaKill: three replicas own every cluster exactly once; one is
// killed with SIGKILL, drift is made on every cluster at once, and every
// cluster is repaired, the killed replica's by the survivors.
func testReplicaKill(t *testing.T, e *haEnv) {
	const hubID, ns = "ha-kill", "ha-kill"
	path := e.config(t, hubID, ns)
	reps := []*replicaProc{e.startReplica(t, "r1", path), e.startReplica(t, "r2", path), e.startReplica(t, "r3", path)}
	e.waitOwned(t, hubID, reps, 60*time.Second)
	e.waitApplied(t, ns)

	// Kill the replica with the most clusters.
	ids := []string{"r1", "r2", "r3"}
	victim := reps[0]
	for _, r := range reps {
		if len(coord.Assign(r.id, e.clusterIDs(), ids)) > len(coord.Assign(victim.id, e.clusterIDs(), ids)) {
			victim = r
		}
	}
	lost := coord.Assign(victim.id, e.clusterIDs(), ids)
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	old := e.drift(t, ns, e.clusterIDs())
	took := e.waitRepaired(t, ns, old, killed)
	var survivors []*replicaProc
	for _, r := range reps {
		if r != victim {
			survivors = append(survivors, r)
		}
	}
	settled := e.waitOwned(t, hubID, survivors, 30*time.Second)
	worst := time.Duration(0)
	for _, c := range lost {
		worst = max(worst, took[c])
	}
	t.Logf("SIGKILL of %s (clusters %v), leaseDuration %v: its clusters repaired %v after the kill (worst %v); ownership settled %v after the repairs",
		victim.id, lost, e.lease, took, worst.Round(time.Millisecond), settled.Round(time.Millisecond))
	if limit := 2*e.lease + 10*time.Second; worst > limit {
		t.Fatalf("the killed replica's clusters were repaired %v after the kill, want within %v", worst, limit)
	}
	takeovers := 0.0
	for _, r := range survivors {
		takeovers += r.metric(t, "driftwatch_coordination_takeovers_total", nil)
		if n := r.metric(t, "driftwatch_coordination_takeover_seconds", nil); n > 0 {
			t.Logf("%s: %v takeover(s) timed by driftwatch_coordination_takeover_seconds", r.id, n)
		}
	}
	if takeovers != float64(len(lost)) {
		t.Fatalf("survivors count %v takeovers, want %d", takeovers, len(lost))
	}
	for _, r := range survivors {
		r.stop(t)
	}
}

// testReplicaStop: a replica stopped with SIGSTOP past its lease has its
// clusters taken over; drift made while it is stopped reaches it when it
// is continued (its watches were open), and it must not repair any of it:
// its repair counters of those clusters do not move.
func testReplicaStop(t *testing.T, e *haEnv) {
	const hubID, ns = "ha-stop", "ha-stop"
	path := e.config(t, hubID, ns)
	a, b := e.startReplica(t, "a", path), e.startReplica(t, "b", path)
	e.waitOwned(t, hubID, []*replicaProc{a, b}, 60*time.Second)
	e.waitApplied(t, ns)
	stopped, other := a, b
	if len(coord.Assign("b", e.clusterIDs(), []string{"a", "b"})) > len(coord.Assign("a", e.clusterIDs(), []string{"a", "b"})) {
		stopped, other = b, a
	}
	its := coord.Assign(stopped.id, e.clusterIDs(), []string{"a", "b"})
	if len(its) == 0 {
		t.Fatalf("%s owns no cluster", stopped.id)
	}
	before := make(map[string]float64)
	for _, c := range its {
		before[c] = stopped.metric(t, "driftwatch_repairs_total", map[string]string{"cluster": c, "outcome": "success"})
	}
	if err := stopped.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	e.waitOwned(t, hubID, []*replicaProc{other}, 3*e.lease+10*time.Second)
	t.Logf("%s stopped; %s holds its clusters %v after %v", stopped.id, other.id, its, time.Since(paused).Round(time.Millisecond))
	old := e.drift(t, ns, its)
	e.waitRepaired(t, ns, old, time.Now())
	// Drift again, so the stopped replica has fresh deletes queued in its
	// watch streams when it is continued. The owner repairs them first:
	// once continued, the stopped replica may retake its clusters, and a
	// repair it then made would be legitimate; with the objects back, any
	// write it makes from its stale events is one the fence must refuse.
	old = e.drift(t, ns, its)
	e.waitRepaired(t, ns, old, time.Now())
	if err := stopped.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// It rejoins and gets its share back; by then its stale events were
	// handled, fenced.
	e.waitOwned(t, hubID, []*replicaProc{a, b}, 3*e.lease+10*time.Second)
	// Its queued stale events run right after SIGCONT; a second is ample
	// for a wrongly unfenced repair to be counted before we look.
	time.Sleep(time.Second)
	for _, c := range its {
		if got := stopped.metric(t, "driftwatch_repairs_total", map[string]string{"cluster": c, "outcome": "success"}); got != before[c] {
			t.Errorf("cluster %s: %s repaired %v time(s) after it was continued, want none (it no longer owned it)", c, stopped.id, got-before[c])
		}
	}
	t.Logf("%s after SIGCONT: %v write(s) refused by the fence", stopped.id, stopped.metric(t, "driftwatch_coordination_fenced_writes_total", nil))
	if !strings.Contains(stopped.stderrText(), "evicted") {
		t.Errorf("%s does not log that it was evicted", stopped.id)
	}
	a.stop(t)
	b.stop(t)
}

// testReplicaRebalance: one replica owns every cluster; two more join and
// take their share; they stop (SIGTERM) and the first takes everything
// back at once, their claims released; drift is repaired at every step.
func testReplicaRebalance(t *testing.T, e *haEnv) {
	const hubID, ns = "ha-rebalance", "ha-rebalance"
	path := e.config(t, hubID, ns)
	r1 := e.startReplica(t, "r1", path)
	e.waitOwned(t, hubID, []*replicaProc{r1}, 60*time.Second)
	e.waitApplied(t, ns)

	r2, r3 := e.startReplica(t, "r2", path), e.startReplica(t, "r3", path)
	took := e.waitOwned(t, hubID, []*replicaProc{r1, r2, r3}, 60*time.Second)
	t.Logf("1 -> 3 replicas: settled %v after the joiners' start", took.Round(time.Millisecond))
	now := time.Now()
	e.waitRepaired(t, ns, e.drift(t, ns, e.clusterIDs()), now)

	for _, r := range []*replicaProc{r2, r3} {
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	took = e.waitOwned(t, hubID, []*replicaProc{r1}, 30*time.Second)
	t.Logf("3 -> 1 replicas: r1 holds every cluster %v after SIGTERM of r2 and r3 (released at once)", took.Round(time.Millisecond))
	// Released claims are taken without waiting for them to expire; on a
	// loaded machine the handover itself can take most of a lease, so the
	// bound is two leases (expiry would take at least a lease plus the
	// eviction of r2 and r3).
	if took > 2*e.lease {
		t.Fatalf("r1 took %v to hold the released clusters, want less than two lease durations (%v)", took, 2*e.lease)
	}
	for _, r := range []*replicaProc{r2, r3} {
		if err := r.wait(t, 30*time.Second); err != nil {
			t.Fatalf("%s did not exit 0 on SIGTERM: %v", r.id, err)
		}
	}
	now = time.Now()
	e.waitRepaired(t, ns, e.drift(t, ns, e.clusterIDs()), now)
	r1.stop(t)
}

// stillMissing fails unless every ConfigMap of clusters stays missing for d.
func (e *haEnv) stillMissing(t *testing.T, ns string, clusters []string, d time.Duration, why string) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for _, c := range clusters {
			if e.configMapUID(t, c, ns) != "" {
				t.Fatalf("cluster %s: repaired %s", c, why)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// testReplicaRollingRestart: a pause and a hold recorded through one
// replica (on clusters another owns) hold on every replica; every replica
// is then replaced by a new one, one at a time; the pause and the hold
// still hold (drift on those clusters is not repaired, drift elsewhere is)
// until they are lifted through a new replica.
func testReplicaRollingRestart(t *testing.T, e *haEnv) {
	const hubID, ns = "ha-roll", "ha-roll"
	path := e.config(t, hubID, ns)
	live := []*replicaProc{e.startReplica(t, "r1", path), e.startReplica(t, "r2", path)}
	e.waitOwned(t, hubID, live, 60*time.Second)
	e.waitApplied(t, ns)
	ids := e.clusterIDs()
	paused, held, free := ids[0], ids[1], ids[2:]
	c := live[0].client(t, e)
	if err := c.PauseClusterNote(paused, hub.SwitchNote{Reason: "INC-42: restore"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Hold(hub.HoldTarget{Scope: hub.HoldCluster, Name: held}, time.Hour, "incident 42"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * e.lease) // every replica refreshes its shared intent
	e.drift(t, ns, []string{paused, held})
	e.stillMissing(t, ns, []string{paused, held}, 2*time.Second, "while paused or held")

	// Rolling restart: each replica is replaced by a new one (a new Pod
	// name), one at a time, waiting for the ownership to settle.
	for i := range live {
		next := e.startReplica(t, fmt.Sprintf("r%d-new", i+1), path)
		live[i].stop(t)
		live[i] = next
		e.waitOwned(t, hubID, live, 60*time.Second)
	}
	now := time.Now()
	e.waitRepaired(t, ns, e.drift(t, ns, free), now)
	e.stillMissing(t, ns, []string{paused, held}, 2*e.lease, "after the rolling restart: the pause or hold was lost")

	c = live[1].client(t, e)
	holds, err := c.Holds(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(holds) != 1 || holds[0].Target.Name != held || holds[0].Reason != "incident 42" || holds[0].By != "test" {
		t.Fatalf("holds after the rolling restart: %+v, want the hold with its reason and author (the token's name)", holds)
	}
	// The pause's note lives in the shared intent too: a replica that
	// never saw it set shows who paused the cluster and why.
	for _, r := range live {
		snap, err := r.client(t, e).Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if cs, ok := snap.Cluster(paused); !ok || !cs.Paused || cs.PausedBy != "test" || cs.PauseReason != "INC-42: restore" || cs.PausedAt.IsZero() {
			t.Fatalf("cluster %s on %s after the rolling restart: %+v, want paused with its note", paused, r.id, cs)
		}
	}
	if err := c.PauseCluster(paused, false); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleaseHold(hub.HoldTarget{Scope: hub.HoldCluster, Name: held}); err != nil {
		t.Fatal(err)
	}
	now = time.Now()
	took := e.waitRepaired(t, ns, map[string]types.UID{paused: "", held: ""}, now)
	t.Logf("pause and hold lifted through %s: repaired after %v", live[1].id, took)
	for _, r := range live {
		r.stop(t)
	}
}

// TestReplicasOneView runs two `serve` replicas of one hub over one managed
// cluster (real control planes): a view attached through the replica that
// does not manage the cluster shows it with its owner, synced; a pause and
// a repair now sent through that view reach the owner (the pause stops the
// automatic repair, the repair now repairs), and the same repair sent to
// the non-owner's API directly is refused with 421, naming the owner.
func TestReplicasOneView(t *testing.T) {
	const hubID, ns = "ha-view", "ha-view"
	set := lctest.Start(t, localcluster.Options{Count: 2})
	e := &haEnv{set: set, coord: kubernetes.NewForConfigOrDie(set.Clusters[0].RESTConfig()),
		workload: set.Clusters[1:], admins: make(map[string]kubernetes.Interface), dir: t.TempDir(), lease: replicaTestLease}
	tok, err := api.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	e.token, e.tokenFile = tok, filepath.Join(e.dir, "tokens")
	if err := os.WriteFile(e.tokenFile, []byte(tok+" operator test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cluster := e.workload[0].Name
	e.admins[cluster] = kubernetes.NewForConfigOrDie(e.workload[0].RESTConfig())
	if _, err := e.coord.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: replicaLeaseNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := e.config(t, hubID, ns)
	a, b := e.startReplica(t, "a", path), e.startReplica(t, "b", path)
	e.waitOwned(t, hubID, []*replicaProc{a, b}, 60*time.Second)
	e.waitApplied(t, ns)
	owner, other := a, b
	if coord.Owner(cluster, []string{"a", "b"}) == "b" {
		owner, other = b, a
	}

	rc := api.NewReplicaClient(other.client(t, e), 200*time.Millisecond)
	snaps, stop := rc.Subscribe()
	defer stop()
	deadline := time.After(30 * time.Second)
	var last *hub.Snapshot
	for settled := false; !settled; {
		select {
		case s := <-snaps:
			last = s
			c, ok := s.Cluster(cluster)
			settled = ok && c.Owner == owner.id && c.State == hub.ClusterSynced && len(s.Replicas) == 2 &&
				s.Replicas[0].Reachable && s.Replicas[1].Reachable && len(s.Clusters) == 1
		case <-deadline:
			if last == nil {
				t.Fatalf("the view through %s sent no snapshot", other.id)
			}
			t.Fatalf("the view through %s never showed %s synced and owned by %s: clusters %+v, replicas %+v", other.id, cluster, owner.id, last.Clusters, last.Replicas)
		}
	}

	id := hub.NewNodeID(cluster, ns, "app", hub.KindConfigMap)
	var ae *api.Error
	if err := other.client(t, e).RepairNow(id); !errors.As(err, &ae) || ae.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(err.Error(), owner.id) {
		t.Fatalf("repair through %s's API directly: %v, want 421 naming %s", other.id, err, owner.id)
	}
	if err := rc.PauseCluster(cluster, true); err != nil {
		t.Fatal(err)
	}
	old := e.drift(t, ns, []string{cluster})
	e.stillMissing(t, ns, []string{cluster}, time.Second, "while paused through the view")
	now := time.Now()
	if err := rc.RepairNow(id); err != nil {
		t.Fatal(err)
	}
	e.waitRepaired(t, ns, old, now)
	a.stop(t)
	b.stop(t)
}

// readyz returns the status code and body of the replica's /readyz.
func (r *replicaProc) readyz(t *testing.T) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.probe+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: /readyz: %v", r.id, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitReadyz waits until the replica's /readyz answers code with a body
// holding want, and returns the body.
func (r *replicaProc) waitReadyz(t *testing.T, code int, want string, timeout time.Duration) string {
	t.Helper()
	var body string
	testwait.For(t, timeout, fmt.Sprintf("%s's /readyz to answer %d with %q", r.id, code, want), func() error {
		var got int
		got, body = r.readyz(t)
		if got == code && strings.Contains(body, want) {
			return nil
		}
		return r.stopIfExited(fmt.Errorf("/readyz %d %q", got, body))
	})
	return body
}

// snapshotOwners returns each cluster's owner in the replica's GET
// /api/v1/snapshot.
func (r *replicaProc) snapshotOwners(t *testing.T, e *haEnv) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.api+"/api/v1/snapshot", nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: snapshot: %v", r.id, err)
	}
	defer resp.Body.Close()
	var snap apiv1.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		t.Fatalf("%s: snapshot: %v", r.id, err)
	}
	out := make(map[string]string)
	for _, c := range snap.Clusters {
		out[c.ID] = c.Owner
	}
	return out
}

// sharedDecommissions returns the pending decommissions recorded in the
// intent the replicas of hubID share.
func (e *haEnv) sharedDecommissions(t *testing.T, hubID string) []hub.DecommissionRecord {
	t.Helper()
	s, err := intent.NewConfigMapStore(t.Context(), e.coord, replicaLeaseNS, hubID, intent.ConfigMapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	return in.Decommissions
}

// testReplicaDuplicateID: a second process started with the id of a live
// replica exits non-zero, saying the id is in use; the replica keeps every
// cluster, logs a warning, and repairs drift on all of them.
func testReplicaDuplicateID(t *testing.T, e *haEnv) {
	const hubID, ns = "ha-dup", "ha-dup"
	path := e.config(t, hubID, ns)
	r1 := e.startReplica(t, "r1", path)
	e.waitOwned(t, hubID, []*replicaProc{r1}, 60*time.Second)
	e.waitApplied(t, ns)

	dup := e.spawnReplica(t, "r1", path)
	start := time.Now()
	err := dup.wait(t, 3*e.lease+30*time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("the duplicate exited with %v, want exit status 1", err)
	}
	msg := dup.stderrText()
	if !strings.Contains(msg, `replica id "r1"`) || !strings.Contains(msg, "already in use by another live process") {
		t.Fatalf("the duplicate's stderr does not say its id is in use:\n%s", tail(dup.stderr))
	}
	t.Logf("the duplicate exited %v after its start: %s", time.Since(start).Round(time.Millisecond), lastLine(msg))

	// The first keeps its clusters and repairs them.
	e.waitOwned(t, hubID, []*replicaProc{r1}, 10*time.Second)
	now := time.Now()
	took := e.waitRepaired(t, ns, e.drift(t, ns, e.clusterIDs()), now)
	t.Logf("r1 repaired every cluster after the duplicate: %v", took)
	testwait.For(t, 2*e.lease, "r1 to warn about the duplicate", func() error {
		return testwait.Check(strings.Contains(r1.stderrText(), "another process started with this replica's id"), "no warning logged")
	})
	if code, body := r1.readyz(t); code != http.StatusOK {
		t.Errorf("r1's /readyz after the duplicate: %d %s", code, body)
	}
	r1.stop(t)
}

// testReplicaMissingNamespace: a replica whose coordination namespace does
// not exist answers /readyz 503 saying so in one sentence, logs it once
// (not at every renewal period) with no absurd duration, and takes no
// cluster.
func testReplicaMissingNamespace(t *testing.T, e *haEnv) {
	const hubID, ns, missing = "ha-nons", "ha-nons", "driftwatch-missing"
	path := e.config(t, hubID, ns)
	cfg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "namespace: "+replicaLeaseNS+"\n", "namespace: "+missing+"\n", 1))
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.startReplica(t, "a", path)
	const says = `coordination namespace "` + missing + `" does not exist on the coordination cluster: create it`
	body := r.waitReadyz(t, http.StatusServiceUnavailable, says, 30*time.Second)
	t.Logf("/readyz: %s", strings.TrimSpace(body))
	time.Sleep(3 * e.lease) // many renewal periods
	logs := r.stderrText()
	if n := strings.Count(logs, "does not exist on the coordination cluster"); n != 1 {
		t.Errorf("said %d times in %v, want once:\n%s", n, 3*e.lease, tail(r.stderr))
	}
	if strings.Contains(logs, "9223372036854775807") {
		t.Errorf("an absurd duration in the logs:\n%s", tail(r.stderr))
	}
	if g := r.metric(t, "driftwatch_coordination_clusters_owned", nil); g != 0 {
		t.Errorf("owns %v clusters by its gauge", g)
	}
	r.stop(t)
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// testReplicaOtherConfig: a replica started with a config that lacks one
// of the owners' applications takes no cluster: /readyz answers 503 with
// the reason, every replica's API shows it refused, the application it
// lacks is neither pruned nor recorded for decommission, and the owners
// keep their clusters. Reloaded (SIGHUP) with the owners' config, it
// takes its share.
func testReplicaOtherConfig(t *testing.T, e *haEnv) {
	const hubID, ns = "ha-config", "ha-config"
	path := e.configApps(t, hubID, hubID+".yaml", ns, "app", "extra")
	a, b := e.startReplica(t, "a", path), e.startReplica(t, "b", path)
	owners := []*replicaProc{a, b}
	e.waitOwned(t, hubID, owners, 60*time.Second)
	e.waitApplied(t, ns)
	// waitApplied waits for the first application; the extra one is
	// applied in the same passes but may come a moment later.
	extra := make(map[string]types.UID)
	testwait.For(t, replicaRepairWait, "the extra application on every cluster", func() error {
		for _, c := range e.clusterIDs() {
			cm, err := e.admins[c].CoreV1().ConfigMaps(ns).Get(t.Context(), "extra", metav1.GetOptions{})
			if err != nil {
				err = fmt.Errorf("cluster %s: %w", c, err)
				if !apierrors.IsNotFound(err) {
					return testwait.Stop(err)
				}
				return err
			}
			extra[c] = cm.UID
		}
		return nil
	})

	otherPath := e.configApps(t, hubID, hubID+"-other.yaml", ns, "app")
	z := e.startReplica(t, "z", otherPath)
	body := z.waitReadyz(t, http.StatusServiceUnavailable, "refuses clusters", 30*time.Second)
	t.Logf("z's /readyz: %s", strings.TrimSpace(body))
	if !strings.Contains(body, "desired state") {
		t.Errorf("z's /readyz does not say why: %s", body)
	}
	// Two leases: time enough to have taken clusters.
	time.Sleep(2 * e.lease)
	e.waitOwned(t, hubID, owners, 10*time.Second)
	if g := z.metric(t, "driftwatch_coordination_clusters_owned", nil); g != 0 {
		t.Errorf("z owns %v clusters by its gauge", g)
	}
	if g := z.metric(t, "driftwatch_coordination_refused", nil); g != 1 {
		t.Errorf("z's refused gauge: %v", g)
	}
	for _, r := range []*replicaProc{a, b, z} {
		l, err := r.client(t, e).Replicas(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, rep := range l.Replicas {
			want := apiv1.ReplicaLive
			if rep.ID == "z" {
				want = apiv1.ReplicaRefused
			}
			if rep.State != want || (want == apiv1.ReplicaRefused) != (rep.Reason != "") || rep.DesiredHash == "" {
				t.Errorf("%s's API shows %s %s (%q, hash %q), want %s", r.id, rep.ID, rep.State, rep.Reason, rep.DesiredHash, want)
			}
			if rep.ID == "z" && len(rep.Clusters) > 0 {
				t.Errorf("%s's API shows z holding %v", r.id, rep.Clusters)
			}
		}
	}
	for _, c := range e.clusterIDs() {
		cm, err := e.admins[c].CoreV1().ConfigMaps(ns).Get(t.Context(), "extra", metav1.GetOptions{})
		if err != nil || cm.UID != extra[c] || cm.DeletionTimestamp != nil {
			t.Errorf("cluster %s: the application z lacks was touched: %v", c, err)
		}
	}
	if d := e.sharedDecommissions(t, hubID); len(d) > 0 {
		t.Errorf("decommissions recorded in the shared intent: %v", d)
	}
	if !strings.Contains(z.stderrText(), "this replica refuses clusters") {
		t.Errorf("z does not log why it takes no cluster")
	}

	// z reloaded with the owners' config takes its share.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := z.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	took := e.waitOwned(t, hubID, []*replicaProc{a, b, z}, 30*time.Second)
	t.Logf("z reloaded with the owners' config: shares the clusters %v later", took.Round(time.Millisecond))
	z.waitReadyz(t, http.StatusOK, "ok", 30*time.Second)
	now := time.Now()
	e.waitRepaired(t, ns, e.drift(t, ns, e.clusterIDs()), now)
	for _, r := range []*replicaProc{a, b, z} {
		r.stop(t)
	}
}

// testReplicaCoordinationDown: while the coordination cluster's apiserver
// is stopped, no replica repairs, /readyz answers 503 saying coordination
// is unreachable, and the API names no owner (each replica lists itself
// alone, coordination-unreachable); once it is back the replicas share the
// clusters again and repair.
func testReplicaCoordinationDown(t *testing.T, e *haEnv) {
	const hubID, ns = "ha-down", "ha-down"
	path := e.config(t, hubID, ns)
	a, b := e.startReplica(t, "a", path), e.startReplica(t, "b", path)
	reps := []*replicaProc{a, b}
	e.waitOwned(t, hubID, reps, 60*time.Second)
	e.waitApplied(t, ns)

	coordCluster := e.set.Clusters[0]
	if err := coordCluster.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	for _, r := range reps {
		body := r.waitReadyz(t, http.StatusServiceUnavailable, "coordination unreachable", e.lease+10*time.Second)
		t.Logf("%s's /readyz %v after the stop: %s", r.id, time.Since(stopped).Round(time.Millisecond), strings.TrimSpace(body))
	}
	old := e.drift(t, ns, e.clusterIDs())
	for _, r := range reps {
		l, err := r.client(t, e).Replicas(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Replicas) != 1 || !l.Replicas[0].Self || l.Replicas[0].State != apiv1.ReplicaCoordinationUnreachable ||
			len(l.Replicas[0].Clusters) > 0 || !strings.Contains(l.Replicas[0].Reason, "coordination unreachable") {
			t.Errorf("%s's replicas while coordination is down: %+v", r.id, l.Replicas)
		}
		for c, owner := range r.snapshotOwners(t, e) {
			if owner != "" {
				t.Errorf("%s's snapshot names %s the owner of %s while coordination is down", r.id, owner, c)
			}
		}
	}
	e.stillMissing(t, ns, e.clusterIDs(), 2*time.Second, "while the coordination apiserver is down")

	if err := coordCluster.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	took := e.waitRepaired(t, ns, old, restarted)
	e.waitOwned(t, hubID, reps, 60*time.Second)
	for _, r := range reps {
		r.waitReadyz(t, http.StatusOK, "ok", 30*time.Second)
		for c, owner := range r.snapshotOwners(t, e) {
			if owner == "" {
				t.Errorf("%s's snapshot names no owner of %s once coordination is back", r.id, c)
			}
		}
	}
	t.Logf("coordination back: drift repaired %v after the apiserver's restart", took)
	for _, r := range reps {
		r.stop(t)
	}
}
