package hub

import "testing"

// TestChoose: the reconciler's decision over (drift, first apply, the
// gate's plan, fighting), in the order the rules apply.
func TestChoose(t *testing.T) {
	allow, refuse := verdict{allow: true}, verdict{action: "paused"}
	drifted, missing := Drift{Class: DriftModified}, Drift{Class: DriftMissing}
	for _, tc := range []struct {
		name     string
		d        Drift
		first    bool
		plan     verdict
		fighting bool
		want     action
	}{
		{"first apply wins over a refusal", missing, true, refuse, false, actCreate},
		{"in sync", Drift{Class: DriftNone}, false, refuse, true, actInSync},
		{"being deleted waits", Drift{Class: DriftDeleting}, false, allow, false, actWait},
		{"refused by the intent", drifted, false, refuse, true, actRefused},
		{"fighting backs off", drifted, false, allow, true, actBackoff},
		{"repair", drifted, false, allow, false, actRepair},
		{"missing is repaired", missing, false, allow, false, actRepair},
	} {
		if got := choose(tc.d, tc.first, tc.plan, tc.fighting); got != tc.want {
			t.Errorf("%s: choose = %d, want %d", tc.name, got, tc.want)
		}
	}
}
