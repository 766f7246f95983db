package app

import (
	"fmt"
	"log/slog"

	"github.com/driftwatch/driftwatch/config"
	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// newNotifier builds the notifier of the config's webhooks over the hub,
// its metrics served with the hub's; nil when there are none.
func newNotifier(cfg *config.Config, h *hub.Hub, log *slog.Logger) (*notify.Notifier, error) {
	if len(cfg.Notifications.Webhooks) == 0 {
		return nil, nil
	}
	hooks := make([]notify.Webhook, len(cfg.Notifications.Webhooks))
	for i, w := range cfg.Notifications.Webhooks {
		hooks[i] = w.Notifier()
	}
	n, err := notify.New(notify.Options{
		Source: h, Webhooks: hooks, HubID: cfg.Hub.ID,
		Logger: log.With("component", "notify"), Registerer: h.Registerer(),
	})
	if err != nil {
		return nil, fmt.Errorf("config %s: notifications: %w", cfg.Path, err)
	}
	return n, nil
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
		out = append(out, "webhook "+st.Name+" failing")
	}
	return out
}
