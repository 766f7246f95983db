package main

// Config writers and snapshot predicates shared by this package's tests
// (package app's tests have their own: test helpers do not cross packages).

import (
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/e2etest"
	"github.com/driftwatch/driftwatch/internal/localcluster"
)

// e2eConfig writes a config for the local clusters (see e2etest.Config).
func e2eConfig(t *testing.T, set *localcluster.Set, ns string, extra string, skip ...string) string {
	t.Helper()
	return e2etest.Config(t, set, ns, extra, skip...)
}

// allInSync holds when n NodeIDs are in sync or repaired.
func allInSync(n int) func(*hub.Snapshot) bool { return e2etest.AllInSync(n) }

// safetyConfig writes a config with a state file (see e2etest.SafetyConfig).
func safetyConfig(t *testing.T, path, hubID, state string, pruneOrphans bool, set *localcluster.Set, ns string, apps ...string) string {
	t.Helper()
	return e2etest.SafetyConfig(t, path, hubID, state, pruneOrphans, set, ns, apps...)
}

// appIDs are the NodeIDs of a safetyApp on a cluster.
func appIDs(cluster, ns, app string) []hub.NodeID { return e2etest.AppIDs(cluster, ns, app) }

// exists reports whether the object of a NodeID exists on its cluster.
func exists(t *testing.T, c kubernetes.Interface, id hub.NodeID) bool {
	t.Helper()
	return e2etest.Exists(t, c, id)
}
