// Package chart draws a driftwatch bench report (the JSON of
// `driftwatch bench -o json`) as an SVG image with gonum.org/v1/plot: the
// detect and repair latency distributions of the watch and poll runs beside
// the raw-watch floor, on a log scale, and the burst's repaired-over-time
// curve.
//
// It reads the report's JSON rather than the bench's types, so that a saved
// report can be drawn again (driftwatch bench chart) and the bench itself
// only marshals what it prints.
package chart

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Report is the part of a bench report the chart reads.
type Report struct {
	Mode              string  `json:"mode"`
	Clusters          int     `json:"clusters"`
	ObjectsPerCluster int     `json:"objectsPerCluster"`
	Drifts            int     `json:"drifts"`
	Rate              float64 `json:"driftsPerSecondPerCluster"`
	// PollInterval is the poll run's resync period in milliseconds.
	PollInterval float64 `json:"pollIntervalMs"`
	CPUs         int     `json:"cpus"`
	LoadBefore   string  `json:"loadBefore"`
	Runs         []Run   `json:"runs"`
}

// Run is one watch, poll or burst run of a report.
type Run struct {
	Mode     string   `json:"mode"`
	Drifts   int      `json:"drifts"`
	Repaired int      `json:"repaired"`
	Samples  *Samples `json:"samples"`
}

// Samples are a run's per-drift figures, in milliseconds.
type Samples struct {
	// Floor, Detect and Repair are latencies from each drift call's start.
	Floor  []float64 `json:"floorMs"`
	Detect []float64 `json:"detectMs"`
	Repair []float64 `json:"repairMs"`
	// RepairedAt is each repair's time after the run's first drift call.
	RepairedAt []float64 `json:"repairedAtMs"`
}

// Parse decodes a bench report. It fails when the report has no run with
// samples to draw (a scale run, or a report from a driftwatch that did not
// keep them).
func Parse(data []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("not a bench report (driftwatch bench -o json): %w", err)
	}
	found := false
	for _, run := range r.Runs {
		if s := run.Samples; s != nil {
			found = true
			for _, l := range [][]float64{s.Floor, s.Detect, s.Repair, s.RepairedAt} {
				slices.Sort(l)
			}
		}
	}
	if found {
		return &r, nil
	}
	return nil, errors.New("no run with latency samples: want a watch, poll, burst or all run of driftwatch bench -o json (a scale run, or a report from an older driftwatch, has none)")
}

// ConvertFile reads the bench report in, draws it and writes the SVG to
// out. Errors name the file they are about.
func ConvertFile(in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	r, err := Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return WriteFile(out, r)
}

// WriteFile draws r and writes the SVG to path.
func WriteFile(path string, r *Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(f, r); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Chart size: two latency panels side by side over the burst's curve.
const (
	width       = 11 * vg.Inch
	panelHeight = 4 * vg.Inch
)

// Series colours and the floor's dashes.
var (
	colorWatch = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorPoll  = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colorFloor = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	colorBurst = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// Write draws r as SVG to w: a row with the detect and repair latency
// distributions when the report has a watch or poll run, and a row with
// the burst's repaired-over-time curve when it has a burst run.
func Write(w io.Writer, r *Report) error {
	rows, err := panels(r)
	if err != nil {
		return err
	}
	c := vgsvg.New(width, panelHeight*vg.Length(len(rows)))
	drawRows(draw.New(c), rows)
	_, err = c.WriteTo(w)
	return err
}

// panels returns the chart's rows of plots.
func panels(r *Report) ([][]*plot.Plot, error) {
	var rows [][]*plot.Plot
	latency, err := latencyPlots(r)
	if err != nil {
		return nil, err
	}
	if latency != nil {
		rows = append(rows, latency)
	}
	if burst := find(r.Runs, "burst"); burst != nil && burst.Samples != nil {
		p, err := burstPlot(r, burst)
		if err != nil {
			return nil, err
		}
		rows = append(rows, []*plot.Plot{p})
	}
	if len(rows) == 0 {
		return nil, errors.New("nothing to draw: no watch, poll or burst run with samples")
	}
	return rows, nil
}

// drawRows draws rows of plots on dc, each row in a band of equal height.
func drawRows(dc draw.Canvas, rows [][]*plot.Plot) {
	band := (dc.Max.Y - dc.Min.Y) / vg.Length(len(rows))
	for i, row := range rows {
		// Row i from the top: crop the canvas to its band.
		c := draw.Crop(dc, 0, 0, band*vg.Length(len(rows)-1-i), -band*vg.Length(i))
		tiles := draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Points(24), PadTop: vg.Points(8), PadBottom: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(16)}
		for j, tc := range plot.Align([][]*plot.Plot{row}, tiles, c)[0] {
			row[j].Draw(tc)
		}
	}
}

// latencyPlots returns the detect and repair distributions (nil when the
// report has neither a watch nor a poll run with samples).
func latencyPlots(r *Report) ([]*plot.Plot, error) {
	watch, poll := find(r.Runs, "watch"), find(r.Runs, "poll")
	if watch != nil && watch.Samples == nil {
		watch = nil
	}
	if poll != nil && poll.Samples == nil {
		poll = nil
	}
	if watch == nil && poll == nil {
		return nil, nil
	}
	// The floor is the raw watch of the watch run (else the poll run's):
	// the same kind of drift seen without any hub.
	floorRun := watch
	if floorRun == nil {
		floorRun = poll
	}
	settings := fmt.Sprintf("%d drifts at %g/s per cluster, %d cluster(s) x %d objects", r.Drifts, r.Rate, r.Clusters, r.ObjectsPerCluster)
	var plots []*plot.Plot
	for _, panel := range []struct {
		title string
		pick  func(*Samples) []float64
	}{
		{"detect: drift call to the hub classifying it", func(s *Samples) []float64 { return s.Detect }},
		{"repair: drift call to the object seen as desired again", func(s *Samples) []float64 { return s.Repair }},
	} {
		p := newPlot(panel.title + "\n" + settings + machine(r))
		p.X.Label.Text = "latency from the drift call (log scale)"
		p.Y.Label.Text = "drifts at or below (%)"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = durationTicks{}
		// Headroom above 100% keeps the legend off the curves.
		p.Y.Min, p.Y.Max = 0, 100+legendHeadroom
		p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}}
		if err := addECDF(p, "floor (raw watch)", floorRun.Samples.Floor, colorFloor, true); err != nil {
			return nil, err
		}
		if watch != nil {
			if err := addECDF(p, "watch (driftwatch)", panel.pick(watch.Samples), colorWatch, false); err != nil {
				return nil, err
			}
		}
		if poll != nil {
			name := "poll (resync only)"
			if r.PollInterval > 0 {
				name = fmt.Sprintf("poll (resync every %s)", fmtMs(r.PollInterval))
			}
			if err := addECDF(p, name, panel.pick(poll.Samples), colorPoll, false); err != nil {
				return nil, err
			}
		}
		plots = append(plots, p)
	}
	return plots, nil
}

// legendHeadroom is the room above 100% on the latency panels, in percent.
const legendHeadroom = 40

// newPlot returns a plot with a title, a grid, the legend at the top left
// and every text in a sans-serif face.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	for _, st := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		st.Font.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(6)
	p.Legend.YOffs = -vg.Points(4)
	return p
}

// machine is the title line saying where the figures come from.
func machine(r *Report) string {
	if r.CPUs == 0 {
		return ""
	}
	s := fmt.Sprintf("\n%d CPUs", r.CPUs)
	if r.LoadBefore != "" {
		s += ", load average before the bench " + r.LoadBefore
	}
	return s
}

// durationTicks are log-scale ticks labelled as durations (1ms, 10ms,
// 100ms, 1s, 10s).
type durationTicks struct{}

// Ticks returns plot.LogTicks' ticks with duration labels.
func (durationTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = fmtMs(t.Value)
		}
	}
	return ticks
}

// minLatency keeps a log axis defined for a latency of zero.
const minLatency = 0.001

// addECDF adds the empirical distribution of the sorted latencies ms as a
// step line: at each latency, the share of drifts at or below it.
func addECDF(p *plot.Plot, name string, ms []float64, c color.Color, dashed bool) error {
	if len(ms) == 0 {
		return nil
	}
	pts := make(plotter.XYs, len(ms))
	for i, v := range ms {
		pts[i] = plotter.XY{X: math.Max(v, minLatency), Y: 100 * float64(i+1) / float64(len(ms))}
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return fmt.Errorf("series %q: %w", name, err)
	}
	l.StepStyle = plotter.PostStep
	l.Color = c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	p.Legend.Add(fmt.Sprintf("%s   p50 %s   p99 %s", name, fmtMs(rank(ms, 50)), fmtMs(rank(ms, 99))), l)
	return nil
}

// burstPlot draws how many of the burst's deletes were repaired over time.
func burstPlot(r *Report, burst *Run) (*plot.Plot, error) {
	at := burst.Samples.RepairedAt
	p := newPlot(fmt.Sprintf("burst: %d deletes at once on one cluster, repaired over time (%d/%d repaired)", burst.Drifts, burst.Repaired, burst.Drifts) + machine(r))
	p.X.Label.Text = "time since the first delete (s)"
	p.Y.Label.Text = "objects repaired"
	p.Y.Min, p.Y.Max = 0, float64(max(burst.Drifts, len(at)))
	p.X.Min = 0
	pts := make(plotter.XYs, 0, len(at)+1)
	pts = append(pts, plotter.XY{X: 0, Y: 0})
	for i, v := range at {
		pts = append(pts, plotter.XY{X: v / 1000, Y: float64(i + 1)})
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, fmt.Errorf("series burst: %w", err)
	}
	l.StepStyle = plotter.PostStep
	l.Color = colorBurst
	l.Width = vg.Points(1.5)
	p.Add(l)
	name := "burst (driftwatch, watch on)"
	if len(at) > 0 {
		last := at[len(at)-1]
		name = fmt.Sprintf("%s  all %d repaired in %s (%.0f repairs/s)", name, len(at), fmtMs(last), float64(len(at))/(last/1000))
	}
	p.Legend.Add(name, l)
	return p, nil
}

// find returns the run of a mode (nil when absent).
func find(runs []Run, mode string) *Run {
	for i := range runs {
		if runs[i].Mode == mode {
			return &runs[i]
		}
	}
	return nil
}

// rank returns the nearest-rank percentile of the sorted ms (as the bench's
// tables compute it).
func rank(ms []float64, percent int) float64 {
	i := (len(ms)*percent+99)/100 - 1
	return ms[min(max(i, 0), len(ms)-1)]
}

// fmtMs formats milliseconds as the bench's tables do.
func fmtMs(ms float64) string {
	switch {
	case ms < 10:
		return strings.TrimSuffix(fmt.Sprintf("%.2f", ms), ".00") + "ms"
	case ms < 1000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", ms), ".0") + "ms"
	default:
		return strings.TrimSuffix(fmt.Sprintf("%.2f", ms/1000), ".00") + "s"
	}
}
