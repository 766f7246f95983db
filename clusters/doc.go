// Package clusters holds the eyes and hands of the hub: one watch manager per
// cluster kubeconfig (client-go informers per managed namespace and kind,
// filtered server-side by the managed-by label) that turns every add, update
// and delete into a hub.Event, reports the cluster's health, and serves as
// that cluster's hub.Backend (read state from the cache or the apiserver,
// classify drift, attribute it from managedFields, repair by guarded JSON
// patch and server-side apply, delete with preconditions). Everything
// kind-specific is one entry of the kind table (kinds.go).
// A registry adds and removes clusters at runtime and keeps one broken or
// slow cluster from affecting the others.
//
// Sub-package localcluster starts real local control planes (etcd and
// kube-apiserver, optionally the controller manager, scheduler and kwok) for
// the tests, the demo and the benchmark.
package clusters
