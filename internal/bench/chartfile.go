package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

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

// Chart is `driftwatch bench chart REPORT.json --output-file FILE.svg`:
// it draws a saved report (-o json) as an SVG chart. A report "-" is read
// from stdin, an svg "-" written to stdout.
func Chart(report, svg string, stdin io.Reader, stdout io.Writer) error {
	var data []byte
	var err error
	if report == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(report)
	}
	if err != nil {
		return fmt.Errorf("bench chart: %w", err)
	}
	r, err := chart.Parse(data)
	if err != nil {
		return fmt.Errorf("bench chart: %s: %w", report, err)
	}
	if svg == "-" {
		err = chart.Write(stdout, r)
	} else {
		err = chart.WriteFile(svg, r)
	}
	if err != nil {
		return fmt.Errorf("bench chart: %w", err)
	}
	return nil
}
