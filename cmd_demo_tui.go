package main

import (
	"context"

	"github.com/driftwatch/driftwatch/clusters/driftgen"
	"github.com/driftwatch/driftwatch/hub"
)

// runDemoTUI runs the terminal UI for the demo until the user quits.
func runDemoTUI(ctx context.Context, h *hub.Hub, gen *driftgen.Generator, readOnly bool) error {
	_ = gen
	_ = readOnly
	<-ctx.Done()
	return ctx.Err()
}
