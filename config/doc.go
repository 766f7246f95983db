// Package config loads and validates driftwatch's YAML configuration (the hub
// settings, the clusters, the Cluster API sources that discover more
// clusters at runtime, the applications and the manifest sources),
// reporting every problem at once with its file, line and column, and
// compiles it into the desired state: one hub.NodeSpec per Deployment,
// Service and ConfigMap of each application, and one per object that a
// manifest source renders (package config/manifest), per target cluster.
package config
