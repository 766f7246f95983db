// Command gendocs writes the JSON Schema of driftwatch's config file and
// its reference (see config.GenerateDocs). `go generate ./config` runs it
// in the config package's folder.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/driftwatch/driftwatch/config"
)

func main() {
	schema := flag.String("schema", "../docs/config.schema.json", "write the JSON Schema to this `file`")
	reference := flag.String("reference", "../docs/configuration.md", "write the reference to this `file`")
	flag.Parse()
	if err := run(*schema, *reference); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// run generates from the Go files of the current folder, the config
// package's.
func run(schemaPath, referencePath string) error {
	schema, reference, err := config.GenerateDocs(os.DirFS("."))
	if err != nil {
		return err
	}
	if err := os.WriteFile(schemaPath, schema, 0o644); err != nil {
		return err
	}
	return os.WriteFile(referencePath, reference, 0o644)
}
