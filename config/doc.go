// Package config loads and validates driftwatch's YAML configuration (the hub
// settings, the clusters, the Cluster API sources that discover more
// clusters at runtime, and the applications), reporting every problem at
// once with its file, line and column, and compiles applications into the
// desired state: one hub.NodeSpec per Deployment, Service and ConfigMap per
// target cluster.
package config
