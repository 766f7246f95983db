package app

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/hub"
)

// TestLogLine: a feed entry as one text line: time, NodeID, what changed
// (old -> new for a desired change), who, what the hub did and how long it
// took, an error in place of the latency, why a drift was held back (the
// switch and its note), the count of a repeat; the cluster's text cleaned
// for the terminal.
func TestLogLine(t *testing.T) {
	at := time.Date(2026, 12, 7, 17, 41, 43, 12e6, time.UTC)
	id := hub.NewNodeID("prod-eu", "shop", "web", hub.KindDeployment)
	replicas := []hub.FieldDiff{{Path: "spec.replicas", Desired: "3", Actual: "5"}}
	for _, tt := range []struct {
		name string
		e    hub.FeedEntry
		want string
	}{
		{"repaired", hub.FeedEntry{At: at, ID: id, Class: hub.DriftModified, Fields: replicas, Who: "kubectl-edit (Update)", Action: "apply", Latency: 12345 * time.Microsecond},
			"prod-eu:shop/web:deployment  modified spec.replicas: 3 -> 5  by kubectl-edit (Update)  apply 12.345ms"},
		{"deleted", hub.FeedEntry{At: at, ID: id, Class: hub.DriftMissing, Action: "paused"},
			"prod-eu:shop/web:deployment  missing  paused"},
		{"desired change", hub.FeedEntry{At: at, ID: id, Class: hub.DriftModified, Fields: []hub.FieldDiff{{Path: "data.RELEASE", Desired: "1.2", Actual: "1.1"}},
			Who: "desired changed (inventory@5624955)", Action: "apply", Latency: time.Millisecond},
			"prod-eu:shop/web:deployment  modified data.RELEASE: 1.1 -> 1.2  desired changed (inventory@5624955)  apply 1ms"},
		{"failed", hub.FeedEntry{At: at, ID: id, Action: "failed", Err: "forbidden", Latency: time.Millisecond},
			"prod-eu:shop/web:deployment  failed: forbidden"},
		{"waiting", hub.FeedEntry{At: at, ID: id, Class: hub.DriftDeleting, Action: "waiting", Err: "a finalizer holds it"},
			"prod-eu:shop/web:deployment  deleting  waiting: a finalizer holds it"},
		{"repeated", hub.FeedEntry{At: at, ID: id, Class: hub.DriftModified, Fields: replicas, Who: "hpa", Action: "backoff", Count: 27, First: at.Add(-15 * time.Second)},
			"prod-eu:shop/web:deployment  modified spec.replicas: 3 -> 5  by hpa  backoff  ×27 since " + at.Add(-15*time.Second).Local().Format(logTime)},
		{"held back by a pause", hub.FeedEntry{At: at, ID: id, Class: hub.DriftModified, Fields: replicas, Who: "kubectl-edit (Update)", Action: "paused",
			Latency: 300 * time.Microsecond, Why: "repairs paused on this cluster by alice: INC-4211: failover"},
			"prod-eu:shop/web:deployment  modified spec.replicas: 3 -> 5  by kubectl-edit (Update)  paused 300µs  (repairs paused on this cluster by alice: INC-4211: failover)"},
		{"hostile why", hub.FeedEntry{At: at, ID: id, Class: hub.DriftMissing, Action: "held", Why: "held until 18:00:00 (cluster/prod-eu) by bob: \x1b]8;;evil\x07"},
			`prod-eu:shop/web:deployment  missing  held  (held until 18:00:00 (cluster/prod-eu) by bob: \x1b]8;;evil\x07)`},
		{"hostile text", hub.FeedEntry{At: at, ID: id, Class: hub.DriftModified, Who: "evil\x1b[2Jmanager", Action: "apply"},
			`prod-eu:shop/web:deployment  modified  by evil\x1b[2Jmanager  apply`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := at.Local().Format(logTime) + "  " + tt.want
			if got := LogLine(tt.e); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestLogPrinter: successive snapshots print each entry once, oldest
// first: a new entry, and an entry the hub folded a repeat into (its time
// moved), print; entries already printed do not, also one of the same
// time as the last one printed; --since and the targets (a cluster, the
// start of a NodeID) leave the others out; -o json is one object a line.
func TestLogPrinter(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 17, 0, 0, 0, time.UTC)
	web := hub.NewNodeID("prod-eu", "shop", "web", hub.KindDeployment)
	cfg := hub.NewNodeID("prod-eu", "shop", "web", hub.KindConfigMap)
	us := hub.NewNodeID("prod-us", "shop", "web", hub.KindDeployment)
	entry := func(id hub.NodeID, sec int, action string) hub.FeedEntry {
		return hub.FeedEntry{At: t0.Add(time.Duration(sec) * time.Second), ID: id, Class: hub.DriftMissing, Action: action}
	}
	snap := func(feed ...hub.FeedEntry) *hub.Snapshot { return &hub.Snapshot{Feed: feed} } // newest first
	lines := func(out string) []string {
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Split(l, "  "); len(f) > 3 {
				ids = append(ids, f[1]+" "+f[3])
			}
		}
		return ids
	}
	check := func(t *testing.T, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("printed %q, want %q", got, want)
		}
	}

	t.Run("follow", func(t *testing.T) {
		var out strings.Builder
		p := logPrinter{out: &out}
		first := snap(entry(us, 2, "apply"), entry(cfg, 2, "apply"), entry(web, 1, "apply"))
		if err := p.print(first); err != nil {
			t.Fatal(err)
		}
		check(t, lines(out.String()), web.String()+" apply", cfg.String()+" apply", us.String()+" apply")
		out.Reset()
		folded := entry(web, 5, "apply")
		folded.Count, folded.First = 2, t0.Add(time.Second)
		second := snap(folded, entry(cfg, 4, "paused"), entry(us, 2, "apply"), entry(cfg, 2, "apply"))
		if err := p.print(second); err != nil {
			t.Fatal(err)
		}
		check(t, lines(out.String()), cfg.String()+" paused", web.String()+" apply")
		out.Reset()
		if err := p.print(second); err != nil {
			t.Fatal(err)
		}
		check(t, lines(out.String()))
	})

	t.Run("entries let go unread are said", func(t *testing.T) {
		var out, notices strings.Builder
		p := logPrinter{out: &out, o: LogOptions{Notices: &notices}}
		if err := p.print(snap(entry(web, 2, "apply"), entry(cfg, 1, "apply"))); err != nil {
			t.Fatal(err)
		}
		// A repeat folded into an old entry moves it: nothing let go.
		if err := p.print(snap(entry(cfg, 3, "apply"), entry(web, 2, "apply"))); err != nil {
			t.Fatal(err)
		}
		if notices.Len() != 0 {
			t.Errorf("said %q with nothing let go", notices.String())
		}
		if err := p.print(snap(entry(us, 9, "apply"), entry(cfg, 8, "apply"))); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(notices.String(), "more entries came than the hub keeps (2) since the last read: some may be missing") {
			t.Errorf("a feed past the last read: said %q", notices.String())
		}
	})

	t.Run("since and targets", func(t *testing.T) {
		feed := snap(entry(us, 9, "apply"), entry(cfg, 8, "apply"), entry(web, 7, "apply"), entry(web, 1, "apply"))
		for _, tt := range []struct {
			targets []string
			want    []string
		}{
			{nil, []string{web.String() + " apply", cfg.String() + " apply", us.String() + " apply"}},
			{[]string{"prod-us"}, []string{us.String() + " apply"}},
			{[]string{"prod-eu:shop/web:deployment"}, []string{web.String() + " apply"}},
			{[]string{"prod-eu:shop/", "prod-us"}, []string{web.String() + " apply", cfg.String() + " apply", us.String() + " apply"}},
			{[]string{"prod"}, nil}, // a cluster's id, not a prefix
		} {
			var out strings.Builder
			p := logPrinter{out: &out, o: LogOptions{Targets: tt.targets}, after: t0.Add(5 * time.Second)}
			if err := p.print(feed); err != nil {
				t.Fatal(err)
			}
			if got := lines(out.String()); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("targets %q: printed %q, want %q", tt.targets, got, tt.want)
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		var out strings.Builder
		p := logPrinter{out: &out, o: LogOptions{Format: FormatJSON}}
		if err := p.print(snap(entry(cfg, 2, "paused"), entry(web, 1, "apply"))); err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(got) != 2 {
			t.Fatalf("%d lines:\n%s", len(got), out.String())
		}
		for i, want := range []hub.NodeID{web, cfg} {
			var e struct {
				ID     string    `json:"id"`
				Class  string    `json:"class"`
				At     time.Time `json:"at"`
				Action string    `json:"action"`
			}
			if err := json.Unmarshal([]byte(got[i]), &e); err != nil || e.ID != want.String() || e.Class != "missing" || !e.At.Equal(t0.Add(time.Duration(i+1)*time.Second)) {
				t.Errorf("line %d %s: %+v %v", i, got[i], e, err)
			}
		}
	})
}
