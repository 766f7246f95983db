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
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/driftwatch/driftwatch/hub"
)

var _ hub.Backend = (*Workspace)(nil)

// ReadState returns what the last poll found of spec's resource; with
// fresh it polls first (several fresh reads share one poll). A resource
// the workspace no longer manages (gone from the state, or no longer a
// target) reads as existing but not owned, whether or not it still exists
// outside Terraform: the loop releases it instead of deleting it.
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
		return hub.State{Exists: true, Fresh: fresh}, nil
	}
	return hub.State{
		Exists: r.exists, Fresh: fresh, Version: r.version, Owned: true,
		Live: &Live{Address: r.addr, Type: r.typ, Actual: r.actual},
	}, nil
}

// DetectDrift compares the resource's desired values (as last applied)
// with the refreshed ones: gone is missing, any differing attribute is
// modified, with each attribute's old and new value; a sensitive one shows
// as "(sensitive)" against "(sensitive value changed)". A resource no
// longer in the state is missing too (a repair refuses it).
func (w *Workspace) DetectDrift(_ context.Context, spec hub.NodeSpec, st hub.State) (hub.Drift, error) {
	if !st.Exists || !st.Owned {
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
	return driftOf(desired, live.Actual), nil
}

// driftOf classifies an existing resource: modified when an attribute
// differs, else in sync.
func driftOf(desired, actual map[string]any) hub.Drift {
	if fields := diffValues(desired, actual); len(fields) > 0 {
		return hub.Drift{Class: hub.DriftModified, Fields: fields}
	}
	return hub.Drift{Class: hub.DriftNone}
}

// Attribute returns nil: Terraform does not record who changed a resource
// outside it.
func (w *Workspace) Attribute(context.Context, hub.NodeSpec, hub.State, hub.Drift) (*hub.Attribution, error) {
	return nil, nil
}

// Repair plans `plan -target=ADDRESS` into a file under the workspace's
// lock and applies exactly that plan, then polls so the cache (and the
// version returned) shows the result. It refuses, with an error wrapping
// hub.ErrRefused, a resource it must leave to Terraform: one released
// (removed from the configuration, or no longer in the state: ErrReleased),
// and any plan that would destroy a resource (ErrRemovedFromConfig) or drop
// one from the state without creating it again (a refresh that found a
// resource of no configuration gone; applying would forget it silently).
func (w *Workspace) Repair(ctx context.Context, spec hub.NodeSpec, _ hub.State, _ hub.Drift) (hub.RepairResult, error) {
	w.op.Lock()
	defer w.op.Unlock()
	if err := w.setupLocked(ctx); err != nil {
		return hub.RepairResult{}, err
	}
	if w.tmp == "" {
		return hub.RepairResult{}, fmt.Errorf("terraform workspace %q: %s: not running", w.opts.ID, spec.Name)
	}
	if err := w.releasedLocked(spec.Name); err != nil {
		return hub.RepairResult{}, err
	}
	planPath := filepath.Join(w.tmp, "repair.tfplan")
	var out bytes.Buffer
	if _, err := w.tf.PlanJSON(ctx, &out, w.planOptions(planPath, tfexec.Target(spec.Name))...); err != nil {
		return hub.RepairResult{}, w.repairFailed("plan -target="+spec.Name, tfErr(err), &out)
	}
	plan, err := w.tf.ShowPlanFile(ctx, planPath)
	if err != nil {
		return hub.RepairResult{}, fmt.Errorf("terraform workspace %q: show plan -target=%s: %w", w.opts.ID, spec.Name, tfErr(err))
	}
	if err := w.checkRepairPlan(spec.Name, plan); err != nil {
		return hub.RepairResult{}, err
	}
	out.Reset()
	if err := w.tf.ApplyJSON(ctx, &out, tfexec.DirOrPlan(planPath), tfexec.LockTimeout("0s")); err != nil {
		return hub.RepairResult{}, w.repairFailed("apply -target="+spec.Name, tfErr(err), &out)
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

// tfErr returns err, except for terraform-exec's error of a command that
// ended with its context without failing itself: that error has no cause
// and its Error method panics, so the context's error stands for it.
func tfErr(err error) error {
	if err == nil || errors.Unwrap(err) != nil {
		return err
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return context.Canceled
	}
	return err
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

// releasedLocked refuses the repair of a resource the last poll found
// released: removed from the configuration, or not in the state at all.
func (w *Workspace) releasedLocked(addr string) error {
	w.mu.Lock()
	r := w.res[addr]
	w.mu.Unlock()
	switch {
	case r == nil:
		return fmt.Errorf("terraform workspace %q: %s: repair refused: %w", w.opts.ID, addr, errNotInState)
	case r.removed != "":
		return fmt.Errorf("terraform workspace %q: %s: repair refused: %w", w.opts.ID, addr, ErrReleased)
	}
	return nil
}

// checkRepairPlan refuses a repair's saved plan that would destroy a
// resource, or drop one from the state without creating it again.
func (w *Workspace) checkRepairPlan(addr string, plan *tfjson.Plan) error {
	created := map[string]bool{}
	for _, rc := range plan.ResourceChanges {
		if rc == nil || rc.Change == nil {
			continue
		}
		a := rc.Change.Actions
		if a.Delete() || a.Forget() {
			return fmt.Errorf("terraform workspace %q: %s: repair refused: %w: the plan would destroy %s",
				w.opts.ID, addr, ErrRemovedFromConfig, rc.Address)
		}
		if a.Create() || a.Replace() {
			created[rc.Address] = true
		}
	}
	for _, rc := range plan.ResourceDrift {
		if rc == nil || rc.Change == nil || rc.Mode != tfjson.ManagedResourceMode {
			continue
		}
		if rc.Change.Actions.Delete() && !created[rc.Address] {
			return fmt.Errorf("terraform workspace %q: %s: repair refused: %w (the plan would drop %s from the state)",
				w.opts.ID, addr, ErrReleased, rc.Address)
		}
	}
	return nil
}

// refusal is an error that reads as its text and matches hub.ErrRefused:
// the loop shows it as the reason of a warn-only drift and does not retry.
type refusal string

func (e refusal) Error() string { return string(e) }

// Is makes errors.Is(err, hub.ErrRefused) hold.
func (e refusal) Is(target error) bool { return target == hub.ErrRefused }

// ErrReleased is wrapped by Repair's error for a released resource:
// removed from the configuration but still in the state, watched with
// policy warn. A repair, even a manual one, could only drop it from the
// state or destroy it, and only Terraform itself decommissions. It matches
// hub.ErrRefused.
var ErrReleased error = refusal("released: removed from the configuration; driftwatch neither repairs nor destroys it, nor drops it from the state (tofu apply decommissions it)")

// errNotInState refuses the repair of a resource no longer in the state.
var errNotInState error = refusal("released: no longer in the state; driftwatch manages it no more")

// ErrRemovedFromConfig is wrapped by Repair's error when the repair's plan
// would destroy a resource: it was removed from the configuration but is
// still in the state, and driftwatch never destroys (run apply yourself).
// It matches hub.ErrRefused.
var ErrRemovedFromConfig error = refusal("removed from config: driftwatch never destroys it (run apply to decommission it)")

// ErrNoDelete is returned by Delete: decommissioning a resource is
// Terraform's own job (remove it from the configuration and apply).
var ErrNoDelete = errors.New("driftwatch never deletes Terraform resources: remove it from the configuration and run apply")

// Delete never deletes: the loop only asks for a resource it owns that
// left the desired state, and a workspace's resources leave it only when
// Terraform itself removed them (then they read as not owned).
func (w *Workspace) Delete(_ context.Context, spec hub.NodeSpec, _ hub.State) error {
	return fmt.Errorf("terraform workspace %q: %s: %w", w.opts.ID, spec.Name, ErrNoDelete)
}
