package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Binary names in Options.BinDir.
const (
	binEtcd              = "etcd"
	binAPIServer         = "kube-apiserver"
	binControllerManager = "kube-controller-manager"
	binScheduler         = "kube-scheduler"
	binKwok              = "kwok"
)

// Token users every cluster has besides Options.Users. They are not DNS
// labels (except adminUser, which Options.Users may not use), so they never
// clash with Options.Users.
const (
	// adminUser is the user of Cluster.Kubeconfig, in group system:masters.
	adminUser = "localcluster-admin"
	// componentUser is the identity of the controller manager, scheduler and
	// kwok (group system:masters). It has its own token so that
	// RotateAdminToken does not lock the components out.
	componentUser = "system:localcluster-components"
)

func isInternalUser(u string) bool { return u == adminUser || u == componentUser }

// portsPerCluster is the number of loopback ports each cluster listens on:
// etcd client, etcd peer, kube-apiserver and kwok's health server.
const portsPerCluster = 4

// clusterPorts are the loopback ports of one cluster.
type clusterPorts struct {
	etcdClient, etcdPeer, apiserver, kwok int
}

func newClusterPorts(p []int) clusterPorts {
	return clusterPorts{etcdClient: p[0], etcdPeer: p[1], apiserver: p[2], kwok: p[3]}
}

// Cluster is one local control plane of a Set.
type Cluster struct {
	// Name is the cluster's name (Options.Names), also the name of the
	// context in its kubeconfigs.
	Name string
	// Dir is the cluster's working folder: PKI, etcd data, logs and
	// kubeconfigs.
	Dir string
	// Kubeconfig is the path of a kubeconfig for the admin user (a token in
	// group system:masters); its only context is named after the cluster
	// and is current. RotateAdminToken rewrites it in place.
	Kubeconfig string
	// Server is the kube-apiserver URL, https://127.0.0.1:<port>. It stays
	// the same across StopAPIServer and StartAPIServer.
	Server string
	// StartupTime is the time from the start of this cluster until its
	// kube-apiserver answered /readyz with 200.
	StartupTime time.Duration

	opts      Options // defaults applied
	log       *slog.Logger
	files     pkiFiles
	tokenPath string // --token-auth-file
	compKC    string // kubeconfig of componentUser
	etcdData  string
	spawner   *spawner // shared by the Set; spawn checks stopped first
	// freePorts picks the ports of a start retried after a port clash
	// (the package's freePorts; a test's choice).
	freePorts func(n int) ([]int, error)

	// opMu serialises the lifecycle operations (start, StopAPIServer,
	// StartAPIServer, RotateAdminToken). stop does not take it: it marks the
	// cluster stopped under mu and kills what runs.
	opMu sync.Mutex

	mu         sync.Mutex // guards the fields below
	ports      clusterPorts
	caPEM      []byte
	adminToken string
	compToken  string
	userTokens map[string]string
	procs      map[string]*process
	stopped    bool
}

func newCluster(name, dir string, opts Options, ports []int, sp *spawner) *Cluster {
	c := &Cluster{
		spawner:    sp,
		Name:       name,
		Dir:        dir,
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		opts:       opts,
		log:        opts.Logger.With("cluster", name),
		files:      newPKIFiles(dir),
		tokenPath:  filepath.Join(dir, "tokens.csv"),
		compKC:     filepath.Join(dir, "components.kubeconfig"),
		etcdData:   filepath.Join(dir, "etcd-data"),
		procs:      map[string]*process{},
		freePorts:  freePorts,
	}
	c.setPorts(newClusterPorts(ports))
	return c
}

func (c *Cluster) setPorts(p clusterPorts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ports = p
	c.Server = "https://127.0.0.1:" + strconv.Itoa(p.apiserver)
}

// RESTConfig returns a new client config for the admin user (group
// system:masters), trusting the cluster's CA, with QPS 50 and burst 100.
func (c *Cluster) RESTConfig() *rest.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &rest.Config{
		Host:            c.Server,
		BearerToken:     c.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.caPEM...)},
		QPS:             50,
		Burst:           100,
	}
}

// UserKubeconfig returns the path of a kubeconfig for user, one of
// Options.Users (a token user without groups), or "" for any other name.
func (c *Cluster) UserKubeconfig(user string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.userTokens[user]; !ok {
		return ""
	}
	return c.userKubeconfigPath(user)
}

func (c *Cluster) userKubeconfigPath(user string) string {
	return filepath.Join(c.Dir, "user-"+user+".kubeconfig")
}

// Logs returns the last lines of each component's log, for failure
// messages.
func (c *Cluster) Logs() string {
	return c.logTails(30, binEtcd, binAPIServer, binControllerManager, binScheduler, binKwok)
}

// logTails returns the last n lines of the logs of the named components
// that have a log file.
func (c *Cluster) logTails(n int, names ...string) string {
	var b strings.Builder
	for _, name := range names {
		path := c.logPath(name)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		fmt.Fprintf(&b, "--- cluster %s: last lines of %s ---\n%s\n", c.Name, path, tailFile(path, n))
	}
	return b.String()
}

func (c *Cluster) logPath(component string) string {
	return filepath.Join(c.Dir, component+".log")
}

// startTimeout bounds each start of a cluster or of its kube-apiserver, so
// that a component that never gets ready fails the start with its logs
// instead of hanging a caller whose context has no deadline.
const startTimeout = 3 * time.Minute

// errStartTimeout is the cause of a start that exceeded startTimeout.
var errStartTimeout = fmt.Errorf("not ready within %v", startTimeout)

// portClashStarts is how many times start tries a cluster's processes
// when a port picked as free was taken before a process bound it (by
// another process of the machine, such as another cluster starting at the
// same moment, which may take one of the new ports too).
const portClashStarts = 4

// start brings the cluster up; a port clash is retried on new ports, up to
// portClashStarts starts in all.
func (c *Cluster) start(ctx context.Context) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	ctx, cancel := context.WithTimeoutCause(ctx, startTimeout, errStartTimeout)
	defer cancel()
	begin := time.Now()
	// Always a fresh cluster: drop etcd data an earlier run left in Dir.
	if err := os.RemoveAll(c.etcdData); err != nil {
		return fmt.Errorf("cluster %q: %w", c.Name, err)
	}
	err := c.startOnce(ctx, begin)
	for attempt := 2; attempt <= portClashStarts && errors.Is(err, errPortInUse) && ctx.Err() == nil; attempt++ {
		c.log.Warn("port clash, retrying with new ports", "err", err, "attempt", attempt)
		c.stopProcesses()
		ports, perr := c.freePorts(portsPerCluster)
		if perr != nil {
			return fmt.Errorf("cluster %q: %w", c.Name, perr)
		}
		c.setPorts(newClusterPorts(ports))
		if rerr := os.RemoveAll(c.etcdData); rerr != nil {
			return fmt.Errorf("cluster %q: %w", c.Name, rerr)
		}
		err = c.startOnce(ctx, begin)
	}
	if err != nil {
		if isContextError(err) {
			return fmt.Errorf("cluster %q: start: %w", c.Name, err)
		}
		return fmt.Errorf("cluster %q: start: %w\n%s", c.Name, err, c.logTails(30, failingComponents(err)...))
	}
	return nil
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// componentError names the component a start error came from.
type componentError struct {
	component string
	err       error
}

func (e *componentError) Error() string { return e.err.Error() }
func (e *componentError) Unwrap() error { return e.err }

// failingComponents returns the components whose logs explain err: always
// etcd and kube-apiserver, plus the controller manager, scheduler and kwok
// when the failure came from one of them.
func failingComponents(err error) []string {
	names := []string{binEtcd, binAPIServer}
	if ce, ok := errors.AsType[*componentError](err); ok && ce.component != binEtcd && ce.component != binAPIServer {
		names = append(names, binControllerManager, binScheduler, binKwok)
	}
	return names
}

func (c *Cluster) startOnce(ctx context.Context, begin time.Time) error {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	c.mu.Lock()
	ports := c.ports
	c.mu.Unlock()

	// etcd needs no PKI: generate it while etcd starts.
	etcd, err := c.spawn(binEtcd, c.etcdArgs(ports))
	if err != nil {
		return err
	}
	if err := c.prepare(); err != nil {
		return err
	}
	if err := c.waitEtcd(ctx, etcd, ports.etcdClient); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return err
	}
	if err := c.pinAll(); err != nil {
		return err
	}
	c.StartupTime = time.Since(begin)
	c.log.Info("kube-apiserver ready", "server", c.Server, "startup", c.StartupTime.Round(time.Millisecond))

	if !c.opts.ControllerManager {
		return nil
	}
	cm, err := c.spawn(binControllerManager, c.controllerManagerArgs())
	if err != nil {
		return err
	}
	watch := []*process{cm}
	if !c.opts.Full {
		if err := c.waitControllerManager(ctx, watch); err != nil {
			return &componentError{component: binControllerManager, err: err}
		}
		c.log.Info("kube-controller-manager working", "elapsed", time.Since(begin).Round(time.Millisecond))
		return c.pinAll()
	}
	sched, err := c.spawn(binScheduler, c.schedulerArgs())
	if err != nil {
		return err
	}
	watch = append(watch, sched)
	if err := c.startKwok(ctx, ports, watch); err != nil {
		if _, ok := errors.AsType[*componentError](err); !ok {
			err = &componentError{component: binKwok, err: err}
		}
		return err
	}
	c.log.Info("fake nodes ready", "nodes", c.opts.Nodes, "elapsed", time.Since(begin).Round(time.Millisecond))
	return c.pinAll()
}

// kwokStarts is how many times a start runs kwok before it gives up on
// kwok exiting by itself before the fake nodes are Ready. kwok v0.8.0
// can crash in its own start-up (an unsynchronised map write while it
// builds its CEL environments); a second start goes past it.
const kwokStarts = 2

// startKwok starts kwok and creates the fake nodes, watching procs and
// kwok for an early exit. When kwok alone exits before the nodes are
// Ready (not on a port clash, which start retries on new ports), it is
// started again, up to kwokStarts in all, and why is logged.
func (c *Cluster) startKwok(ctx context.Context, ports clusterPorts, procs []*process) error {
	for attempt := 1; ; attempt++ {
		kwok, err := c.spawn(binKwok, c.kwokArgs(ports))
		if err != nil {
			return err
		}
		err = c.createNodes(ctx, append(procs, kwok))
		ce, ok := errors.AsType[*componentError](err)
		// A componentError of kwok's is its exit (poll's).
		if err == nil || !ok || ce.component != binKwok ||
			errors.Is(err, errPortInUse) || ctx.Err() != nil || attempt >= kwokStarts {
			return err
		}
		c.log.Warn("kwok exited while the fake nodes started, starting it again",
			"err", ce.err, "attempt", attempt+1, "log", tailFile(c.logPath(binKwok), 5))
	}
}

// prepare writes the PKI (once), the token file and the kubeconfigs (again
// after a port change).
func (c *Cluster) prepare() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.caPEM == nil {
		p, err := newPKI(c.Name)
		if err != nil {
			return err
		}
		if err := p.write(c.files); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(c.Dir, "kwok-stages.yaml"), kwokStages(), 0o644); err != nil {
			return err
		}
		c.caPEM = p.caCertPEM
		c.adminToken = newToken()
		c.compToken = newToken()
		c.userTokens = map[string]string{}
		for _, u := range c.opts.Users {
			c.userTokens[u] = newToken()
		}
		if err := c.writeTokenFileLocked(); err != nil {
			return err
		}
	}
	if err := writeKubeconfig(c.Kubeconfig, c.Name, c.Server, c.caPEM, adminUser, c.adminToken); err != nil {
		return err
	}
	if err := writeKubeconfig(c.compKC, c.Name, c.Server, c.caPEM, componentUser, c.compToken); err != nil {
		return err
	}
	for _, u := range c.opts.Users {
		if err := writeKubeconfig(c.userKubeconfigPath(u), c.Name, c.Server, c.caPEM, u, c.userTokens[u]); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) writeTokenFileLocked() error {
	entries := []tokenEntry{
		{token: c.adminToken, user: adminUser, groups: []string{"system:masters"}},
		{token: c.compToken, user: componentUser, groups: []string{"system:masters"}},
	}
	for _, u := range c.opts.Users {
		entries = append(entries, tokenEntry{token: c.userTokens[u], user: u})
	}
	return writeFileAtomic(c.tokenPath, tokenFile(entries), 0o600)
}

func (c *Cluster) etcdArgs(p clusterPorts) []string {
	client := "http://127.0.0.1:" + strconv.Itoa(p.etcdClient)
	peer := "http://127.0.0.1:" + strconv.Itoa(p.etcdPeer)
	return []string{
		"--name=" + c.Name,
		"--data-dir=" + c.etcdData,
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + c.Name + "=" + peer,
		"--initial-cluster-state=new",
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
}

func (c *Cluster) apiserverArgs(p clusterPorts) []string {
	return []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(p.etcdClient),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.apiserver),
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file=" + c.files.serverCert,
		"--tls-private-key-file=" + c.files.serverKey,
		"--client-ca-file=" + c.files.caCert,
		"--token-auth-file=" + c.tokenPath,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.files.saPub,
		"--service-account-signing-key-file=" + c.files.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount",
	}
}

func (c *Cluster) controllerManagerArgs() []string {
	controllers := "deployment,replicaset,statefulset,job,cronjob,horizontalpodautoscaling,namespace,garbagecollector,serviceaccount,serviceaccount-token"
	if c.opts.Full {
		controllers += ",nodelifecycle"
	}
	return []string{
		"--kubeconfig=" + c.compKC,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=" + controllers,
		// An autoscaler that acts within seconds, for tests and the demo.
		"--horizontal-pod-autoscaler-sync-period=5s",
		"--service-account-private-key-file=" + c.files.saKey,
		"--root-ca-file=" + c.files.caCert,
		"--use-service-account-credentials=false",
	}
}

func (c *Cluster) schedulerArgs() []string {
	return []string{
		"--kubeconfig=" + c.compKC,
		"--leader-elect=false",
		"--secure-port=0",
	}
}

func (c *Cluster) kwokArgs(p clusterPorts) []string {
	return []string{
		"--kubeconfig=" + c.compKC,
		"--config=" + filepath.Join(c.Dir, "kwok-stages.yaml"),
		"--manage-all-nodes=true",
		"--server-address=127.0.0.1:" + strconv.Itoa(p.kwok),
	}
}

// spawn starts a component and registers it, unless the cluster was
// stopped meanwhile.
func (c *Cluster) spawn(name string, args []string) (*process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, fmt.Errorf("%s: cluster stopped", name)
	}
	if old := c.procs[name]; old != nil && !old.exited() {
		return nil, fmt.Errorf("%s: already running", name)
	}
	p, err := startProcess(c.spawner, name, filepath.Join(c.opts.BinDir, name), args, c.Dir, c.logPath(name))
	if err != nil {
		return nil, &componentError{component: name, err: err}
	}
	c.procs[name] = p
	c.log.Debug("component started", "component", name, "pid", p.pid())
	if err := c.pin(p); err != nil {
		p.stop(c.opts.StopGrace)
		return nil, &componentError{component: name, err: err}
	}
	return p, nil
}

// pin pins every thread of p to Options.CPUs (nothing without them). A
// process is pinned once started and again once ready, for the threads it
// started in between.
func (c *Cluster) pin(p *process) error {
	if len(c.opts.CPUs) == 0 || p.exited() {
		return nil
	}
	return pinTasks(p.pid(), c.opts.CPUs)
}

// pinAll pins every running component again (see pin).
func (c *Cluster) pinAll() error {
	c.mu.Lock()
	procs := make([]*process, 0, len(c.procs))
	for _, p := range c.procs {
		procs = append(procs, p)
	}
	c.mu.Unlock()
	for _, p := range procs {
		if err := c.pin(p); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return nil
}

// startAPIServer starts kube-apiserver on the cluster's port and waits for
// /readyz; on failure it stops the apiserver again.
func (c *Cluster) startAPIServer(ctx context.Context) error {
	c.mu.Lock()
	ports := c.ports
	c.mu.Unlock()
	p, err := c.spawn(binAPIServer, c.apiserverArgs(ports))
	if err != nil {
		return err
	}
	if err := c.waitAPIServer(ctx, p); err != nil {
		p.stop(c.opts.StopGrace)
		return err
	}
	return c.pin(p)
}

// pollInterval is how often the start checks a component's health.
const pollInterval = 50 * time.Millisecond

// poll calls check every pollInterval until it reports done, ctx ends or
// one of procs exits.
func poll(ctx context.Context, procs []*process, check func(context.Context) (bool, error)) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		for _, p := range procs {
			if p.exited() {
				return &componentError{component: p.name, err: checkPortClash(p, p.exitError())}
			}
		}
		ok, err := check(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
}

// httpGetOK reports whether GET url answered 200.
func httpGetOK(ctx context.Context, client *http.Client, url, token string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (c *Cluster) waitEtcd(ctx context.Context, etcd *process, port int) error {
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/health"
	err := poll(ctx, []*process{etcd}, func(ctx context.Context) (bool, error) {
		return httpGetOK(ctx, client, url, ""), nil
	})
	if err != nil {
		return fmt.Errorf("wait for etcd: %w", err)
	}
	return nil
}

// waitAPIServer waits until kube-apiserver answers /readyz with 200 for the
// admin token.
func (c *Cluster) waitAPIServer(ctx context.Context, p *process) error {
	c.mu.Lock()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	url := c.Server + "/readyz"
	token := c.adminToken
	watch := []*process{p}
	if etcd := c.procs[binEtcd]; etcd != nil {
		watch = append(watch, etcd)
	}
	c.mu.Unlock()
	tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	err := poll(ctx, watch, func(ctx context.Context) (bool, error) {
		return httpGetOK(ctx, client, url, token), nil
	})
	if err != nil {
		return fmt.Errorf("wait for kube-apiserver /readyz: %w", err)
	}
	return nil
}

// stopProcesses stops every running component and waits: first the
// apiserver and its clients in parallel, then etcd (a kube-apiserver whose
// etcd is gone does not exit on SIGTERM until it is killed).
func (c *Cluster) stopProcesses() {
	c.mu.Lock()
	etcd := c.procs[binEtcd]
	procs := make([]*process, 0, len(c.procs))
	for name, p := range c.procs {
		if name != binEtcd {
			procs = append(procs, p)
		}
		delete(c.procs, name)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.stop(c.opts.StopGrace) })
	}
	wg.Wait()
	if etcd != nil {
		etcd.stop(c.opts.StopGrace)
	}
}

// stop marks the cluster stopped (no component starts after this) and stops
// every component.
func (c *Cluster) stop() {
	c.mu.Lock()
	already := c.stopped
	c.stopped = true
	c.mu.Unlock()
	if !already {
		c.log.Info("stopping cluster")
	}
	c.stopProcesses()
}

// StopAPIServer stops only kube-apiserver, simulating an outage; etcd and
// the other components keep running. Stopping a stopped apiserver is a
// no-op.
func (c *Cluster) StopAPIServer() error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	c.mu.Lock()
	p := c.procs[binAPIServer]
	delete(c.procs, binAPIServer)
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	c.log.Info("stopping kube-apiserver")
	p.stop(c.opts.StopGrace)
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same port (Server does not change), and waits until it is ready. If it
// is already running it only waits for readiness.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	return c.restartAPIServerLocked(ctx, false)
}

// restartAPIServerLocked (re)starts kube-apiserver; the caller holds opMu.
func (c *Cluster) restartAPIServerLocked(ctx context.Context, restart bool) error {
	c.mu.Lock()
	stopped := c.stopped
	p := c.procs[binAPIServer]
	c.mu.Unlock()
	if stopped {
		return fmt.Errorf("cluster %q: stopped", c.Name)
	}
	if p != nil && !p.exited() {
		if !restart {
			if err := c.waitAPIServer(ctx, p); err != nil {
				return fmt.Errorf("cluster %q: %w", c.Name, err)
			}
			return nil
		}
		p.stop(c.opts.StopGrace)
	}
	c.mu.Lock()
	delete(c.procs, binAPIServer)
	c.mu.Unlock()
	begin := time.Now()
	ctx, cancel := context.WithTimeoutCause(ctx, startTimeout, errStartTimeout)
	defer cancel()
	if err := c.startAPIServer(ctx); err != nil {
		if isContextError(err) {
			return fmt.Errorf("cluster %q: start kube-apiserver: %w", c.Name, err)
		}
		return fmt.Errorf("cluster %q: start kube-apiserver: %w\n%s", c.Name, err, c.logTails(30, binEtcd, binAPIServer))
	}
	c.log.Info("kube-apiserver ready", "server", c.Server, "startup", time.Since(begin).Round(time.Millisecond))
	return nil
}

// RotateAdminToken gives the admin user a new token: it rewrites the token
// file, restarts kube-apiserver (same port) so that the old token is
// rejected with 401, waits until it is ready and rewrites the content of
// Kubeconfig, whose path it returns. RESTConfig returns the new token from
// then on. The components and Options.Users keep their tokens.
func (c *Cluster) RotateAdminToken(ctx context.Context) (kubeconfig string, err error) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return "", fmt.Errorf("cluster %q: stopped", c.Name)
	}
	c.adminToken = newToken()
	err = c.writeTokenFileLocked()
	c.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("cluster %q: rotate admin token: %w", c.Name, err)
	}
	c.log.Info("rotating the admin token: restarting kube-apiserver")
	if err := c.restartAPIServerLocked(ctx, true); err != nil {
		return "", err
	}
	c.mu.Lock()
	err = writeKubeconfig(c.Kubeconfig, c.Name, c.Server, c.caPEM, adminUser, c.adminToken)
	c.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("cluster %q: rotate admin token: %w", c.Name, err)
	}
	return c.Kubeconfig, nil
}
