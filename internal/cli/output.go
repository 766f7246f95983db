package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/driftwatch/driftwatch/internal/app"
)

// Formats lists output formats as help and errors say them: "text, json
// or yaml".
func Formats(formats ...string) string {
	switch len(formats) {
	case 0:
		return ""
	case 1:
		return formats[0]
	}
	return strings.Join(formats[:len(formats)-1], ", ") + " or " + formats[len(formats)-1]
}

// CheckFormat returns nil when format is one of formats (the -o values cmd
// accepts: app.FormatText, app.FormatJSON, app.FormatYAML, as they mean
// something for it), else a usage error that lists them.
func CheckFormat(cmd *cobra.Command, format string, formats ...string) error {
	for _, f := range formats {
		if f == format {
			return nil
		}
	}
	return app.UsageError("%s-o %s: want %s", Prefix(cmd), strconv.Quote(format), Formats(formats...))
}

// OutputFileMoved is the usage error of a command whose -o used to name
// the file to write: -o is an output format everywhere now, and the file
// goes after flag (e.g. --output-file). formats are the -o values cmd
// accepts.
func OutputFileMoved(cmd *cobra.Command, value, flag string, formats ...string) error {
	return app.UsageError("%s-o %s: -o is the output format (%s); write to a file with %s %s",
		Prefix(cmd), strconv.Quote(value), Formats(formats...), flag, value)
}
