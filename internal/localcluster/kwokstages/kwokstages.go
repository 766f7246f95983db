// Package kwokstages embeds the kwok stage definitions that localcluster
// passes to kwok with --config: they make fake nodes Ready (and keep them
// so with heartbeats) and move pods bound to those nodes to Running at
// once. kwok exits with "no stages found" without them.
//
// The YAML files are copied unchanged from the sigs.k8s.io/kwok module
// v0.8.0 (kustomize/stage/node/fast, kustomize/stage/node/heartbeat and
// kustomize/stage/pod/fast), Copyright The Kubernetes Authors, licensed under
// the Apache License 2.0 (see NOTICE and LICENSE in this folder).
package kwokstages

import (
	"bytes"
	"embed"
	"io/fs"
	"sort"
)

//go:embed *.yaml
var files embed.FS

// YAML returns every stage as one multi-document YAML stream, in file name
// order.
func YAML() []byte {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		panic(err) // the pattern is valid
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, name := range names {
		data, err := files.ReadFile(name)
		if err != nil {
			panic(err) // embedded files are always readable
		}
		b.WriteString("---\n# " + name + "\n")
		b.Write(bytes.TrimPrefix(data, []byte("---\n")))
		if !bytes.HasSuffix(data, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// Names returns the embedded file names, sorted.
func Names() []string {
	names, _ := fs.Glob(files, "*.yaml")
	sort.Strings(names)
	return names
}
