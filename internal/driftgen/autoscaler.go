package driftgen

import (
	"context"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/driftwatch/driftwatch/hub"
)

// AutoscalerManager is the field manager of the fake autoscaler.
const AutoscalerManager = "demo-autoscaler"

// Autoscaler is a fake HorizontalPodAutoscaler: it takes spec.replicas of
// Deployments by server-side apply (forced, field manager
// AutoscalerManager) and scales them back and forth between two counts.
// With an ignore rule for its manager the hub leaves it alone; without
// one the hub's repairs and the autoscaler fight and the Deployment shows
// as contested.
type Autoscaler struct {
	clients map[string]kubernetes.Interface
	targets []hub.NodeID
	low     int
	high    int
}

// NewAutoscaler returns an autoscaler of the Deployments targets (on the
// clusters clients has), alternating between low and high replicas.
func NewAutoscaler(clients map[string]kubernetes.Interface, targets []hub.NodeID, low, high int) *Autoscaler {
	return &Autoscaler{clients: clients, targets: targets, low: low, high: high}
}

// Scale applies replicas to every target that exists; errors name the
// target.
func (a *Autoscaler) Scale(ctx context.Context, replicas int) error {
	force := true
	for _, id := range a.targets {
		c, ok := a.clients[id.Cluster]
		if !ok {
			return fmt.Errorf("autoscaler: cluster %q: no client", id.Cluster)
		}
		if _, err := c.AppsV1().Deployments(id.Namespace()).Get(ctx, id.Name(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
			continue // not created yet, or deleted: an apply would try to create it
		}
		body := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":` + strconv.Quote(id.Name()) +
			`,"namespace":` + strconv.Quote(id.Namespace()) + `},"spec":{"replicas":` + strconv.Itoa(replicas) + `}}`)
		if _, err := c.AppsV1().Deployments(id.Namespace()).Patch(ctx, id.Name(), types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: AutoscalerManager, Force: &force}); err != nil {
			return fmt.Errorf("autoscaler: scale %s to %d: %w", id, replicas, err)
		}
	}
	return nil
}

// Run scales the targets every interval, alternating between low and high,
// until ctx ends. Errors (a target not created yet, a cluster down) go to
// report, which must not block for long.
func (a *Autoscaler) Run(ctx context.Context, interval time.Duration, report func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	n := a.low
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.Scale(ctx, n); err != nil && ctx.Err() == nil {
			report(err)
		}
		if n == a.low {
			n = a.high
		} else {
			n = a.low
		}
	}
}
