package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/config"
)

// kubeconfigScope says what checkKubeconfigs checks.
type kubeconfigScope struct {
	// clusters keeps only the clusters with these ids; nil checks every
	// cluster.
	clusters []string
	// others also checks the Cluster API sources and the coordination
	// cluster (hub.coordination).
	others bool
	// defaultKubeconfig, when set, is the kubeconfig of the clusters and
	// sources that name none (--kubeconfig), instead of $KUBECONFIG, else
	// ~/.kube/config.
	defaultKubeconfig string
}

// reachEntry is one cluster, Cluster API source or coordination cluster
// of a config, reached through a kubeconfig.
type reachEntry struct {
	// field is the entry's path in the file, e.g. "clusters[2]".
	field string
	// id names the entry in messages, e.g. `cluster "prod"`; cluster is
	// the cluster id of a cluster entry ("" for the others).
	id, cluster         string
	kubeconfig, context string
}

// reachField returns the field that says how e is reached: for a problem
// with the kubeconfig files its kubeconfig (else its context, which then
// names a context of the default kubeconfig), for a problem with the
// context its context (else its kubeconfig, whose current context is
// used).
func (e reachEntry) reachField(part clusters.KubeconfigPart) string {
	file, ctx := e.field+".kubeconfig", e.field+".context"
	switch {
	case part == clusters.KubeconfigFile && e.kubeconfig != "":
		return file
	case part == clusters.KubeconfigFile:
		return ctx
	case e.context != "":
		return ctx
	}
	return file
}

// kubeconfigEntries returns the entries of cfg that scope keeps and that
// are reached through a kubeconfig (not in-cluster), in file order.
func kubeconfigEntries(cfg *config.Config, scope kubeconfigScope) []reachEntry {
	var out []reachEntry
	for i, cl := range cfg.Clusters {
		if cl.InCluster || scope.clusters != nil && !slices.Contains(scope.clusters, cl.ID) {
			continue
		}
		out = append(out, reachEntry{field: fmt.Sprintf("clusters[%d]", i), id: fmt.Sprintf("cluster %q", cl.ID), cluster: cl.ID,
			kubeconfig: cl.Kubeconfig, context: cl.Context})
	}
	if !scope.others {
		return out
	}
	for i, src := range cfg.ClusterAPI {
		if src.InCluster {
			continue
		}
		out = append(out, reachEntry{field: fmt.Sprintf("clusterAPI[%d]", i), id: fmt.Sprintf("clusterAPI source %q", src.Name),
			kubeconfig: src.Kubeconfig, context: src.Context})
	}
	// Without a kubeconfig, the coordination cluster is the hub's own
	// (in-cluster).
	if co := cfg.Hub.Coordination; co != nil && co.Kubeconfig != "" {
		out = append(out, reachEntry{field: "hub.coordination", id: "the coordination cluster",
			kubeconfig: co.Kubeconfig, context: co.Context})
	}
	return out
}

// checkKubeconfigs checks, without contacting any cluster, what scope
// keeps of cfg: that each kubeconfig and context resolves as the hub
// resolves them when it connects (clusters.KubeconfigChecker: the files
// exist, are files and parse; the context exists, and so do the cluster
// and user it names), and that no two clusters are the same cluster (the
// same API server and credentials, however the files, contexts and users
// are named). cfg is the config as loaded and data its content (nil:
// read cfg.Path again, only when there is a problem): every problem is
// positioned in it, as Load's are.
func checkKubeconfigs(cfg *config.Config, data []byte, getenv func(string) string, scope kubeconfigScope) config.ErrorList {
	var loc *config.Locator
	locator := func() *config.Locator {
		if loc == nil {
			if data == nil {
				data, _ = os.ReadFile(cfg.Path) // unreadable now: errors without a position
			}
			loc = config.NewLocator(cfg.Path, data)
		}
		return loc
	}
	var errs config.ErrorList
	checker := clusters.NewKubeconfigChecker(getenv)
	type first struct {
		entry  reachEntry
		target clusters.KubeconfigTarget
	}
	seen := make(map[string]first)
	for _, e := range kubeconfigEntries(cfg, scope) {
		path := e.kubeconfig
		if path == "" {
			path = scope.defaultKubeconfig
		}
		target, err := checker.Check(path, e.context)
		var ke *clusters.KubeconfigError
		switch {
		case errors.As(err, &ke):
			errs = append(errs, locator().Errorf(e.reachField(ke.Part), "%s", ke.Msg))
			continue
		case err != nil:
			errs = append(errs, locator().Errorf(e.reachField(clusters.KubeconfigFile), "%v", err))
			continue
		case e.cluster == "":
			continue // sources and the coordination cluster may share a cluster
		}
		f, dup := seen[target.Key()]
		if !dup {
			seen[target.Key()] = first{e, target}
			continue
		}
		line, _ := locator().Position(f.entry.reachField(clusters.KubeconfigContext))
		errs = append(errs, locator().Errorf(e.reachField(clusters.KubeconfigContext),
			"%s is the same cluster as %q (line %d): both reach %s with the same credentials (%s); keep one of them",
			e.id, f.entry.cluster, line, target.Server, describeReach(f.target, target)))
	}
	slices.SortStableFunc(errs, func(a, b *config.Error) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	return errs
}

// describeReach says how two targets that are the same cluster were
// reached, for the message about them.
func describeReach(a, b clusters.KubeconfigTarget) string {
	one := func(t clusters.KubeconfigTarget) string {
		return fmt.Sprintf("context %q of %s", t.Context, t.Kubeconfig)
	}
	if one(a) == one(b) {
		return "both " + one(a)
	}
	return one(a) + ", and " + one(b)
}

// withDefaultKubeconfig returns cfg with path as the kubeconfig of every
// cluster and Cluster API source that names none and is not in-cluster
// (the --kubeconfig flag, which replaces $KUBECONFIG and ~/.kube/config as
// kubectl's does). path must be a file: a missing one or a folder is a
// usage error of cmd ("" for the root). cfg itself is not changed; abs is
// path made absolute.
func withDefaultKubeconfig(cfg *config.Config, path, cmd string) (out *config.Config, abs string, err error) {
	if path == "" {
		return cfg, "", nil
	}
	prefix := ""
	if cmd != "" {
		prefix = cmd + ": "
	}
	if abs, err = filepath.Abs(path); err != nil {
		return nil, "", UsageError("%s--kubeconfig %s: %v", prefix, path, err)
	}
	switch st, err := os.Stat(abs); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", UsageError("%s--kubeconfig %s does not exist", prefix, path)
	case err != nil:
		return nil, "", UsageError("%s--kubeconfig %s: %v", prefix, path, err)
	case st.IsDir():
		return nil, "", UsageError("%s--kubeconfig %s is a folder, not a file", prefix, path)
	}
	c := *cfg
	out = &c
	out.Clusters = slices.Clone(cfg.Clusters)
	for i, cl := range out.Clusters {
		if cl.Kubeconfig == "" && !cl.InCluster {
			out.Clusters[i].Kubeconfig = abs
		}
	}
	out.ClusterAPI = slices.Clone(cfg.ClusterAPI)
	for i, src := range out.ClusterAPI {
		if src.Kubeconfig == "" && !src.InCluster {
			out.ClusterAPI[i].Kubeconfig = abs
		}
	}
	return out, abs, nil
}

// KubeconfigEnv returns getenv with $KUBECONFIG replaced by path, made
// absolute: the --kubeconfig of the commands that run a hub, which, as
// kubectl's, replaces $KUBECONFIG and ~/.kube/config for the clusters and
// sources that name no kubeconfig, at start and on every reload. path ""
// returns getenv. A missing path or a folder is a usage error of cmd.
func KubeconfigEnv(getenv func(string) string, path, cmd string) (func(string) string, error) {
	if path == "" {
		return getenv, nil
	}
	_, abs, err := withDefaultKubeconfig(&config.Config{}, path, cmd)
	if err != nil {
		return nil, err
	}
	return func(k string) string {
		if k == clientcmd.RecommendedConfigPathEnvVar {
			return abs
		}
		return getenv(k)
	}, nil
}
