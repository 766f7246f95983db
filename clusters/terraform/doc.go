// Package terraform is the Terraform/OpenTofu backend of the hub: one
// Workspace per working directory implements hub.Backend for the managed
// resources of that directory's state.
//
// Terraform has no watch, so a Workspace polls: one `plan -json` with
// refresh (through terraform-exec, read back with terraform-json from the
// saved plan) at its interval, at once when a file in its folder changes
// (fsnotify), and whenever the loop asks for a fresh read. Each poll turns
// the refreshed state into per-resource observations: a changed one is a
// hub.Event on the Sink, the workspace's health a hub.ClusterHealth. A
// repair is `apply -target=ADDRESS`. Resources are never deleted:
// decommissioning is Terraform's own job.
//
// NodeIDs are <workspace>:<resource address>:<resource type>, for example
// files:module.db["eu:west"].local_file.conf:local_file; the address may
// hold colons and is parsed from both ends (hub.ParseNodeID).
package terraform
