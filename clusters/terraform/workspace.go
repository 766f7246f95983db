package terraform

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/rescue"
)

// Source is the ClusterHealth.Source of every workspace.
const Source = "terraform"

// Defaults of Options.
const (
	// DefaultInterval is the default Options.Interval.
	DefaultInterval = time.Minute
	// DefaultLockRetry is the default Options.LockRetry.
	DefaultLockRetry = 5 * time.Second
	// DefaultDebounce is the default Options.Debounce.
	DefaultDebounce = 200 * time.Millisecond
)

// Options configure a Workspace. Zero values take the documented defaults.
type Options struct {
	// ID is the workspace id, the first part of its NodeIDs (required).
	ID string
	// Dir is the working directory, the root module (required).
	Dir string
	// Binary is tofu, terraform, an absolute path or "" (see FindBinary).
	Binary string
	// Vars are passed as -var NAME=VALUE, VarFiles as -var-file.
	Vars     map[string]string
	VarFiles []string
	// Interval is the time between polls. Default DefaultInterval.
	Interval time.Duration
	// LockRetry is how soon a poll that found the state locked is tried
	// again (at most Interval). Default DefaultLockRetry.
	LockRetry time.Duration
	// Debounce groups the file events of one save into one poll. Default
	// DefaultDebounce.
	Debounce time.Duration
	// Policy is the policy of the workspace's resources. Default
	// hub.PolicyRepair.
	Policy hub.Policy
	// Targets are the resource addresses to manage (an address also
	// covers its instances, a module address its resources); nil means
	// every managed resource.
	Targets []string
	// Env is added to the environment of every run (such as
	// TF_CLI_CONFIG_FILE).
	Env map[string]string
	// Getenv finds the binaries cache (nil: os.Getenv).
	Getenv func(string) string
	// StopGrace is how long a run of the binary gets to exit after an
	// interrupt when ctx ends, before it is killed. Default: terraform-exec's
	// (a minute); the demo shortens it to exit fast.
	StopGrace time.Duration
	// Logger receives the workspace's logs. Default: discard.
	Logger *slog.Logger
	// OnSpecs receives the workspace's desired state each time the set of
	// managed resources or one of their desired values changes: the
	// caller hands it to the hub (hub.ReplaceDesiredCluster). Required.
	OnSpecs func(workspace string, specs []hub.NodeSpec)
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.LockRetry <= 0 {
		o.LockRetry = DefaultLockRetry
	}
	o.LockRetry = min(o.LockRetry, o.Interval)
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.Policy == "" {
		o.Policy = hub.PolicyRepair
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// resource is what the last poll found of one managed resource.
type resource struct {
	addr, typ string
	// desired are the values last applied (the state before refresh),
	// sensitive ones redacted; body is their JSON.
	desired map[string]any
	body    []byte
	// exists is false when the resource is gone outside Terraform;
	// actual are then nil.
	exists bool
	actual map[string]any
	// version changes whenever what was observed changes.
	version string
	// removed is why the resource left the configuration (the plan's
	// action reason) while it is still in the state; "" when it is in it.
	// Such a resource is released: watched with policy warn, never
	// repaired nor destroyed.
	removed tfjson.ActionReason
	// secret is a keyed digest of the sensitive values that changed
	// (see changedDigest); "" when none did.
	secret string
}

// Live is the backend's view of one resource, passed back to it through
// hub.State.Live.
type Live struct {
	// Address and Type locate the resource.
	Address, Type string
	// Actual are the refreshed values (nil when gone).
	Actual map[string]any
}

// errLocked marks a run that found the state locked.
var errLocked = errors.New("state locked")

// Workspace is one Terraform working directory behind the hub.Backend
// contract. Create it with New and run it with Run.
type Workspace struct {
	opts Options
	sink hub.Sink
	log  *slog.Logger
	kick chan struct{}
	// key keys the digests of changed sensitive values (random, never
	// shown).
	key []byte

	// op serialises every run of the binary in this folder: one
	// operation at a time per workspace.
	op          sync.Mutex
	tf          *tfexec.Terraform
	tmp         string
	initialised bool
	lastPoll    time.Time // when the last successful poll started

	mu        sync.Mutex
	res       map[string]*resource
	specsHash string
	state     hub.ClusterState
	lastErr   string
	since     time.Time
	gen, seq  int64
}

// New returns a workspace that reports to sink.
func New(opts Options, sink hub.Sink) (*Workspace, error) {
	if opts.ID == "" || opts.Dir == "" {
		return nil, errors.New("terraform: Options.ID and Options.Dir are required")
	}
	if opts.OnSpecs == nil {
		return nil, fmt.Errorf("terraform workspace %q: Options.OnSpecs is required", opts.ID)
	}
	opts = opts.withDefaults()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("terraform workspace %q: %w", opts.ID, err)
	}
	return &Workspace{
		opts: opts, sink: sink, log: opts.Logger.With("workspace", opts.ID),
		kick: make(chan struct{}, 1), key: key, res: make(map[string]*resource),
	}, nil
}

// ID returns the workspace id.
func (w *Workspace) ID() string { return w.opts.ID }

// Interval returns the time between polls.
func (w *Workspace) Interval() time.Duration { return w.opts.Interval }

// Trigger asks for a poll now (a file changed, a user asked); it never
// blocks.
func (w *Workspace) Trigger() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Run polls the workspace until ctx ends: at once, then every Interval,
// at once when a file of Dir changes or Trigger is called, and after
// LockRetry while the state is locked. It returns once every goroutine it
// started has returned.
func (w *Workspace) Run(ctx context.Context) error {
	w.report(hub.ClusterConnecting, "initialising")
	tmp, err := os.MkdirTemp("", "driftwatch-tf-"+w.opts.ID+"-")
	if err != nil {
		return fmt.Errorf("terraform workspace %q: %w", w.opts.ID, err)
	}
	w.op.Lock()
	w.tmp = tmp
	w.op.Unlock()
	defer func() {
		// A repair still running (a worker's call) keeps its plan file:
		// the folder goes once it is done, and later calls find the
		// workspace not running.
		w.op.Lock()
		w.tmp = ""
		w.op.Unlock()
		os.RemoveAll(tmp)
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg conc.WaitGroup
	defer wg.Wait()
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		w.log.Warn("no file watch: polling only", "err", err)
	} else {
		defer watcher.Close()
		if err := watcher.Add(w.opts.Dir); err != nil {
			w.log.Warn("no file watch: polling only", "dir", w.opts.Dir, "err", err)
		}
		wg.Go(func() { w.watchFiles(ctx, watcher) })
	}

	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-w.kick:
		}
		next := w.opts.Interval
		if err := w.pollRecovered(ctx); errors.Is(err, errLocked) {
			next = w.opts.LockRetry
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// pollRecovered is Run's Poll. A panic in it (reading the plan, the
// desired state's compile in OnSpecs, the hub taking a report) is
// recovered, logged with its stack and reported as the workspace's health
// (unreachable) until a poll succeeds; that poll hands the desired state
// to OnSpecs again, and the workspace ready again, the hub looks at every
// resource: one bad plan never ends the workspace's polling.
func (w *Workspace) pollRecovered(ctx context.Context) error {
	var err error
	perr := rescue.Call(w.log, "the terraform workspace's poll", func() { err = w.Poll(ctx) })
	if perr == nil {
		return err
	}
	w.mu.Lock()
	w.specsHash = "" // OnSpecs may not have taken it
	w.mu.Unlock()
	_ = rescue.Call(w.log, "the terraform workspace's health report", func() {
		w.report(hub.ClusterUnreachable, "poll failed: "+perr.Error())
	})
	return perr
}

// watchFiles triggers a poll, debounced, when a file of Dir changes; the
// state files Terraform itself writes do not count.
func (w *Workspace) watchFiles(ctx context.Context, watcher *fsnotify.Watcher) {
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-watcher.Events:
			if !ok {
				return
			}
			if ignoredFile(filepath.Base(ev.Name)) {
				continue
			}
			if debounce == nil {
				debounce = time.After(w.opts.Debounce)
			}
		case err, ok := <-watcher.Errors:
			if !ok {
				return
			}
			w.log.Warn("file watch", "err", err)
		case <-debounce:
			debounce = nil
			w.Trigger()
		}
	}
}

// ignoredFile reports whether a file name is Terraform's own bookkeeping.
func ignoredFile(name string) bool {
	return strings.HasPrefix(name, "terraform.tfstate") || strings.HasPrefix(name, ".terraform") ||
		strings.HasSuffix(name, ".tfplan") || strings.HasSuffix(name, "~") || strings.HasPrefix(name, ".#")
}

// Poll refreshes the workspace now: init when needed, then one
// `plan -json -out=FILE` with refresh and the saved plan read back through
// `show -json`. The plan's resource drift and refreshed state say what
// changed outside Terraform; its planned changes what the configuration
// holds that was not applied (see pendingOf). It reports what changed to
// the Sink and returns an error wrapping errLocked when the state is
// locked.
func (w *Workspace) Poll(ctx context.Context) error {
	w.op.Lock()
	defer w.op.Unlock()
	return w.pollLocked(ctx)
}

// freshWindow is how old a poll may be and still serve a fresh read: the
// workers' fresh reads of one catch-up pass, which arrive while a poll
// runs, share the next poll instead of running one each.
const freshWindow = time.Second

// pollSince polls unless a poll started after t-freshWindow.
func (w *Workspace) pollSince(ctx context.Context, t time.Time) error {
	w.op.Lock()
	defer w.op.Unlock()
	if w.lastPoll.After(t.Add(-freshWindow)) {
		return nil
	}
	return w.pollLocked(ctx)
}

func (w *Workspace) pollLocked(ctx context.Context) error {
	started := time.Now()
	if err := w.setupLocked(ctx); err != nil {
		return err
	}
	if w.tmp == "" {
		return fmt.Errorf("terraform workspace %q: not running", w.opts.ID)
	}
	planPath := filepath.Join(w.tmp, "poll.tfplan")
	var out bytes.Buffer
	// One plan with refresh gives both: the refresh's drift, and the
	// configuration against the refreshed state (a drift's undoing told
	// apart from a configuration change by pendingOf).
	plan, err := w.planLocked(ctx, &out, "plan", planPath, tfexec.Refresh(true))
	if err != nil {
		return err
	}
	w.lastPoll = started
	obs := observe(plan, w.managed, w.opts.Dir, w.key, false)
	w.apply(obs.res, started)
	w.report(hub.ClusterSynced, obs.pend.String())
	return nil
}

// planLocked runs a poll's plan (verb names it in errors and health) into
// planPath and reads the saved plan.
func (w *Workspace) planLocked(ctx context.Context, out *bytes.Buffer, verb, planPath string, mode ...tfexec.PlanOption) (*tfjson.Plan, error) {
	if _, err := w.tf.PlanJSON(ctx, out, w.planOptions(planPath, mode...)...); err != nil {
		return nil, w.runFailed(ctx, verb, err, out)
	}
	plan, err := w.tf.ShowPlanFile(ctx, planPath)
	if err != nil {
		return nil, w.runFailed(ctx, "show -json", err, nil)
	}
	return plan, nil
}

// planOptions are the options of every plan the workspace runs: the saved
// plan's path, no waiting for a held state lock, mode (refresh or not, a
// target, no lock at all) and the workspace's variables.
func (w *Workspace) planOptions(planPath string, mode ...tfexec.PlanOption) []tfexec.PlanOption {
	opts := append([]tfexec.PlanOption{tfexec.Out(planPath), tfexec.LockTimeout("0s")}, mode...)
	for _, v := range w.varArgs() {
		opts = append(opts, tfexec.Var(v))
	}
	for _, f := range w.opts.VarFiles {
		opts = append(opts, tfexec.VarFile(f))
	}
	return opts
}

// setupLocked finds the binary and runs init once.
func (w *Workspace) setupLocked(ctx context.Context) error {
	if w.tf == nil {
		bin, err := FindBinary(w.opts.Binary, w.opts.Getenv)
		if err != nil {
			w.report(hub.ClusterUnreachable, err.Error())
			return fmt.Errorf("terraform workspace %q: %w", w.opts.ID, err)
		}
		tf, err := tfexec.NewTerraform(w.opts.Dir, bin)
		if err != nil {
			msg := fmt.Sprintf("dir %s: %v", w.opts.Dir, err)
			w.report(hub.ClusterUnreachable, msg)
			return fmt.Errorf("terraform workspace %q: %s", w.opts.ID, msg)
		}
		env := envMap(os.Environ())
		// terraform-exec sets the variables it manages itself.
		for _, k := range tfexec.ProhibitedEnv(env) {
			delete(env, k)
		}
		maps.Copy(env, w.opts.Env)
		if err := tf.SetEnv(env); err != nil {
			w.report(hub.ClusterUnreachable, err.Error())
			return fmt.Errorf("terraform workspace %q: environment: %w", w.opts.ID, err)
		}
		if w.opts.StopGrace > 0 {
			if err := tf.SetWaitDelay(w.opts.StopGrace); err != nil {
				return fmt.Errorf("terraform workspace %q: stop grace: %w", w.opts.ID, err)
			}
		}
		w.tf = tf
	}
	if w.initialised {
		return nil
	}
	w.report(hub.ClusterConnecting, "initialising")
	var out bytes.Buffer
	if err := w.tf.InitJSON(ctx, &out, tfexec.Upgrade(false)); err != nil {
		return w.runFailed(ctx, "init", err, &out)
	}
	w.initialised = true
	return nil
}

// runFailed reports a failed run as the workspace's health: a held state
// lock is its own state (retried soon), anything else is a failing plan
// with tofu's own diagnostics.
func (w *Workspace) runFailed(ctx context.Context, verb string, err error, out *bytes.Buffer) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := ""
	if out != nil {
		msg = diagnostics(out.Bytes())
	}
	if msg == "" {
		msg = strings.TrimSpace(err.Error())
	}
	if isLockError(msg) {
		w.report(hub.ClusterDegraded, "locked: "+msg+fmt.Sprintf(" (retrying every %s)", w.opts.LockRetry))
		return fmt.Errorf("terraform workspace %q: %s: %w: %s", w.opts.ID, verb, errLocked, msg)
	}
	if verb == "init" {
		w.initialised = false
		w.report(hub.ClusterUnreachable, "init failing: "+msg)
	} else {
		// A configuration that stopped loading may need init again
		// (a new provider or module).
		w.initialised = !strings.Contains(msg, "init")
		w.report(hub.ClusterUnreachable, "plan failing: "+msg)
	}
	return fmt.Errorf("terraform workspace %q: %s: %s", w.opts.ID, verb, msg)
}

// isLockError reports whether tofu's message says the state is locked.
func isLockError(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "acquiring the state lock") || strings.Contains(m, "state lock") && strings.Contains(m, "lock")
}

// diagnostics returns the error diagnostics of a -json run, one line each
// ("summary: detail").
func diagnostics(out []byte) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 8<<20)
	for sc.Scan() {
		msg, err := tfjson.UnmarshalLogMessage(sc.Bytes())
		if err != nil {
			continue
		}
		d, ok := msg.(tfjson.DiagnosticLogMessage)
		if !ok {
			if p, ok := msg.(*tfjson.DiagnosticLogMessage); ok {
				d = *p
			} else {
				continue
			}
		}
		if d.Diagnostic.Severity != tfjson.DiagnosticSeverityError {
			continue
		}
		s := d.Diagnostic.Summary
		if det := strings.Join(strings.Fields(d.Diagnostic.Detail), " "); det != "" {
			s += ": " + det
		}
		if r := d.Diagnostic.Range; r != nil {
			s = fmt.Sprintf("%s:%d: %s", r.Filename, r.Start.Line, s)
		}
		lines = append(lines, s)
	}
	return strings.Join(lines, "; ")
}

// varArgs returns the -var assignments, sorted.
func (w *Workspace) varArgs() []string {
	keys := slices.Sorted(maps.Keys(w.opts.Vars))
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+w.opts.Vars[k])
	}
	return out
}

// managed reports whether an address is one of the targets.
func (w *Workspace) managed(addr string) bool {
	if w.opts.Targets == nil {
		return true
	}
	for _, t := range w.opts.Targets {
		if addr == t || strings.HasPrefix(addr, t+"[") || strings.HasPrefix(addr, t+".") {
			return true
		}
	}
	return false
}

// apply takes a poll's resources: it updates the cache, hands a changed
// desired state to OnSpecs, logs each resource released (removed from the
// configuration, or gone from the state) once, and sends an event for every
// resource whose observation changed.
func (w *Workspace) apply(next map[string]*resource, at time.Time) {
	specs := make([]hub.NodeSpec, 0, len(next))
	for _, r := range next {
		r.body = encodeValues(r.desired)
		actual := []byte("gone")
		if r.exists {
			actual = encodeValues(r.actual)
		}
		r.version = hashOf(r.body, actual, []byte(r.secret))
		specs = append(specs, w.spec(r))
	}
	slices.SortFunc(specs, func(a, b hub.NodeSpec) int { return strings.Compare(a.Name, b.Name) })
	var sum []byte
	for _, s := range specs {
		sum = append(sum, s.Name...)
		sum = append(sum, 0)
		sum = append(sum, s.Hash...)
		sum = append(sum, 0)
		sum = append(sum, s.Policy...)
		sum = append(sum, 0)
		sum = append(sum, s.Note...)
		sum = append(sum, 0)
	}
	specsHash := hashOf(sum)

	w.mu.Lock()
	prev := w.res
	w.res = next
	specsChanged := specsHash != w.specsHash
	w.specsHash = specsHash
	w.mu.Unlock()
	for _, addr := range slices.Sorted(maps.Keys(next)) {
		if r, old := next[addr], prev[addr]; r.removed != "" && (old == nil || old.removed == "") {
			w.log.Info("resource removed from the configuration: released (watched with policy warn, never repaired nor destroyed; tofu apply decommissions it)",
				"node", w.nodeID(r).String(), "reason", string(r.removed))
		}
	}
	for _, addr := range slices.Sorted(maps.Keys(prev)) {
		if next[addr] == nil {
			w.log.Info("resource no longer in the state: released, nothing deleted", "node", w.nodeID(prev[addr]).String())
		}
	}
	if specsChanged {
		w.opts.OnSpecs(w.opts.ID, specs)
	}
	for addr, r := range next {
		old := prev[addr]
		if old != nil && old.version == r.version {
			continue
		}
		typ := hub.EventUpdated
		switch {
		case !r.exists:
			typ = hub.EventDeleted
		case old == nil:
			typ = hub.EventAdded
		}
		w.sink.Observe(hub.Event{ID: w.nodeID(r), Type: typ, ResourceVersion: r.version, ObservedAt: at})
	}
	for addr, old := range prev {
		if next[addr] == nil {
			w.sink.Observe(hub.Event{ID: w.nodeID(old), Type: hub.EventDeleted, ObservedAt: at})
		}
	}
}

// sensitiveJSON re-encodes a before_sensitive value for redact.
func sensitiveJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// walkModule calls f for every resource of a module and its children.
func walkModule(m *tfjson.StateModule, f func(*tfjson.StateResource)) {
	if m == nil {
		return
	}
	for _, r := range m.Resources {
		f(r)
	}
	for _, c := range m.ChildModules {
		walkModule(c, f)
	}
}

// NodeID returns the NodeID of a resource of the workspace.
func NodeID(workspace, address, typ string) hub.NodeID {
	return hub.NodeID{Cluster: workspace, Resource: address, Kind: hub.Kind(typ)}
}

func (w *Workspace) nodeID(r *resource) hub.NodeID { return NodeID(w.opts.ID, r.addr, r.typ) }

// spec is the desired spec of a resource.
func (w *Workspace) spec(r *resource) hub.NodeSpec {
	s := hub.NodeSpec{
		ID: w.nodeID(r), Name: r.addr, Kind: hub.Kind(r.typ), Application: w.opts.ID,
		Policy: w.opts.Policy, Body: r.body, Hash: hashOf(r.body),
	}
	if r.removed != "" {
		// Restoring it would need the configuration it left; applying
		// without it destroys it, which is Terraform's own job.
		s.Policy = hub.PolicyWarn
		s.Note = RemovedNote
	}
	return s
}

// report sends the workspace's health when it changed.
func (w *Workspace) report(st hub.ClusterState, msg string) {
	w.mu.Lock()
	if st == w.state && msg == w.lastErr {
		w.mu.Unlock()
		return
	}
	now := time.Now()
	if st != w.state {
		w.since = now
	}
	if st == hub.ClusterSynced && w.state != hub.ClusterSynced {
		w.gen++ // ready again: the loop looks at every resource
	}
	w.state, w.lastErr = st, msg
	w.seq++
	h := hub.ClusterHealth{Cluster: w.opts.ID, State: st, LastError: msg, Since: w.since, Source: Source,
		Detection: Detection(w.opts.Interval), Generation: w.gen, Seq: w.seq, LastEvent: now}
	w.mu.Unlock()
	switch st {
	case hub.ClusterSynced:
		w.log.Info("workspace ready")
	case hub.ClusterConnecting:
		w.log.Info("workspace health", "state", string(st), "detail", msg)
	default: // unreachable, degraded
		w.log.Warn("workspace health", "state", string(st), "err", msg)
	}
	w.sink.ClusterChanged(h)
}

// Detection is how a workspace polled at interval finds changes, for
// display: "poll 1m", "poll 30s", "poll 1h30m".
func Detection(interval time.Duration) string {
	s := interval.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return "poll " + s
}

// Health returns the workspace's current state and message.
func (w *Workspace) Health() (hub.ClusterState, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state, w.lastErr
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
