package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/notify"
)

const notifyClusters = "clusters: [{id: prod-eu, kubeconfig: /k}]\n"

func TestNotifications(t *testing.T) {
	env := map[string]string{"SLACK_URL": "https://hooks.example.com/services/T0/B0/SECRET", "TOKEN": "s3cret"}
	opts := LoadOptions{Getenv: func(k string) string { return env[k] }}
	src := notifyClusters + `notifications:
  webhooks:
    - name: slack
      url: ${SLACK_URL}
      format: slack
      minSeverity: warning
      clusters: [prod-*]
    - name: pager
      url: https://pager.example.com/hook
      headers: {Authorization: "Bearer ${TOKEN}"}
      events: [repair-failed, stuck, cluster-unreachable]
      classes: [missing, modified]
      applications: [shop]
      perMinute: 10
      burst: 3
      queueSize: 50
      timeout: 3s
      maxAttempts: 2
`
	cfg, err := Parse("config.yaml", []byte(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []Webhook{
		{Name: "slack", URL: env["SLACK_URL"], Format: notify.FormatSlack, MinSeverity: notify.SeverityWarning, Clusters: []string{"prod-*"}},
		{Name: "pager", URL: "https://pager.example.com/hook", Headers: map[string]string{"Authorization": "Bearer s3cret"},
			Format: notify.FormatJSON, MinSeverity: notify.SeverityInfo,
			Events:  []notify.EventType{notify.EventRepairFailed, notify.EventStuck, notify.EventClusterUnreachable},
			Classes: []hub.DriftClass{hub.DriftMissing, hub.DriftModified}, Applications: []string{"shop"},
			PerMinute: 10, Burst: 3, QueueSize: 50, Timeout: 3 * time.Second, MaxAttempts: 2},
	}
	if !reflect.DeepEqual(cfg.Notifications.Webhooks, want) {
		t.Errorf("webhooks =\n%+v\nwant\n%+v", cfg.Notifications.Webhooks, want)
	}
	nw := cfg.Notifications.Webhooks[1].Notifier()
	if nw.Filter.MinSeverity != notify.SeverityInfo || len(nw.Filter.Types) != 3 || nw.MaxAttempts != 2 {
		t.Errorf("Notifier() = %+v", nw)
	}
}

func TestNotificationErrors(t *testing.T) {
	src := notifyClusters + `notifications:
  webhooks:
    - name: a
      url: ${NOT_SET}
    - name: a
      url: ftp://user:SECRET@example.com/
      format: xml
      events: [repair-faild]
      classes: [gone]
      minSeverity: high
      clusters: ["[bad"]
      headers: {X-Token: "${ALSO_NOT_SET}"}
    - url: https://x.example.com/
`
	errs := parseErrors(t, src)
	text := errs.Error()
	for _, want := range []string{
		"config.yaml:5:12: notifications.webhooks[0].url: environment variable(s) NOT_SET not set",
		`config.yaml:6:13: notifications.webhooks[1].name: webhook "a" is also defined at line 4`,
		"config.yaml:7:12: notifications.webhooks[1].url: want an http or https URL",
		`notifications.webhooks[1].format: unknown format "xml"`,
		`notifications.webhooks[1].events[0]: unknown event type "repair-faild"`,
		`(did you mean "repair-failed"?)`,
		`notifications.webhooks[1].classes[0]: unknown drift class "gone"`,
		`notifications.webhooks[1].minSeverity: unknown severity "high"`,
		`notifications.webhooks[1].clusters[0]: invalid pattern "[bad"`,
		`notifications.webhooks[1].headers[X-Token]: environment variable(s) ALSO_NOT_SET not set`,
		"notifications.webhooks[2]",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("errors lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "SECRET") {
		t.Errorf("errors repeat a URL:\n%s", text)
	}
}

// TestKubernetesEventsSection: notifications.kubernetesEvents is off when
// absent or null, on with the defaults as {}, with its filter when given;
// its events are those about objects only, and bad values are named.
func TestKubernetesEventsSection(t *testing.T) {
	for src, on := range map[string]bool{
		"":                                      false,
		"notifications: {kubernetesEvents: }\n": false,
		"notifications: {kubernetesEvents: {}}\n": true,
	} {
		cfg, err := Parse("config.yaml", []byte(notifyClusters+src), LoadOptions{})
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if got := cfg.Notifications.KubernetesEvents != nil; got != on {
			t.Errorf("%q: on %v, want %v", src, got, on)
		}
	}
	cfg, err := Parse("config.yaml", []byte(notifyClusters+`notifications:
  kubernetesEvents: {events: [drift-repaired, stuck], clusters: [prod-*], minSeverity: warning, perMinute: 30, burst: 5}
`), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Notifications.KubernetesEvents
	want := &KubernetesEvents{Events: []notify.EventType{notify.EventRepaired, notify.EventStuck}, Clusters: []string{"prod-*"},
		MinSeverity: notify.SeverityWarning, PerMinute: 30, Burst: 5}
	if !reflect.DeepEqual(k, want) {
		t.Fatalf("kubernetesEvents = %+v, want %+v", k, want)
	}
	if n := k.Notifier(nil); n.PerMinute != 30 || n.Burst != 5 || len(n.Filter.Types) != 2 || n.Filter.MinSeverity != notify.SeverityWarning {
		t.Errorf("Notifier() = %+v", n)
	}
	errs := parseErrors(t, notifyClusters+`notifications:
  kubernetesEvents: {events: [source-applied], classes: [gone], burst: 0, timeout: 3s}
`)
	for _, want := range []string{
		`notifications.kubernetesEvents.events[0]: unknown event type "source-applied"`,
		`notifications.kubernetesEvents.classes[0]: unknown drift class "gone"`,
		"notifications.kubernetesEvents.burst",
		"notifications.kubernetesEvents.timeout: unknown field",
	} {
		if !strings.Contains(errs.Error(), want) {
			t.Errorf("errors lack %q:\n%s", want, errs)
		}
	}
}
