package config

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/notify"
)

// Notifications is the `notifications:` section: where the hub sends its
// notable events (see package internal/notify).
type Notifications struct {
	// Webhooks receive the events, each with its own filter and rate
	// limit.
	Webhooks []Webhook `yaml:"webhooks"`
	// KubernetesEvents, when set (`kubernetesEvents: {}` takes the
	// defaults), also writes the events about objects (drift-repaired,
	// drift-unrepaired, repair-failed, contested, stuck) as Kubernetes
	// Events on the objects themselves, so `kubectl describe` and the
	// cluster's event exporters show what the hub did and why: reason
	// DriftRepaired (Normal), DriftNotRepaired, RepairFailed, Contested or
	// RolloutStuck (Warning), source component driftwatch. The
	// credentials then need `create` on `events` in the namespaces of
	// the managed objects (and in default, for cluster-scoped ones); a
	// cluster that refuses them has its events dropped for 10 minutes
	// after a warning in the log, the others' are written. Read at start.
	KubernetesEvents *KubernetesEvents `yaml:"kubernetesEvents"`
}

// KubernetesEvents is the `notifications.kubernetesEvents` section: which
// events about objects are written on them as Kubernetes Events.
type KubernetesEvents struct {
	// Events are the event types written; empty means all those about
	// objects.
	Events []notify.EventType `yaml:"events"`
	// Classes are the drift classes written (events about a drift); empty
	// means all.
	Classes []hub.DriftClass `yaml:"classes"`
	// Clusters and Applications are glob patterns (`prod-*`) of the
	// cluster ids and applications written; empty means all.
	Clusters     []string `yaml:"clusters"`
	Applications []string `yaml:"applications"`
	// MinSeverity is the least severity written: info (the default),
	// warning or critical.
	MinSeverity notify.Severity `yaml:"minSeverity"`
	// PerMinute and Burst are the rate limit over all clusters; events
	// over it are dropped and counted (defaults 120 and 50).
	PerMinute float64 `yaml:"perMinute"`
	Burst     int     `yaml:"burst,min=1"`
}

// Notifier returns the section as the notifier takes it, writing through
// recorder.
func (k KubernetesEvents) Notifier(recorder notify.ObjectRecorder) *notify.KubernetesEvents {
	return &notify.KubernetesEvents{
		Filter: notify.Filter{Types: k.Events, Classes: k.Classes, Clusters: k.Clusters, Applications: k.Applications,
			MinSeverity: k.MinSeverity},
		PerMinute: k.PerMinute, Burst: k.Burst, Recorder: recorder,
	}
}

// Webhook is one `notifications.webhooks` entry.
type Webhook struct {
	// Name identifies the webhook (a DNS label, unique) in logs, metrics
	// and the status bar; the URL never appears there.
	Name string `yaml:"name,required"`
	// URL is the http or https URL events are POSTed to, with ${VAR}
	// expanded from the environment: keep secret URLs (a Slack incoming
	// webhook) out of the file with `url: ${SLACK_WEBHOOK_URL}`.
	URL string `yaml:"url,required"`
	// Headers are added to every request, their values ${VAR}-expanded
	// like URL (`Authorization: Bearer ${ONCALL_TOKEN}`).
	Headers map[string]string `yaml:"headers"`
	// Format is "json" (the default: the versioned event document) or
	// "slack" ({"text": "..."}).
	Format notify.Format `yaml:"format"`
	// Events are the event types sent; empty means all.
	Events []notify.EventType `yaml:"events"`
	// Classes are the drift classes sent (events about a drift); empty
	// means all.
	Classes []hub.DriftClass `yaml:"classes"`
	// Clusters and Applications are glob patterns (`prod-*`) of the
	// cluster ids and applications sent; empty means all.
	Clusters     []string `yaml:"clusters"`
	Applications []string `yaml:"applications"`
	// MinSeverity is the least severity sent: info (the default),
	// warning or critical.
	MinSeverity notify.Severity `yaml:"minSeverity"`
	// PerMinute and Burst are the rate limit; events over it are dropped
	// and counted (defaults 60 and 20).
	PerMinute float64 `yaml:"perMinute"`
	Burst     int     `yaml:"burst,min=1"`
	// QueueSize bounds the events waiting for delivery (default 256).
	QueueSize int `yaml:"queueSize,min=1,max=100000"`
	// Timeout bounds one attempt (default 10s); MaxAttempts the attempts
	// per event (default 5).
	Timeout     time.Duration `yaml:"timeout"`
	MaxAttempts int           `yaml:"maxAttempts,min=1,max=100"`
}

// Notifier returns the webhook as the notifier takes it.
func (w Webhook) Notifier() notify.Webhook {
	return notify.Webhook{
		Name: w.Name, URL: w.URL, Headers: w.Headers, Format: w.Format,
		Filter: notify.Filter{
			Types: w.Events, Classes: w.Classes, Clusters: w.Clusters, Applications: w.Applications,
			MinSeverity: w.MinSeverity,
		},
		PerMinute: w.PerMinute, Burst: w.Burst, QueueSize: w.QueueSize, Timeout: w.Timeout, MaxAttempts: w.MaxAttempts,
	}
}

func driftClasses() []string {
	return []string{string(hub.DriftMissing), string(hub.DriftModified), string(hub.DriftAdded), string(hub.DriftUnlabelled), string(hub.DriftDeleting)}
}

func strs[T ~string](l []T) []string {
	out := make([]string, len(l))
	for i, v := range l {
		out[i] = string(v)
	}
	return out
}

// notifications reads the notifications section.
func (d *decoder) notifications(c child) {
	n := &d.cfg.Notifications
	d.fields(c.node, c.field, c.pos, n,
		on(&n.KubernetesEvents, func(c child) { n.KubernetesEvents = d.kubernetesEvents(c) }),
		on(&n.Webhooks, func(c child) {
			items, _ := d.list(c)
			names := map[string]pos{}
			for _, it := range items {
				if w, ok := d.webhook(it, names); ok {
					n.Webhooks = append(n.Webhooks, w)
				}
			}
		}),
	)
}

// webhook reads one webhook; names holds the names read so far.
func (d *decoder) webhook(it item, names map[string]pos) (Webhook, bool) {
	w := Webhook{Format: notify.FormatJSON, MinSeverity: notify.SeverityInfo}
	ok := true
	hooks := []hook{
		on(&w.Name, func(c child) {
			s, good := d.str(c)
			if !good || !d.dnsLabel(c, s) {
				ok = false
				return
			}
			if p, dup := names[s]; dup {
				d.errorf(c.pos, c.field, "webhook %q is also defined at line %d", s, p.line)
				ok = false
				return
			}
			names[s] = c.pos
			w.Name = s
		}),
		on(&w.URL, func(c child) {
			s, good := d.str(c)
			if !good {
				ok = false
				return
			}
			v, err := d.expandSecret(s)
			if err != nil {
				d.errorf(c.pos, c.field, "%v", err)
				ok = false
				return
			}
			// The value may be a secret: never repeat it.
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.errorf(c.pos, c.field, "want an http or https URL")
				ok = false
				return
			}
			w.URL = v
		}),
		on(&w.Headers, func(c child) {
			kvs, good := d.strMap(c)
			if !good {
				return
			}
			w.Headers = make(map[string]string, len(kvs))
			for _, e := range kvs {
				v, err := d.expandSecret(e.value)
				if err != nil {
					d.errorf(e.valuePos, e.field, "%v", err)
					ok = false
					continue
				}
				w.Headers[e.key] = v
			}
		}),
		on(&w.Format, func(c child) {
			if s, good := d.oneOf(c, strs([]notify.Format{notify.FormatJSON, notify.FormatSlack}), "format"); good {
				w.Format = notify.Format(s)
			}
		}),
	}
	hooks = append(hooks, d.filterHooks(&w.Events, &w.Classes, &w.Clusters, &w.Applications, &w.MinSeverity, notify.EventTypes())...)
	o := d.fields(it.node, it.field, it.pos, &w, hooks...)
	return w, ok && o != nil
}

// kubernetesEvents reads notifications.kubernetesEvents; nil when it is
// absent (or null).
func (d *decoder) kubernetesEvents(c child) *KubernetesEvents {
	if !c.set || c.node == nil || c.node.Tag == "!!null" {
		return nil
	}
	k := &KubernetesEvents{MinSeverity: notify.SeverityInfo}
	if d.fields(c.node, c.field, c.pos, k, d.filterHooks(&k.Events, &k.Classes, &k.Clusters, &k.Applications, &k.MinSeverity, notify.ObjectEventTypes())...) == nil {
		return nil
	}
	return k
}

// filterHooks read the filter of a webhook or of the Kubernetes events:
// the event types (among types), drift classes, cluster and application
// globs, and the least severity.
func (d *decoder) filterHooks(events *[]notify.EventType, classes *[]hub.DriftClass, clusters, apps *[]string, minSeverity *notify.Severity, types []notify.EventType) []hook {
	return []hook{
		on(events, func(c child) {
			for _, s := range d.listOf(c, strs(types), "event type") {
				*events = append(*events, notify.EventType(s))
			}
		}),
		on(classes, func(c child) {
			for _, s := range d.listOf(c, driftClasses(), "drift class") {
				*classes = append(*classes, hub.DriftClass(s))
			}
		}),
		on(clusters, func(c child) { *clusters = d.globs(c) }),
		on(apps, func(c child) { *apps = d.globs(c) }),
		on(minSeverity, func(c child) {
			if s, good := d.oneOf(c, strs(notify.Severities()), "severity"); good {
				*minSeverity = notify.Severity(s)
			}
		}),
	}
}

// expandSecret expands ${VAR} from the environment; an unset variable is
// an error naming it.
func (d *decoder) expandSecret(s string) (string, error) {
	var missing []string
	v := os.Expand(s, func(name string) string {
		v := d.opts.Getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable(s) %s not set", strings.Join(missing, ", "))
	}
	return v, nil
}

// oneOf reads a string that must be one of known.
func (d *decoder) oneOf(c child, known []string, what string) (string, bool) {
	s, ok := d.str(c)
	if !ok {
		return "", false
	}
	if !slices.Contains(known, s) {
		d.errorf(c.pos, c.field, "unknown %s %q: want one of %s%s", what, s, strings.Join(known, ", "), hint(s, known))
		return "", false
	}
	return s, true
}

// listOf reads a list of strings that must each be one of known; unknown
// entries are reported and left out.
func (d *decoder) listOf(c child, known []string, what string) []string {
	vals, items, ok := d.strList(c)
	if !ok {
		return nil
	}
	var out []string
	for i, v := range vals {
		if !slices.Contains(known, v) {
			d.errorf(items[i].pos, items[i].field, "unknown %s %q: want one of %s%s", what, v, strings.Join(known, ", "), hint(v, known))
			continue
		}
		out = append(out, v)
	}
	return out
}

// globs reads a list of path.Match patterns.
func (d *decoder) globs(c child) []string {
	vals, items, ok := d.strList(c)
	if !ok {
		return nil
	}
	var out []string
	for i, v := range vals {
		if _, err := path.Match(v, ""); err != nil || v == "" {
			d.errorf(items[i].pos, items[i].field, "invalid pattern %q: want a name or a glob such as prod-*", v)
			continue
		}
		out = append(out, v)
	}
	return out
}
