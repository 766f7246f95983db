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
// metadata does not validate), and sorts them newest first. When the
// index has no such chart (errNoChart) it returns the names of the charts
// it lists instead.
func parseIndex(data []byte, chartName string) ([]*chartVersion, []string, error) {
	if len(data) == 0 {
		return nil, nil, errors.New("it is empty")
	}
	if !json.Valid(data) {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, nil, err
		}
		data = j
	}
	var idx indexFile
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, nil, err
	}
	if idx.APIVersion == "" {
		return nil, nil, errors.New("no API version specified")
	}
	raw, ok := idx.Entries[chartName]
	if !ok {
		names := make([]string, 0, len(idx.Entries))
		for n := range idx.Entries {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, names, errNoChart
	}
	var all []*chartVersion
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, nil, fmt.Errorf("entry of chart %s: %v", chartName, err)
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
	return vs, nil, nil
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

// chartsHint says which charts an index lists, for a chart it does not:
// the closest names (a typo: at most a third of the name's characters
// off), else all of them when there are few, else how many.
func chartsHint(name string, charts []string) string {
	var near []string
	for _, c := range charts {
		if editDistance(name, c) <= max(1, len(name)/3) {
			near = append(near, c)
		}
	}
	switch {
	case len(near) > 0 && len(near) <= maxListed:
		return "did you mean " + strings.Join(near, " or ") + "?"
	case len(charts) == 0:
		return "the index lists no chart"
	case len(charts) <= maxListed:
		return "the index lists " + strings.Join(charts, ", ")
	}
	return fmt.Sprintf("the index lists %d charts", len(charts))
}

// editDistance is the optimal string alignment distance of a and b (the
// edits of Levenshtein's, and swapping two neighbours, each count one),
// in bytes (chart names are ASCII); names longer than 256 bytes are
// simply far apart.
func editDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return max(len(a), len(b))
	}
	rows := [3][]int{make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(a); i++ {
		before, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], before[j-2]+1)
			}
		}
		rows[0], rows[1], rows[2] = prev, cur, before
	}
	return rows[1][len(b)]
}
