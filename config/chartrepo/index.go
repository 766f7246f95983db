package chartrepo

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"
)

// The index is read the way Helm's repo/v1 package reads it (LoadIndexFile
// and IndexFile.Get), without importing that package: it would bring
// Helm's plugin system, a WebAssembly runtime and the kubectl command-line
// libraries into the binary for a few dozen lines. Only the chart's own
// entry is decoded past the top level.

// indexFile is the top of index.yaml.
type indexFile struct {
	APIVersion string                     `json:"apiVersion"`
	Entries    map[string]json.RawMessage `json:"entries"`
}

// chartVersion is one version of a chart in index.yaml (Helm's
// repo.ChartVersion, less the fields that Helm ignores).
type chartVersion struct {
	*chart.Metadata
	URLs    []string  `json:"urls"`
	Created time.Time `json:"created"`
	Removed bool      `json:"removed,omitempty"`
	Digest  string    `json:"digest,omitempty"`
}

// errNoChart: the index has no entry for the chart.
var errNoChart = errors.New("no such chart in the index")

// parseIndex reads the versions of chart from an index (YAML, or JSON as
// Helm also accepts), drops the entries Helm drops (empty, or whose
// metadata does not validate), and sorts them newest first. It also
// returns the number of charts the index lists.
func parseIndex(data []byte, chartName string) ([]*chartVersion, int, error) {
	if len(data) == 0 {
		return nil, 0, errors.New("it is empty")
	}
	if !json.Valid(data) {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, 0, err
		}
		data = j
	}
	var idx indexFile
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, 0, err
	}
	if idx.APIVersion == "" {
		return nil, 0, errors.New("no API version specified")
	}
	raw, ok := idx.Entries[chartName]
	if !ok {
		return nil, len(idx.Entries), errNoChart
	}
	var all []*chartVersion
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, 0, fmt.Errorf("entry of chart %s: %v", chartName, err)
	}
	vs := make([]*chartVersion, 0, len(all))
	for _, v := range all {
		if v == nil {
			continue
		}
		if v.Metadata == nil {
			v.Metadata = &chart.Metadata{}
		}
		if v.APIVersion == "" {
			v.APIVersion = chart.APIVersionV1
		}
		if err := v.Validate(); err != nil && !skippable(err) {
			continue
		}
		vs = append(vs, v)
	}
	// Newest first; versions that do not parse go last (Helm's order).
	slices.SortStableFunc(vs, func(a, b *chartVersion) int {
		va, ea := semver.NewVersion(a.Version)
		vb, eb := semver.NewVersion(b.Version)
		switch {
		case ea != nil && eb != nil:
			return 0
		case ea != nil:
			return 1
		case eb != nil:
			return -1
		}
		return vb.Compare(va)
	})
	return vs, len(idx.Entries), nil
}

// skippable reports whether a validation error is one Helm ignores when
// it loads an index (JFrog repositories strip the alias field).
func skippable(err error) bool {
	var verr chart.ValidationError
	return errors.As(err, &verr) && strings.HasPrefix(verr.Error(), "validation: more than one dependency with name or alias")
}

// pickVersion selects among vs (newest first) what Helm's IndexFile.Get
// selects: the entry whose version is exactly want, else the newest that
// satisfies the constraint c (nil: "*", which skips prereleases).
func pickVersion(vs []*chartVersion, want string, c *semver.Constraints) *chartVersion {
	if want != "" {
		for _, v := range vs {
			if v.Version == want {
				return v
			}
		}
	}
	if c == nil {
		c, _ = semver.NewConstraint("*")
	}
	for _, v := range vs {
		sv, err := semver.NewVersion(v.Version)
		if err == nil && c.Check(sv) {
			return v
		}
	}
	return nil
}
