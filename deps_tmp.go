package main

// Temporary: keeps required modules in go.mod until real code imports them.
import (
	_ "charm.land/bubbles/v2/table"
	_ "charm.land/bubbletea/v2"
	_ "charm.land/lipgloss/v2"
	_ "github.com/goccy/go-yaml"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/sourcegraph/conc/pool"
	_ "k8s.io/client-go/informers"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/client-go/dynamic"
	_ "k8s.io/client-go/tools/leaderelection"
	_ "sigs.k8s.io/cluster-api/api/core/v1beta2"
	_ "sigs.k8s.io/cluster-api/util/secret"
	_ "sigs.k8s.io/yaml"
)
