package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/clusters/diff"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/config/manifest"
)

// DiffOptions are the settings of Diff (the flags of driftwatch diff).
type DiffOptions struct {
	// File is the config file; "-" reads it from Env.Stdin.
	File string
	// Clusters and Applications keep only these (nil: every one).
	Clusters, Applications []string
	// Contexts keeps only the clusters reached through these kubeconfig
	// contexts: the context a cluster names, else its kubeconfig's
	// current context (nil: every cluster). Terraform workspaces and
	// Cluster API sources have none and are left out.
	Contexts []string
	// Kubeconfig, when set, is the kubeconfig of the clusters that name
	// none, instead of $KUBECONFIG, else ~/.kube/config.
	Kubeconfig string
	// Output is FormatText (unified diffs, the default), FormatJSON or
	// FormatYAML (the JSON report as YAML).
	Output string
	// Revision, when set, is the branch, tag or commit of every Git
	// source to compare the clusters with (a pull request's head, say)
	// instead of each source's own ref.
	Revision string
	// DryRun asks each apiserver to validate the repair of every drifted
	// object without persisting it (see diff.Options.DryRun): exit 5 when
	// one would be refused.
	DryRun bool
}

// notDiffedReason says why diff leaves out a Cluster API source.
const notDiffedReason = "its clusters are discovered at runtime and not diffed (--cluster or --context leaves the source out)"

// Diff is `driftwatch diff -f FILE`: one pass, no hub left running, that
// compares every desired object with the live one and prints the report.
// It returns nil when everything is in sync, else an ExitError with the
// report's code (1 drift, 3 a cluster unreachable or a source not
// checked, 4 a cluster refused the credentials, 5 a repair a dry run
// refused) or 2 for a config or
// filter error. A kubeconfig problem that Check finds is a config error
// (2, positioned as Check prints it), never an unreachable cluster.
// Terraform workspaces are planned once each, read-only (terraform.Check).
// The clusters of Cluster API sources are not diffed: a source in scope
// is reported as not checked, so such a report is never "in sync".
func Diff(ctx context.Context, o DiffOptions, env Env) error {
	opts, cleanup := tempRemotes(config.LoadOptions{Getenv: env.Getenv, HomeDir: env.Getenv("HOME"), RenderSandbox: manifest.Self()}, o.Revision)
	defer cleanup()
	cfg, data, err := loadConfig(o.File, env, opts)
	var list config.ErrorList
	switch {
	case errors.As(err, &list):
		printErrors(env.Stderr, list)
		return &ExitError{Code: diff.ExitUsage}
	case err != nil:
		return &ExitError{Code: diff.ExitUsage, Err: err}
	}
	loaded := cfg
	cfg, flagKubeconfig, err := withDefaultKubeconfig(cfg, o.Kubeconfig, "diff")
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, logOptions(slog.LevelWarn)))
	klog.SetSlogLogger(log.With("component", "client-go"))
	k8s, clustersToo, workspaces := workspaceScope(cfg, o)
	if len(o.Contexts) > 0 {
		ids, err := clustersByContext(cfg, o.Contexts, env.Getenv)
		if err != nil {
			return err
		}
		if len(o.Clusters) > 0 {
			ids = slices.DeleteFunc(ids, func(id string) bool { return !slices.Contains(k8s.Clusters, id) })
			if len(ids) == 0 {
				return UsageError("diff: no cluster of --cluster is reached through --context %s", strings.Join(o.Contexts, ","))
			}
		}
		k8s.Clusters, clustersToo, workspaces = ids, true, nil
	}
	if clustersToo {
		if list := checkKubeconfigs(loaded, data, env.Getenv, kubeconfigScope{clusters: k8s.Clusters, defaultKubeconfig: flagKubeconfig}); len(list) > 0 {
			printErrors(env.Stderr, list)
			return &ExitError{Code: diff.ExitUsage}
		}
	}
	rep := &diff.Report{At: time.Now(), Objects: []diff.Object{}, Unreachable: []diff.ClusterError{}}
	if clustersToo {
		rep, err = diff.Run(ctx, config.Compile(cfg), ClusterConfigs(cfg, env.Getenv),
			diff.Options{Clusters: k8s.Clusters, Applications: k8s.Applications, Logger: log, DryRun: o.DryRun})
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil:
		return &ExitError{Code: diff.ExitUsage, Err: fmt.Errorf("diff: %w", err)}
	}
	if clustersToo && len(o.Clusters) == 0 && len(o.Contexts) == 0 {
		for _, src := range cfg.ClusterAPI {
			rep.NotChecked = append(rep.NotChecked, diff.NotChecked{Source: "clusterAPI source " + src.Name, Reason: notDiffedReason})
		}
	}
	diffWorkspaces(ctx, rep, workspaces, env.Getenv, log.With("component", "terraform"))
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := writeReport(env, rep, o.Output); err != nil {
		return err
	}
	if code := rep.ExitCode(); code != diff.ExitInSync {
		return &ExitError{Code: code}
	}
	return nil
}

// writeReport prints the report in the output format.
func writeReport(env Env, rep *diff.Report, output string) error {
	switch output {
	case FormatJSON:
		return rep.WriteJSON(env.Stdout)
	case FormatYAML:
		var b bytes.Buffer
		if err := rep.WriteJSON(&b); err != nil {
			return err
		}
		y, err := kubeobj.JSONToYAML(b.Bytes())
		if err != nil {
			return fmt.Errorf("diff: %w", err)
		}
		_, err = env.Stdout.Write(y)
		return err
	}
	return rep.WriteText(env.Stdout)
}

// clustersByContext returns the ids of the clusters of cfg reached
// through one of contexts, in file order: the context a cluster names,
// else its kubeconfig's current context. A cluster whose kubeconfig
// cannot tell is kept, so that its problem is reported. A context that
// reaches no cluster is a usage error.
func clustersByContext(cfg *config.Config, contexts []string, getenv func(string) string) ([]string, error) {
	checker := clusters.NewKubeconfigChecker(getenv)
	var ids, known []string
	used := make(map[string]bool)
	for _, cl := range cfg.Clusters {
		if cl.InCluster {
			continue
		}
		name := cl.Context
		if name == "" {
			t, err := checker.Check(cl.Kubeconfig, "")
			if err != nil {
				ids = append(ids, cl.ID)
				continue
			}
			name = t.Context
		}
		known = append(known, name)
		if slices.Contains(contexts, name) {
			used[name] = true
			ids = append(ids, cl.ID)
		}
	}
	for _, c := range contexts {
		if !used[c] {
			slices.Sort(known)
			return nil, UsageError("diff: --context %s: no cluster of the config is reached through it (contexts: %s)",
				strconv.Quote(c), strings.Join(slices.Compact(known), ", "))
		}
	}
	return ids, nil
}
