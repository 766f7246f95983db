package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/config/chartrepo"
	"github.com/driftwatch/driftwatch/config/gitsource"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/rescue"
	"github.com/driftwatch/driftwatch/internal/safefile"
)

// GitSources fetches the Git manifest sources of a hub: one
// gitsource.Repo per source, cached under the hub's state folder
// (<state folder>/git/<gitsource.DirName>), and one poller per source
// that fetches every interval (or at once on a push webhook) and reloads
// the desired state when the commit moved.
//
// Its Checkout is the config.LoadOptions.GitCheckout of every load of the
// hub: it fetches a source it has not fetched yet (at start: before the
// first compile, bounded by the fetch's timeout; a source whose remote
// cannot be reached starts from the commit its cache holds from an earlier
// run, else it is a source fault and the others run), and otherwise
// returns the latest fetched commit. A commit that does not render, a
// failing fetch or a refused signature keeps the last good revision in
// force and marks the source stale; a commit whose reload the prune guard
// refuses is not offered again (the source stays stale until the next
// commit).
type GitSources struct {
	log    *slog.Logger
	getenv func(string) string
	// ownLog is set when NewGitSources was given a logger; otherwise the
	// app's is taken (attach).
	ownLog bool

	failures *prometheus.CounterVec

	mu    sync.Mutex
	repos map[string]*gitRepo // by source id
	// tmp is the cache root of a hub that keeps no state (removed by
	// Close).
	tmp string
	// app is the hub whose desired state a new commit reloads (nil until
	// New).
	app *App
	// run starts a poller in Run's group; nil until Run, and again once
	// Run stops.
	run func(r *gitRepo)
}

// gitRepo is one Git source, or one source whose chart comes from a chart
// repository (helm.repo). Its fields below mu are guarded by
// GitSources.mu.
type gitRepo struct {
	id string
	// spec is the source's git or helm section, compared to tell a new
	// repository, ref or chart.
	spec any
	// url and ref are what the source follows: the Git repository and
	// ref, or the chart repository and chart ("https://charts.example.com
	// redis") and the version constraint.
	url, ref string
	// interval is the poll interval; webhookSecretFile the push webhook's
	// secret ("" for charts).
	interval          time.Duration
	webhookSecretFile string
	repo              remote
	// kick asks its poller to fetch at once (capacity 1: coalesced).
	kick chan struct{}
	// gone closes when the source leaves the config (its poller stops).
	gone chan struct{}

	latest  *config.GitCheckout // the last fetched revision
	applied *config.GitCheckout // the revision in force
	// latestSeen is when the fetch that found latest at the head of the
	// ref started, appliedSeen the same for the revision in force (zero:
	// no fetch found it, as for a commit taken from the cache while the
	// repository was unreachable). Replicas compare them with the
	// revisions the fleet applied (see behindFleet).
	latestSeen, appliedSeen time.Time
	offered                 string // the commit the last load was given
	refused                 string // a commit the prune guard refused
	lastFetch               time.Time
	fetchErr                string // the last fetch's error ("": it succeeded)
	loadErr                 string // why the latest commit is not in force
	since                   time.Time
	polling                 bool
}

// remote is a Git repository's cache (gitsource.Repo) or a chart
// repository's (chartrepo.Repo), as GitSources polls it.
type remote interface {
	// Fetch fetches the ref's head, or the chart version the constraint
	// picks now.
	Fetch(ctx context.Context) (config.GitCheckout, error)
	// Cached returns what the cache holds from an earlier run.
	Cached() (config.GitCheckout, bool)
}

// gitRemote is a Git source's remote.
type gitRemote struct{ r *gitsource.Repo }

func (g gitRemote) Fetch(ctx context.Context) (config.GitCheckout, error) {
	rev, err := g.r.Fetch(ctx)
	return gitCheckout(rev), err
}

func (g gitRemote) Cached() (config.GitCheckout, bool) {
	rev, ok := g.r.Cached()
	return gitCheckout(rev), ok
}

// openGitRemote opens the cache of a Git source under a cache root:
// root/<gitsource.DirName>.
func openGitRemote(root string, spec config.GitSource) (gitRemote, error) {
	repo, err := gitsource.Open(spec.GitOptions(filepath.Join(root, gitsource.DirName(spec.URL, spec.Ref))))
	return gitRemote{repo}, err
}

// gitCheckout is a gitsource revision as the config takes it.
func gitCheckout(rev gitsource.Revision) config.GitCheckout {
	return config.GitCheckout{Dir: rev.Dir, Commit: rev.Commit, Ref: rev.Ref, Time: rev.Time, Author: rev.Author, Message: rev.Message}
}

// chartRemote is the remote of a source whose chart comes from a
// repository.
type chartRemote struct {
	r     *chartrepo.Repo
	chart string
}

func (c chartRemote) Fetch(ctx context.Context) (config.GitCheckout, error) {
	rev, err := c.r.Fetch(ctx)
	return chartCheckout(c.chart, rev), err
}

func (c chartRemote) Cached() (config.GitCheckout, bool) {
	rev, ok := c.r.Cached()
	return chartCheckout(c.chart, rev), ok
}

// openChartRemote opens the cache of a chart from a repository under a
// cache root: root/charts/<chartrepo.DirName>, a folder no Git cache is
// named as (theirs end in a hash).
func openChartRemote(root string, spec config.HelmChart) (chartRemote, error) {
	repo, err := chartrepo.Open(chartOptions(spec, filepath.Join(root, "charts", chartrepo.DirName(spec.Repo, spec.Chart))))
	return chartRemote{repo, spec.Chart}, err
}

// chartCheckout is a pulled chart version as the config takes it.
func chartCheckout(chart string, rev chartrepo.Revision) config.GitCheckout {
	if rev.Path == "" {
		return config.GitCheckout{}
	}
	msg := "chart " + chart
	if rev.AppVersion != "" {
		msg += " (app " + rev.AppVersion + ")"
	}
	return config.GitCheckout{Dir: rev.Dir, Archive: rev.Path, Commit: rev.ID(), Ref: rev.Version, Time: rev.Created, Message: msg}
}

// chartOptions returns the chartrepo options of a source's chart for a
// cache folder.
func chartOptions(h config.HelmChart, cacheDir string) chartrepo.Options {
	return chartrepo.Options{URL: h.Repo, Chart: h.Chart, Version: h.Version, CacheDir: cacheDir, Timeout: h.Timeout,
		Auth: chartrepo.Auth{UsernameFile: h.Auth.UsernameFile, PasswordFile: h.Auth.PasswordFile}, CAFile: h.CAFile}
}

// NewGitSources returns the Git sources of a hub, empty: the first load
// through Checkout fills them. getenv (nil: os.Getenv) resolves the
// default state folder; log nil means the app's logger once New ties it to
// an app (and none before).
func NewGitSources(log *slog.Logger, getenv func(string) string) *GitSources {
	ownLog := log != nil
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	return &GitSources{log: log, ownLog: ownLog, getenv: getenv, repos: map[string]*gitRepo{},
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "driftwatch_source_fetch_failures_total", Help: "Failed fetches of each Git manifest source or chart from a repository (unreachable, refused signature, over the size limits).",
		}, []string{"source"})}
}

// LoadOptions returns opts with GitCheckout set to g's Checkout and
// ChartPull to g's ChartPull.
func (g *GitSources) LoadOptions(opts config.LoadOptions) config.LoadOptions {
	opts.GitCheckout = g.Checkout
	opts.ChartPull = g.ChartPull
	return opts
}

// cacheRoot returns the folder of the Git caches of a hub: git/ beside its
// state file, or, for a hub that keeps no state, a temporary folder
// removed by Close. Callers hold g.mu.
func (g *GitSources) cacheRootLocked(h config.Hub) (string, error) {
	if p, err := StateFile(&config.Config{Hub: h}, g.getenv); err == nil && p != "" {
		dir := filepath.Join(filepath.Dir(p), "git")
		if err := safefile.MkdirPrivate(filepath.Dir(p)); err != nil {
			return "", fmt.Errorf("state folder: %w", err)
		}
		return dir, nil
	}
	if g.tmp == "" {
		dir, err := os.MkdirTemp("", "driftwatch-git-")
		if err != nil {
			return "", fmt.Errorf("git cache: %w", err)
		}
		g.tmp = dir
	}
	return g.tmp, nil
}

// Checkout is the config.LoadOptions.GitCheckout of the hub (see
// GitSources).
func (g *GitSources) Checkout(h config.Hub, id string, spec config.GitSource) (config.GitCheckout, error) {
	return g.checkout(h, id, spec, func(root string) (*gitRepo, error) {
		repo, err := openGitRemote(root, spec)
		if err != nil {
			return nil, err
		}
		return &gitRepo{url: spec.URL, ref: spec.Ref, interval: spec.Interval, webhookSecretFile: spec.WebhookSecretFile, repo: repo}, nil
	})
}

// ChartPull is the config.LoadOptions.ChartPull of the hub: as Checkout,
// for a source whose chart comes from a repository (cached under
// <state folder>/git/charts/<chartrepo.DirName>).
func (g *GitSources) ChartPull(h config.Hub, id string, spec config.HelmChart) (config.GitCheckout, error) {
	// Only what is pulled tells a new chart: values and release do not.
	key := config.HelmChart{Chart: spec.Chart, Repo: spec.Repo, Version: spec.Version, Interval: spec.Interval, Timeout: spec.Timeout, Auth: spec.Auth, CAFile: spec.CAFile}
	return g.checkout(h, id, key, func(root string) (*gitRepo, error) {
		repo, err := openChartRemote(root, spec)
		if err != nil {
			return nil, err
		}
		return &gitRepo{url: spec.Repo + " " + spec.Chart, ref: spec.Version, interval: spec.Interval, repo: repo}, nil
	})
}

// checkout returns the revision of source id to load: fetched at once the
// first time (open makes its remote, under the hub's Git cache root),
// else the latest fetched.
func (g *GitSources) checkout(h config.Hub, id string, spec any, open func(root string) (*gitRepo, error)) (config.GitCheckout, error) {
	r, fetched, err := g.repoFor(h, id, spec, open)
	if err != nil {
		return config.GitCheckout{}, err
	}
	if !fetched {
		// The first fetch of this source: the load waits for it (bounded
		// by the fetch's timeout).
		if _, err := g.fetch(context.Background(), r); err != nil {
			if c, ok := r.repo.Cached(); ok {
				g.log.Warn("source unreachable: starting from the revision its cache holds", "source", id, "revision", c.Commit, "err", err)
				g.mu.Lock()
				r.latest, r.latestSeen = &c, time.Time{}
				g.mu.Unlock()
			} else {
				return config.GitCheckout{}, err
			}
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	rev := r.latest
	if rev.Commit == r.refused && r.applied != nil {
		return *r.applied, nil
	}
	r.offered = rev.Commit
	return *rev, nil
}

// repoFor returns the repository of source id, opened (and its poller
// started) when it is new or its repository or ref changed, and whether it
// was fetched before; under g.mu, released even on a panic.
func (g *GitSources) repoFor(h config.Hub, id string, spec any, open func(root string) (*gitRepo, error)) (r *gitRepo, fetched bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r = g.repos[id]
	if r != nil && !reflect.DeepEqual(r.spec, spec) {
		// Another repository or ref: a new cache and poller.
		close(r.gone)
		delete(g.repos, id)
		r = nil
	}
	if r == nil {
		root, err := g.cacheRootLocked(h)
		if err != nil {
			return nil, false, err
		}
		r, err = open(root)
		if err != nil {
			return nil, false, err
		}
		r.id, r.spec, r.kick, r.gone = id, spec, make(chan struct{}, 1), make(chan struct{})
		g.repos[id] = r
		if g.run != nil {
			g.startLocked(r)
		}
	}
	return r, r.latest != nil, nil
}

// fetch fetches a source once and records the outcome; changed reports
// that the fetched commit is not the one the last load was given.
func (g *GitSources) fetch(ctx context.Context, r *gitRepo) (changed bool, err error) {
	start := time.Now()
	rev, err := r.repo.Fetch(ctx)
	now := time.Now()
	g.mu.Lock()
	if err != nil {
		g.failures.WithLabelValues(r.id).Inc()
		if r.fetchErr == "" && r.loadErr == "" {
			r.since = now
		}
		r.fetchErr = err.Error()
	} else {
		r.latest, r.latestSeen, r.lastFetch, r.fetchErr = &rev, start, now, ""
		if r.applied != nil && r.applied.Commit == rev.Commit {
			r.appliedSeen = start
		}
		changed = rev.Commit != r.offered && rev.Commit != r.refused
	}
	g.mu.Unlock()
	g.publish()
	return changed, err
}

// startLocked starts the poller of r. Callers hold g.mu, with g.run set.
func (g *GitSources) startLocked(r *gitRepo) {
	if r.polling {
		return
	}
	r.polling = true
	g.run(r)
}

// Run runs a poller per Git source until ctx ends, and waits for them.
func (g *GitSources) Run(ctx context.Context) {
	var wg conc.WaitGroup
	g.mu.Lock()
	g.run = func(r *gitRepo) { wg.Go(func() { g.poll(ctx, r) }) }
	for _, id := range slices.Sorted(maps.Keys(g.repos)) {
		g.startLocked(g.repos[id])
	}
	g.mu.Unlock()
	<-ctx.Done()
	g.mu.Lock()
	g.run = nil
	g.mu.Unlock()
	wg.Wait()
}

// poll fetches r every interval, or at once when kicked, and reloads the
// desired state when its commit moved, until ctx ends or r leaves the
// config.
func (g *GitSources) poll(ctx context.Context, r *gitRepo) {
	t := time.NewTimer(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.gone:
			return
		case <-t.C:
		case <-r.kick:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
		g.pollOnce(ctx, r)
		t.Reset(r.interval)
	}
}

// pollOnce fetches r once and reloads the desired state when its commit
// moved. A panic in it (the reload parses and compiles the whole config)
// is recovered and logged with its stack, and the commit fetched is
// offered again at the next poll: one bad commit or config never ends the
// source's polling.
func (g *GitSources) pollOnce(ctx context.Context, r *gitRepo) {
	err := rescue.Call(g.log, "git source "+r.id+"'s poll", func() {
		changed, err := g.fetch(ctx, r)
		if err != nil {
			if ctx.Err() == nil {
				g.log.Error("git source: fetch failed, the last good revision stays in force", "source", r.id, "err", err)
			}
		} else if changed {
			g.reload(r)
		}
	})
	if err != nil {
		g.mu.Lock()
		r.offered = ""
		g.mu.Unlock()
	}
}

// reload reloads the hub's desired state for a new commit of r: the
// config as last loaded is parsed again with the new checkout, and the
// prune guard applies as to a reload (see App.reloadSources).
func (g *GitSources) reload(r *gitRepo) {
	g.mu.Lock()
	a := g.app
	commit := ""
	if r.latest != nil {
		commit = r.latest.Commit
	}
	g.mu.Unlock()
	if a == nil {
		return
	}
	g.log.Info("git source: new commit, reloading the desired state", "source", r.id, "commit", commit)
	if err := a.reloadSources(); err != nil {
		g.log.Error("git source: new commit not applied, the last good revision stays in force", "source", r.id, "commit", commit, "err", err)
	}
}

// Trigger asks the sources' pollers to fetch at once (coalesced with a
// fetch that runs or is already asked for).
func (g *GitSources) Trigger(ids ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		if r := g.repos[id]; r != nil {
			select {
			case r.kick <- struct{}{}:
			default:
			}
		}
	}
}

// FetchAll asks every source's poller to fetch at once (see Trigger): a
// reload of the config looks again at the remotes too.
func (g *GitSources) FetchAll() {
	g.mu.Lock()
	ids := slices.Collect(maps.Keys(g.repos))
	g.mu.Unlock()
	g.Trigger(ids...)
}

// TriggerAll asks every source's poller to fetch at once (see Trigger):
// another replica publishes another desired state, perhaps because it
// fetched a newer commit first (a push webhook reaches one replica).
func (g *GitSources) TriggerAll() {
	g.mu.Lock()
	n := len(g.repos)
	g.mu.Unlock()
	if n > 0 {
		g.log.Info("git sources: another replica publishes another desired state; fetching at once")
		g.FetchAll()
	}
}

// loaded records the outcome of a load the hub took: each Git source that
// rendered is in force at the commit it was given; one that did not keeps
// its last good revision and is stale. Sources that left the config are
// forgotten.
func (g *GitSources) loaded(cfg *config.Config) {
	faults := cfg.SourceFaults()
	now := time.Now()
	g.mu.Lock()
	seen := map[string]bool{}
	for _, s := range cfg.Sources {
		r := g.repos[s.ID]
		if !remoteSource(s) || r == nil {
			continue
		}
		seen[s.ID] = true
		co, ok := s.Checkout()
		switch {
		case faults[s.ID] != nil:
			msgs := make([]string, 0, len(faults[s.ID]))
			for _, e := range faults[s.ID] {
				msgs = append(msgs, e.Error())
			}
			if r.fetchErr == "" && r.loadErr == "" {
				r.since = now
			}
			r.loadErr = strings.Join(msgs, "; ")
		case ok:
			if r.applied == nil || r.applied.Commit != co.Commit {
				r.appliedSeen = time.Time{}
				if r.latest != nil && r.latest.Commit == co.Commit {
					r.appliedSeen = r.latestSeen
				}
			}
			r.applied, r.loadErr = &co, ""
			if co.Commit != r.refused {
				r.refused = ""
			}
		}
	}
	for id, r := range g.repos {
		if !seen[id] {
			close(r.gone)
			delete(g.repos, id)
		}
	}
	g.mu.Unlock()
	g.publish()
}

// refusedLoad records a load the prune guard refused: every Git source
// whose commit moved in it is stale, and that commit is not offered again.
func (g *GitSources) refusedLoad(cfg *config.Config, err error) {
	now := time.Now()
	g.mu.Lock()
	for _, s := range cfg.Sources {
		r := g.repos[s.ID]
		co, ok := s.Checkout()
		if r == nil || !ok || r.applied != nil && r.applied.Commit == co.Commit {
			continue
		}
		r.refused = co.Commit
		if r.fetchErr == "" && r.loadErr == "" {
			r.since = now
		}
		r.loadErr = fmt.Sprintf("%s %s refused: %v", hub.RevisionNoun(co.Commit), hub.ShortCommit(co.Commit), err)
	}
	g.mu.Unlock()
	g.publish()
}

// publish shows the sources' revisions in the hub's snapshot and metrics.
func (g *GitSources) publish() {
	g.mu.Lock()
	a := g.app
	revs := make([]hub.SourceRevision, 0, len(g.repos))
	for _, r := range g.repos {
		sr := hub.SourceRevision{ID: r.id, URL: r.url, Ref: r.ref, LastFetch: r.lastFetch}
		if r.applied != nil {
			sr.Commit, sr.CommitTime, sr.Subject = r.applied.Commit, r.applied.Time, r.applied.Message
			// A Git source shows the ref its commit was resolved from; a
			// chart keeps its range (its version is in the commit).
			if r.applied.Ref != "" && r.applied.Archive == "" {
				sr.Ref = r.applied.Ref
			}
		}
		if errs := slices.DeleteFunc([]string{r.fetchErr, r.loadErr}, func(s string) bool { return s == "" }); len(errs) > 0 {
			sr.Error, sr.Since = strings.Join(errs, "; "), r.since
		}
		revs = append(revs, sr)
	}
	g.mu.Unlock()
	if a != nil {
		a.hub.SetSourceRevisions(revs)
	}
}

// attach ties g to the app whose desired state its commits reload.
func (g *GitSources) attach(a *App) {
	g.mu.Lock()
	g.app = a
	if !g.ownLog {
		g.log = a.log.With("component", "git")
	}
	g.mu.Unlock()
	if err := a.hub.Registerer().Register(g.failures); err != nil {
		a.log.Error("register git source metrics", "err", err)
	}
	g.publish()
}

// Close removes the temporary cache of a hub that keeps no state.
func (g *GitSources) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tmp == "" {
		return nil
	}
	err := os.RemoveAll(g.tmp)
	g.tmp = ""
	return err
}

// WebhookHandler serves POST /api/v1/webhooks/git: a push webhook of
// GitHub, GitLab, Gitea or Forgejo. The body (at most
// gitsource.MaxWebhookBytes) is checked against the webhook secret of each
// Git source whose URL the push names; every source it authenticates for
// and that follows the pushed ref (or the remote's HEAD, or any ref: the
// fetch tells) is fetched at once. It answers 202 when a fetch was
// triggered, 204 when the push is authenticated but concerns no source
// (another ref, or not a push), 401 when no secret authenticates it, 400
// for a malformed request, 413 for a body over the limit.
func (g *GitSources) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, gitsource.MaxWebhookBytes+1))
		if err != nil {
			http.Error(w, "webhook: read the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > gitsource.MaxWebhookBytes {
			http.Error(w, fmt.Sprintf("webhook: body over %d bytes", gitsource.MaxWebhookBytes), http.StatusRequestEntityTooLarge)
			return
		}
		g.mu.Lock()
		repos := make([]*gitRepo, 0, len(g.repos))
		for _, id := range slices.Sorted(maps.Keys(g.repos)) {
			if g.repos[id].webhookSecretFile != "" {
				repos = append(repos, g.repos[id])
			}
		}
		g.mu.Unlock()
		authenticated, malformed := false, error(nil)
		var hit []string
		for _, r := range repos {
			secret, err := os.ReadFile(r.webhookSecretFile)
			if err != nil {
				g.log.Error("git webhook: read the secret", "source", r.id, "err", err)
				continue
			}
			c := req.Clone(req.Context())
			c.Body = io.NopCloser(bytes.NewReader(body))
			push, err := gitsource.ParsePush(c, bytes.TrimSpace(secret))
			switch {
			case errors.Is(err, gitsource.ErrWebhookAuth):
				continue
			case errors.Is(err, gitsource.ErrNotPush):
				authenticated = true
				continue
			case err != nil:
				malformed = err
				continue
			}
			authenticated = true
			if push.Matches(r.url) && refMatches(r, push.Ref) {
				hit = append(hit, r.id)
			}
		}
		switch {
		case len(hit) > 0:
			g.log.Info("git webhook: fetching", "sources", hit)
			g.Trigger(hit...)
			w.WriteHeader(http.StatusAccepted)
		case authenticated:
			w.WriteHeader(http.StatusNoContent)
		case malformed != nil:
			http.Error(w, malformed.Error(), http.StatusBadRequest)
		default:
			http.Error(w, "webhook not authenticated by the secret of any git source", http.StatusUnauthorized)
		}
	})
}

// refMatches reports whether a push to ref (refs/heads/main) may move the
// source r: its ref names that branch or tag, or r follows the remote's
// HEAD (whose branch the push does not say) or a commit.
func refMatches(r *gitRepo, ref string) bool {
	want := r.ref
	switch {
	case want == "" || want == "HEAD" || len(want) == 40:
		return true
	case strings.HasPrefix(want, "refs/"):
		return ref == want
	}
	return ref == "refs/heads/"+want || ref == "refs/tags/"+want
}

// tempRemotes sets the GitCheckout and ChartPull of opts for one-shot
// commands (check, diff): each Git source is fetched, and each chart from
// a repository pulled, once into a temporary cache (removed by the
// returned cleanup); Git sources at ref when ref is set (every Git source
// then follows ref: a pull request's head, say), else at their own ref.
func tempRemotes(opts config.LoadOptions, ref string) (config.LoadOptions, func()) {
	var mu sync.Mutex
	dir := ""
	root := func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if dir == "" {
			d, err := os.MkdirTemp("", "driftwatch-git-")
			if err != nil {
				return "", fmt.Errorf("git cache: %w", err)
			}
			dir = d
		}
		return dir, nil
	}
	// fetch fetches once what open opens under the temporary root.
	fetch := func(open func(root string) (remote, error)) (config.GitCheckout, error) {
		d, err := root()
		if err != nil {
			return config.GitCheckout{}, err
		}
		r, err := open(d)
		if err != nil {
			return config.GitCheckout{}, err
		}
		return r.Fetch(context.Background())
	}
	opts.GitCheckout = func(_ config.Hub, _ string, g config.GitSource) (config.GitCheckout, error) {
		if ref != "" {
			g.Ref = ref
		}
		return fetch(func(root string) (remote, error) { return openGitRemote(root, g) })
	}
	opts.ChartPull = func(_ config.Hub, _ string, h config.HelmChart) (config.GitCheckout, error) {
		return fetch(func(root string) (remote, error) { return openChartRemote(root, h) })
	}
	return opts, func() {
		mu.Lock()
		defer mu.Unlock()
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
}

// remoteSource reports whether a source comes from a remote GitSources
// fetches: a Git repository, or a chart repository.
func remoteSource(s config.Source) bool {
	return s.Git != nil || s.Helm != nil && s.Helm.Repo != ""
}
