package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/klog/v2"

	"github.com/driftwatch/driftwatch/clusters/diff"
	"github.com/driftwatch/driftwatch/config"
)

// DiffOptions are the settings of Diff (the flags of driftwatch diff).
type DiffOptions struct {
	// File is the config file.
	File string
	// Clusters and Applications keep only these (nil: every one).
	Clusters, Applications []string
	// JSON prints the report as JSON instead of unified diffs.
	JSON bool
}

// Diff is `driftwatch diff -f FILE`: one pass, no hub left running, that
// compares every desired object with the live one and prints the report.
// It returns nil when everything is in sync, else an ExitError with the
// report's code (1 drift, 3 a cluster unreachable, 4 a cluster refused the
// credentials) or 2 for a config or filter error. Terraform workspaces are
// planned once each, read-only (terraform.Check). The clusters of Cluster
// API sources are not diffed.
func Diff(ctx context.Context, o DiffOptions, env Env) error {
	cfg, err := config.Load(o.File, config.LoadOptions{Getenv: env.Getenv, HomeDir: env.Getenv("HOME")})
	var list config.ErrorList
	switch {
	case errors.As(err, &list):
		for _, e := range list {
			fmt.Fprintln(env.Stderr, e)
		}
		return &ExitError{Code: diff.ExitUsage}
	case err != nil:
		return &ExitError{Code: diff.ExitUsage, Err: err}
	}
	if len(cfg.ClusterAPI) > 0 {
		fmt.Fprintln(env.Stderr, "driftwatch: note: the clusters of clusterAPI sources are discovered at runtime and not diffed")
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, logOptions(slog.LevelWarn)))
	klog.SetSlogLogger(log.With("component", "client-go"))
	o, clustersToo, workspaces := workspaceScope(cfg, o)
	rep := &diff.Report{At: time.Now(), Objects: []diff.Object{}, Unreachable: []diff.ClusterError{}}
	if clustersToo {
		rep, err = diff.Run(ctx, config.Compile(cfg), ClusterConfigs(cfg, env.Getenv),
			diff.Options{Clusters: o.Clusters, Applications: o.Applications, Logger: log})
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil:
		return &ExitError{Code: diff.ExitUsage, Err: fmt.Errorf("diff: %w", err)}
	}
	diffWorkspaces(ctx, rep, workspaces, env.Getenv, log.With("component", "terraform"))
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.JSON {
		err = rep.WriteJSON(env.Stdout)
	} else {
		err = rep.WriteText(env.Stdout)
	}
	if err != nil {
		return err
	}
	if code := rep.ExitCode(); code != diff.ExitInSync {
		return &ExitError{Code: code}
	}
	return nil
}
