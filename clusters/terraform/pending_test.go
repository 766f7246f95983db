package terraform

import (
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
)

func change(addr string, reason tfjson.ActionReason, actions ...tfjson.Action) *tfjson.ResourceChange {
	return &tfjson.ResourceChange{Address: addr, Mode: tfjson.ManagedResourceMode, ActionReason: reason,
		Change: &tfjson.Change{Actions: actions}}
}

// withAfter sets a change's planned values and those known only at apply.
func withAfter(rc *tfjson.ResourceChange, after map[string]any, unknown map[string]any) *tfjson.ResourceChange {
	rc.Change.After, rc.Change.AfterUnknown = after, unknown
	return rc
}

func TestPendingOf(t *testing.T) {
	applied := map[string]any{"filename": "f", "content": "hello\n", "id": "abc"}
	drifted := func(actions ...tfjson.Action) *observed {
		return &observed{applied: applied, drift: &tfjson.Change{Actions: actions}}
	}
	obs := map[string]*observed{
		"local_file.c":            {applied: applied},
		`local_file.d["eu:west"]`: {applied: applied},
		"local_file.old":          {applied: applied},
		"module.m.local_file.x":   {applied: applied},
		"local_file.same":         {applied: applied},
		// Gone outside, planned again as applied: a repair, not pending.
		"local_file.gone": drifted(tfjson.ActionDelete),
		// Edited outside, planned back as applied: not pending either.
		"local_file.edited": drifted(tfjson.ActionUpdate),
		// Gone outside and its configuration changed too: pending.
		"local_file.both": drifted(tfjson.ActionDelete),
		// Gone outside and not planned again: it left the configuration.
		"local_file.removed": drifted(tfjson.ActionDelete),
		"local_file.forgot":  {applied: applied},
	}
	plan := &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{
		change("local_file.b", "", tfjson.ActionCreate),
		change("local_file.a", "", tfjson.ActionCreate),
		change("local_file.c", "", tfjson.ActionUpdate),
		change(`local_file.d["eu:west"]`, "", tfjson.ActionDelete, tfjson.ActionCreate),
		change("local_file.old", tfjson.ActionReasonDeleteBecauseNoResourceConfig, tfjson.ActionDelete),
		change("module.m.local_file.x", "", tfjson.ActionDelete),
		change("local_file.same", "", tfjson.ActionNoop),
		withAfter(change("local_file.gone", "", tfjson.ActionCreate),
			map[string]any{"filename": "f", "content": "hello\n", "id": nil}, map[string]any{"id": true}),
		withAfter(change("local_file.edited", "", tfjson.ActionUpdate),
			map[string]any{"filename": "f", "content": "hello\n", "id": "abc"}, nil),
		withAfter(change("local_file.both", "", tfjson.ActionCreate),
			map[string]any{"filename": "f", "content": "hello, world\n", "id": nil}, map[string]any{"id": true}),
		change("local_file.forgot", "", tfjson.ActionForget),
		change("other.skipped", "", tfjson.ActionCreate),
		{Address: "data.local_file.r", Mode: tfjson.DataResourceMode, Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionRead}}},
		nil,
	}}
	managed := func(addr string) bool { return addr != "other.skipped" }
	p := pendingOf(plan, managed, obs)
	want := `not applied: added in config local_file.a, local_file.b; changed in config local_file.both, local_file.c, local_file.d["eu:west"]; ` +
		`removed from config (never destroyed) local_file.forgot, local_file.old, local_file.removed and 1 more`
	if got := p.String(); got != want {
		t.Errorf("pending =\n  %s\nwant\n  %s", got, want)
	}
	for _, addr := range []string{"module.m.local_file.x", "local_file.removed"} {
		if p.removed[addr] != tfjson.ActionReasonDeleteBecauseNoResourceConfig {
			t.Errorf("%s: reason %q, want it counted as removed from the config", addr, p.removed[addr])
		}
	}
	if got := pendingOf(&tfjson.Plan{}, managed, nil).String(); got != "" {
		t.Errorf("nothing pending = %q, want empty", got)
	}
}

func TestRestores(t *testing.T) {
	applied := map[string]any{"content": "a", "id": "1", "mode": nil}
	for _, tc := range []struct {
		name           string
		after, unknown any
		want           bool
	}{
		{"same values", map[string]any{"content": "a", "id": "1", "mode": nil}, nil, true},
		{"id known at apply", map[string]any{"content": "a", "id": nil, "mode": nil}, map[string]any{"id": true}, true},
		{"content changed", map[string]any{"content": "b", "id": nil}, map[string]any{"id": true}, false},
		{"attribute set", map[string]any{"content": "a", "id": "1", "mode": "0644"}, nil, false},
		{"no planned values", nil, nil, false},
	} {
		c := &tfjson.Change{After: tc.after, AfterUnknown: tc.unknown}
		if got := restores(c, applied); got != tc.want {
			t.Errorf("%s: restores = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestListOf(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"a"}, "a"},
		{[]string{"a", "b", "c"}, "a, b, c"},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c and 2 more"},
	} {
		if got := listOf(tc.in); got != tc.want {
			t.Errorf("listOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
