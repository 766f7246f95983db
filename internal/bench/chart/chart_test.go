package chart

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a small report of a --mode all run (samples taken from a real
// run on a 2-core machine).
const fixture = "testdata/report.json"

// svgTexts checks that data is well-formed SVG and returns its text
// elements' content.
func svgTexts(t *testing.T, data []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var texts []string
	root, inText := "", false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return texts
}

// keepRuns returns the fixture with only the runs of the given modes.
func keepRuns(t *testing.T, modes ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	var runs []any
	for _, run := range r["runs"].([]any) {
		for _, m := range modes {
			if run.(map[string]any)["mode"] == m {
				runs = append(runs, run)
			}
		}
	}
	r["runs"] = runs
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestConvertFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		modes []string
		want  []string // text that must be in the SVG
		not   []string // text that must not
	}{
		{
			name:  "all",
			modes: []string{"watch", "poll", "burst"},
			want: []string{
				"detect: drift call to the hub classifying it",
				"repair: drift call to the object seen as desired again",
				// detect: nearest-rank p50 and p99 of the fixture's ten samples.
				"watch (driftwatch)   p50 137.5ms   p99 1.44s",
				"poll (resync every 10s)   p50 4.04s   p99 7.75s",
				"floor (raw watch)",
				"burst: 20 deletes at once on one cluster, repaired over time (20/20 repaired)",
				"burst (driftwatch, watch on)",
				"100ms", "1s",
			},
		},
		{
			name:  "watch only",
			modes: []string{"watch"},
			want:  []string{"watch (driftwatch)", "floor (raw watch)"},
			not:   []string{"poll (", "burst"},
		},
		{
			name:  "burst only",
			modes: []string{"burst"},
			want:  []string{"burst (driftwatch, watch on)", "objects repaired"},
			not:   []string{"watch (driftwatch)", "floor (raw watch)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "report.json"), filepath.Join(dir, "chart.svg")
			if err := os.WriteFile(in, keepRuns(t, tc.modes...), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := ConvertFile(in, out); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(svgTexts(t, data), "\n")
			for _, s := range tc.want {
				if !strings.Contains(all, s) {
					t.Errorf("the chart has no text %q; its texts:\n%s", s, all)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(all, s) {
					t.Errorf("the chart has text %q, want none", s)
				}
			}
		})
	}
}

func TestConvertFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"bad json", write("bad.json", `{"runs": [`), "not a bench report"},
		{"no samples", write("old.json", `{"mode": "all", "runs": [{"mode": "watch", "drifts": 3}]}`), "no run with latency samples"},
		{"scale run", write("scale.json", `{"mode": "scale", "scale": {"objects": 10}}`), "no run with latency samples"},
		{"missing", filepath.Join(dir, "missing.json"), "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out.svg")
			err := ConvertFile(tc.in, out)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.in) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q: want the file %s and %q", err, tc.in, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
	// An output file that cannot be created names the file.
	out := filepath.Join(dir, "no-such-dir", "chart.svg")
	if err := ConvertFile(fixture, out); err == nil || !strings.Contains(err.Error(), out) {
		t.Errorf("unwritable output: %v, want an error naming %s", err, out)
	}
}

func TestFmtMs(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		want string
	}{
		{1, "1ms"}, {2.5, "2.50ms"}, {10, "10ms"}, {137.49, "137.5ms"}, {1000, "1s"}, {1440, "1.44s"}, {10000, "10s"},
	} {
		if got := fmtMs(tc.ms); got != tc.want {
			t.Errorf("fmtMs(%g) = %q, want %q", tc.ms, got, tc.want)
		}
	}
}
