package clusters

import (
	"context"
	"log/slog"

	"github.com/driftwatch/driftwatch/hub"
)

// Connect returns a Manager for cfg that is connected to its cluster but
// runs nothing: no informers, no probe loop, no health reports. Its backend
// methods work at once, ReadState always with a GET (there is no watch
// cache). Before it returns, it checks that the apiserver answers /readyz
// (within ctx, at most 5s): an error unwraps to hub.ErrUnreachable when the
// cluster could not be reached or refused the credentials or the TLS
// handshake, and also to hub.ErrUnauthorized when it refused the
// credentials (401, or 403 on /readyz: the whole API); a kubeconfig that
// cannot be used is an error too (see RESTConfig). Call release when done
// with the manager: it closes its connections. One-shot commands (diff) use
// it; the hub uses a Registry.
func Connect(ctx context.Context, cfg ClusterConfig, log *slog.Logger) (m *Manager, release func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.DisableWatch = true
	m = newManager(cfg, nopSink{}, log, HealthOptions{}, nil)
	// The manager outlives ctx (the probe's): its discovery is not bound.
	release, err = m.connect(context.WithoutCancel(ctx))
	if err != nil {
		return nil, nil, err
	}
	if err := m.probe(ctx); err != nil {
		release()
		if answered(err) {
			return nil, nil, &refusedError{msg: describeRefused(cfg.ID, err), err: err}
		}
		return nil, nil, &backendError{msg: describe(cfg.ID, "probe", "/readyz", "", err), err: err}
	}
	return m, release, nil
}

// nopSink drops events and health reports (a manager from Connect sends
// none).
type nopSink struct{}

func (nopSink) Observe(hub.Event)                {}
func (nopSink) ClusterChanged(hub.ClusterHealth) {}
