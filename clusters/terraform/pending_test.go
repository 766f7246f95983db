package terraform

import (
	"testing"

	tfjson "github.com/hashicorp/terraform-json"
)

func change(addr string, reason tfjson.ActionReason, actions ...tfjson.Action) *tfjson.ResourceChange {
	return &tfjson.ResourceChange{Address: addr, Mode: tfjson.ManagedResourceMode, ActionReason: reason,
		Change: &tfjson.Change{Actions: actions}}
}

func TestPendingOf(t *testing.T) {
	plan := &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{
		change("local_file.b", "", tfjson.ActionCreate),
		change("local_file.a", "", tfjson.ActionCreate),
		change("local_file.c", "", tfjson.ActionUpdate),
		change(`local_file.d["eu:west"]`, "", tfjson.ActionDelete, tfjson.ActionCreate),
		change("local_file.old", tfjson.ActionReasonDeleteBecauseNoResourceConfig, tfjson.ActionDelete),
		change("module.m.local_file.x", "", tfjson.ActionDelete),
		change("local_file.same", "", tfjson.ActionNoop),
		change("other.skipped", "", tfjson.ActionCreate),
		{Address: "data.local_file.r", Mode: tfjson.DataResourceMode, Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionRead}}},
		nil,
	}}
	managed := func(addr string) bool { return addr != "other.skipped" }
	p := pendingOf(plan, managed)
	want := `not applied: added in config local_file.a, local_file.b; changed in config local_file.c, local_file.d["eu:west"]; ` +
		`removed from config (never destroyed) local_file.old, module.m.local_file.x`
	if got := p.String(); got != want {
		t.Errorf("pending =\n  %s\nwant\n  %s", got, want)
	}
	if p.removed["module.m.local_file.x"] != tfjson.ActionReasonDeleteBecauseNoResourceConfig {
		t.Errorf("a delete without a reason = %q, want it counted as removed from the config", p.removed["module.m.local_file.x"])
	}
	if got := pendingOf(&tfjson.Plan{}, managed).String(); got != "" {
		t.Errorf("nothing pending = %q, want empty", got)
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
