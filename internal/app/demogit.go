package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// demoSourceID is the demo's Git source: the inventory service's manifests.
const demoSourceID = "inventory"

// demoReleaseInterval is the time between the demo's releases of the
// inventory service (a commit to its repository, then a fetch at once, as
// a merge and its push webhook would do).
const demoReleaseInterval = 30 * time.Second

// demoRepo is the Git repository of the demo's inventory service: its
// manifests (demoManifests) committed on main in the demo's folder, read
// by the demo's Git source through a file URL. release commits a change,
// as a team merging a pull request.
type demoRepo struct {
	dir string

	mu   sync.Mutex
	repo *git.Repository
	n    int // releases so far
}

// newDemoRepo creates the repository in dir with the manifests as its
// first commit.
func newDemoRepo(dir string) (*demoRepo, error) {
	if err := writeDemoManifests(dir); err != nil {
		return nil, err
	}
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		return nil, fmt.Errorf("demo repository %s: %w", dir, err)
	}
	d := &demoRepo{dir: dir, repo: repo}
	if _, err := d.commit("inventory: first release"); err != nil {
		return nil, err
	}
	return d, nil
}

// url is the repository's file URL.
func (d *demoRepo) url() string { return "file://" + filepath.ToSlash(d.dir) }

// commit commits every file of the work tree with msg and returns the
// commit's SHA.
func (d *demoRepo) commit(msg string) (string, error) {
	wt, err := d.repo.Worktree()
	if err != nil {
		return "", err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return "", fmt.Errorf("demo repository: add: %w", err)
	}
	sig := &object.Signature{Name: "Inventory Team", Email: "inventory@example.com", When: time.Now()}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		return "", fmt.Errorf("demo repository: commit: %w", err)
	}
	return h.String(), nil
}

// release commits the next release of the inventory service: its
// settings ConfigMap gets the release number.
func (d *demoRepo) release() (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	version := fmt.Sprintf("1.%d", d.n)
	cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inventory-settings\ndata:\n  RETENTION_DAYS: \"30\"\n  LOG_LEVEL: info\n  RELEASE: %q\n", version)
	if err := os.WriteFile(filepath.Join(d.dir, "base", "configmap.yaml"), []byte(cm), 0o644); err != nil {
		return "", err
	}
	return d.commit("inventory: release " + version)
}

// runReleases releases the inventory service every interval until ctx
// ends, and has the hub fetch each release at once (the push webhook's
// part).
func (d *demoRepo) runReleases(ctx context.Context, interval time.Duration, g *GitSources, onErr func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := d.release(); err != nil {
			onErr(err)
			continue
		}
		g.Trigger(demoSourceID)
	}
}
