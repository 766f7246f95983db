package terraform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/driftwatch/driftwatch/hub"
)

var _ hub.Backend = (*Workspace)(nil)

// ReadState returns what the last poll found of spec's resource; with
// fresh it polls first (several fresh reads share one poll). A resource
// the workspace no longer manages (gone from the state, or no longer a
// target) reads as not owned, so the loop releases it instead of deleting
// it.
func (w *Workspace) ReadState(ctx context.Context, spec hub.NodeSpec, fresh bool) (hub.State, error) {
	if fresh {
		if err := w.pollSince(ctx, time.Now()); err != nil {
			return hub.State{}, err
		}
	}
	w.mu.Lock()
	r := w.res[spec.Name]
	w.mu.Unlock()
	if r == nil {
		return hub.State{Fresh: fresh}, nil
	}
	return hub.State{
		Exists: r.exists, Fresh: fresh, Version: r.version, Owned: true,
		Live: &Live{Address: r.addr, Type: r.typ, Actual: r.actual},
	}, nil
}

// DetectDrift compares the resource's desired values (as last applied)
// with the refreshed ones: gone is missing, any differing attribute is
// modified, with each attribute's old and new value.
func (w *Workspace) DetectDrift(_ context.Context, spec hub.NodeSpec, st hub.State) (hub.Drift, error) {
	if !st.Exists {
		return hub.Drift{Class: hub.DriftMissing}, nil
	}
	live, _ := st.Live.(*Live)
	if live == nil {
		return hub.Drift{}, fmt.Errorf("terraform workspace %q: %s: no live values", w.opts.ID, spec.Name)
	}
	var desired map[string]any
	if len(spec.Body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(spec.Body))
		if err := dec.Decode(&desired); err != nil {
			return hub.Drift{}, fmt.Errorf("terraform workspace %q: %s: decode desired values: %w", w.opts.ID, spec.Name, err)
		}
	}
	fields := diffValues(desired, live.Actual)
	if len(fields) == 0 {
		return hub.Drift{Class: hub.DriftNone}, nil
	}
	return hub.Drift{Class: hub.DriftModified, Fields: fields}, nil
}

// Attribute returns nil: Terraform does not record who changed a resource
// outside it.
func (w *Workspace) Attribute(context.Context, hub.NodeSpec, hub.Drift) (*hub.Attribution, error) {
	return nil, nil
}

// Repair plans `plan -target=ADDRESS` into a file under the workspace's
// lock, refuses a plan that would destroy a resource (a resource removed
// from the configuration but still in the state: decommissioning is
// Terraform's own job), applies exactly that plan, then polls so the cache
// (and the version returned) shows the result.
func (w *Workspace) Repair(ctx context.Context, spec hub.NodeSpec, _ hub.State, _ hub.Drift) (hub.RepairResult, error) {
	w.op.Lock()
	defer w.op.Unlock()
	if err := w.setupLocked(ctx); err != nil {
		return hub.RepairResult{}, err
	}
	if w.tmp == "" {
		return hub.RepairResult{}, fmt.Errorf("terraform workspace %q: %s: not running", w.opts.ID, spec.Name)
	}
	planPath := filepath.Join(w.tmp, "repair.tfplan")
	var out bytes.Buffer
	if _, err := w.tf.PlanJSON(ctx, &out, w.planOptions(planPath, tfexec.Target(spec.Name))...); err != nil {
		return hub.RepairResult{}, w.repairFailed("plan -target="+spec.Name, err, &out)
	}
	plan, err := w.tf.ShowPlanFile(ctx, planPath)
	if err != nil {
		return hub.RepairResult{}, fmt.Errorf("terraform workspace %q: show plan -target=%s: %w", w.opts.ID, spec.Name, err)
	}
	for _, rc := range plan.ResourceChanges {
		if rc != nil && rc.Change != nil && rc.Change.Actions.Delete() {
			return hub.RepairResult{}, fmt.Errorf("terraform workspace %q: %s: %w: the plan would destroy %s",
				w.opts.ID, spec.Name, ErrRemovedFromConfig, rc.Address)
		}
	}
	out.Reset()
	if err := w.tf.ApplyJSON(ctx, &out, tfexec.DirOrPlan(planPath), tfexec.LockTimeout("0s")); err != nil {
		return hub.RepairResult{}, w.repairFailed("apply -target="+spec.Name, err, &out)
	}
	if err := w.pollLocked(ctx); err != nil {
		return hub.RepairResult{Action: "apply -target"}, fmt.Errorf("terraform workspace %q: after apply -target=%s: %w", w.opts.ID, spec.Name, err)
	}
	w.mu.Lock()
	r := w.res[spec.Name]
	w.mu.Unlock()
	rr := hub.RepairResult{Action: "apply -target"}
	if r != nil {
		rr.Version = r.version
	}
	return rr, nil
}

// repairFailed is the error of a failed run of a repair, with tofu's own
// diagnostics; a held state lock wraps errLocked.
func (w *Workspace) repairFailed(verb string, err error, out *bytes.Buffer) error {
	msg := diagnostics(out.Bytes())
	if msg == "" {
		msg = err.Error()
	}
	if isLockError(msg) {
		return fmt.Errorf("terraform workspace %q: %s: %w: %s", w.opts.ID, verb, errLocked, msg)
	}
	return fmt.Errorf("terraform workspace %q: %s: %s", w.opts.ID, verb, msg)
}

// ErrRemovedFromConfig is wrapped by Repair's error when the repair's plan
// would destroy a resource: it was removed from the configuration but is
// still in the state, and driftwatch never destroys (run apply yourself).
var ErrRemovedFromConfig = errors.New("removed from config: driftwatch never destroys it (run apply to decommission it)")

// ErrNoDelete is returned by Delete: decommissioning a resource is
// Terraform's own job (remove it from the configuration and apply).
var ErrNoDelete = errors.New("driftwatch never deletes Terraform resources: remove it from the configuration and run apply")

// Delete never deletes: the loop only asks for a resource it owns that
// left the desired state, and a workspace's resources leave it only when
// Terraform itself removed them (then they read as not owned).
func (w *Workspace) Delete(_ context.Context, spec hub.NodeSpec, _ hub.State) error {
	return fmt.Errorf("terraform workspace %q: %s: %w", w.opts.ID, spec.Name, ErrNoDelete)
}
