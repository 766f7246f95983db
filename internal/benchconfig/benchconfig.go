// Package benchconfig writes the applications of the generated configs
// that the config and check benchmarks load: one shape of application,
// numbered, so that a benchmark of the parser and one of the command
// measure the same input.
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
