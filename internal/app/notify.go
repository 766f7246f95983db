package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// newNotifier builds the notifier of the config's webhooks and
// Kubernetes events over the hub, its metrics served with the hub's; nil
// when there are none. The Kubernetes events are written through the
// clusters of a's registry (set once the app is built).
func newNotifier(cfg *config.Config, h *hub.Hub, a *App, log *slog.Logger) (*notify.Notifier, error) {
	k := cfg.Notifications.KubernetesEvents
	if len(cfg.Notifications.Webhooks) == 0 && k == nil {
		return nil, nil
	}
	hooks := make([]notify.Webhook, len(cfg.Notifications.Webhooks))
	for i, w := range cfg.Notifications.Webhooks {
		hooks[i] = w.Notifier()
	}
	opts := notify.Options{
		Source: h, Webhooks: hooks, HubID: cfg.Hub.ID,
		Logger: log.With("component", "notify"), Registerer: h.Registerer(),
	}
	if k != nil {
		opts.KubernetesEvents = k.Notifier(&kubeEvents{now: time.Now, refused: make(map[string]time.Time),
			backend: func(cluster string) (hub.Backend, bool) {
				if a.reg == nil {
					return nil, false
				}
				return a.reg.Backend(cluster)
			}})
	}
	n, err := notify.New(opts)
	if err != nil {
		return nil, fmt.Errorf("config %s: notifications: %w", cfg.Path, err)
	}
	return n, nil
}

// kubeEventsRefusedFor is how long the events of a cluster that refused
// one (RBAC) are dropped before the next is tried.
const kubeEventsRefusedFor = 10 * time.Minute

// kubeEvents writes the notifier's events about objects as Kubernetes
// Events on them, through the manager of each one's cluster
// (notify.ObjectRecorder). A cluster that refuses one (its credentials may
// not create events) has its events dropped for kubeEventsRefusedFor: the
// refusal is logged once (the notifier's failed delivery), the drops
// counted.
type kubeEvents struct {
	// backend returns a cluster's backend (the registry's manager).
	backend func(cluster string) (hub.Backend, bool)
	now     func() time.Time

	mu      sync.Mutex
	refused map[string]time.Time // until when, by cluster
}

// eventWriter is a backend that writes Kubernetes Events
// (clusters.Manager).
type eventWriter interface {
	RecordEvent(ctx context.Context, id hub.NodeID, typ, reason, message string) (bool, error)
}

// RecordEvent writes ev on its object: its reason and type from its event
// type (notify.KubernetesReason), its message the event's without the
// NodeID and with the hub's id ("hub prod-hub: modified drift repaired in
// 12ms (spec.replicas, changed by kubectl-edit)"). A cluster the registry
// does not hold (a Terraform workspace, a cluster gone) has nothing to
// write on.
func (k *kubeEvents) RecordEvent(ctx context.Context, ev notify.Event) (bool, error) {
	k.mu.Lock()
	until := k.refused[ev.Cluster]
	k.mu.Unlock()
	if k.now().Before(until) {
		return false, fmt.Errorf("cluster %q refused the hub's events: %w", ev.Cluster, notify.ErrDropped)
	}
	id, err := hub.ParseNodeID(ev.NodeID)
	if err != nil {
		return false, err
	}
	be, ok := k.backend(ev.Cluster)
	w, writes := be.(eventWriter)
	if !ok || !writes {
		return false, nil
	}
	reason, typ := notify.KubernetesReason(ev.Type)
	retry, err := w.RecordEvent(ctx, id, typ, reason, "hub "+ev.Hub+": "+strings.TrimPrefix(ev.Message, ev.NodeID+": "))
	if apierrors.IsForbidden(err) {
		k.mu.Lock()
		k.refused[ev.Cluster] = k.now().Add(kubeEventsRefusedFor)
		k.mu.Unlock()
		return false, fmt.Errorf("%w (its events are dropped for %s; the credentials need create on events, see docs/clusters.md)", err, kubeEventsRefusedFor)
	}
	return retry, err
}

// Notifier returns the app's notifier; nil when no webhook is configured.
func (a *App) Notifier() *notify.Notifier { return a.notifier }

// notificationAlerts names the failing webhooks for the TUI's status bar.
func (a *App) notificationAlerts() []string {
	if a.notifier == nil {
		return nil
	}
	var out []string
	for _, st := range a.notifier.Failing() {
		if st.Name == notify.KubernetesEventsName {
			out = append(out, "kubernetes events failing")
			continue
		}
		out = append(out, "webhook "+st.Name+" failing")
	}
	return out
}
