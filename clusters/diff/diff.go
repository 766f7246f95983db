// Package diff answers "is anything drifted right now?" in one pass, for
// scripts and CI jobs: for every desired object it GETs the live one on its
// cluster and classifies the difference exactly as the hub does (a
// clusters.Manager from clusters.Connect: ReadState, SchemaFor,
// DetectDriftWith and Attribute, so the same kind table, schemas, classes
// and field managers), then renders a unified diff of the fields
// driftwatch manages along the same schema. A custom resource is compared
// and rendered with the schema its cluster publishes, fetched once per
// cluster and kind. Nothing is written to any cluster, and no watch, hub
// or goroutine is left running when Run returns.
//
// The classification does not come from a server-side apply dry-run: the
// hub's compares what the hub compares, a dry-run apply would keep the
// entries someone else added inside what we own (it cannot show the
// "added" class), and it needs the patch verb where diff only needs get.
// Options.DryRun adds one, after the classification, for what only the
// apiserver can tell: whether it would accept the repair (admission
// webhooks and policies, validation, immutable fields).
package diff

import (
	"context"
	"errors"
	"fmt"
	"github.com/driftwatch/driftwatch/clusters/kubeobj"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/sourcegraph/conc/panics"
	"github.com/sourcegraph/conc/pool"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftwatch/driftwatch/clusters"
	"github.com/driftwatch/driftwatch/clusters/drift"
	"github.com/driftwatch/driftwatch/hub"
)

// Defaults of Options.
const (
	// DefaultTimeout is the default Options.Timeout.
	DefaultTimeout = 30 * time.Second
	// DefaultConcurrency is the default Options.Concurrency.
	DefaultConcurrency = 8
)

// Exit codes of a report (see Report.ExitCode), as kubectl diff and argocd
// app diff use them (0, 1, 2); 3 and 4 say why an answer is partial.
// ExitUsage is for the caller: a usage or config error.
const (
	ExitInSync      = 0
	ExitDrift       = 1
	ExitUsage       = 2
	ExitUnreachable = 3
	// ExitUnauthorized: a cluster refused the credentials (401: expired
	// or revoked, or 403 on /readyz: the whole API).
	ExitUnauthorized = 4
	// ExitWouldFail: with Options.DryRun, an apiserver would refuse the
	// repair of a drifted object.
	ExitWouldFail = 5
)

// Options tune Run. Zero values take the documented defaults.
type Options struct {
	// Clusters and Applications keep only the objects on these clusters
	// and of these applications; nil keeps every one. A name that matches
	// no cluster or application is an error.
	Clusters, Applications []string
	// Logger receives progress at debug level. Default: discard.
	Logger *slog.Logger
	// Timeout bounds the pass over one cluster (connecting, reading every
	// object, attribution); a cluster that does not finish in time is
	// reported unreachable. Default DefaultTimeout.
	Timeout time.Duration
	// Concurrency is how many clusters are diffed at once. Default
	// DefaultConcurrency.
	Concurrency int
	// Now returns the time the report is taken at. Default time.Now.
	Now func() time.Time
	// DryRun asks each apiserver to validate the repair of every drifted
	// object without persisting it (Manager.DryRunRepair: server-side
	// apply with dryRun=All, as kubectl diff --server-side does): a
	// repair an admission webhook or policy, validation or an immutable
	// field would refuse is reported (Object.WouldFail). It needs the
	// patch verb where a diff needs only get.
	DryRun bool
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Report is the result of one pass.
type Report struct {
	// At is when the pass started; WriteText says "2m ago" relative to it.
	At time.Time
	// Objects are the objects checked, in sync ones included, sorted by
	// NodeID. Objects of unreachable clusters are not listed.
	Objects []Object
	// Unreachable are the clusters that could not be diffed, sorted by id,
	// but those in Unauthorized.
	Unreachable []ClusterError
	// Workspaces are the ids, among the objects' clusters and Unreachable,
	// that are Terraform workspaces: the summary counts them apart, and
	// an unreachable one has no count of unchecked objects.
	Workspaces []string
	// Unauthorized are the clusters that refused the credentials (their
	// errors match hub.ErrUnauthorized), sorted by id.
	Unauthorized []ClusterError
	// NotChecked are the sources in scope that the pass does not diff at
	// all (the caller adds them: a Cluster API source, whose clusters are
	// discovered at runtime): a report with one is never "in sync".
	NotChecked []NotChecked
}

// NotChecked is a source a pass left out, and why.
type NotChecked struct {
	// Source names it, e.g. "clusterAPI source mgmt".
	Source string
	// Reason says why it was not checked and how to leave it out.
	Reason string
}

// Object is the outcome for one desired object.
type Object struct {
	// ID is the object's NodeID.
	ID hub.NodeID
	// Application is the id of the application the object belongs to.
	Application string
	// Class is the drift class, as the hub classifies it; "" when Err is
	// set.
	Class hub.DriftClass
	// Fields are the differing fields (none when in sync, missing or
	// deleting).
	Fields []hub.FieldDiff
	// Ignored are the differences ignore rules cover: not drift, and left
	// out of Diff.
	Ignored []hub.IgnoredField
	// Attribution says which field manager changed Fields last, and when;
	// nil when unknown, and for missing and deleting objects.
	Attribution *hub.Attribution
	// Diff holds the hunks ("@@ ... @@" and the lines after) of a unified
	// diff from the desired to the live object, over the YAML of only the
	// fields driftwatch manages, along the schema of its kind (see
	// UnifiedWith); "" when they match.
	Diff string
	// Err is set when the object could not be checked although its
	// cluster answered (e.g. RBAC forbids reading it).
	Err error
	// WouldFail, with Options.DryRun, is why the apiserver would refuse
	// the drifted object's repair; nil when it would accept it, or was
	// not asked.
	WouldFail error
	// DryRunNote, with Options.DryRun, says what the repair would do
	// first for the apiserver to accept it (create the namespace, delete
	// and recreate the object, wait for a deletion in progress).
	DryRunNote string
}

// Drifted reports whether the object was checked and differs.
func (o Object) Drifted() bool { return o.Err == nil && o.Class != hub.DriftNone }

// ClusterError is a cluster that could not be diffed: unreachable, too
// slow, its kubeconfig unusable, or its credentials refused.
type ClusterError struct {
	// Cluster is the cluster id.
	Cluster string
	// Err says why; its text names the cluster.
	Err error
	// Objects is the number of desired objects left unchecked.
	Objects int
}

// Error returns the reason.
func (e ClusterError) Error() string { return e.Err.Error() }

// Unwrap returns the reason.
func (e ClusterError) Unwrap() error { return e.Err }

// ExitCode returns 0 when every object is in sync, 1 when drift was found,
// 3 when a cluster was unreachable, an object could not be checked or a
// source was not checked (NotChecked), 4 when a cluster refused the
// credentials, and 5 when, with Options.DryRun, the apiserver would refuse
// a repair (WouldFail). 4 wins over 3 (retrying will not help: someone
// must renew the credentials), 3 over 5 (a partial answer), 5 over 1.
func (r *Report) ExitCode() int {
	code := ExitInSync
	if len(r.Unauthorized) > 0 {
		return ExitUnauthorized
	}
	if len(r.Unreachable) > 0 || len(r.NotChecked) > 0 {
		return ExitUnreachable
	}
	for _, o := range r.Objects {
		switch {
		case o.Err != nil:
			return ExitUnreachable
		case o.Drifted() && o.WouldFail != nil:
			code = ExitWouldFail
		case o.Drifted() && code == ExitInSync:
			code = ExitDrift
		}
	}
	return code
}

// Run diffs every desired object of specs on its cluster (cls), keeping
// those opts filters, and returns the report. Clusters are diffed in
// parallel (opts.Concurrency at once), each within opts.Timeout; one that
// cannot be reached, is too slow or panics is listed in
// Report.Unreachable (Report.Unauthorized when it refused the credentials)
// and never stops the others. Run returns an error only
// for bad input (a filter that matches nothing, a spec whose cluster is
// not in cls) or when ctx ends; it has stopped every goroutine it started
// and closed every connection when it returns.
func Run(ctx context.Context, specs []hub.NodeSpec, cls []clusters.ClusterConfig, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	byID := make(map[string]clusters.ClusterConfig, len(cls))
	for _, c := range cls {
		byID[c.ID] = c
	}
	if err := checkFilters(specs, byID, opts); err != nil {
		return nil, err
	}
	grouped := make(map[string][]hub.NodeSpec)
	for _, s := range specs {
		if len(opts.Clusters) > 0 && !slices.Contains(opts.Clusters, s.ID.Cluster) {
			continue
		}
		if len(opts.Applications) > 0 && !slices.Contains(opts.Applications, s.Application) {
			continue
		}
		if _, ok := byID[s.ID.Cluster]; !ok {
			return nil, fmt.Errorf("object %s: cluster %q is not configured", s.ID, s.ID.Cluster)
		}
		grouped[s.ID.Cluster] = append(grouped[s.ID.Cluster], s)
	}
	ids := make([]string, 0, len(grouped))
	for id := range grouped {
		ids = append(ids, id)
	}
	sort.Strings(ids)

	rep := &Report{At: opts.Now(), Objects: []Object{}, Unreachable: []ClusterError{}, Unauthorized: []ClusterError{}}
	type result struct {
		objects []Object
		err     *ClusterError
	}
	results := make([]result, len(ids))
	p := pool.New().WithMaxGoroutines(opts.Concurrency)
	for i, id := range ids {
		p.Go(func() {
			var c panics.Catcher
			c.Try(func() {
				results[i].objects, results[i].err = diffCluster(ctx, byID[id], grouped[id], opts)
			})
			if r := c.Recovered(); r != nil {
				results[i] = result{err: &ClusterError{Cluster: id, Objects: len(grouped[id]),
					Err: fmt.Errorf("cluster %q: panic: %v", id, r.Value)}}
				opts.Logger.Error("diff panicked", "cluster", id, "err", r.Value, "stack", string(r.Stack))
			}
		})
	}
	p.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	for _, r := range results {
		switch {
		case r.err != nil && errors.Is(r.err.Err, hub.ErrUnauthorized):
			rep.Unauthorized = append(rep.Unauthorized, *r.err)
			continue
		case r.err != nil:
			rep.Unreachable = append(rep.Unreachable, *r.err)
			continue
		}
		rep.Objects = append(rep.Objects, r.objects...)
	}
	sort.Slice(rep.Objects, func(i, j int) bool { return rep.Objects[i].ID.String() < rep.Objects[j].ID.String() })
	return rep, nil
}

// checkFilters reports filter names that match no cluster or application.
func checkFilters(specs []hub.NodeSpec, byID map[string]clusters.ClusterConfig, opts Options) error {
	var problems []string
	if len(opts.Clusters) > 0 {
		known := make([]string, 0, len(byID))
		for id := range byID {
			known = append(known, id)
		}
		sort.Strings(known)
		for _, c := range opts.Clusters {
			if _, ok := byID[c]; !ok {
				problems = append(problems, fmt.Sprintf("unknown cluster %q (clusters: %s)", c, list(known)))
			}
		}
	}
	if len(opts.Applications) > 0 {
		var known []string
		for _, s := range specs {
			known = append(known, s.Application)
		}
		sort.Strings(known)
		known = slices.Compact(known)
		for _, a := range opts.Applications {
			if _, ok := slices.BinarySearch(known, a); !ok {
				problems = append(problems, fmt.Sprintf("unknown application %q (applications: %s)", a, list(known)))
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// diffCluster diffs the objects of one cluster. A cluster error means none
// of its objects may be reported: a partial pass is never shown.
func diffCluster(ctx context.Context, cfg clusters.ClusterConfig, specs []hub.NodeSpec, opts Options) ([]Object, *ClusterError) {
	log := opts.Logger.With("cluster", cfg.ID)
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	fail := func(err error) ([]Object, *ClusterError) {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("cluster %q: no answer within %s: %w", cfg.ID, opts.Timeout, err)
		}
		log.Debug("cluster not diffed", "err", err)
		return nil, &ClusterError{Cluster: cfg.ID, Err: err, Objects: len(specs)}
	}
	m, release, err := clusters.Connect(ctx, cfg, log)
	if err != nil {
		return fail(err)
	}
	defer release()
	objects := make([]Object, 0, len(specs))
	schemas := kindSchemas{m: m, byKind: make(map[schema.GroupVersionKind]drift.Schema)}
	for _, spec := range specs {
		o, err := diffObject(ctx, m, &schemas, spec, opts.DryRun, log)
		if err != nil {
			if errors.Is(err, hub.ErrUnreachable) || ctx.Err() != nil {
				return fail(err)
			}
			o = Object{ID: spec.ID, Application: spec.Application, Err: err}
		}
		objects = append(objects, o)
	}
	log.Debug("cluster diffed", "objects", len(objects), "took", time.Since(begin))
	return objects, nil
}

// kindSchemas resolves the schema of each kind once per pass over a
// cluster (Manager.SchemaFor), so that every object of a kind is
// classified and rendered along the same one. It is used by one goroutine.
type kindSchemas struct {
	m      *clusters.Manager
	byKind map[schema.GroupVersionKind]drift.Schema
}

// of returns the schema of gvk's objects.
func (k *kindSchemas) of(ctx context.Context, gvk schema.GroupVersionKind) (drift.Schema, error) {
	if s, ok := k.byKind[gvk]; ok {
		return s, nil
	}
	s, err := k.m.SchemaFor(ctx, gvk)
	if err != nil {
		return drift.Schema{}, err
	}
	k.byKind[gvk] = s
	return s, nil
}

// diffObject reads, classifies, attributes and renders one object, as the
// hub's reconcile does before it decides to repair, along the schema of
// its kind.
func diffObject(ctx context.Context, m *clusters.Manager, schemas *kindSchemas, spec hub.NodeSpec, dryRun bool, log *slog.Logger) (Object, error) {
	o := Object{ID: spec.ID, Application: spec.Application}
	st, err := m.ReadState(ctx, spec, true)
	if err != nil {
		return o, err
	}
	desired, err := kubeobj.Object(spec) // its error names the object
	if err != nil {
		return o, err
	}
	var sch drift.Schema
	if desired != nil {
		// Without a body DetectDriftWith says so.
		if sch, err = schemas.of(ctx, desired.GroupVersionKind()); err != nil {
			return o, fmt.Errorf("object %s: schema: %w", spec.ID, err)
		}
	}
	d, err := m.DetectDriftWith(ctx, spec, st, sch)
	if err != nil {
		return o, err
	}
	o.Class, o.Fields, o.Ignored = d.Class, d.Fields, d.Ignored
	if d.InSync() {
		return o, nil
	}
	if d.Class != hub.DriftMissing && d.Class != hub.DriftDeleting {
		att, err := m.Attribute(ctx, spec, st, d)
		switch {
		case errors.Is(err, hub.ErrUnreachable):
			return o, err
		case err != nil:
			// As the hub: a drift without attribution is still drift.
			log.Debug("attribution unavailable", "node", spec.ID.String(), "err", err)
		}
		o.Attribution = att
	}
	var live *unstructured.Unstructured
	if st.Exists {
		live = clusters.LiveObject(st)
	}
	if live != nil && len(d.Ignored) > 0 {
		// Ignored fields show their live value on both sides.
		fields := make([][]string, 0, len(d.Ignored))
		for _, f := range d.Ignored {
			fields = append(fields, f.Segments)
		}
		drift.PinWith(desired.Object, live.Object, fields, sch)
	}
	if o.Diff, err = UnifiedWith(desired, live, sch); err != nil {
		return o, fmt.Errorf("object %s: render diff: %w", spec.ID, err)
	}
	if dryRun && d.Class != hub.DriftDeleting {
		// A deleting object is recreated once gone: nothing to ask yet.
		note, err := m.DryRunRepair(ctx, spec)
		if errors.Is(err, hub.ErrUnreachable) {
			return o, err
		}
		o.DryRunNote, o.WouldFail = note, err
	}
	return o, nil
}

// Unified returns the hunks of a unified diff (3 lines of context) from the
// managed fields of desired to the same fields of live (nil: the object is
// missing), each side as YAML with sorted keys; "" when they match. The
// fields are found along the built-in schema of desired's kind
// (drift.Project): UnifiedWith takes the schema.
func Unified(desired, live *unstructured.Unstructured) (string, error) {
	return unified(drift.Project(desired, desired), drift.Project(desired, live))
}

// UnifiedWith is Unified along s, the schema of the objects' kind (as
// clusters.Manager.SchemaFor resolves it): a custom resource's keyed list
// is matched by key, as the hub classifies it, so the diff shows the
// entries someone added without the others' order or server defaults.
func UnifiedWith(desired, live *unstructured.Unstructured, s drift.Schema) (string, error) {
	return unified(drift.ProjectWith(desired, desired, s), drift.ProjectWith(desired, live, s))
}

// unified renders the unified diff of two projections.
func unified(desired, live map[string]any) (string, error) {
	a, err := managedYAML(desired)
	if err != nil {
		return "", err
	}
	b, err := managedYAML(live)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(a), B: lines(b), Context: 3})
}

// managedYAML renders a projection as kubectl lays objects out: apiVersion,
// kind and metadata first, then the other fields by name, each with sorted
// keys; nil renders as nothing.
func managedYAML(obj map[string]any) (string, error) {
	if obj == nil {
		return "", nil
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		if i := slices.Index([]string{"apiVersion", "kind", "metadata"}, k); i >= 0 {
			return i
		}
		return 3
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	var out strings.Builder
	for _, k := range keys {
		b, err := kubeobj.MarshalYAML(map[string]any{k: obj[k]})
		if err != nil {
			return "", err
		}
		out.Write(b)
	}
	return out.String(), nil
}

// lines splits text into lines that keep their newline.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
