package bench

import (
	"encoding/json"
	"fmt"

	"github.com/driftwatch/driftwatch/internal/bench/chart"
)

// writeChart draws rep (as its JSON reads) to the SVG file path
// (--chart).
func writeChart(path string, rep *benchReport) error {
	data, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("bench: --chart %s: %w", path, err)
	}
	r, err := chart.Parse(data)
	if err != nil {
		return fmt.Errorf("bench: --chart %s: %w", path, err)
	}
	if err := chart.WriteFile(path, r); err != nil {
		return fmt.Errorf("bench: --chart: %w", err)
	}
	return nil
}

// ChartFile is `driftwatch bench chart REPORT.json -o FILE.svg`: it draws
// a saved report (-o json) as an SVG chart.
func ChartFile(report, svg string) error {
	if err := chart.ConvertFile(report, svg); err != nil {
		return fmt.Errorf("bench chart: %w", err)
	}
	return nil
}
