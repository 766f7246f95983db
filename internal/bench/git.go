package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/config/gitsource"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/api"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/localcluster"
)

// ModeGit measures Git sources: push (webhook) to applied, the poll's
// cost, and a large repository's clone and render.
const ModeGit = "git"

// Defaults and sizes of --mode git.
const (
	// GitObjects is the objects of --mode git's source (per cluster) when
	// --objects is not given.
	GitObjects = 100
	// GitMaxObjects bounds --objects with --mode git: a third of them are
	// Services, and the local apiservers allocate ClusterIPs from a /24.
	GitMaxObjects = 3 * benchMaxServices
	// GitIdle is --mode git's default --idle: the window in which the
	// running hub's own polls are counted (two polls at the minimum
	// interval, and some).
	GitIdle = 25 * time.Second
	// gitBigObjects is the objects of the large repository that is cloned
	// and rendered.
	gitBigObjects = 1000
	// gitBigRuns is how many times it is cloned (each into an empty cache)
	// and rendered.
	gitBigRuns = 3
	// gitPollFetches is how many fetches with nothing new the poll cost is
	// measured over.
	gitPollFetches = 20
	// gitPollInterval is the source's poll interval: the shortest allowed.
	gitPollInterval = config.MinGitInterval
	// gitFloorRuns is how many times the raw apply floor is measured (its
	// median is reported).
	gitFloorRuns = 3
	// gitApplyLimit bounds the wait for one push (or the raw floor) to be
	// seen applied everywhere.
	gitApplyLimit = time.Minute
)

// Bars of --mode git.
const (
	// gitPushBar is the most a push may take, webhook to every object
	// applied on every cluster (p99).
	gitPushBar = 2 * time.Second
	// gitBigBar bounds the large repository's slowest clone plus its
	// slowest render.
	gitBigBar = 10 * time.Second
)

// gitNamespace holds --mode git's objects.
const gitNamespace = "bench-git"

// gitRevLabel is the label every object of a commit carries with the
// commit's number: the raw watch sees a push applied by it.
const gitRevLabel = "rev"

// gitSourceID is the id of --mode git's source.
const gitSourceID = "git-bench"

// GitDefaults sets --mode git's defaults of the flags not given (changed
// reports whether a flag was).
func GitDefaults(o *Options, changed func(flag string) bool) {
	if o.Mode != ModeGit {
		return
	}
	if !changed("objects") {
		o.Objects = GitObjects
	}
	if !changed("idle") {
		o.Idle = GitIdle
	}
}

// gitReport is the --mode git run.
type gitReport struct {
	// URL is the source's repository (on the bench's in-process server);
	// Objects its objects per cluster, Applied the objects a push changes
	// over all clusters.
	URL     string `json:"url"`
	Objects int    `json:"objectsPerCluster"`
	Applied int    `json:"objectsApplied"`
	// InitialSync is a fresh hub's start (first fetch included) to every
	// object created and in sync.
	InitialSync msDuration `json:"initialSyncMs"`
	// Pushes are the pushes made; PushToApplied summarizes their time from
	// the webhook's POST to the raw watch seeing the last object with the
	// new commit's label, PushToFirst to the first.
	Pushes        []gitPush     `json:"pushes"`
	PushToApplied latencyReport `json:"pushToApplied"`
	PushToFirst   latencyReport `json:"pushToFirstApplied"`
	PushToInForce latencyReport `json:"pushToInForce"`
	// Floor is a plain client applying the next commit's objects (the hub
	// stopped), from its first call to the raw watch seeing the last, with
	// FloorConcurrency calls in flight: the median of FloorRuns commits.
	Floor            msDuration  `json:"rawApplyFloorMs,omitempty"`
	FloorRuns        int         `json:"rawApplyFloorRuns,omitempty"`
	FloorConcurrency int         `json:"rawApplyFloorConcurrency,omitempty"`
	FloorError       string      `json:"rawApplyFloorError,omitempty"`
	Poll             gitPollCost `json:"poll"`
	Big              gitBigRepo  `json:"bigRepo"`
	// Error is why the run stopped early ("" when it did not).
	Error string `json:"error,omitempty"`
}

// gitPush is one push of --mode git.
type gitPush struct {
	Commit string `json:"commit"`
	// Webhook is how long the webhook's POST took to answer (202).
	Webhook msDuration `json:"webhookMs"`
	// InForce runs from the webhook's POST to the hub's snapshot showing
	// the commit in force (fetched, rendered, desired state replaced): the
	// hub's own view, a breakdown of Applied.
	InForce msDuration `json:"inForceMs,omitempty"`
	// First and Applied run from the webhook's POST to the raw watch
	// seeing the first and the last object with the new label.
	First   msDuration `json:"firstMs"`
	Applied msDuration `json:"appliedMs"`
	// Sent is the bytes the Git server sent from the webhook to the last
	// object applied (the fetch the webhook caused).
	Sent     int64 `json:"bytesSent"`
	TimedOut bool  `json:"timedOut,omitempty"`
}

// gitPollCost is the cost of polling a source with no new commit.
type gitPollCost struct {
	Interval msDuration `json:"intervalMs"`
	// Fetches is how many fetches (gitsource.Repo.Fetch, what the poller
	// runs) the per-poll figures are averaged over, in the bench's
	// process with the hub stopped.
	Fetches int `json:"fetches"`
	// CPU is the process's CPU time per fetch (the fetcher and the
	// in-process server); Allocated the heap allocated per fetch; HeapGrowth
	// the heap in use after GC after the fetches minus before (over all of
	// them).
	CPU        msDuration `json:"cpuPerPollMs"`
	Allocated  uint64     `json:"allocatedBytesPerPoll"`
	HeapGrowth int64      `json:"heapGrowthBytes"`
	// Sent and Received are the Git server's response and request bytes
	// per fetch; Requests its requests per fetch.
	Sent     int64   `json:"bytesSentPerPoll"`
	Received int64   `json:"bytesReceivedPerPoll"`
	Requests float64 `json:"requestsPerPoll"`
	// HubWindow is how long the running hub's own polls were counted;
	// HubPolls how many it made (advertisements served), HubSent the
	// server's bytes per poll, HubCPU the whole process's CPU time per
	// poll in the window (the idle hub and the raw watch included: an
	// upper bound).
	HubWindow msDuration `json:"hubWindowMs"`
	HubPolls  int64      `json:"hubPolls"`
	HubSent   int64      `json:"hubBytesSentPerPoll"`
	HubCPU    msDuration `json:"hubProcessCPUPerPollMs"`
}

// perHour returns how many polls a source makes in an hour.
func (p gitPollCost) perHour() float64 {
	if p.Interval <= 0 {
		return 0
	}
	return float64(time.Hour) / float64(p.Interval)
}

// gitBigRepo is the clone and render of the large repository.
type gitBigRepo struct {
	Objects int `json:"objects"`
	Runs    int `json:"runs"`
	// Clone is a first fetch into an empty cache (checkout included);
	// Render is config.Load of a config with the source at that
	// checkout plus config.Compile, Rendered the objects it compiled (over
	// every cluster).
	Clone    latencyReport `json:"clone"`
	Render   latencyReport `json:"render"`
	Rendered int           `json:"renderedObjects"`
	// Sent is the server's bytes per clone, Pack the pack's (go-git's
	// server picks its deltas afresh each time: both are means), Files
	// the checkout's files.
	Sent  int64 `json:"bytesSentPerClone"`
	Pack  int64 `json:"packBytes"`
	Files int   `json:"files"`
}

// gitObjectName is the name and kind of object i (from 0) of a generated
// repository: ConfigMaps, Deployments and Services in turn.
func gitObjectName(i int) (name, kind string) {
	switch i % 3 {
	case 0:
		return fmt.Sprintf("cm-%04d", i+1), "ConfigMap"
	case 1:
		return fmt.Sprintf("deploy-%04d", i+1), "Deployment"
	default:
		return fmt.Sprintf("svc-%04d", i+1), "Service"
	}
}

// gitFiles returns the files of a generated repository of n objects at
// commit number rev: one YAML file per object under manifests/, each
// labelled rev.
func gitFiles(n int, rev string) map[string]string {
	files := make(map[string]string, n)
	for i := range n {
		name, kind := gitObjectName(i)
		head := fmt.Sprintf("metadata:\n  name: %s\n  labels:\n    app: %s\n    %s: %q\n", name, name, gitRevLabel, rev)
		var doc string
		switch kind {
		case "ConfigMap":
			doc = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\n%sdata:\n  MODE: bench\n  INDEX: %q\n", head, strconv.Itoa(i+1))
		case "Deployment":
			doc = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
%sspec:
  replicas: 1
  selector:
    matchLabels:
      app: %[2]s
  template:
    metadata:
      labels:
        app: %[2]s
    spec:
      containers:
        - name: app
          image: registry.example/bench:1
          ports:
            - containerPort: 8080
`, head, name)
		default:
			doc = fmt.Sprintf("apiVersion: v1\nkind: Service\n%sspec:\n  selector:\n    app: %s\n  ports:\n    - port: 80\n      targetPort: 8080\n", head, name)
		}
		files[filepath.Join("manifests", name+".yaml")] = doc
	}
	return files
}

// gitConfig returns the text of --mode git's config: every local cluster
// (labelled bench=true) and one Git source of the repository url (path
// manifests, into gitNamespace), polled every gitPollInterval, whose push
// webhook is verified with the secret in secretFile.
func gitConfig(set *localcluster.Set, url, secretFile string, qps float64, workers int) string {
	var sb strings.Builder
	writeHubSection(&sb, "driftwatch bench --mode git", qps, workers)
	for _, lc := range set.Clusters {
		fmt.Fprintf(&sb, "  - id: %s\n    kubeconfig: %s\n    labels: {bench: \"true\"}\n", lc.Name, lc.Kubeconfig)
	}
	fmt.Fprintf(&sb, "sources:\n  - id: %s\n    git:\n      url: %s\n      ref: main\n      interval: %s\n", gitSourceID, url, gitPollInterval)
	if secretFile != "" {
		fmt.Fprintf(&sb, "      webhookSecretFile: %s\n", secretFile)
	}
	fmt.Fprintf(&sb, "    path: manifests\n    selector: bench=true\n    namespace: %s\n", gitNamespace)
	return sb.String()
}

// revTracker follows the raw watch's events and tells when every one of
// total objects carries the label value it waits for.
type revTracker struct {
	mu    sync.Mutex
	rev   map[string]string // by cluster/kind/name
	want  string
	total int
	have  int
	first time.Time
	last  time.Time
	done  chan struct{}
}

func newRevTracker() *revTracker { return &revTracker{rev: map[string]string{}} }

// event is the raw watch's EventSink.
func (t *revTracker) event(cluster string, kind hub.Kind, ev watch.Event, at time.Time) {
	if ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted {
		return
	}
	obj, err := meta.Accessor(ev.Object)
	if err != nil {
		return
	}
	key := cluster + "/" + string(kind) + "/" + obj.GetName()
	label := obj.GetLabels()[gitRevLabel]
	if ev.Type == watch.Deleted {
		label = ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.rev[key]
	t.rev[key] = label
	if t.want == "" || t.done == nil {
		return
	}
	switch {
	case label == t.want && old != t.want:
		t.have++
		if t.first.IsZero() {
			t.first = at
		}
		if t.have == t.total {
			t.last = at
			close(t.done)
			t.done = nil
		}
	case old == t.want && label != t.want:
		t.have--
	}
}

// expect starts waiting for total objects labelled rev; the channel
// closes when they are.
func (t *revTracker) expect(rev string, total int) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.want, t.total, t.have, t.first, t.last = rev, total, 0, time.Time{}, time.Time{}
	for _, v := range t.rev {
		if v == rev {
			t.have++
		}
	}
	done := make(chan struct{})
	if t.have >= total {
		close(done)
		return done
	}
	t.done = done
	return done
}

// times returns when the first and the last awaited object were seen.
func (t *revTracker) times() (first, last time.Time, have int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.first, t.last, t.have
}

// pushHook is a signed GitHub push webhook.
type pushHook struct {
	endpoint, repoURL string
	secret            []byte
	client            *http.Client
}

// post sends the push of commit to refs/heads/main and wants 202 (a
// fetch triggered).
func (h pushHook) post(ctx context.Context, commit string) error {
	body, err := json.Marshal(map[string]any{"ref": "refs/heads/main", "after": commit,
		"repository": map[string]any{"clone_url": h.repoURL, "html_url": strings.TrimSuffix(h.repoURL, ".git")}})
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, h.secret)
	mac.Write(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", commit)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", h.endpoint, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("webhook %s: %s %s (want 202 Accepted)", h.endpoint, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// apiListener serves the hub's API (its webhook route included) on a
// loopback port, as driftwatch serve does.
type apiListener struct {
	srv *http.Server
	api *api.Server
	url string
	wg  conc.WaitGroup
}

// serveAPI starts the API of h with the Git sources' webhook.
func (b *bencher) serveAPI(h *hub.Hub, gs *app.GitSources) (*apiListener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: api listener: %w", err)
	}
	s := api.NewServer(h, api.Options{GitWebhook: gs.WebhookHandler(), Logger: b.log})
	l := &apiListener{api: s, url: "http://" + ln.Addr().String(),
		srv: &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	l.wg.Go(func() {
		defer func() {
			if p := recover(); p != nil {
				b.log.Error("bench: api listener panicked", "panic", p)
			}
		}()
		if err := l.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Error("bench: api listener", "err", err)
		}
	})
	return l, nil
}

// Stop closes the API and its listener and waits for them.
func (l *apiListener) Stop() {
	_ = l.api.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.srv.Shutdown(ctx)
	l.wg.Wait()
}

// compileAt loads the config at path with every Git source checked out at
// dir (the root of a tree) and compiles it.
func compileAt(path, dir string) ([]hub.NodeSpec, error) {
	cfg, err := config.Load(path, config.LoadOptions{Getenv: func(string) string { return "" },
		GitCheckout: func(config.Hub, string, config.GitSource) (config.GitCheckout, error) {
			return config.GitCheckout{Dir: dir, Commit: strings.Repeat("0", 40), Ref: "refs/heads/main"}, nil
		}})
	if err != nil {
		return nil, fmt.Errorf("bench: generated config %s: %w", path, err)
	}
	if faults := cfg.SourceFaults(); len(faults) > 0 {
		return nil, fmt.Errorf("bench: generated config %s: source faults %v", path, faults)
	}
	return config.Compile(cfg), nil
}

// writeTree writes files under dir.
func writeTree(dir string, files map[string]string) error {
	for p, text := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		if err := os.WriteFile(full, []byte(text), 0o600); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// gitRun runs --mode git: the large repository's clone and render, then
// a hub with one Git source of --objects objects on every cluster, pushes
// measured from the webhook to every object applied (seen by a raw watch
// of the clusters), the running hub's polls counted, a raw client's
// apply of the next commit as the floor, and the poll's cost measured
// alone.
func (b *bencher) gitRun(ctx context.Context, rep *benchReport) error {
	o := b.opts
	g := &gitReport{Objects: o.Objects, Applied: o.Objects * len(b.set.Clusters)}
	rep.Git = g
	srv, err := startGitServer(b.log)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()

	if err := b.gitBig(ctx, srv, &g.Big); err != nil {
		return err
	}

	repo, err := srv.create("bench.git")
	if err != nil {
		return err
	}
	if _, err := repo.commit(gitFiles(o.Objects, "0"), "bench: initial"); err != nil {
		return err
	}
	g.URL = srv.URL("bench.git")
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return fmt.Errorf("bench: webhook secret: %w", err)
	}
	secret = []byte(hex.EncodeToString(secret))
	if err := os.WriteFile(filepath.Join(b.dir, "git-webhook-secret"), secret, 0o600); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	path := filepath.Join(b.dir, "git.yaml")
	if err := os.WriteFile(path, []byte(gitConfig(b.set, g.URL, "git-webhook-secret", o.QPS, o.Workers)), 0o600); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	for name, c := range b.clients {
		_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gitNamespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("bench: cluster %q: create namespace %s: %w", name, gitNamespace, err)
		}
	}
	// The hub keeps its Git cache under a state folder of the bench's.
	stateHome := filepath.Join(b.dir, "git-state")
	gs := app.NewGitSources(b.log, func(k string) string {
		if k == "XDG_STATE_HOME" {
			return stateHome
		}
		return ""
	})
	loadOpts := gs.LoadOptions(config.LoadOptions{Getenv: func(string) string { return "" }})

	b.progress("git: starting a hub with a Git source of %d objects on %d cluster(s) (%s)", o.Objects, len(b.set.Clusters), g.URL)
	began := time.Now()
	cfg, err := config.Load(path, loadOpts)
	if err != nil {
		_ = gs.Close()
		return fmt.Errorf("bench: generated config %s: %w", path, err)
	}
	b.workers = cfg.Workers()
	rh, err := b.startHub(ctx, &workload{cfg: cfg, git: gs, loadOpts: loadOpts}, hub.Options{}, false)
	if err != nil {
		_ = gs.Close()
		return err
	}
	hubStopped := false
	defer func() {
		if !hubStopped {
			_ = rh.Stop()
		}
	}()
	if err := b.waitInSync(ctx, rh.app.Hub(), g.Applied, b.syncLimit(o.Objects)); err != nil {
		return fmt.Errorf("git run: %w", err)
	}
	g.InitialSync = msDuration(time.Since(began))
	b.progress("git: in sync after %s", g.InitialSync.dur().Round(time.Millisecond))

	tr := newRevTracker()
	floorCtx, stopFloor := context.WithCancel(ctx)
	floor, err := StartFloor(floorCtx, b.clients, gitNamespace, tr.event, b.log)
	if err != nil {
		stopFloor()
		return fmt.Errorf("bench: raw watch: %w", err)
	}
	defer func() {
		stopFloor()
		floor.Wait()
	}()
	l, err := b.serveAPI(rh.app.Hub(), gs)
	if err != nil {
		return err
	}
	defer l.Stop()
	hook := pushHook{endpoint: l.url + "/api/v1/webhooks/git", repoURL: g.URL, secret: secret, client: &http.Client{Timeout: 30 * time.Second}}

	for i := 1; i <= o.Pushes; i++ {
		p, err := b.gitPush(ctx, rh.app.Hub(), repo, hook, tr, strconv.Itoa(i), g.Applied)
		g.Pushes = append(g.Pushes, p)
		if err != nil {
			g.Error = err.Error()
			break
		}
		b.progress("git: push %d/%d applied on every cluster %s after the webhook (first object %s)", i, o.Pushes,
			fmtDur(p.Applied.dur()), fmtDur(p.First.dur()))
	}
	var applied, first, inForce []time.Duration
	for _, p := range g.Pushes {
		if !p.TimedOut {
			applied, first = append(applied, p.Applied.dur()), append(first, p.First.dur())
		}
		if p.InForce > 0 {
			inForce = append(inForce, p.InForce.dur())
		}
	}
	g.PushToApplied, g.PushToFirst, g.PushToInForce = latencyOf(applied), latencyOf(first), latencyOf(inForce)
	if g.Error != "" {
		return fmt.Errorf("git run: %s", g.Error)
	}

	// The hub's own polls, with nothing new to fetch.
	b.progress("git: counting the hub's polls (every %s) over %s with no new commit", gitPollInterval, o.Idle)
	g.Poll.Interval = msDuration(gitPollInterval)
	t0, cpu0 := repo.traffic(), CPUTime()
	if !sleepCtx(ctx, o.Idle) {
		return ctx.Err()
	}
	window := repo.traffic().sub(t0)
	g.Poll.HubWindow, g.Poll.HubPolls = msDuration(o.Idle), window.Adverts
	if window.Adverts > 0 {
		g.Poll.HubSent = window.Sent / window.Adverts
		g.Poll.HubCPU = msDuration((CPUTime() - cpu0) / time.Duration(window.Adverts))
	}

	hubStopped = true
	if err := rh.Stop(); err != nil {
		b.log.Warn("git: hub stop", "err", err)
	}
	b.progress("git: raw apply floor: a plain client applying %d commits' %d objects in turn", gitFloorRuns, g.Applied)
	var floors []time.Duration
	for k := 1; k <= gitFloorRuns; k++ {
		d, err := b.gitFloor(ctx, path, tr, o.Pushes+k, g)
		if err != nil {
			g.FloorError = err.Error()
			break
		}
		floors = append(floors, d)
	}
	if len(floors) > 0 {
		g.Floor, g.FloorRuns = latencyOf(floors).P50, len(floors)
	}
	stopFloor()
	floor.Wait()

	b.progress("git: poll cost: %d fetches with nothing new", gitPollFetches)
	return b.gitPollCost(ctx, srv, repo, &g.Poll)
}

// gitPush makes push rev: a commit changing every object's label, then the
// webhook, then the wait until the raw watch saw all total objects with
// it; on the way it notes when h showed the commit in force.
func (b *bencher) gitPush(ctx context.Context, h *hub.Hub, repo *benchRepo, hook pushHook, tr *revTracker, rev string, total int) (gitPush, error) {
	var p gitPush
	snaps, unsubscribe := h.Subscribe()
	defer unsubscribe()
	done := tr.expect(rev, total)
	commit, err := repo.commit(gitFiles(b.opts.Objects, rev), "bench: push "+rev)
	if err != nil {
		return p, err
	}
	p.Commit = commit.String()
	t0 := repo.traffic()
	began := time.Now()
	if err := hook.post(ctx, p.Commit); err != nil {
		return p, err
	}
	p.Webhook = msDuration(time.Since(began))
	timer := time.NewTimer(gitApplyLimit)
	defer timer.Stop()
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-timer.C:
			p.TimedOut = true
			_, _, have := tr.times()
			return p, fmt.Errorf("push %s (commit %s): %d of %d objects applied after %s", rev, p.Commit[:min(7, len(p.Commit))], have, total, gitApplyLimit)
		case s := <-snaps:
			for _, r := range s.Revisions {
				if p.InForce == 0 && r.ID == gitSourceID && r.Commit == p.Commit {
					p.InForce = msDuration(time.Since(began))
				}
			}
		case <-done:
			waiting = false
		}
	}
	first, last, _ := tr.times()
	p.First, p.Applied = msDuration(first.Sub(began)), msDuration(last.Sub(began))
	p.Sent = repo.traffic().sub(t0).Sent
	return p, nil
}

// gitFloor applies commit rev's objects from a plain client (the hub
// stopped), as many calls in flight as the hub's writers, and returns the
// time from the first call to the raw watch seeing the last object.
func (b *bencher) gitFloor(ctx context.Context, path string, tr *revTracker, rev int, g *gitReport) (time.Duration, error) {
	dir := filepath.Join(b.dir, fmt.Sprintf("git-floor-%d", rev))
	if err := writeTree(dir, gitFiles(b.opts.Objects, strconv.Itoa(rev))); err != nil {
		return 0, err
	}
	specs, err := compileAt(path, dir)
	if err != nil {
		return 0, err
	}
	calls := make([]rawApply, 0, len(specs))
	for _, s := range interleave(specs) {
		calls = append(calls, rawApply{client: b.clients[s.ID.Cluster], spec: s})
	}
	g.FloorConcurrency = max(1, b.workers)
	done := tr.expect(strconv.Itoa(rev), len(specs))
	began := time.Now()
	if _, err := timeApplies(ctx, nil, calls, g.FloorConcurrency); err != nil {
		return 0, err
	}
	timer := time.NewTimer(gitApplyLimit)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-timer.C:
		_, _, have := tr.times()
		return 0, fmt.Errorf("commit %d: %d of %d objects seen applied after %s", rev, have, len(specs), gitApplyLimit)
	case <-done:
	}
	_, last, _ := tr.times()
	return last.Sub(began), nil
}

// gitPollCost measures gitPollFetches fetches with nothing new of repo,
// from a cache of its own, in this process with the hub stopped.
func (b *bencher) gitPollCost(ctx context.Context, srv *gitServer, repo *benchRepo, p *gitPollCost) error {
	r, err := gitsource.Open(gitsource.Options{URL: srv.URL(repo.name), Ref: "main", CacheDir: filepath.Join(b.dir, "git-poll-cache")})
	if err != nil {
		return err
	}
	if _, err := r.Fetch(ctx); err != nil {
		return fmt.Errorf("bench: poll cost: first fetch: %w", err)
	}
	heap0 := heapInUse()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc0, t0, cpu0 := ms.TotalAlloc, repo.traffic(), CPUTime()
	for range gitPollFetches {
		rev, err := r.Fetch(ctx)
		if err != nil {
			return fmt.Errorf("bench: poll cost: %w", err)
		}
		if rev.Downloaded > 0 {
			return fmt.Errorf("bench: poll cost: a fetch with nothing new downloaded %d bytes", rev.Downloaded)
		}
	}
	cpu := CPUTime() - cpu0
	t := repo.traffic().sub(t0)
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc - alloc0
	heap1 := heapInUse()
	n := int64(gitPollFetches)
	p.Fetches = gitPollFetches
	p.CPU = msDuration(cpu / time.Duration(n))
	p.Allocated = alloc / uint64(n)
	p.HeapGrowth = int64(heap1) - int64(heap0)
	p.Sent, p.Received = t.Sent/n, t.Received/n
	p.Requests = float64(t.Adverts+t.Packs) / float64(n)
	return nil
}

// gitBig creates the large repository and clones and renders it
// gitBigRuns times, each clone into an empty cache.
func (b *bencher) gitBig(ctx context.Context, srv *gitServer, big *gitBigRepo) error {
	b.progress("git: a %d-object repository: clone and render, %d times", gitBigObjects, gitBigRuns)
	repo, err := srv.create("big.git")
	if err != nil {
		return err
	}
	files := gitFiles(gitBigObjects, "0")
	if _, err := repo.commit(files, "bench: 1,000 objects"); err != nil {
		return err
	}
	path := filepath.Join(b.dir, "git-big.yaml")
	if err := os.WriteFile(path, []byte(gitConfig(b.set, srv.URL(repo.name), "", 0, 0)), 0o600); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	big.Objects, big.Runs, big.Files = gitBigObjects, gitBigRuns, len(files)
	var clones, renders []time.Duration
	var sent, pack int64
	for i := range gitBigRuns {
		cache := filepath.Join(b.dir, fmt.Sprintf("git-big-cache-%d", i))
		t0 := repo.traffic()
		began := time.Now()
		r, err := gitsource.Open(gitsource.Options{URL: srv.URL(repo.name), Ref: "main", CacheDir: cache})
		if err != nil {
			return err
		}
		rev, err := r.Fetch(ctx)
		if err != nil {
			return fmt.Errorf("bench: clone %s: %w", srv.URL(repo.name), err)
		}
		clones = append(clones, time.Since(began))
		sent += repo.traffic().sub(t0).Sent
		pack += rev.Downloaded
		began = time.Now()
		specs, err := compileAt(path, rev.Dir)
		if err != nil {
			return err
		}
		renders = append(renders, time.Since(began))
		big.Rendered = len(specs)
		if err := os.RemoveAll(cache); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	big.Clone, big.Render, big.Sent, big.Pack = latencyOf(clones), latencyOf(renders), sent/gitBigRuns, pack/gitBigRuns
	return nil
}

// finishGit adds the git run's ratio, targets and notes.
func (rep *benchReport) finishGit(o Options) {
	g := rep.Git
	if g == nil {
		return
	}
	if g.PushToApplied.P50 > 0 && g.Floor > 0 {
		rep.ratios().GitPushOverFloor = float64(g.PushToApplied.P50) / float64(g.Floor)
	}
	n := len(g.Pushes)
	all := g.PushToApplied.N == n && n > 0 && g.Error == ""
	rep.Targets = append(rep.Targets, benchGoal{
		Goal:   fmt.Sprintf("git push (webhook) to all %d objects applied on %d cluster(s), p99 under %s", g.Applied, rep.Clusters, fmtDur(gitPushBar)),
		Met:    all && g.PushToApplied.P99.dur() < gitPushBar,
		Actual: fmt.Sprintf("%s over %d/%d pushes%s", fmtDur(g.PushToApplied.P99.dur()), g.PushToApplied.N, n, overFloor(g.PushToApplied.P50, g.Floor, "raw apply floor, p50"))})
	if g.Big.Runs > 0 {
		took := g.Big.Clone.Max + g.Big.Render.Max
		rep.Targets = append(rep.Targets, benchGoal{
			Goal:   fmt.Sprintf("%d-object repository cloned and rendered in under %s (slowest clone + slowest render)", g.Big.Objects, fmtDur(gitBigBar)),
			Met:    took > 0 && took.dur() < gitBigBar,
			Actual: fmt.Sprintf("%s + %s", fmtDur(g.Big.Clone.Max.dur()), fmtDur(g.Big.Render.Max.dur()))})
	}
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("git: the repository is served over smart HTTP on loopback by the bench's in-process server (go-git's upload-pack, no git binary); go-git's server side does not serve shallow fetches, so fetches take the whole history (%d commits at the end); a fetch after a push sends only the new objects (the client's haves are taken).", 1+n),
		fmt.Sprintf("git push: a commit changes the label "+gitRevLabel+" of every object, then a signed GitHub push webhook is POSTed to the hub's API listener; applied is the webhook's POST to an independent raw watch of the clusters seeing the last object with the new label (first: the first object); in force is the hub's own snapshot showing the commit in force (fetched, rendered, desired state replaced), the part of applied before the writes. Raw apply floor: with the hub stopped, a plain client server-side applies the next commit's objects, as many calls in flight as the hub's writers, to the raw watch seeing the last one; the median of %d commits.", gitFloorRuns),
		fmt.Sprintf("git poll: per fetch with nothing new (what the poller runs every interval), averaged over %d fetches in this process with the hub stopped; cpu counts the fetcher and the in-process server; per source-hour is per poll x %.0f polls (interval %s). hub polls: the running hub's own polls counted at the server over the window; its cpu per poll is the whole process's (idle hub and raw watch included).", gitPollFetches, g.Poll.perHour(), gitPollInterval),
		"git clone and render: a first fetch into an empty cache (checkout included) of a repository of 1,000 objects (ConfigMaps, Deployments, Services, a file each); render: config.Load of a config with that source at the checkout, and config.Compile, for every cluster.")
}

// writeTable writes the git run's figures (nothing for a nil report).
func (g *gitReport) writeTable(tw io.Writer) {
	if g == nil {
		return
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "git source %s: %d objects per cluster, %d over all clusters; initial sync %s\n", g.URL, g.Objects, g.Applied, fmtDur(g.InitialSync.dur()))
	fmt.Fprintln(tw, "git push\tn\tp50\tp95\tp99\tmax")
	for _, l := range []struct {
		name string
		p    latencyReport
	}{{"webhook to the commit in force (the hub's view)", g.PushToInForce}, {"webhook to first object applied", g.PushToFirst}, {"webhook to all objects applied", g.PushToApplied}} {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", l.name, l.p.N, fmtDur(l.p.P50.dur()), fmtDur(l.p.P95.dur()), fmtDur(l.p.P99.dur()), fmtDur(l.p.Max.dur()))
	}
	switch {
	case g.Floor > 0:
		fmt.Fprintf(tw, "raw apply floor (a plain client, %d at a time; median)\t%d\t%s\t\t\t%s\n", g.FloorConcurrency, g.FloorRuns, fmtDur(g.Floor.dur()), overFloor(g.PushToApplied.P50, g.Floor, "floor: push p50"))
	case g.FloorError != "":
		fmt.Fprintf(tw, "raw apply floor not measured: %s\n", g.FloorError)
	}
	var sent int64
	for _, p := range g.Pushes {
		sent += p.Sent
	}
	if len(g.Pushes) > 0 {
		fmt.Fprintf(tw, "bytes the git server sent per push\t%s\n", fmtBytes(uint64(sent/int64(len(g.Pushes)))))
	}
	p := g.Poll
	if p.Fetches > 0 || p.HubWindow > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintf(tw, "git poll (nothing new, every %s)\tper poll\tper source-hour\n", fmtDur(p.Interval.dur()))
		h := p.perHour()
		if p.Fetches > 0 {
			fmt.Fprintf(tw, "cpu (fetcher and server, %d fetches)\t%s\t%s\n", p.Fetches, fmtDur(p.CPU.dur()), fmtDur(time.Duration(float64(p.CPU)*h)))
			fmt.Fprintf(tw, "heap allocated\t%s\t%s\n", fmtBytes(p.Allocated), fmtBytes(uint64(float64(p.Allocated)*h)))
			fmt.Fprintf(tw, "bytes from the server\t%s\t%s\n", fmtBytes(uint64(p.Sent)), fmtBytes(uint64(float64(p.Sent)*h)))
			fmt.Fprintf(tw, "request body bytes to the server\t%s\t%s\n", fmtBytesOrZero(uint64(p.Received)), fmtBytesOrZero(uint64(float64(p.Received)*h)))
			fmt.Fprintf(tw, "requests\t%.1f\t%.0f\n", p.Requests, p.Requests*h)
			fmt.Fprintf(tw, "heap growth over the %d fetches (after GC)\t%s\t\n", p.Fetches, fmtSignedBytes(p.HeapGrowth))
		}
		if p.HubWindow > 0 {
			fmt.Fprintf(tw, "running hub: polls in %s\t%d\t\n", fmtDur(p.HubWindow.dur()), p.HubPolls)
			if p.HubPolls > 0 {
				fmt.Fprintf(tw, "running hub: bytes from the server\t%s\t%s\n", fmtBytes(uint64(p.HubSent)), fmtBytes(uint64(float64(p.HubSent)*h)))
				fmt.Fprintf(tw, "running hub: process cpu (upper bound)\t%s\t%s\n", fmtDur(p.HubCPU.dur()), fmtDur(time.Duration(float64(p.HubCPU)*h)))
			}
		}
	}
	if b := g.Big; b.Runs > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintf(tw, "git %d-object repository (%d files)\truns\tp50\tmax\n", b.Objects, b.Files)
		fmt.Fprintf(tw, "clone (first fetch into an empty cache)\t%d\t%s\t%s\n", b.Clone.N, fmtDur(b.Clone.P50.dur()), fmtDur(b.Clone.Max.dur()))
		fmt.Fprintf(tw, "render (load and compile, %d objects)\t%d\t%s\t%s\n", b.Rendered, b.Render.N, fmtDur(b.Render.P50.dur()), fmtDur(b.Render.Max.dur()))
		fmt.Fprintf(tw, "bytes per clone (pack %s)\t%s\t\t\n", fmtBytes(uint64(b.Pack)), fmtBytes(uint64(b.Sent)))
	}
	if g.Error != "" {
		fmt.Fprintf(tw, "git: stopped early: %s\n", g.Error)
	}
}

// fmtSignedBytes formats a byte difference.
func fmtSignedBytes(n int64) string {
	switch {
	case n < 0:
		return "-" + fmtBytes(uint64(-n))
	case n == 0:
		return "0 B"
	}
	return "+" + fmtBytes(uint64(n))
}

// fmtBytesOrZero is fmtBytes, with 0 shown as "0 B" (measured, none).
func fmtBytesOrZero(n uint64) string {
	if n == 0 {
		return "0 B"
	}
	return fmtBytes(n)
}

// gitFigures are the git run's comparable figures.
func gitFigures(g *gitReport, dur func(string, msDuration), bytes func(string, float64), ratio func(string, float64)) {
	if g == nil {
		return
	}
	dur("git initial sync", g.InitialSync)
	for _, l := range []struct {
		name string
		p    latencyReport
	}{{"git push to in force", g.PushToInForce}, {"git push to first applied", g.PushToFirst}, {"git push to all applied", g.PushToApplied}} {
		if l.p.N > 0 {
			dur(l.name+" p50", l.p.P50)
			dur(l.name+" p99", l.p.P99)
			dur(l.name+" max", l.p.Max)
		}
	}
	dur("git raw apply floor", g.Floor)
	if g.PushToApplied.P50 > 0 && g.Floor > 0 {
		ratio("git push p50 / raw apply floor", float64(g.PushToApplied.P50)/float64(g.Floor))
	}
	dur("git poll cpu per poll", g.Poll.CPU)
	bytes("git poll allocated per poll", float64(g.Poll.Allocated))
	bytes("git poll bytes from the server per poll", float64(g.Poll.Sent))
	bytes("git poll bytes to the server per poll", float64(g.Poll.Received))
	dur("git running hub process cpu per poll", g.Poll.HubCPU)
	if g.Big.Runs > 0 {
		dur("git 1000-object clone p50", g.Big.Clone.P50)
		dur("git 1000-object clone max", g.Big.Clone.Max)
		dur("git 1000-object render p50", g.Big.Render.P50)
		dur("git 1000-object render max", g.Big.Render.Max)
		bytes("git 1000-object bytes per clone", float64(g.Big.Sent))
	}
}
