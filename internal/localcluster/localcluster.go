// Package localcluster starts real local Kubernetes control planes for
// driftwatch's tests, demo and benchmark: per cluster one etcd member and a
// kube-apiserver on loopback, optionally kube-controller-manager, and with
// Options.Full also kube-scheduler and kwok with fake nodes on which pods
// really reach Running.
//
// The binaries come from scripts/build-binaries.sh (Options.BinDir). Every
// component runs in its own process group with its output in a log file in
// the cluster's folder; on Linux the kernel kills the components when the Go
// process dies, so an interrupted test run leaves no process behind (and the
// next Start removes the temporary folders of such runs).
//
// Each cluster's folder holds its PKI (ca.crt, apiserver.crt, sa.key, ...),
// tokens.csv (the --token-auth-file), etcd-data, one <component>.log per
// component and the kubeconfigs: admin.kubeconfig (Cluster.Kubeconfig),
// user-<name>.kubeconfig for Options.Users and components.kubeconfig, the
// identity (group system:masters) of the controller manager, scheduler and
// kwok, which RotateAdminToken leaves alone.
//
//	set, err := localcluster.Start(ctx, localcluster.Options{Count: 3, BinDir: dir})
//	if err != nil { ... }
//	defer set.Stop()
//	cfg := set.Clusters[0].RESTConfig()
//
// Tests use the lctest sub-package, which skips when the binaries are not
// configured.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configures Start. The zero value of every field except BinDir is a
// usable default.
type Options struct {
	// Count is the number of clusters. Default 1, or len(Names) when Names
	// is set.
	Count int
	// Names are the cluster names (DNS labels, used for folders and
	// kubeconfig contexts). Default c1..cN. When set, its length must match
	// Count (or Count must be 0).
	Names []string
	// BinDir is the folder holding kube-apiserver, etcd and, as needed,
	// kube-controller-manager, kube-scheduler and kwok. Required; callers
	// usually pass the environment variable DRIFTWATCH_BIN_DIR.
	BinDir string
	// Dir is the working folder: one sub-folder per cluster with its PKI,
	// etcd data, logs and kubeconfigs. Default: a new temporary folder that
	// Stop removes. A folder given here is kept (with the logs), but every
	// Start begins with empty etcd data and new PKI.
	Dir string
	// ControllerManager also runs kube-controller-manager with the
	// deployment, replicaset, namespace, garbagecollector, serviceaccount and
	// serviceaccount-token controllers (plus nodelifecycle with Full). Start
	// then also waits until the controllers run (the ServiceAccount
	// default/default exists).
	ControllerManager bool
	// Full also runs kube-scheduler and kwok, and creates Nodes fake nodes
	// per cluster; Start waits until they are Ready and schedulable. Implies
	// ControllerManager.
	Full bool
	// Nodes is the number of fake nodes per cluster with Full. Default 1.
	// Each node is named kwok-node-<i>, labelled type=kwok, and has
	// allocatable cpu 32, memory 256Gi and 110 pods.
	Nodes int
	// Users are extra token users (without groups, so RBAC grants them
	// nothing) created in every cluster; see Cluster.UserKubeconfig.
	Users []string
	// Logger receives progress messages. Default: discard.
	Logger *slog.Logger
	// StopGrace is how long each component gets to exit after SIGTERM
	// before it is killed. Default 5s. Disposable clusters (the demo's,
	// whose etcd data the next Start discards anyway) use a short one so
	// they go as fast as the program that started them.
	StopGrace time.Duration
	// CPUs are the CPUs every component runs on (Linux): each process's
	// threads are pinned to them once it started and again once it is
	// ready. Empty: any CPU. A bench pins its own process to the others
	// with PinProcess, so that the control planes and their client never
	// share a core.
	CPUs []int
}

// PinProcess pins every thread of this process to cpus (Linux); threads
// it starts later inherit the pin from the thread that starts them.
func PinProcess(cpus []int) error {
	if err := checkCPUs(cpus); err != nil {
		return err
	}
	if len(cpus) == 0 {
		return errors.New("localcluster: no CPU to pin this process to")
	}
	return pinTasks(0, cpus)
}

// checkCPUs refuses a CPU number this machine does not have.
func checkCPUs(cpus []int) error {
	for _, c := range cpus {
		if c < 0 || c >= runtime.NumCPU() {
			return fmt.Errorf("localcluster: CPU %d is not one of this machine's %d", c, runtime.NumCPU())
		}
	}
	return nil
}

// dnsLabel is what cluster and user names must look like.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if o.BinDir == "" {
		return o, errors.New("localcluster: Options.BinDir is required (the folder scripts/build-binaries.sh prints)")
	}
	if o.StopGrace <= 0 {
		o.StopGrace = defaultStopGrace
	}
	if o.Count < 0 || o.Nodes < 0 {
		return o, errors.New("localcluster: Count and Nodes must not be negative")
	}
	if o.Count == 0 {
		o.Count = max(len(o.Names), 1)
	}
	if len(o.Names) == 0 {
		o.Names = make([]string, o.Count)
		for i := range o.Names {
			o.Names[i] = fmt.Sprintf("c%d", i+1)
		}
	} else {
		if len(o.Names) != o.Count {
			return o, fmt.Errorf("localcluster: %d names for %d clusters", len(o.Names), o.Count)
		}
		o.Names = append([]string(nil), o.Names...)
	}
	seen := map[string]bool{}
	for _, n := range o.Names {
		if !dnsLabel.MatchString(n) {
			return o, fmt.Errorf("localcluster: cluster name %q is not a DNS label", n)
		}
		if seen[n] {
			return o, fmt.Errorf("localcluster: duplicate cluster name %q", n)
		}
		seen[n] = true
	}
	o.CPUs = append([]int(nil), o.CPUs...)
	if err := checkCPUs(o.CPUs); err != nil {
		return o, err
	}
	o.Users = append([]string(nil), o.Users...)
	users := map[string]bool{}
	for _, u := range o.Users {
		if !dnsLabel.MatchString(u) {
			return o, fmt.Errorf("localcluster: user name %q is not a DNS label", u)
		}
		if users[u] || isInternalUser(u) {
			return o, fmt.Errorf("localcluster: user name %q is duplicated or reserved", u)
		}
		users[u] = true
	}
	if o.Full {
		o.ControllerManager = true
		if o.Nodes == 0 {
			o.Nodes = 1
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	need := []string{binEtcd, binAPIServer}
	if o.ControllerManager {
		need = append(need, binControllerManager)
	}
	if o.Full {
		need = append(need, binScheduler, binKwok)
	}
	for _, b := range need {
		st, err := os.Stat(filepath.Join(o.BinDir, b))
		if err != nil {
			return o, fmt.Errorf("localcluster: binary %s: %w (build them with scripts/build-binaries.sh)", b, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return o, fmt.Errorf("localcluster: binary %s in %s is not executable", b, o.BinDir)
		}
	}
	return o, nil
}

// Set is a group of local clusters started together by Start.
type Set struct {
	// Clusters are the running clusters, in the order of Options.Names.
	Clusters []*Cluster

	removeDir string // temporary folder to remove on Stop ("" if none)
	logger    *slog.Logger
	spawner   *spawner

	stopOnce sync.Once
	stopErr  error
}

// Start starts opts.Count clusters in parallel and returns once every
// kube-apiserver answers /readyz (with ControllerManager, once its
// controllers run; with Full, once every fake node is Ready and schedulable).
// The context bounds the start only; the clusters run until Set.Stop. On
// error, or when ctx is cancelled, Start stops everything it started and the
// error includes the tail of the failing component's log.
func Start(ctx context.Context, opts Options) (*Set, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Set{logger: opts.Logger}
	dir := opts.Dir
	if dir == "" {
		removeStaleTempDirs(opts.Logger)
		dir, err = os.MkdirTemp("", tempDirPrefix)
		if err != nil {
			return nil, fmt.Errorf("localcluster: %w", err)
		}
		s.removeDir = dir
		// Mark the folder as ours, for removeStaleTempDirs.
		pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
		if err := os.WriteFile(filepath.Join(dir, ownerFile), pid, 0o644); err != nil {
			s.removeTemp()
			return nil, fmt.Errorf("localcluster: %w", err)
		}
	} else if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	ports, err := freePorts(portsPerCluster * opts.Count)
	if err != nil {
		s.removeTemp()
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	s.spawner = newSpawner()
	for i, name := range opts.Names {
		s.Clusters = append(s.Clusters, newCluster(name, filepath.Join(dir, name), opts, ports[i*portsPerCluster:(i+1)*portsPerCluster], s.spawner))
	}

	opts.Logger.Info("starting local clusters", "count", opts.Count, "dir", dir, "full", opts.Full, "controllerManager", opts.ControllerManager)
	startCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(s.Clusters))
	var wg sync.WaitGroup
	for i, c := range s.Clusters {
		wg.Go(func() {
			errs[i] = c.start(startCtx)
			if errs[i] != nil {
				cancel() // one failure ends the whole start
			}
		})
	}
	wg.Wait()

	if err := startError(ctx, errs); err != nil {
		if stopErr := s.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, err
	}
	return s, nil
}

// startError combines the errors of the cluster starts. Clusters that only
// stopped because another one failed are left out.
func startError(ctx context.Context, errs []error) error {
	var real []error
	cancelled := false
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled) && ctx.Err() == nil:
			cancelled = true // cancelled by a sibling's failure
		default:
			real = append(real, err)
		}
	}
	if len(real) == 0 && cancelled {
		return errors.New("localcluster: start cancelled")
	}
	return errors.Join(real...)
}

// Stop stops every component of every cluster (SIGTERM, then SIGKILL after a
// few seconds), waits until all have exited and removes the temporary
// working folder if Start created it. It is idempotent: later calls return
// the first call's result.
func (s *Set) Stop() error {
	s.stopOnce.Do(func() {
		var wg sync.WaitGroup
		for _, c := range s.Clusters {
			wg.Go(c.stop)
		}
		wg.Wait()
		// Every cluster is stopped, so nothing spawns any more.
		if s.spawner != nil {
			s.spawner.close()
		}
		if s.removeDir != "" {
			s.logger.Info("removing local cluster folder", "dir", s.removeDir)
		}
		s.stopErr = s.removeTemp()
		if len(s.Clusters) > 0 {
			s.logger.Info("local clusters stopped", "count", len(s.Clusters))
		}
	})
	return s.stopErr
}

func (s *Set) removeTemp() error {
	if s.removeDir == "" {
		return nil
	}
	if err := os.RemoveAll(s.removeDir); err != nil {
		return fmt.Errorf("localcluster: remove %s: %w", s.removeDir, err)
	}
	return nil
}

// Temporary working folders are named tempDirPrefix* and hold ownerFile,
// the process id of the Go process that created them.
const (
	tempDirPrefix = "driftwatch-localcluster-"
	ownerFile     = "owner.pid"
)

// removeStaleTempDirs removes the temporary folders of earlier Sets whose
// process died without Stop (a killed test binary: its components died with
// it, but their folders, about 65 MB each, stayed). Folders without an
// owner file or with a live owner are left alone.
func removeStaleTempDirs(logger *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if err := os.RemoveAll(dir); err == nil {
			logger.Info("removed the folder of a dead earlier run", "dir", dir, "pid", pid)
		}
	}
}
