package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// compareThreshold is the relative change beyond which compare marks a
// figure better or worse.
const compareThreshold = 0.10

// unit says how a figure is formatted and which way is better.
type unit int

const (
	unitDuration unit = iota // lower is better
	unitBytes                // lower is better
	unitRate                 // per second, higher is better
	unitRatio                // a figure over its floor, lower is better
	unitCount                // a number of events, lower is better
)

// figure is one comparable number of a report.
type figure struct {
	name  string
	unit  unit
	value float64
}

// figures flattens a report into its comparable figures, in the order the
// text output shows them. A latency summary without samples and a figure
// that was not measured (zero) are left out.
func figures(rep *benchReport) []figure {
	var out []figure
	dur := func(name string, d msDuration) {
		if d > 0 {
			out = append(out, figure{name, unitDuration, float64(d)})
		}
	}
	bytes := func(name string, n float64) {
		if n > 0 {
			out = append(out, figure{name, unitBytes, n})
		}
	}
	lat := func(prefix string, l latencyReport) {
		if l.N == 0 {
			return
		}
		dur(prefix+" p50", l.P50)
		dur(prefix+" p95", l.P95)
		dur(prefix+" p99", l.P99)
		dur(prefix+" max", l.Max)
	}
	for _, r := range rep.Runs {
		for _, l := range r.named() {
			lat(r.Mode+" "+l.name, l.p)
		}
		for _, a := range reportedActions() {
			if l, ok := r.ByAction[string(a)]; ok {
				lat(fmt.Sprintf("%s %s floor", r.Mode, a), l.Floor)
				lat(fmt.Sprintf("%s %s detect", r.Mode, a), l.Detect)
				lat(fmt.Sprintf("%s %s repair", r.Mode, a), l.Repair)
			}
		}
		for _, k := range sortedKeys(r.ByKind) {
			l := r.ByKind[k]
			lat(fmt.Sprintf("%s %s floor", r.Mode, k), l.Floor)
			lat(fmt.Sprintf("%s %s detect", r.Mode, k), l.Detect)
			lat(fmt.Sprintf("%s %s repair", r.Mode, k), l.Repair)
		}
		if o := r.Others; o != nil {
			for _, l := range o.named() {
				lat(r.Mode+" other clusters' "+l.name, l.p)
			}
			if o.Floor.P99 > 0 && o.Repair.P99 > 0 {
				out = append(out, figure{r.Mode + " other clusters' repair p99 / floor p99", unitRatio, float64(o.Repair.P99) / float64(o.Floor.P99)})
			}
		}
		dur(r.Mode+" hub sync", r.Sync)
		dur(r.Mode+" all repaired in", r.Elapsed)
		dur(r.Mode+" raw repair floor", r.RepairFloor)
		dur(r.Mode+" raw repair floor before the hub", r.RepairFloorBefore)
		if l := r.RepairFloorLatency; l != nil {
			lat(r.Mode+" raw repair floor repair", *l)
			if r.Repair.P99 > 0 && l.P99 > 0 {
				out = append(out, figure{r.Mode + " repair p99 / raw repair floor p99", unitRatio, float64(r.Repair.P99) / float64(l.P99)})
			}
		}
		if r.Cost != nil {
			dur(r.Mode+" process gc cpu", r.Cost.ProcessGC)
		}
		if r.RepairFloorCost != nil {
			dur(r.Mode+" raw repair floor process gc cpu", r.RepairFloorCost.ProcessGC)
			hub, floor := r.Cost.per(r.Drifts), r.RepairFloorCost.per(r.Drifts)
			dur(r.Mode+" cpu per drift", hub)
			dur(r.Mode+" raw repair floor cpu per drift", floor)
			if hub > 0 && floor > 0 {
				out = append(out, figure{r.Mode + " cpu per drift / raw repair floor's", unitRatio, float64(hub) / float64(floor)})
			}
		}
		if floor := r.repairFloor(); r.Elapsed > 0 && floor > 0 {
			out = append(out, figure{r.Mode + " all repaired / raw repair floor", unitRatio, float64(r.Elapsed) / float64(floor)})
		}
		if r.RepairsPerSecond > 0 {
			out = append(out, figure{r.Mode + " repairs/s", unitRate, r.RepairsPerSecond})
		}
		dur(r.Mode+" cpu", r.CPU)
		if r.MinorFaults > 0 {
			out = append(out, figure{r.Mode + " minor page faults", unitCount, float64(r.MinorFaults)})
		}
		bytes(r.Mode+" peak rss", float64(r.PeakRSS))
		bytes(r.Mode+" peak rss anonymous", float64(r.PeakAnonRSS))
		bytes(r.Mode+" peak rss file-backed", float64(r.PeakFileRSS))
		for _, l := range r.APIServer {
			if l.N == 0 {
				continue
			}
			dur(fmt.Sprintf("%s apiserver %s %s p50", r.Mode, l.Cluster, l.Verbs), l.P50)
			dur(fmt.Sprintf("%s apiserver %s %s p99", r.Mode, l.Cluster, l.Verbs), l.P99)
		}
	}
	if s := rep.Scale; s != nil {
		dur("scale initial sync", s.InitialSync)
		bytes("scale peak rss", float64(s.PeakRSS))
		bytes("scale steady rss", float64(s.RSS))
		bytes("scale heap in use", float64(s.HeapInUse))
		bytes("scale hub heap per object", s.BytesPerObject)
		dur("scale idle cpu", s.IdleCPU)
	}
	if m := rep.Mixed; m != nil {
		dur("mixed initial sync", m.InitialSync)
		bytes("mixed peak rss", float64(m.PeakRSS))
		bytes("mixed steady rss", float64(m.RSS))
		bytes("mixed heap in use", float64(m.HeapInUse))
		bytes("mixed hub heap per object", m.BytesPerObject)
		dur("mixed idle cpu", m.IdleCPU)
		for _, c := range m.Renders {
			dur("render "+c.Source+" p50", c.P50)
			bytes("render "+c.Source+" bytes allocated", float64(c.Bytes))
		}
	}
	gitFigures(rep.Git, dur, bytes, func(name string, v float64) {
		if v > 0 {
			out = append(out, figure{name, unitRatio, v})
		}
	})
	if f := rep.Fleet; f != nil {
		dur("fleet every entry synced", f.ClustersSynced)
		dur("fleet cold sync", f.ColdSync)
		dur("fleet raw create floor", f.CreateFloor)
		dur("fleet raw create floor after the hub", f.CreateFloorAfter)
		dur("fleet raw create floor with watches", f.CreateWatchFloor)
		if floor := f.floor(); f.ColdSync > 0 && floor > 0 {
			out = append(out, figure{"fleet cold sync / raw create floor", unitRatio, float64(f.ColdSync) / float64(floor)})
		}
		if r := f.overWatchFloor(); r > 0 {
			out = append(out, figure{"fleet cold sync / raw create floor with watches", unitRatio, r})
		}
		if f.ColdSyncCost != nil {
			dur("fleet cold sync process gc cpu", f.ColdSyncCost.ProcessGC)
			if f.Objects > 0 {
				bytes("fleet cold sync allocated per object", float64(f.ColdSyncCost.ProcessAlloc)/float64(f.Objects))
			}
		}
		hub, floor := f.coldCPU()
		dur("fleet cold sync cpu per object", hub)
		dur("fleet raw create floor cpu per object", floor)
		if hub > 0 && floor > 0 {
			out = append(out, figure{"fleet cold sync cpu per object / raw create floor's", unitRatio, float64(hub) / float64(floor)})
		}
		bytes("fleet peak rss", float64(f.PeakRSS))
		bytes("fleet steady rss", float64(f.RSS))
		bytes("fleet heap in use", float64(f.HeapInUse))
		bytes("fleet hub heap per object", f.BytesPerObject)
		dur("fleet idle cpu", f.IdleCPU)
		if f.IdleCost.controlPlanePercent() >= 0 {
			dur("fleet control planes' idle cpu", f.IdleCost.ControlPlaneCPU)
		}
		if f.IdleFloorCost.controlPlanePercent() >= 0 {
			dur("fleet control planes' idle cpu without the hub", f.IdleFloorCost.ControlPlaneCPU)
		}
	}
	return out
}

// CompareFiles is `driftwatch bench compare OLD NEW`: it reads two
// reports written by `driftwatch bench -o json` (one of them may be "-",
// read from stdin) and writes Compare's table to w.
func CompareFiles(w io.Writer, stdin io.Reader, oldPath, newPath string) error {
	if oldPath == "-" && newPath == "-" {
		return errors.New("bench compare: only one report can come from standard input (-)")
	}
	old, err := readReport(oldPath, stdin)
	if err != nil {
		return err
	}
	cur, err := readReport(newPath, stdin)
	if err != nil {
		return err
	}
	return Compare(w, oldPath, old, newPath, cur)
}

// readReport reads a report from path, or from stdin when path is "-".
func readReport(path string, stdin io.Reader) (*benchReport, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("bench compare: %w", err)
	}
	var rep benchReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("bench compare: %s: not a bench report (-o json): %w", path, err)
	}
	if rep.Mode == "" {
		return nil, fmt.Errorf("bench compare: %s: not a bench report (-o json): no mode", path)
	}
	return &rep, nil
}

// Compare writes every figure present in both reports side by side with
// its absolute and relative change, marking changes beyond ±10% better or
// worse (lower latency, memory, CPU and ratios to a floor are better; more
// repairs per second are better). It is a report, not a gate: it never fails on a change.
func Compare(w io.Writer, oldName string, old *benchReport, newName string, cur *benchReport) error {
	fmt.Fprintf(w, "old: %s: %s\n", oldName, describeReport(old))
	fmt.Fprintf(w, "new: %s: %s\n", newName, describeReport(cur))
	if diffs := setupDiffs(old, cur); len(diffs) > 0 {
		fmt.Fprintf(w, "note: the runs differ in %s: figures may not be comparable\n", strings.Join(diffs, ", "))
	}
	fmt.Fprintln(w)
	olds := map[string]figure{}
	for _, f := range figures(old) {
		olds[f.name] = f
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\told\tnew\tchange\trelative")
	shown, better, worse := 0, 0, 0
	for _, n := range figures(cur) {
		o, ok := olds[n.name]
		if !ok {
			continue
		}
		shown++
		delta := n.value - o.value
		rel := delta / o.value
		mark := ""
		if math.Abs(rel) > compareThreshold {
			if mark = verdict(n.unit, delta); mark == "better" {
				better++
			} else {
				worse++
			}
		}
		// The last column is padded by hand: tabwriter pads only cells
		// that end in a tab, and a trailing tab would pad every line.
		relative := strings.TrimRight(fmt.Sprintf("%-8s  %s", fmt.Sprintf("%+.1f%%", 100*rel), mark), " ")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.name, formatFigure(n.unit, o.value), formatFigure(n.unit, n.value), formatChange(n.unit, delta), relative)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d figures in both reports: %d better, %d worse, %d within ±%.0f%%\n", shown, better, worse, shown-better-worse, 100*compareThreshold)
	for _, r := range []struct {
		name string
		rep  *benchReport
	}{{"old", old}, {"new", cur}} {
		for _, g := range r.rep.Targets {
			if !g.Met {
				fmt.Fprintf(w, "%s: target MISSED: %s (%s)\n", r.name, g.Goal, g.Actual)
			}
		}
	}
	return nil
}

// describeReport is one line saying what a report measured.
func describeReport(rep *benchReport) string {
	clusters := fmt.Sprintf("%d cluster(s)", rep.Clusters)
	if rep.APIServers > 0 {
		clusters = fmt.Sprintf("%d cluster entries on %d apiserver(s)", rep.Clusters, rep.APIServers)
	}
	s := fmt.Sprintf("--mode %s, %s x %d objects, seed %d", rep.Mode, clusters, rep.ObjectsPerCluster, rep.Seed)
	if rep.Drifts > 0 {
		s += fmt.Sprintf(", %d drifts at %g/s per cluster", rep.Drifts, rep.Rate)
	}
	if rep.Burst > 0 {
		s += fmt.Sprintf(", burst %d", rep.Burst)
	}
	s += fmt.Sprintf(", %d CPUs", rep.CPUs)
	if rep.LoadBefore != "" {
		s += ", load before " + rep.LoadBefore
	}
	if rep.Pinned != "" {
		s += ", " + rep.Pinned
	}
	return s
}

// setupDiffs names the settings in which two reports differ.
func setupDiffs(a, b *benchReport) []string {
	var d []string
	add := func(name string, differ bool) {
		if differ {
			d = append(d, name)
		}
	}
	add("mode", a.Mode != b.Mode)
	add("clusters", a.Clusters != b.Clusters)
	add("apiservers", a.APIServers != b.APIServers)
	add("objects", a.ObjectsPerCluster != b.ObjectsPerCluster)
	add("drift schedule", a.Schedule != b.Schedule)
	add("rate", a.Rate != b.Rate)
	add("burst", a.Burst != b.Burst)
	add("poll interval", a.PollInterval != b.PollInterval)
	add("hub qps", a.QPS != b.QPS)
	add("hub workers", a.Workers != b.Workers)
	add("cpus", a.CPUs != b.CPUs)
	add("pinning", a.Pinned != b.Pinned)
	return d
}

// verdict says whether a change of delta in a figure of unit u is
// "better" or "worse": lower latency, memory, cpu and ratios are better,
// more repairs per second are better.
func verdict(u unit, delta float64) string {
	if (u == unitRate) == (delta > 0) {
		return "better"
	}
	return "worse"
}

func formatFigure(u unit, v float64) string {
	switch u {
	case unitDuration:
		return fmtDur(time.Duration(v))
	case unitBytes:
		return fmtBytes(uint64(math.Round(v)))
	case unitRatio:
		return fmt.Sprintf("%.2fx", v)
	case unitCount:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f/s", v)
	}
}

// formatChange formats a signed difference in the figure's unit.
func formatChange(u unit, d float64) string {
	if d == 0 {
		return "0"
	}
	sign := "+"
	if d < 0 {
		sign = "-"
	}
	return sign + formatFigure(u, math.Abs(d))
}
