package main

import (
	_ "embed"
	"io"

	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/cli"
)

// configSchema is the JSON Schema of the config file, docs/
// config.schema.json: go generate ./config writes it from the config
// package, whose tests keep it in step with the decoder.
//
//go:embed docs/config.schema.json
var configSchema string

// newConfigCmd is `driftwatch config`, the commands about the config file
// itself.
func newConfigCmd(c *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "About the config file: its JSON Schema for editors",
		Long: `Config groups the commands about the config file itself. Every key of it is
described in docs/configuration.md; driftwatch check -f FILE validates one.`,
		Example: `  driftwatch config schema > driftwatch.schema.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError("config: unknown command %q: want schema", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError("config: name a command: schema")
		},
	}
	cmd.AddCommand(newConfigSchemaCmd(c))
	return cmd
}

// newConfigSchemaCmd is `driftwatch config schema`.
func newConfigSchemaCmd(c *cliEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the config file",
		Long: `Schema prints the JSON Schema (draft 2020-12) of the config file, generated
from the code that reads it and published as docs/config.schema.json. Editors
that use yaml-language-server check and complete a config whose first line
points at it (driftwatch init writes that line with the published URL):

  # yaml-language-server: $schema=<URL, or path relative to the config>

The schema checks each value on its own; driftwatch check -f FILE also checks
references between entries, duplicates and selectors.`,
		Example: `  # A copy next to the config, which then starts with the line
  #   # yaml-language-server: $schema=driftwatch.schema.json
  driftwatch config schema > driftwatch.schema.json`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(c.stdout, configSchema)
			return err
		},
	}
}
