package localcluster

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Fake nodes created with Options.Full.
const (
	// nodeLabelKey=nodeLabelValue labels every fake node.
	nodeLabelKey   = "type"
	nodeLabelValue = "kwok"
	nodeNamePrefix = "kwok-node-"
)

// fakeNode returns the Node object kwok turns into a Ready node.
func fakeNode(name string) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				nodeLabelKey:             nodeLabelValue,
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
			Annotations: map[string]string{
				"kwok.x-k8s.io/node":           "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res.DeepCopy(),
		},
	}
}

// createNodes creates the fake nodes and waits until kwok reports them Ready
// and the node lifecycle controller has removed the not-ready taint, so pods
// can be scheduled on them. procs are watched for an early exit.
func (c *Cluster) createNodes(ctx context.Context, procs []*process) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	for i := range c.opts.Nodes {
		name := nodeNamePrefix + strconv.Itoa(i)
		if _, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(name), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", name, err)
		}
	}
	var state string // last observation, for the error message
	err = poll(ctx, procs, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodeLabelKey + "=" + nodeLabelValue})
		if err != nil {
			state = "list nodes: " + err.Error()
			return false, nil // the apiserver may be briefly busy; keep trying
		}
		ready := 0
		for i := range nodes.Items {
			if nodeSchedulable(&nodes.Items[i]) {
				ready++
			}
		}
		state = fmt.Sprintf("%d of %d nodes Ready and untainted", ready, len(nodes.Items))
		return ready >= c.opts.Nodes, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %d fake nodes to be Ready (%s): %w", c.opts.Nodes, state, err)
	}
	return nil
}

// nodeSchedulable reports whether n is Ready and carries no taint that keeps
// pods off it.
func nodeSchedulable(n *corev1.Node) bool {
	ready := false
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready || n.Spec.Unschedulable {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	return true
}

// waitControllerManager waits until the controller manager has created the
// default ServiceAccount of namespace default: its controllers are running.
func (c *Cluster) waitControllerManager(ctx context.Context, procs []*process) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	var state string
	err = poll(ctx, procs, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			state = err.Error()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("wait for kube-controller-manager to create ServiceAccount default/default (%s): %w", state, err)
	}
	return nil
}
