package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sourcegraph/conc"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/rescue"
)

// Source is what a Notifier reads: the hub's snapshot subscription.
type Source interface {
	// Subscribe returns a channel holding the latest snapshot and a
	// function that ends the subscription.
	Subscribe() (<-chan *hub.Snapshot, func())
}

// Options configure a Notifier.
type Options struct {
	// Source is the hub (required).
	Source Source
	// Webhooks receive the events (defaults applied per Webhook).
	Webhooks []Webhook
	// HubID names the hub in events when a snapshot does not.
	HubID string
	// Logger receives delivery failures. Default: discard.
	Logger *slog.Logger
	// Registerer, when set, gets the notifier's metrics.
	Registerer prometheus.Registerer
	// KubernetesEvents, when set, also writes the events about objects as
	// Kubernetes Events on the objects themselves.
	KubernetesEvents *KubernetesEvents
	// Client sends the requests. Default: a client of its own over
	// http.DefaultTransport's settings. Its CheckRedirect is never used:
	// the notifier works on a copy that follows no redirect, so the
	// webhook's headers never reach another address.
	Client *http.Client
}

// Notifier derives events from the hub's snapshots and delivers them to
// webhooks. Build it with New and run it with Run.
type Notifier struct {
	opts    Options
	senders []*sender
}

// New checks the webhooks and registers the metrics.
func New(opts Options) (*Notifier, error) {
	if opts.Source == nil {
		return nil, errors.New("notify: no source")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	opts.Client = noRedirects(opts.Client)
	m := newMetrics()
	if opts.Registerer != nil {
		for _, c := range m.collectors() {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("notify: register metrics: %w", err)
			}
		}
	}
	n := &Notifier{opts: opts}
	names := make(map[string]bool)
	for _, w := range opts.Webhooks {
		w.defaults()
		if err := w.check(); err != nil {
			return nil, err
		}
		if names[w.Name] {
			return nil, fmt.Errorf("webhook %q: name used twice", w.Name)
		}
		names[w.Name] = true
		m.up.WithLabelValues(w.Name).Set(1)
		n.senders = append(n.senders, newSender(w, opts.Client, m, opts.Logger))
	}
	if k := opts.KubernetesEvents; k != nil {
		if k.Recorder == nil {
			return nil, errors.New("notify: kubernetes events without a recorder")
		}
		if names[KubernetesEventsName] {
			return nil, fmt.Errorf("webhook %q: the name is the Kubernetes events'", KubernetesEventsName)
		}
		w := k.sink()
		m.up.WithLabelValues(w.Name).Set(1)
		s := newSender(w, nil, m, opts.Logger)
		s.record = k.Recorder
		n.senders = append(n.senders, s)
	}
	return n, nil
}

// Run derives and delivers events until ctx ends, then waits for every
// sender. Events still queued then are not delivered. A panic deriving a
// snapshot's events is recovered and logged with its stack (its events may
// be lost), and the next snapshot is compared NodeID by NodeID with what
// the deriver remembers; one delivering an event is recovered, logged and
// counted as that event's failure (see sender.run). Either way the
// notifier goes on.
func (n *Notifier) Run(ctx context.Context) error {
	var wg conc.WaitGroup
	defer wg.Wait()
	for _, s := range n.senders {
		wg.Go(func() { s.run(ctx) })
	}
	ch, cancel := n.opts.Source.Subscribe()
	defer cancel()
	d := newDeriver(n.opts.HubID)
	for {
		select {
		case <-ctx.Done():
			return nil
		case snap := <-ch:
			if err := rescue.Call(n.opts.Logger, "the notifier's event derivation", func() {
				for _, ev := range d.next(snap) {
					for _, s := range n.senders {
						s.offer(ev)
					}
				}
			}); err != nil {
				// Its memos may be partly updated: a pass over every NodeID.
				d.prev = nil
			}
		}
	}
}

// Status returns the delivery state of every webhook, in config order.
func (n *Notifier) Status() []WebhookStatus {
	out := make([]WebhookStatus, len(n.senders))
	for i, s := range n.senders {
		out[i] = s.snapshot()
	}
	return out
}

// Failing returns the webhooks whose latest delivery attempt failed.
func (n *Notifier) Failing() []WebhookStatus {
	var out []WebhookStatus
	for _, st := range n.Status() {
		if st.Failing {
			out = append(out, st)
		}
	}
	return out
}
