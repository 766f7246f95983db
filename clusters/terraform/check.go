package terraform

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/driftwatch/driftwatch/hub"
)

// Checked is one managed resource as Check found it.
type Checked struct {
	// ID is the resource's NodeID.
	ID hub.NodeID
	// Drift is its drift, classified as the hub does (DetectDrift).
	Drift hub.Drift
	// Desired are the values last applied; Actual the refreshed ones, nil
	// when the resource is gone. Sensitive values are redacted.
	Desired, Actual map[string]any
}

// Check plans a workspace once, for `driftwatch diff`: init (as the hub
// does; it prepares the folder's .terraform), then
// `plan -refresh-only -lock=false -out=FILE` into a private temporary
// folder and `show -json`. It writes nothing to the state and takes no
// state lock, so a running apply is never kept waiting. It returns every
// managed resource (opts.Targets), sorted by address; an error says why the
// workspace could not be planned (the binary missing, tofu's diagnostics).
// opts.OnSpecs is not needed.
func Check(ctx context.Context, opts Options) ([]Checked, error) {
	if opts.OnSpecs == nil {
		opts.OnSpecs = func(string, []hub.NodeSpec) {}
	}
	w, err := New(opts, discard{})
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "driftwatch-tf-"+w.opts.ID+"-")
	if err != nil {
		return nil, fmt.Errorf("terraform workspace %q: %w", w.opts.ID, err)
	}
	defer os.RemoveAll(tmp)
	w.op.Lock()
	defer w.op.Unlock()
	w.tmp = tmp
	if err := w.setupLocked(ctx); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	plan, err := w.planLocked(ctx, &out, "plan -refresh-only", filepath.Join(tmp, "check.tfplan"),
		tfexec.RefreshOnly(true), tfexec.Lock(false))
	if err != nil {
		return nil, err
	}
	res := observe(plan, w.managed, w.opts.Dir, w.key, true).res
	checked := make([]Checked, 0, len(res))
	for _, addr := range slices.Sorted(maps.Keys(res)) {
		r := res[addr]
		c := Checked{ID: w.nodeID(r), Desired: r.desired, Drift: hub.Drift{Class: hub.DriftMissing}}
		if r.exists {
			c.Actual = r.actual
			c.Drift = driftOf(r.desired, r.actual)
		}
		checked = append(checked, c)
	}
	return checked, nil
}

// discard is a hub.Sink that drops everything (Check reports nothing).
type discard struct{}

func (discard) Observe(hub.Event)                {}
func (discard) ClusterChanged(hub.ClusterHealth) {}
