package config

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// parallelApps writes a config of n applications over two clusters. The
// first application anchors its labels, a map of big entries and its
// image; the others merge the labels, and every
// tenth takes the image by alias and merges the big entries.
// bad returns a fault to put in application i ("" for none).
func parallelApps(n, big int, bad func(i int) string) string {
	var b strings.Builder
	b.WriteString("clusters:\n  - id: dev\n    kubeconfig: /etc/kube/dev\n    labels: {env: dev}\n  - id: prod\n    kubeconfig: /etc/kube/prod\n    labels: {env: prod}\napplications:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - id: app-%d\n    namespace: ns-%d\n", i, i%7)
		switch {
		case i == 0:
			b.WriteString("    clusters: [dev]\n    image: &image registry.example/app:1\n    labels: &labels {team: a, tier: web}\n    env: &big\n")
			for k := range big {
				fmt.Fprintf(&b, "      K%d: v\n", k)
			}
		case i%10 == 0:
			b.WriteString("    selector: env in (dev, prod)\n    image: *image\n    labels: {<<: *labels, shard: s}\n    env: {<<: *big, EXTRA: x}\n")
		default:
			fmt.Fprintf(&b, "    clusters: [dev, prod]\n    image: registry.example/app-%d:1\n    labels: {<<: *labels}\n", i)
		}
		if f := bad(i); f != "" {
			b.WriteString(f)
		}
	}
	return b.String()
}

// parseWith parses src with procs cores for the applications' decoding.
func parseWith(t *testing.T, procs int, src string) (*Config, error) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	return Parse("config.yaml", []byte(src), testOptions())
}

// TestAppsInParallel checks that the applications decoded on several cores
// give what decoding them on one gives: the same config, or the same
// errors in the same order; and that merge
// keys expanding past the file's limit are reported as on one core.
func TestAppsInParallel(t *testing.T) {
	none := func(int) string { return "" }
	faults := func(i int) string {
		switch {
		case i%97 == 5:
			return "    replicas: many\n"
		case i%131 == 7:
			return "    port: 70000\n"
		case i%200 == 3:
			return "    unknown: 1\n" // a typo: did-you-mean
		case i%250 == 9:
			return "    nodeSelector: {<<: *missing}\n"
		}
		return ""
	}
	for _, tc := range []struct {
		name   string
		n, big int
		bad    func(int) string
		errs   bool
	}{
		{"clean", 1200, 3, none, false},
		{"faults", 1200, 3, faults, true},
		// 121 merges of 20 entries: past maxMergedEntries in total, in
		// neither half alone.
		{"merged past the limit", 1210, maxMergedEntries / 121 / 4 * 5, none, true},
		{"too few to split", 2*appsPerFork - 1, 3, faults, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := parallelApps(tc.n, tc.big, tc.bad)
			one, err1 := parseWith(t, 1, src)
			four, err4 := parseWith(t, 4, src)
			if (err1 != nil) != tc.errs {
				t.Fatalf("one core: %v, want errors: %v", err1, tc.errs)
			}
			if !reflect.DeepEqual(err1, err4) {
				t.Fatalf("errors differ:\none core:\n%v\nfour cores:\n%v", err1, err4)
			}
			if !reflect.DeepEqual(one, four) {
				t.Fatal("configs differ")
			}
			if one != nil && len(one.Applications) != tc.n {
				t.Errorf("%d applications, want %d", len(one.Applications), tc.n)
			}
			if tc.name == "merged past the limit" && !strings.Contains(err4.Error(), "merge keys expand to more than") {
				t.Errorf("errors = %v, want the merge limit", err4)
			}
		})
	}
}
