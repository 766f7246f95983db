// Package deploy holds driftwatch's Kubernetes manifests (a kustomize base
// in deploy/base) and the tests that check them: built with kustomize,
// applied with server-side dry-run to a real control plane, their RBAC
// checked for least privilege, their Pods against the restricted Pod
// Security Standard, and the config they carry parsed. The tests also check
// that the Dockerfile's build command makes a static binary.
package deploy
