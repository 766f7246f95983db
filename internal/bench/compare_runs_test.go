package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// runsOf returns n copies of testdata/compare-old.json, each with the
// watch detect p99 and the watch peak RSS set by set(i, run).
func runsOf(t *testing.T, prefix string, n int, set func(i int, r *runReport)) []namedReport {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "compare-old.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]namedReport, n)
	for i := range n {
		var rep benchReport
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		rep.Targets = nil
		set(i, &rep.Runs[0])
		out[i] = namedReport{name: prefix + "-" + string(rune('1'+i)) + ".json", rep: &rep}
	}
	return out
}

// lineOf returns the table line of a figure.
func lineOf(t *testing.T, out, figure string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(figure) + `  .*$`).FindString(out)
	if m == "" {
		t.Fatalf("no line for %q in:\n%s", figure, out)
	}
	return m
}

// TestCompareRuns: with five runs a side, a figure is marked only when the
// medians are more than 10% apart and the U test says the runs' spread
// does not explain it.
func TestCompareRuns(t *testing.T) {
	ms := func(v float64) msDuration { return msDuration(time.Duration(v * float64(time.Millisecond))) }
	olds := runsOf(t, "old", 5, func(i int, r *runReport) {
		r.Detect.P99 = ms([]float64{6.0, 6.1, 5.9, 6.2, 6.05}[i])      // worse: 8 ms in every new run
		r.Repair.P99 = ms([]float64{20, 30, 25, 22, 28}[i])            // +12% median, overlapping: noise
		r.Observed.P99 = ms([]float64{6.0, 6.01, 6.02, 6.03, 6.04}[i]) // separated, but only +2%
		r.PeakRSS = []uint64{100, 102, 98, 101, 99}[i] << 20           // better: 80 MiB
	})
	news := runsOf(t, "new", 5, func(i int, r *runReport) {
		r.Detect.P99 = ms([]float64{8.0, 8.2, 7.9, 8.1, 8.05}[i])
		r.Repair.P99 = ms([]float64{31, 21, 28, 26, 33}[i])
		r.Observed.P99 = ms([]float64{6.1, 6.11, 6.12, 6.13, 6.14}[i])
		r.PeakRSS = []uint64{80, 81, 79, 82, 80}[i] << 20
	})
	var buf bytes.Buffer
	if err := compareRuns(&buf, olds, news); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, c := range []struct{ figure, want string }{
		{"watch detect p99", "worse"},
		{"watch peak rss", "better"},
		{"watch repair p99", ""},
		{"watch hub-event p99", ""},
		{"watch floor p99", ""},
	} {
		line := lineOf(t, out, c.figure)
		got := ""
		if strings.HasSuffix(line, "worse") {
			got = "worse"
		} else if strings.HasSuffix(line, "better") {
			got = "better"
		}
		if got != c.want {
			t.Errorf("%s: marked %q, want %q:\n%s", c.figure, got, c.want, line)
		}
	}
	if line := lineOf(t, out, "watch detect p99"); !strings.Contains(line, "6.05ms") || !strings.Contains(line, "8.05ms") || !strings.Contains(line, "0.008") {
		t.Errorf("detect p99: want the medians 6.05ms and 8.05ms and p 0.008:\n%s", line)
	}
	if line := lineOf(t, out, "watch repair p99"); !strings.Contains(line, "+12.0%") || !strings.Contains(line, "43%") {
		t.Errorf("repair p99: want +12.0%% and the noise 43%% (new: 21-33 ms over 28):\n%s", line)
	}
	for _, s := range []string{"old: 5 report(s): old-1.json, old-2.json", ", load before 0.52-0.52\n", "1 better, 1 worse", "Mann-Whitney U test of 5 and 5 runs"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "no change can reach") {
		t.Errorf("five runs a side said to be too few:\n%s", out)
	}
}

// TestCompareMinorFaults: the page faults of a run's span are a figure of
// their own, a count, fewer being better.
func TestCompareMinorFaults(t *testing.T) {
	olds := runsOf(t, "old", 5, func(i int, r *runReport) { r.MinorFaults = []int64{90, 110, 100, 95, 105}[i] })
	news := runsOf(t, "new", 5, func(i int, r *runReport) { r.MinorFaults = []int64{1300, 1250, 1400, 1350, 1290}[i] })
	var buf bytes.Buffer
	if err := compareRuns(&buf, olds, news); err != nil {
		t.Fatal(err)
	}
	line := lineOf(t, buf.String(), "watch minor page faults")
	for _, want := range []string{" 100 ", " 1300 ", "+1200 ", "worse"} {
		if !strings.Contains(line+" ", want) {
			t.Errorf("minor page faults: want %q in:\n%s", want, line)
		}
	}
}

// TestCompareRunsTooFew: with two runs a side nothing can be significant,
// so nothing is marked and the summary says how many runs it takes.
func TestCompareRunsTooFew(t *testing.T) {
	olds := runsOf(t, "old", 2, func(i int, r *runReport) { r.PeakRSS = 100 << 20 })
	news := runsOf(t, "new", 2, func(i int, r *runReport) { r.PeakRSS = 200 << 20 })
	var buf bytes.Buffer
	if err := compareRuns(&buf, olds, news); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "worse") && !strings.Contains(out, "0 worse") {
		t.Errorf("a change marked with two runs a side:\n%s", out)
	}
	if !strings.Contains(out, "no change can reach p < 0.05 (the smallest p is 0.333): run each side at least 4 times") {
		t.Errorf("no note on too few runs:\n%s", out)
	}
	if got := minUTestP(4, 4); got >= compareAlpha {
		t.Errorf("four runs a side: smallest p %.3f, want below %.2f", got, compareAlpha)
	}
}

// TestCompareRunsCommonFigures: a figure missing from one report is left
// out; differing settings and each report's missed targets are named.
func TestCompareRunsCommonFigures(t *testing.T) {
	olds := runsOf(t, "old", 3, func(i int, r *runReport) { r.PeakRSS = 100 << 20 })
	news := runsOf(t, "new", 3, func(i int, r *runReport) {
		r.PeakRSS = 100 << 20
		if i == 1 {
			r.PeakRSS = 0 // not measured: no figure
		}
	})
	news[2].rep.Seed = 99
	news[2].rep.Clusters = 5
	news[0].rep.Targets = []benchGoal{{Goal: "a goal", Actual: "missed by a mile", Met: false}}
	var buf bytes.Buffer
	if err := compareRuns(&buf, olds, news); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "watch peak rss  ") {
		t.Errorf("a figure missing from one report shown:\n%s", out)
	}
	for _, s := range []string{"note: the runs differ in clusters", "new new-1.json: target MISSED: a goal (missed by a mile)", "watch detect p99"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

// TestCompareReportFiles: one report a side is the two-report table;
// several read every file; standard input once at most.
func TestCompareReportFiles(t *testing.T) {
	dir := t.TempDir()
	oldPath, newPath := filepath.Join("testdata", "compare-old.json"), filepath.Join("testdata", "compare-new.json")
	var one, two bytes.Buffer
	if err := CompareReportFiles(&one, nil, []string{oldPath}, []string{newPath}); err != nil {
		t.Fatal(err)
	}
	if err := CompareFiles(&two, nil, oldPath, newPath); err != nil {
		t.Fatal(err)
	}
	if one.String() != two.String() {
		t.Errorf("one report a side differs from CompareFiles:\n%s\nwant:\n%s", &one, &two)
	}
	data, err := os.ReadFile(newPath)
	if err != nil {
		t.Fatal(err)
	}
	var many bytes.Buffer
	if err := CompareReportFiles(&many, bytes.NewReader(data), []string{oldPath, oldPath}, []string{newPath, "-"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(many.String(), "new: 2 report(s): "+newPath+", -:") {
		t.Errorf("several reports a side:\n%s", &many)
	}
	if err := CompareReportFiles(&many, strings.NewReader("{}"), []string{"-", oldPath}, []string{"-"}); err == nil || !strings.Contains(err.Error(), "only one report") {
		t.Errorf("two reports from stdin: %v", err)
	}
	if err := CompareReportFiles(&many, nil, []string{oldPath, filepath.Join(dir, "nope.json")}, []string{newPath}); err == nil {
		t.Error("a missing report compared")
	}
	if err := CompareReportFiles(&many, nil, nil, []string{newPath}); err == nil {
		t.Error("no old report compared")
	}
}
