package tui

import (
	"strings"
	"sync"
	"testing"
)

func TestStatusBarAlerts(t *testing.T) {
	var mu sync.Mutex
	var alerts []string
	m, _ := newFixtureModel(t, 160, 24, Options{Alerts: func() []string {
		mu.Lock()
		defer mu.Unlock()
		return alerts
	}})
	if out := m.View().Content; strings.Contains(out, "failing") {
		t.Errorf("status bar shows an alert when there is none:\n%s", out)
	}
	mu.Lock()
	alerts = []string{"webhook oncall failing"}
	mu.Unlock()
	if out := m.View().Content; !strings.Contains(out, "│ ! webhook oncall failing") {
		t.Errorf("status bar lacks the failing webhook:\n%s", out)
	}
}
