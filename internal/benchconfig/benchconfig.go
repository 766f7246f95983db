// Package benchconfig writes the generated inputs benchmarks share: the
// applications of the configs the config and check benchmarks load (one
// shape of application, numbered, so that a benchmark of the parser and
// one of the command measure the same input), and the manifests of the
// relaunch benchmarks.
package benchconfig

import (
	"fmt"
	"strings"
)

// App appends application i to b, indented as an item of `applications:`.
// Every other one targets clusters by selector (env in (dev, prod)), the
// others by list (dev, staging); each has labels, environment variables,
// a ConfigMap entry and resources. With anchors, each even application
// anchors its resources and the next one refers to them.
func App(b *strings.Builder, i int, anchors bool) {
	target := "selector: env in (dev, prod)"
	if i%2 == 1 {
		target = "clusters: [dev, staging]"
	}
	resources := "\n      requests: {cpu: 100m, memory: 64Mi}"
	switch {
	case anchors && i%2 == 0:
		resources = fmt.Sprintf(" &res-%d%s", i, resources)
	case anchors:
		resources = fmt.Sprintf(" *res-%d", i-1)
	}
	fmt.Fprintf(b, `  - id: app-%d
    namespace: ns-%d
    %s
    image: registry.example/app-%d:1.2.3
    replicas: 2
    port: 8080
    labels: {team: t%d, tier: web}
    env:
      LOG_LEVEL: info
      SHARD: "%d"
    config:
      app.properties: "key=%d"
    resources:%s
`, i, i%50, target, i, i%7, i, i, resources)
}

// ConfigMaps returns a multi-document manifest of a Namespace and n
// ConfigMaps in it (cm-00000 on, one data key each): the source of the
// benchmarks of a relaunch over many manifests, so that the config's load,
// the in-process UI and the binary on a terminal measure the same input.
func ConfigMaps(namespace string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", namespace)
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%05d, namespace: %s}\ndata: {key: value-%d}\n", i, namespace, i)
	}
	return b.String()
}
