package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/app"
	"github.com/driftwatch/driftwatch/internal/cli"
)

// hubFlags are the flags of the commands that act on a running hub:
// where it listens, and clientFlags.
type hubFlags struct {
	server string
	clientFlags
}

// serverEnv is the environment variable the hub commands take the hub's
// address from when --server is not given.
const serverEnv = "DRIFTWATCH_SERVER"

// addFlags registers --server, --token-file and --ca-file on cmd.
func (f *hubFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.server, "server", "http://"+app.DefaultListen, "the hub's API `address` (serve's --listen; https:// when it serves TLS; default: $"+serverEnv+", else this)")
	f.clientFlags.addFlags(cmd.Flags())
}

// remote returns the client of the hub the flags name (--server, else
// $DRIFTWATCH_SERVER, else serve's default address), or a usage error
// prefixed with the command's name.
func (f *hubFlags) remote(c *cliEnv, cmd *cobra.Command) (*app.Remote, error) {
	opts, err := f.options(c.getenv)
	if err != nil {
		return nil, usageError("%s%v", cli.Prefix(cmd), err)
	}
	server := f.server
	if env := c.getenv(serverEnv); env != "" && !cmd.Flags().Changed("server") {
		server = env
	}
	r, err := app.NewRemote(server, opts, c.stdout)
	if err != nil {
		return nil, usageError("%s%v", cli.Prefix(cmd), err)
	}
	return r, nil
}

// remoteTokenText is the paragraph every hub command's help ends with.
const remoteTokenText = `It talks to a running hub (driftwatch serve, default
http://127.0.0.1:7070; --server or $DRIFTWATCH_SERVER names another) with
a token: --token-file, else $DRIFTWATCH_TOKEN, else the token file serve
made on this machine. The token goes over plain http only to this machine
(127.0.0.1, ::1, localhost); any other hub needs an https:// address.`

// completer says what a hub command's next argument may be, given the
// arguments before it: fixed words (ask false), or what to read from the
// hub's snapshot (ask true, see app.Complete); nil words and ask false:
// nothing more.
type completer func(args []string) (words []string, kind app.Completion, ask bool)

// hubCommand completes cmd (its texts set) as a command of a running hub:
// parse reads and checks its arguments (and flags) before anything is
// sent, act does the command's one thing through the hub's client; its
// error is prefixed with the command's name. complete (nil: none) makes
// the shell's completion offer its arguments, read from the hub the flags
// name (a hub that cannot be asked offers none).
func hubCommand[T any](c *cliEnv, cmd *cobra.Command, parse func(*cobra.Command, []string) (T, error), act func(*app.Remote, T) error, complete completer) *cobra.Command {
	var hf hubFlags
	if complete != nil {
		cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			words, kind, ask := complete(args)
			if !ask {
				var out []cobra.Completion
				for _, w := range words {
					if strings.HasPrefix(w, toComplete) {
						out = append(out, w)
					}
				}
				return out, cobra.ShellCompDirectiveNoFileComp
			}
			r, err := hf.remote(c, cmd)
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			snap, err := r.Snapshot()
			if err != nil {
				cobra.CompDebugln(err.Error(), true)
				return nil, cobra.ShellCompDirectiveError
			}
			var scope hub.HoldScope
			if len(args) > 0 {
				scope = hub.HoldScope(args[0])
			}
			return app.Complete(snap, kind, scope, toComplete, args), cobra.ShellCompDirectiveNoFileComp
		}
	}
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		_, err := parse(cmd, args)
		return err
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		v, err := parse(cmd, args)
		if err != nil {
			return err
		}
		r, err := hf.remote(c, cmd)
		if err != nil {
			return err
		}
		if err := act(r, v); err != nil {
			var ee *app.ExitError
			if errors.As(err, &ee) {
				return err
			}
			return fmt.Errorf("%s: %w", cmd.Name(), err)
		}
		return nil
	}
	hf.addFlags(cmd)
	return cmd
}

// newStatusCmd is `driftwatch status`.
func newStatusCmd(c *cliEnv) *cobra.Command {
	var output string
	var all, exitCode bool
	cmd := &cobra.Command{
		Use:   "status [--all] [--exit-code] [-o text|json]",
		Short: "Show a running hub's clusters and what needs attention",
		Long: `Status prints a running hub's clusters (state, objects, in sync, drift,
repairs in progress, failures, stuck rollouts, fights, paused), then what
needs attention: the NodeIDs whose status is not in sync, the worst first
(failed, forbidden, stuck, contested, drifted...), with the reason the hub
gives; the holds, and the sources that fail or are stale. NodeIDs of a
cluster that is not connected are counted on the cluster, not listed. The
first 20 NodeIDs are listed, and past 20 clusters only those with
something to say (the others counted); --all lists every one. -o json prints the same
as a document for scripts. A hub that runs as several replicas is shown as
one through any of them, each cluster with the replica that manages it.

Exit 0, or with --exit-code 1 when anything needs attention (a NodeID, a
cluster not synced or paused, a source failing or stale, a replica that
does not answer); 1 when the hub cannot be asked, 2 usage.

` + remoteTokenText + `
A viewer token is enough.`,
		Example: `  driftwatch status
  driftwatch status --all --server https://hub.example:7070 --ca-file ca.pem --token-file token
  driftwatch status -o json | jq '.attention[] | select(.status == "failed") | .id'
  driftwatch status --exit-code >/dev/null || page-the-on-call`,
	}
	cmd.Flags().StringVarP(&output, "output", "o", app.FormatText, "output `format`: text or json")
	cmd.Flags().BoolVar(&all, "all", false, "list every cluster and every NodeID that needs attention, not the first 20")
	cmd.Flags().BoolVar(&exitCode, "exit-code", false, "exit 1 when anything needs attention")
	parse := func(cmd *cobra.Command, args []string) (int, error) {
		if err := cli.NoArgs(cmd, args); err != nil {
			return 0, err
		}
		if err := cli.CheckFormat(cmd, output, app.FormatText, app.FormatJSON); err != nil {
			return 0, err
		}
		if all {
			return 0, nil // no limit
		}
		return 20, nil
	}
	return hubCommand(c, cmd, parse, func(r *app.Remote, limit int) error {
		attention, err := r.Status(output, limit)
		if err == nil && attention && exitCode {
			return &app.ExitError{Code: 1}
		}
		return err
	}, nil)
}

// newPauseCmd is `driftwatch pause` (paused) or `driftwatch resume`.
func newPauseCmd(c *cliEnv, paused bool) *cobra.Command {
	var all bool
	var reason string
	verb, long, example := "pause", `Pause stops the repairs on each named cluster of a running hub, as the
terminal UI's p key does: drift is still detected, reported and notified,
and nothing there is written until driftwatch resume. It returns once no
write there can still happen (writes already let through have finished,
or were cancelled after 1 s). The pause outlives a restart of the hub
(with its state file). --reason says why: every view of the cluster (the
terminal UI, driftwatch status, the API) shows it while it is paused, with
who paused it (the name of your token) and when; pausing a paused cluster
again replaces it. --all pauses every cluster the hub manages now; a
cluster discovered afterwards is not paused.`,
		`  driftwatch pause prod-eu --reason "INC-4211: failing over to prod-us"
  driftwatch pause prod-eu prod-us --server https://hub.example:7070 --ca-file ca.pem
  driftwatch pause --all`
	if !paused {
		verb, long, example = "resume", `Resume lets a running hub repair each named cluster again after driftwatch
pause (or the terminal UI's p key): its drift is repaired from the next
pass. --all resumes every paused cluster.`,
			`  driftwatch resume prod-eu
  driftwatch resume --all`
	}
	cmd := &cobra.Command{
		Use:   verb + " CLUSTER... | --all",
		Short: map[bool]string{true: "Pause the repairs on clusters of a running hub", false: "Resume the repairs on clusters of a running hub"}[paused],
		Long: long + `

It goes on past a cluster the hub does not know and names each in its
error. Exit 0 done, 1 refused (an unknown cluster, a viewer token) or the
hub cannot be asked, 2 usage.

` + remoteTokenText + `
It needs an operator token.`,
		Example: example,
	}
	cmd.Flags().BoolVar(&all, "all", false, "every cluster the hub manages now")
	if paused {
		cmd.Flags().StringVar(&reason, "reason", "", "why (shown wherever the pause is)")
	}
	parse := func(cmd *cobra.Command, args []string) ([]string, error) {
		switch {
		case len(strings.TrimSpace(reason)) > hub.MaxSwitchNote:
			return nil, usageError("%s--reason: at most %d bytes", cli.Prefix(cmd), hub.MaxSwitchNote)
		case all && len(args) > 0:
			return nil, usageError("%s--all acts on every cluster: name none with it", cli.Prefix(cmd))
		case !all && len(args) == 0:
			return nil, usageError("%sname a cluster (or --all)", cli.Prefix(cmd))
		}
		return args, nil
	}
	return hubCommand(c, cmd, parse, func(r *app.Remote, clusters []string) error {
		return r.Pause(clusters, all, paused, strings.TrimSpace(reason))
	},
		func([]string) ([]string, app.Completion, bool) { return nil, app.CompleteCluster, !all })
}

// holdTarget parses the SCOPE NAME arguments of hold and release.
func holdTarget(cmd *cobra.Command, args []string) (hub.HoldTarget, error) {
	if len(args) != 2 {
		return hub.HoldTarget{}, usageError("%swant SCOPE NAME: node NODEID, application NAME or cluster NAME", cli.Prefix(cmd))
	}
	t := hub.HoldTarget{Scope: hub.HoldScope(args[0]), Name: args[1]}
	if err := t.Valid(); err != nil {
		return hub.HoldTarget{}, usageError("%s%v", cli.Prefix(cmd), err)
	}
	return t, nil
}

// newHoldCmd is `driftwatch hold`.
func newHoldCmd(c *cliEnv) *cobra.Command {
	var ttl time.Duration
	var reason string
	cmd := &cobra.Command{
		Use:   "hold node|application|cluster NAME --reason TEXT [--for DURATION]",
		Short: "Hold the repairs of a NodeID, an application or a cluster for a while",
		Long: `Hold stops a running hub's repairs of one NodeID, of every object of an
application, or of a whole cluster, for a while (--for, default 30m) and
with a reason (--reason, required), as the terminal UI's h key does: the
drift stays reported and shows as held with the reason; the hold ends by
itself when its time is up (7 days at most), or with driftwatch release.
It returns once no write it covers can still happen. A hold outlives a
restart of the hub (with its state file), and a new hold on the same
target replaces it.

Exit 0 held, 1 refused (an unknown target, a viewer token) or the hub
cannot be asked, 2 usage.

` + remoteTokenText + `
It needs an operator token.`,
		Example: `  driftwatch hold cluster prod-eu --for 2h --reason "INC-123: etcd restore in progress"
  driftwatch hold application checkout --reason "canary by hand"
  driftwatch hold node prod-eu:shop/web:deployment --for 15m --reason "debugging"`,
	}
	cmd.Flags().DurationVar(&ttl, "for", 30*time.Minute, "how long the hold lasts")
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; shown wherever the hold is)")
	parse := func(cmd *cobra.Command, args []string) (hub.HoldTarget, error) {
		t, err := holdTarget(cmd, args)
		switch {
		case err != nil:
			return t, err
		case strings.TrimSpace(reason) == "":
			return t, usageError("%s--reason is required: say why, for whoever finds the hold", cli.Prefix(cmd))
		case ttl <= 0:
			return t, usageError("%s--for %s: want a positive duration, such as 30m or 2h", cli.Prefix(cmd), ttl)
		}
		return t, nil
	}
	return hubCommand(c, cmd, parse, func(r *app.Remote, t hub.HoldTarget) error { return r.Hold(t, ttl, reason) }, completeHold(false))
}

// completeHold completes hold's (or, with held, release's) arguments: a
// scope, then a name of that scope (release: of the holds there are).
func completeHold(held bool) completer {
	return func(args []string) ([]string, app.Completion, bool) {
		switch {
		case len(args) == 0:
			return []string{string(hub.HoldNode), string(hub.HoldApplication), string(hub.HoldCluster)}, 0, false
		case len(args) > 1:
			return nil, 0, false
		case held:
			return nil, app.CompleteHeld, true
		}
		switch hub.HoldScope(args[0]) {
		case hub.HoldNode:
			return nil, app.CompleteNodeID, true
		case hub.HoldApplication:
			return nil, app.CompleteApplication, true
		case hub.HoldCluster:
			return nil, app.CompleteCluster, true
		}
		return nil, 0, false
	}
}

// newReleaseCmd is `driftwatch release`.
func newReleaseCmd(c *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release node|application|cluster NAME",
		Short: "End a hold before its time",
		Long: `Release ends a hold (driftwatch hold, or the terminal UI's h key) before its
time, as the UI's H key does: the target's drift is repaired from the next
pass. Exit 0 released, 1 no hold there or the hub cannot be asked, 2 usage.

` + remoteTokenText + `
It needs an operator token.`,
		Example: `  driftwatch release cluster prod-eu
  driftwatch release node prod-eu:shop/web:deployment`,
	}
	return hubCommand(c, cmd, holdTarget, (*app.Remote).Release, completeHold(true))
}

// newRepairCmd is `driftwatch repair`.
func newRepairCmd(c *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "repair NODEID...",
		Short: "Repair NodeIDs now, once, past warn-only, a pause or a hold",
		Long: `Repair asks a running hub to repair each NodeID now, once, as the terminal
UI's r key does: also one that is warn-only, on a paused cluster or held
(set before the request), which stay so afterwards. A NodeID reads
cluster:namespace/name:kind, as status and the UI show it. It goes on past
a NodeID the hub refuses and names each in its error. A hub that runs as
several replicas may be asked through any of them: each repair goes to the
replica that manages the NodeID's cluster.

Exit 0 requested, 1 refused (an unknown NodeID, a viewer token) or the hub
cannot be asked, 2 usage.

` + remoteTokenText + `
It needs an operator token.`,
		Example: `  driftwatch repair prod-eu:shop/web:deployment
  driftwatch status -o json | jq -r '.attention[] | select(.status == "warn-only") | .id' | xargs driftwatch repair`,
	}
	return hubCommand(c, cmd, nodeIDs, (*app.Remote).Repair,
		func([]string) ([]string, app.Completion, bool) { return nil, app.CompleteNodeID, true })
}

// nodeIDs parses repair's arguments.
func nodeIDs(cmd *cobra.Command, args []string) ([]hub.NodeID, error) {
	if len(args) == 0 {
		return nil, usageError("%sname a NodeID (cluster:namespace/name:kind)", cli.Prefix(cmd))
	}
	ids := make([]hub.NodeID, 0, len(args))
	for _, a := range args {
		id, err := hub.ParseNodeID(a)
		if err != nil {
			return nil, usageError("%s%v", cli.Prefix(cmd), err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// newPolicyCmd is `driftwatch policy`.
func newPolicyCmd(c *cliEnv) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "policy APPLICATION warn|repair|config",
		Short: "Make an application warn-only, or repaired, at run time",
		Long: `Policy sets an application's policy on a running hub, as the terminal UI's w
key does: warn makes its drift reported and not repaired, repair repairs
it, config drops the override and follows the config file's policy again.
The override outlives a reload and, with the hub's state file, a
restart (APPLICATION is an application's or a manifest source's id).
--reason says why: status, the terminal UI and the API show it with the
override, with who set it (the name of your token) and when.

Exit 0 set, 1 refused (an unknown application, a viewer token) or the hub
cannot be asked, 2 usage.

` + remoteTokenText + `
It needs an operator token.`,
		Example: `  driftwatch policy checkout warn --reason "INC-4211: the vendor scales it by hand"
  driftwatch policy checkout config`,
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (shown wherever the override is; not kept by config)")
	parse := func(cmd *cobra.Command, args []string) (appPolicy, error) {
		p, err := policyArg(cmd, args)
		switch {
		case err != nil:
			return p, err
		case len(strings.TrimSpace(reason)) > hub.MaxSwitchNote:
			return p, usageError("%s--reason: at most %d bytes", cli.Prefix(cmd), hub.MaxSwitchNote)
		case p.policy == "" && strings.TrimSpace(reason) != "":
			return p, usageError("%s--reason goes with warn or repair: config drops the override and its reason", cli.Prefix(cmd))
		}
		return p, nil
	}
	return hubCommand(c, cmd, parse, func(r *app.Remote, p appPolicy) error { return r.Policy(p.app, p.policy, strings.TrimSpace(reason)) },
		func(args []string) ([]string, app.Completion, bool) {
			switch len(args) {
			case 0:
				return nil, app.CompleteApplication, true
			case 1:
				return []string{"warn", "repair", "config"}, 0, false
			}
			return nil, 0, false
		})
}

// appPolicy is policy's arguments: the application and the policy to set
// ("" for config).
type appPolicy struct {
	app    string
	policy hub.Policy
}

// policyArg parses policy's arguments.
func policyArg(cmd *cobra.Command, args []string) (appPolicy, error) {
	if len(args) != 2 {
		return appPolicy{}, usageError("%swant APPLICATION warn|repair|config", cli.Prefix(cmd))
	}
	switch args[1] {
	case "warn":
		return appPolicy{args[0], hub.PolicyWarn}, nil
	case "repair":
		return appPolicy{args[0], hub.PolicyRepair}, nil
	case "config":
		return appPolicy{args[0], ""}, nil
	}
	return appPolicy{}, usageError("%spolicy %q: want warn, repair or config", cli.Prefix(cmd), args[1])
}

// logArgs are driftwatch log's parsed arguments and flags.
type logArgs struct {
	ctx context.Context
	app.LogOptions
}

// newLogCmd is `driftwatch log`.
func newLogCmd(c *cliEnv) *cobra.Command {
	var o app.LogOptions
	cmd := &cobra.Command{
		Use:   "log [CLUSTER|NODEID...] [--since 1h] [-f] [-o text|json]",
		Short: "Print a running hub's feed: each drift, who made it, what the hub did",
		Long: `Log prints a running hub's feed, oldest first: each drift it saw (what
changed, field by field), who made it (the field manager), and what the hub
did about it (apply, warn, paused, held, backoff, prune, a desired change
applied), with how long it took; a drift that repeated is one line with its
count. The hub keeps its last 200 entries; --since keeps those of the last
DURATION. Arguments keep the entries of those clusters, and of the NodeIDs
that start with an argument holding a colon (prod-eu:shop/ is every object
of the namespace shop on prod-eu). -f (--follow) then prints each new entry
as it comes, until interrupted; a repeat folded into an entry prints it
again with its new count. -o json prints one JSON object per line, the
API's feed entry. A hub that runs as several replicas is read as one
through any of them.

Exit 0, 1 when the hub cannot be asked or a cluster is unknown, 2 usage.

` + remoteTokenText + `
A viewer token is enough (Secret values are then redacted).`,
		Example: `  driftwatch log --since 1h
  driftwatch log prod-eu -f
  driftwatch log prod-eu:shop/web:deployment
  driftwatch log -f -o json | jq -c 'select(.action == "apply")'`,
	}
	cmd.Flags().DurationVar(&o.Since, "since", 0, "only the entries of the last `duration` (default: all the hub keeps)")
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep printing new entries until interrupted")
	cmd.Flags().StringVarP(&o.Format, "output", "o", app.FormatText, "output `format`: text or json (one object per line)")
	parse := func(cmd *cobra.Command, args []string) (logArgs, error) {
		if err := cli.CheckFormat(cmd, o.Format, app.FormatText, app.FormatJSON); err != nil {
			return logArgs{}, err
		}
		if o.Since < 0 {
			return logArgs{}, usageError("%s--since must be positive", cli.Prefix(cmd))
		}
		for _, a := range args {
			if strings.TrimSpace(a) == "" {
				return logArgs{}, usageError("%san empty cluster or NodeID", cli.Prefix(cmd))
			}
		}
		lo := o
		lo.Targets, lo.Notices = args, c.stderr
		return logArgs{ctx: cmd.Context(), LogOptions: lo}, nil
	}
	return hubCommand(c, cmd, parse, func(r *app.Remote, a logArgs) error { return r.Log(a.ctx, a.LogOptions) },
		func([]string) ([]string, app.Completion, bool) { return nil, app.CompleteCluster, true })
}

// describeArgs are driftwatch describe's parsed argument and flag.
type describeArgs struct {
	id     hub.NodeID
	format string
}

// newDescribeCmd is `driftwatch describe`.
func newDescribeCmd(c *cliEnv) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "describe NODEID [-o text|json]",
		Short: "Show one NodeID of a running hub as the terminal UI's node view does",
		Long: `Describe prints one NodeID of a running hub as the terminal UI's node view
shows it: its status and why (the hub's reason; for a stuck rollout, its
pods' or its events' words), the fight when it is contested, the holds
over it, its application and policy, the source revision its desired
state came from, the last drift as a diff of the managed fields (what it
should hold, then what someone made of it) with who made it and what the
hub did, the fields ignore rules cover, the timeline of its last steps
with their latencies, and a summary of its desired object. -o json prints
the API's node document (its status and desired object). A NodeID reads
cluster:namespace/name:kind, as status and log show it. A hub that runs as
several replicas is asked through any of them.

Exit 0, 1 when the hub does not manage the NodeID or cannot be asked,
2 usage.

` + remoteTokenText + `
A viewer token is enough (environment and Secret values are then
redacted).`,
		Example: `  driftwatch describe prod-eu:shop/web:deployment
  driftwatch status -o json | jq -r '.attention[0].id' | xargs driftwatch describe`,
	}
	cmd.Flags().StringVarP(&output, "output", "o", app.FormatText, "output `format`: text or json")
	parse := func(cmd *cobra.Command, args []string) (describeArgs, error) {
		if len(args) != 1 {
			return describeArgs{}, usageError("%sname one NodeID (cluster:namespace/name:kind)", cli.Prefix(cmd))
		}
		if err := cli.CheckFormat(cmd, output, app.FormatText, app.FormatJSON); err != nil {
			return describeArgs{}, err
		}
		id, err := hub.ParseNodeID(args[0])
		if err != nil {
			return describeArgs{}, usageError("%s%v", cli.Prefix(cmd), err)
		}
		return describeArgs{id: id, format: output}, nil
	}
	return hubCommand(c, cmd, parse, func(r *app.Remote, a describeArgs) error { return r.Describe(a.id, a.format) },
		func(args []string) ([]string, app.Completion, bool) {
			if len(args) > 0 {
				return nil, 0, false
			}
			return nil, app.CompleteNodeID, true
		})
}
