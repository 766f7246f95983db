package app

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/driftwatch/driftwatch/hub"
)

// TestPrintSpecsAlignsAsTabwriter checks the plan's object lines against
// what text/tabwriter writes for the same cells, which is what the plan
// wrote before printSpecs: names of several widths (non-ASCII too), and
// ignore notes in runs of one and of several lines, between lines without.
func TestPrintSpecsAlignsAsTabwriter(t *testing.T) {
	rules := &hub.IgnoreSet{Rules: []hub.IgnoreRule{{Name: "autoscaler"}, {Name: "sidecar"}}}
	policies := []hub.Policy{hub.PolicyRepair, hub.PolicyWarn, hub.Policy("manual"), hub.PolicyRepair}
	var specs []hub.NodeSpec
	for i := range 12 {
		s := hub.NodeSpec{
			ID:          hub.NewNodeID("prod", fmt.Sprintf("ns-%d", i%3), strings.Repeat("n", 1+i*7%11), hub.KindDeployment),
			Kind:        hub.KindDeployment,
			Application: strings.Repeat("ä", 1+i*5%7),
			Policy:      policies[i%len(policies)],
		}
		if i == 2 || i >= 5 && i <= 8 || i == 11 {
			s.Ignore = rules
		}
		specs = append(specs, s)
	}
	var got strings.Builder
	b := bufio.NewWriter(&got)
	printSpecs(b, specs)
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
	for _, s := range specs {
		note := ignoreNote(s)
		if note != "" {
			note = "\t" + note
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s%s\n", s.ID, s.Application, s.Policy, note)
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("printSpecs wrote\n%s\ntabwriter writes\n%s", got.String(), want.String())
	}
	if !strings.Contains(got.String(), "ignoring: autoscaler; sidecar") {
		t.Errorf("no ignore note:\n%s", got.String())
	}
}
