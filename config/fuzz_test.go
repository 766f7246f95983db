package config

import (
	"os"
	"testing"
)

// FuzzParse checks that no input makes Parse or Compile panic, that every
// error has a position, and that a valid config compiles.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(examplePath); err == nil {
		f.Add(data)
	}
	f.Add([]byte("clusters:\n  - id: a\n    kubeconfig: k\n    labels: &l {env: prod}\napplications:\n  - &b {id: x, namespace: ns, selector: env=prod, image: i}\n  - {<<: *b, id: y}\n"))
	f.Add([]byte("a: &a [*a]\nb: {<<: *a}\n"))
	f.Add([]byte("hub: {resync: 1s, qps: 1e40}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data, testOptions())
		if err != nil {
			list, ok := err.(ErrorList)
			if !ok || len(list) == 0 {
				t.Fatalf("error %v (%T) is not a non-empty ErrorList", err, err)
			}
			return
		}
		Compile(cfg)
	})
}
