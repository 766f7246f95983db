package terraform_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/clusters/terraform/tftest"
	"github.com/driftwatch/driftwatch/hub"
)

// TestWorkspacePollSurvivesPanic: a panic in a poll (here where the
// desired state is handed over) is recovered, logged with its stack and
// shown as the workspace's health; the next poll hands the desired state
// over again and the workspace is ready, every resource in sync; the
// workspace stops without a panic.
func TestWorkspacePollSurvivesPanic(t *testing.T) {
	bin, cli := tftest.Tools(t)
	dir := workspaceDir(t, bin, cli)
	var handed atomic.Int32
	r := start(t, dir, cli, hub.PolicyRepair, time.Hour, startOptions{beforeSpecs: func() {
		if handed.Add(1) == 1 {
			panic("compile the desired state: boom (test)")
		}
	}})
	r.waitFor(t, "the panic shown as the workspace's health", 60*time.Second, func(s *hub.Snapshot) bool {
		c, ok := s.Cluster("files")
		return ok && c.State == hub.ClusterUnreachable && strings.Contains(c.LastError, "panic in the terraform workspace's poll: compile the desired state")
	})
	if logs := r.logs.String(); !strings.Contains(logs, "panic recovered") || !strings.Contains(logs, "rescue_test.go") {
		t.Errorf("the panic is not logged with its stack:\n%s", logs)
	}
	r.ws.Trigger()
	r.waitFor(t, "the workspace ready after the panic, every resource in sync", 60*time.Second, ready)
	if n := handed.Load(); n != 2 {
		t.Errorf("the desired state was handed over %d times, want 2 (again after the panic)", n)
	}
}
