package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/bench"
	"github.com/driftwatch/driftwatch/internal/cli"
)

// newBenchCmd is `driftwatch bench`.
func newBenchCmd(c *cliEnv) *cobra.Command {
	var o bench.Options
	cmd := &cobra.Command{
		Use:   "bench [--mode watch|poll|burst|all|scale|fleet|mixed]",
		Short: "Measure drift detection and repair on local clusters (vs a raw watch and polling)",
		Long: `Bench starts local control planes, has the hub manage generated objects on
them, makes drift on a seeded schedule from a client of its own and measures
detection and repair against an independent raw watch (the floor), for
driftwatch and for a poll baseline (watches off, resync only). --mode burst
deletes --burst objects of the first cluster at once while the other
clusters drift at --rate each (are their drifts repaired as fast while the
burst is?); --mode scale measures a hub managing many
objects (initial sync, memory per object, idle CPU). --mode fleet measures
many clusters: --clusters cluster entries (default 250) of --objects objects
(default 100), each entry its own kubeconfig entry and namespace on one of
--apiservers shared control planes (default 3), so each has its own
watches; it reports the cold sync (a fresh hub creating everything), steady
RSS, idle CPU and detect/repair at --rate drifts per second per entry
(default 1) spread over --duration. --mode mixed manages --objects objects of
eleven kinds per cluster (ConfigMap, Secret, ServiceAccount, Role,
RoleBinding, StatefulSet, CronJob, HorizontalPodAutoscaler,
PodDisruptionBudget, NetworkPolicy and a custom resource, with its CRD)
loaded from a generated config of plain-files sources: initial sync, heap
per object, idle CPU, detect/repair against a raw watch of the same kinds,
and what rendering a 100-object kustomize folder and Helm chart costs; with
--baseline (the default) it also runs --mode scale at the same count.
--mode git serves a Git repository of --objects objects (default 100;
ConfigMaps, Deployments and Services) over smart HTTP from the bench's own
process and has a hub follow it as a Git source on every cluster: it pushes
--pushes commits (default 5) that change every object, each announced by a
signed push webhook to the hub's API, and measures the webhook to every
object applied on every cluster (seen by a raw watch) beside a plain
client applying the same objects; then the cost of a poll with nothing
new (cpu, heap, bytes; the running hub's polls are counted over --idle,
default 25s), and a 1,000-object repository's clone and render.

The control-plane binaries come from $DRIFTWATCH_BIN_DIR, else they are built
once (about 15-20 minutes and 3 GB of disk on 2 cores). The burst run also shows each apiserver's own request
latency during the burst (from its /metrics). A run that leaves drifts
unrepaired, or a hub that never syncs, lists each failed object with the
hub's status of it and of its cluster (a hub that never syncs exits 1).

driftwatch bench compare OLD.json NEW.json shows each figure's change
between two -o json reports (OLD.json... -- NEW.json...: several runs a
side, each change tested against the runs' own noise); --chart FILE.svg
(or driftwatch bench chart REPORT.json --output-file FILE.svg) draws the
latency distributions and the burst's repairs over time.`,
		Example: `  driftwatch bench --mode all
  driftwatch bench --mode watch --drifts 500 --rate 50 -o json
  driftwatch bench --mode scale --objects 10000 --clusters 1
  driftwatch bench --mode fleet --clusters 250 --objects 100 --apiservers 3
  driftwatch bench --mode mixed --clusters 1 --objects 10000
  driftwatch bench --mode git
  driftwatch bench --chart bench.svg -o json > bench.json`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Output == "table" { // its name before -o took text everywhere
				o.Output = app.FormatText
			}
			if err := cli.CheckFormat(cmd, o.Output, app.FormatText, app.FormatJSON); err != nil {
				return err
			}
			bench.FleetDefaults(&o, func(name string) bool { return cmd.Flags().Changed(name) })
			bench.GitDefaults(&o, func(name string) bool { return cmd.Flags().Changed(name) })
			if err := o.Validate(); err != nil {
				return usageError("bench: %v", err)
			}
			return bench.Run(cmd.Context(), o, c.env())
		},
	}
	addBenchFlags(cmd.Flags(), &o)
	cmd.AddCommand(newBenchCompareCmd(c), newBenchChartCmd(c))
	return cmd
}

// newBenchChartCmd is `driftwatch bench chart REPORT.json --output-file
// FILE.svg`.
func newBenchChartCmd(c *cliEnv) *cobra.Command {
	var out, format string
	cmd := &cobra.Command{
		Use:   "chart REPORT.json --output-file FILE.svg",
		Short: "Draw a bench report (-o json) as an SVG chart",
		Long: `Chart reads a report written by driftwatch bench -o json and draws it as an
SVG image: the detect and repair latency distributions of the watch and poll
runs beside the raw-watch floor (log scale), and the burst's objects repaired
over time. driftwatch bench --chart FILE.svg draws the same chart at the end
of a run. A report - is read from standard input, --output-file - writes the
SVG to standard output.`,
		Example: `  driftwatch bench -o json > bench.json
  driftwatch bench chart bench.json --output-file bench.svg
  driftwatch bench -o json | driftwatch bench chart - -O - > bench.svg`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("bench chart: want one report, REPORT.json (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case format != "" && format != "svg":
				// -o named the SVG file before it was a format.
				return cli.OutputFileMoved(cmd, format, "--output-file", "svg")
			case out == "":
				return usageError("bench chart: --output-file FILE.svg is required (- writes standard output)")
			}
			return bench.Chart(args[0], out, c.stdin, c.stdout)
		},
	}
	cmd.Flags().StringVarP(&out, "output-file", "O", "", "the SVG `file` to write (- is standard output)")
	cmd.Flags().StringVarP(&format, "output", "o", "", "output `format`: svg, the only one")
	return cmd
}

// newBenchCompareCmd is `driftwatch bench compare OLD.json NEW.json` (or
// OLD.json... -- NEW.json..., several runs a side).
func newBenchCompareCmd(c *cliEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "compare OLD.json NEW.json | OLD.json... -- NEW.json...",
		Short: "Show each figure's change between bench reports (-o json), one or several runs a side",
		Long: `Compare reads reports written by driftwatch bench -o json and prints
every figure present in all of them (latency percentiles per mode and kind,
all repaired in, repairs/s, cpu, peak rss, the scale run's memory, the
apiserver's own latencies during the burst) side by side with the absolute
and relative change.

With one report a side (OLD.json NEW.json), changes beyond 10% are marked
better or worse (lower latency, memory and cpu are better; more repairs/s is
better); two runs of one binary differ by that much in many figures, so
read the marks as leads.

With several runs a side (the reports before --, then those after it),
each figure shows the median of each side, the noise (the larger of the two
sides' ranges over its median: how much runs of one binary differ) and the
p-value of a Mann-Whitney U test of the two sides' values; a figure is marked
better or worse only when the medians differ by more than 10% and p < 0.05,
a change the runs' own spread does not explain. That takes at least 4 runs a
side; run 5 or more, alternating the binaries, each after the same
preparation.

It is a report, not a gate: it exits 0 whatever changed (1 only when a file
cannot be read). One of the reports may be -, read from standard input.`,
		Example: `  driftwatch bench --mode all -o json > old.json
  # ...change something, then:
  driftwatch bench --mode all -o json > new.json
  driftwatch bench compare old.json new.json

  # five runs of each binary, alternating, then the verdict beyond the noise
  for i in 1 2 3 4 5; do
    ./driftwatch-old bench -o json > old-$i.json
    ./driftwatch bench -o json > new-$i.json
  done
  driftwatch bench compare old-*.json -- new-*.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash < 0 && len(args) != 2:
				return usageError("bench compare: want two reports, OLD.json NEW.json, or OLD.json... -- NEW.json... (got %d arguments)", len(args))
			case dash == 0 || dash == len(args):
				return usageError("bench compare: want reports on both sides of --: OLD.json... -- NEW.json...")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			olds, news := args[:1], args[1:]
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				olds, news = args[:dash], args[dash:]
			}
			return bench.CompareReportFiles(c.stdout, c.stdin, olds, news)
		},
	}
}

// addBenchFlags registers bench's flags on fs.
func addBenchFlags(fs *pflag.FlagSet, o *bench.Options) {
	fs.StringVar(&o.Mode, "mode", bench.ModeAll, "watch (driftwatch), poll (watches off, resync only), burst, all (watch, poll and burst in turn), scale, fleet (many cluster entries on a few apiservers), mixed (eleven kinds from manifest sources), or git (a Git source: push to applied, poll cost, a large repository's clone)")
	fs.IntVar(&o.Clusters, "clusters", 3, fmt.Sprintf("local control planes to start (fleet: cluster entries, default %d)", bench.FleetClusters))
	fs.IntVar(&o.APIServers, "apiservers", bench.FleetAPIServers, "fleet: local control planes serving the cluster entries")
	fs.IntVar(&o.Objects, "objects", 300, fmt.Sprintf("managed objects per cluster (Deployments, Services and ConfigMaps; fleet: per entry, Deployments and ConfigMaps, default %d; mixed: at least %d, over eleven kinds and a CRD; git: the source's, default %d, at most %d)", bench.FleetObjects, bench.MixedMinObjects, bench.GitObjects, bench.GitMaxObjects))
	fs.IntVar(&o.Drifts, "drifts", 200, "drifts to make in the watch and poll runs, over all clusters")
	fs.Float64Var(&o.Rate, "rate", 20, fmt.Sprintf("drifts per second per cluster (fleet: per entry, default %g)", bench.FleetRate))
	fs.DurationVar(&o.Interval, "interval", 10*time.Second, "poll run: the hub's resync period (real poll tools use about 5m)")
	fs.IntVar(&o.Burst, "burst", 1000, "burst run: objects deleted at once on the first cluster (created when --objects is smaller)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the drift schedule (same seed: same targets and actions)")
	fs.StringVarP(&o.Output, "output", "o", app.FormatText, "output `format`: text (a table) or json")
	fs.Float64Var(&o.QPS, "qps", 0, "the hub's client rate limit per cluster, burst twice that (0: the config default, adaptive: APF-aware)")
	fs.IntVar(&o.Workers, "workers", 0, "the hub's reconcile workers (0: the config default, 4 per cluster, 8 to 64)")
	fs.DurationVar(&o.Idle, "idle", 5*time.Second, fmt.Sprintf("scale, fleet and mixed runs: how long idle CPU is measured (fleet default %s); git: how long the running hub's polls are counted (default %s)", bench.FleetIdle, bench.GitIdle))
	fs.IntVar(&o.Pushes, "pushes", 5, "git: commits pushed, each announced by a webhook")
	fs.DurationVar(&o.Duration, "duration", bench.FleetDuration, "fleet: how long drift is made (--rate per second per entry)")
	fs.BoolVar(&o.Pin, "pin", false, "run the control planes on every CPU but the last and this process (the hub, the floors' plain clients, the drift client, the raw watch) on the last, so that they never share a core (Linux, 2 CPUs or more)")
	fs.StringVar(&o.Dir, "dir", "", "folder for the clusters and the config (default: a new temporary folder)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (fleet: each sample carries its phase, for go tool pprof -tagfocus 'phase=cold sync' or phase=drift)")
	fs.StringVar(&o.IdleCPUProfile, "idle-cpuprofile", "", "scale, fleet and mixed runs: write a CPU profile of the idle window alone to this file")
	fs.StringVar(&o.Chart, "chart", "", "also draw the latency distributions and the burst's repairs over time to this SVG file")
	fs.BoolVar(&o.Baseline, "baseline", true, "mixed: also run --mode scale (the three kinds) at the same object count, for the side-by-side")
	fs.StringVar(&o.MemProfile, "memprofile", "", "write a heap profile at the end of each measured run (scale and mixed: at steady state; mixed also FILE-before, its heap before the config, for pprof -base, and its baseline FILE-baseline; fleet: FILE after the cold sync, also FILE-cold-before before it, and FILE-drift-before and FILE-drift-after around its drift run, for pprof -sample_index=alloc_space -base) to this file")
}
