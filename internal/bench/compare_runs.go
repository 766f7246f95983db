package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/aclements/go-moremath/stats"
)

// compareAlpha is the significance level of the Mann-Whitney U test that
// compareRuns applies to each figure: a change is marked only when two
// sets of runs this different would come from one binary less than 5% of
// the time.
const compareAlpha = 0.05

// namedReport is a report read from a file (or "-", standard input).
type namedReport struct {
	name string
	rep  *benchReport
}

// CompareReportFiles is `driftwatch bench compare`: OLD NEW with one
// report a side (CompareFiles), or several a side (compareRuns). At most
// one path may be "-", read from stdin.
func CompareReportFiles(w io.Writer, stdin io.Reader, oldPaths, newPaths []string) error {
	if len(oldPaths) == 0 || len(newPaths) == 0 {
		return errors.New("bench compare: want at least one report on each side")
	}
	if len(oldPaths) == 1 && len(newPaths) == 1 {
		return CompareFiles(w, stdin, oldPaths[0], newPaths[0])
	}
	if countOf(oldPaths, "-")+countOf(newPaths, "-") > 1 {
		return errors.New("bench compare: only one report can come from standard input (-)")
	}
	read := func(paths []string) ([]namedReport, error) {
		out := make([]namedReport, 0, len(paths))
		for _, p := range paths {
			rep, err := readReport(p, stdin)
			if err != nil {
				return nil, err
			}
			out = append(out, namedReport{p, rep})
		}
		return out, nil
	}
	olds, err := read(oldPaths)
	if err != nil {
		return err
	}
	news, err := read(newPaths)
	if err != nil {
		return err
	}
	return compareRuns(w, olds, news)
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// minUTestP is the smallest p-value the two-sided Mann-Whitney U test can
// give for samples of n1 and n2 values (two fully separated samples).
func minUTestP(n1, n2 int) float64 {
	a, b := make([]float64, n1), make([]float64, n2)
	for i := range a {
		a[i] = float64(i)
	}
	for i := range b {
		b[i] = float64(n1 + i)
	}
	res, err := stats.MannWhitneyUTest(a, b, stats.LocationDiffers)
	if err != nil {
		return 1
	}
	return res.P
}

// runFigure is one figure over every report of a side: its values, one
// per report, sorted.
type runFigure struct {
	unit   unit
	values []float64
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// spread is the range of sorted values relative to their median.
func spread(sorted []float64) float64 {
	m := median(sorted)
	if m == 0 {
		return 0
	}
	return (sorted[len(sorted)-1] - sorted[0]) / math.Abs(m)
}

// sideFigures collects the figures present in every report of a side, in
// the order the first report shows them.
func sideFigures(side []namedReport) (order []string, figs map[string]*runFigure) {
	byReport := make([]map[string]float64, len(side))
	for i, r := range side {
		byReport[i] = map[string]float64{}
		for _, f := range figures(r.rep) {
			byReport[i][f.name] = f.value
		}
	}
	figs = map[string]*runFigure{}
	for _, f := range figures(side[0].rep) {
		rf := &runFigure{unit: f.unit}
		for _, m := range byReport {
			v, ok := m[f.name]
			if !ok {
				rf = nil
				break
			}
			rf.values = append(rf.values, v)
		}
		if rf != nil {
			slices.Sort(rf.values)
			order = append(order, f.name)
			figs[f.name] = rf
		}
	}
	return order, figs
}

// compareRuns compares several runs of each side (reports of
// `driftwatch bench -o json`, the same settings run again): each figure
// present in every report is shown with the median of each side, the
// change between the medians, the noise (the larger of the two sides'
// ranges, relative to its median: how much runs of one binary differ) and
// the p-value of a Mann-Whitney U test of the two sides' values. A figure
// is marked better or worse only when the medians differ by more than
// ±10% and p < 0.05: a change the runs' own spread does not explain. With
// too few runs for any p below 0.05 (fewer than 4 a side) nothing is
// marked, and the summary says so. It is a report, not a gate.
// Both sides must hold a report (CompareReportFiles checks).
func compareRuns(w io.Writer, olds, news []namedReport) error {
	header := func(side string, rs []namedReport) {
		names := make([]string, len(rs))
		loads := make([]float64, 0, len(rs))
		for i, r := range rs {
			names[i] = r.name
			if f := strings.Fields(r.rep.LoadBefore); len(f) > 0 {
				if v, err := strconv.ParseFloat(f[0], 64); err == nil {
					loads = append(loads, v)
				}
			}
		}
		first := *rs[0].rep
		first.LoadBefore = ""
		desc := describeReport(&first)
		if len(loads) > 0 {
			desc += fmt.Sprintf(", load before %.2f-%.2f", slices.Min(loads), slices.Max(loads))
		}
		fmt.Fprintf(w, "%s: %d report(s): %s: %s\n", side, len(rs), strings.Join(names, ", "), desc)
	}
	header("old", olds)
	header("new", news)
	var diffs []string
	for _, r := range slices.Concat(olds[1:], news) {
		for _, d := range setupDiffs(olds[0].rep, r.rep) {
			if !slices.Contains(diffs, d) {
				diffs = append(diffs, d)
			}
		}
	}
	if len(diffs) > 0 {
		fmt.Fprintf(w, "note: the runs differ in %s: figures may not be comparable\n", strings.Join(diffs, ", "))
	}
	fmt.Fprintln(w)

	_, oldFigs := sideFigures(olds)
	order, newFigs := sideFigures(news)
	minP := minUTestP(len(olds), len(news))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\told median\tnew median\tchange\trelative\tnoise\tp")
	shown, better, worse := 0, 0, 0
	for _, name := range order {
		o, ok := oldFigs[name]
		if !ok {
			continue
		}
		n := newFigs[name]
		shown++
		om, nm := median(o.values), median(n.values)
		delta := nm - om
		rel := 0.0
		if om != 0 {
			rel = delta / om
		}
		noise := max(spread(o.values), spread(n.values))
		p := 1.0
		if res, err := stats.MannWhitneyUTest(o.values, n.values, stats.LocationDiffers); err == nil {
			p = res.P
		}
		mark := ""
		if p < compareAlpha && math.Abs(rel) > compareThreshold {
			if mark = verdict(n.unit, delta); mark == "better" {
				better++
			} else {
				worse++
			}
		}
		last := strings.TrimRight(fmt.Sprintf("%-5.3f  %s", p, mark), " ")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.1f%%\t%.0f%%\t%s\n", name, formatFigure(n.unit, om), formatFigure(n.unit, nm), formatChange(n.unit, delta), 100*rel, 100*noise, last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d figures in every report: %d better, %d worse (medians apart by more than ±%.0f%% and p < %.2f, Mann-Whitney U test of %d and %d runs), %d unchanged beyond the noise\n",
		shown, better, worse, 100*compareThreshold, compareAlpha, len(olds), len(news), shown-better-worse)
	if minP >= compareAlpha {
		fmt.Fprintf(w, "note: with %d and %d runs no change can reach p < %.2f (the smallest p is %.3f): run each side at least 4 times, 5 or more to see smaller changes\n", len(olds), len(news), compareAlpha, minP)
	}
	for _, side := range []struct {
		name string
		rs   []namedReport
	}{{"old", olds}, {"new", news}} {
		for _, r := range side.rs {
			for _, g := range r.rep.Targets {
				if !g.Met {
					fmt.Fprintf(w, "%s %s: target MISSED: %s (%s)\n", side.name, r.name, g.Goal, g.Actual)
				}
			}
		}
	}
	return nil
}
