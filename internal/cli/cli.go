// Package cli is the command-line plumbing package main builds its cobra
// tree with: usage errors that exit 2 with one line saying what is wrong
// and where the help is, a help command that refuses unknown commands,
// cobra's completion command with examples, and argument checks.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/driftwatch/driftwatch/internal/app"
)

// Setup finishes a root command: cobra prints neither errors nor usage
// (Execute's caller prints the error), a flag error is a usage error, and
// the help and completion commands are added, with examples.
func Setup(root *cobra.Command) {
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.SetVersionTemplate("driftwatch {{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return app.UsageError("%s%v", Prefix(cmd), err)
	})
	root.SetHelpCommand(helpCmd())
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, cmd := range root.Commands() {
		if cmd.Name() == "completion" {
			completionExamples(cmd)
		}
	}
	suggestByDistance(root)
}

// SuggestionDistance is the largest Levenshtein distance (case ignored)
// between a mistyped command and one it suggests: seve suggests serve,
// chekc check. Prefixes are suggested too (serv: serve).
const SuggestionDistance = 2

// suggestByDistance sets cmd's and its subcommands' suggestion distance:
// cobra only applies its default of 2 when it finds an unknown command
// itself, not for SuggestionsFor, which RootArgs, NoArgs and help use.
func suggestByDistance(cmd *cobra.Command) {
	cmd.SuggestionsMinimumDistance = SuggestionDistance
	for _, sub := range cmd.Commands() {
		suggestByDistance(sub)
	}
}

// unknownCommand is the usage error for a word that names no subcommand
// of cmd, with the ones it may mean.
func unknownCommand(cmd *cobra.Command, word string) error {
	if s := cmd.SuggestionsFor(word); len(s) > 0 {
		return app.UsageError("%sunknown command %q (did you mean %s?)", Prefix(cmd), word, strings.Join(s, " or "))
	}
	return app.UsageError("%sunknown command %q", Prefix(cmd), word)
}

// Execute runs root with args until ctx ends. A wrong command line is an
// app.ExitError with code 2 whose one line says what is wrong and ends
// with where the help is.
func Execute(ctx context.Context, root *cobra.Command, args []string) error {
	started := false
	markStarted(root, &started)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return nil
	}
	var ee *app.ExitError
	switch {
	case errors.As(err, &ee) && ee.Code == 2 && ee.Err != nil:
		return &app.ExitError{Code: 2, Err: fmt.Errorf("%w (see %s --help)", ee.Err, cmd.CommandPath())}
	case ee != nil:
		return err
	case !started:
		// cobra's own checks (arguments of its help and completion
		// commands): a usage error too.
		return &app.ExitError{Code: 2, Err: fmt.Errorf("%s%w (see %s --help)", Prefix(cmd), err, cmd.CommandPath())}
	}
	return err
}

// RootArgs rejects arguments of the TUI mode: a word there is most likely
// a mistyped command.
func RootArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return unknownCommand(cmd, args[0])
}

// NoArgs rejects positional arguments of a command that takes none; for
// a command with subcommands, the word is most likely a mistyped one.
func NoArgs(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return nil
	case cmd.HasAvailableSubCommands():
		return unknownCommand(cmd, args[0])
	}
	return app.UsageError("%sunexpected argument %q", Prefix(cmd), args[0])
}

// Prefix is the command's path without the program name, as errors start
// with it ("" for the root).
func Prefix(cmd *cobra.Command) string {
	p := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name())
	if p == "" {
		return ""
	}
	return strings.TrimSpace(p) + ": "
}

// markStarted makes every command of the tree set *started when its RunE
// begins, so run can tell a usage error found by cobra from a runtime one.
func markStarted(cmd *cobra.Command, started *bool) {
	if f := cmd.RunE; f != nil {
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			*started = true
			return f(cmd, args)
		}
	}
	for _, sub := range cmd.Commands() {
		markStarted(sub, started)
	}
}

// helpCmd is `driftwatch help [command]`: the help of a command, and a
// usage error for an unknown one.
func helpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the help of any command: the same as driftwatch COMMAND --help.",
		Example: `  driftwatch help serve
  driftwatch help completion bash`,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var names []cobra.Completion
			target, _, _ := cmd.Root().Find(args)
			for _, sub := range target.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 {
				msg := fmt.Sprintf("help: unknown command %q", strings.Join(args, " "))
				if len(rest) > 0 {
					if s := target.SuggestionsFor(rest[0]); len(s) > 0 {
						msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
					}
				}
				return app.UsageError("%s", msg)
			}
			target.InitDefaultHelpFlag() // as parsing its flags would
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}

// completionExamples adds examples to cobra's completion command and its
// shell subcommands, and makes a missing or unknown shell a usage error.
func completionExamples(cmd *cobra.Command) {
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		return app.UsageError("completion: unknown shell %q: want bash, zsh, fish or powershell", args[0])
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return app.UsageError("completion: want a shell: bash, zsh, fish or powershell")
	}
	cmd.Example = `  # bash, this shell only; zsh and fish alike
  source <(driftwatch completion bash)

  # bash, every new shell
  driftwatch completion bash > /etc/bash_completion.d/driftwatch`
	for _, sh := range cmd.Commands() {
		switch sh.Name() {
		case "powershell":
			sh.Example = "  driftwatch completion powershell | Out-String | Invoke-Expression"
		case "zsh":
			sh.Example = "  source <(driftwatch completion zsh)\n  driftwatch completion zsh > \"${fpath[1]}/_driftwatch\""
		default:
			sh.Example = fmt.Sprintf("  source <(driftwatch completion %s)", sh.Name())
		}
	}
}

// versionInfo is `driftwatch version -o json` (and -o yaml).
type versionInfo struct {
	Version string `json:"version"`
	// Revision is the VCS revision the binary was built from, when the
	// build recorded it.
	Revision  string `json:"revision,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// unstamped is the version of a binary built without -ldflags "-X
// main.version=...".
const unstamped = "dev"

// BuildVersion returns the version to print: stamped (set with -ldflags
// "-X main.version=...") unless it is "" or "dev"; else, from the build
// information (debug.ReadBuildInfo; tests pass their own), the module's
// version (go install module@v1.2.3, or the pseudo-version go build stamps
// in a VCS checkout), else the VCS revision (12 characters, "-dirty" when
// the tree was modified); else "dev". revision is the full VCS revision
// ("" when unknown).
func BuildVersion(stamped string, readBuildInfo func() (*debug.BuildInfo, bool)) (version, revision string) {
	var modified bool
	info, ok := readBuildInfo()
	if ok && info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	switch {
	case stamped != "" && stamped != unstamped:
		return stamped, revision
	case ok && info != nil && info.Main.Version != "" && info.Main.Version != "(devel)":
		return info.Main.Version, revision
	case revision != "":
		v := revision[:min(12, len(revision))]
		if modified {
			v += "-dirty"
		}
		return v, revision
	}
	return unstamped, revision
}

// VersionCmd is `driftwatch version [-o text|json|yaml]`: it prints
// version on stdout, with -o json or yaml also the VCS revision, the Go
// version and the platform.
func VersionCmd(version, revision string, stdout io.Writer) *cobra.Command {
	output := app.FormatText
	cmd := &cobra.Command{
		Use:   "version [-o text|json|yaml]",
		Short: "Print the version",
		Long: `Version prints driftwatch's version: the one stamped at build time, else the
module version or VCS revision Go recorded in the binary. -o json and -o yaml
add the revision, the Go version and the platform.`,
		Example: `  driftwatch version
  driftwatch version -o json`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := CheckFormat(cmd, output, app.FormatText, app.FormatJSON, app.FormatYAML); err != nil {
				return err
			}
			info := versionInfo{Version: version, Revision: revision, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			switch output {
			case app.FormatJSON:
				return json.NewEncoder(stdout).Encode(info)
			case app.FormatYAML:
				y, err := yaml.Marshal(info)
				if err != nil {
					return err
				}
				_, err = stdout.Write(y)
				return err
			}
			_, err := fmt.Fprintf(stdout, "driftwatch %s\n", version)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", app.FormatText, "output `format`: text (one line), json or yaml")
	return cmd
}
