package notify

import (
	"context"
	"errors"
	"time"
)

// KubernetesEventsName names the Kubernetes events' sink in metrics, logs
// and the status bar, as a webhook's name does.
const KubernetesEventsName = "kubernetes-events"

// Defaults of the Kubernetes events' sink: a cluster's apiserver is asked
// less patiently than a webhook, and more often.
const (
	DefaultKubernetesEventsPerMinute = 120
	DefaultKubernetesEventsBurst     = 50
	kubernetesEventsTimeout          = 5 * time.Second
	kubernetesEventsAttempts         = 3
)

// KubernetesEvents writes the events about objects (drift repaired or left
// unrepaired, a failed repair, a fight, a stuck rollout) as Kubernetes
// Events on the objects themselves, in their clusters, so kubectl
// describe and the cluster's event exporters show what the hub did and
// why. Events about clusters and sources have no object and are not
// written. It has its filter, rate limit and queue as a webhook has.
type KubernetesEvents struct {
	// Filter selects the events written.
	Filter Filter
	// PerMinute and Burst are the rate limit (defaults
	// DefaultKubernetesEventsPerMinute, DefaultKubernetesEventsBurst).
	PerMinute float64
	Burst     int
	// QueueSize bounds the events waiting (default DefaultQueueSize).
	QueueSize int
	// Recorder writes them (required).
	Recorder ObjectRecorder
}

// ObjectRecorder writes an event about an object as a Kubernetes Event on
// that object, in its cluster.
type ObjectRecorder interface {
	// RecordEvent writes ev on the object ev.NodeID names. retry says
	// whether another attempt may succeed; an error wrapping ErrDropped
	// drops the event without a failure (counted as dropped, not
	// logged): a cluster known to refuse them.
	RecordEvent(ctx context.Context, ev Event) (retry bool, err error)
}

// ErrDropped, wrapped by an ObjectRecorder's error, drops the event
// without a failure.
var ErrDropped = errors.New("event dropped")

// sink is the Kubernetes events' sink as a webhook's settings (its URL
// unused), defaults applied.
func (k KubernetesEvents) sink() Webhook {
	w := Webhook{Name: KubernetesEventsName, Filter: k.Filter, PerMinute: k.PerMinute, Burst: k.Burst, QueueSize: k.QueueSize,
		Timeout: kubernetesEventsTimeout, MaxAttempts: kubernetesEventsAttempts}
	if w.PerMinute <= 0 {
		w.PerMinute = DefaultKubernetesEventsPerMinute
	}
	if w.Burst <= 0 {
		w.Burst = DefaultKubernetesEventsBurst
	}
	w.defaults()
	return w
}

// KubernetesReason is the reason (and type: Normal or Warning) of the
// Kubernetes Event an event about an object is written as: DriftRepaired,
// DriftNotRepaired, RepairFailed, Contested, RolloutStuck.
func KubernetesReason(t EventType) (reason, typ string) {
	switch t {
	case EventRepaired:
		return "DriftRepaired", "Normal"
	case EventUnrepaired:
		return "DriftNotRepaired", "Warning"
	case EventRepairFailed:
		return "RepairFailed", "Warning"
	case EventContested:
		return "Contested", "Warning"
	case EventStuck:
		return "RolloutStuck", "Warning"
	}
	return string(t), "Normal"
}
