package hub

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// logBuffer collects a JSON log's lines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the log's records with message msg, each as
// "node class fields by action".
func (l *logBuffer) lines(t *testing.T, msg string) []string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var r struct {
			Msg, Node, Class, By, Action string
			Fields                       []string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if r.Msg == msg {
			out = append(out, strings.Join([]string{r.Node, r.Class, strings.Join(r.Fields, ","), r.By, r.Action}, " "))
		}
	}
	return out
}

// TestAuditLog: the log says every write the hub makes and every drift it
// holds back, with the NodeID, class, field paths (never values) and who:
// a repair as "drift repaired"; a warn-only drift as "drift not repaired"
// once while it stays held back, however many events observe it again,
// and once more after a write went through; a desired change as "desired
// change applied".
func TestAuditLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs logBuffer
		b := newFake(true)
		b.attrib = &Attribution{Manager: "kubectl-edit"}
		f := start(t, b, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		web, warn := spec("c1", "web", "v1"), spec("c1", "warn", "v1")
		warn.Policy = PolicyWarn
		f.h.SetDesired([]NodeSpec{web, warn})
		f.ready("c1", 1, 1)
		synctest.Wait()

		b.remove(web.ID)
		for _, content := range []string{"secret-1", "secret-2", "secret-3"} {
			b.put(warn.ID, func(o *fakeObject) { o.content = content })
			synctest.Wait()
		}
		if err := f.h.RepairNow(warn.ID); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		b.put(warn.ID, func(o *fakeObject) { o.content = "secret-4" })
		synctest.Wait()
		web.Hash = "v2"
		f.h.SetDesired([]NodeSpec{web, warn})
		synctest.Wait()

		by := "kubectl-edit"
		repaired := logs.lines(t, "drift repaired")
		if len(repaired) != 2 || repaired[0] != web.ID.String()+" missing   apply" ||
			repaired[1] != warn.ID.String()+" modified content "+by+" apply" {
			t.Errorf("drift repaired:\n%s", strings.Join(repaired, "\n"))
		}
		held := logs.lines(t, "drift not repaired")
		want := warn.ID.String() + " modified content " + by + " warn"
		if len(held) != 2 || held[0] != want || held[1] != want {
			t.Errorf("drift not repaired (once, then once after the manual repair):\n%s", strings.Join(held, "\n"))
		}
		if changed := logs.lines(t, "desired change applied"); len(changed) != 1 || !strings.HasPrefix(changed[0], web.ID.String()+" modified content") {
			t.Errorf("desired change applied:\n%s", strings.Join(changed, "\n"))
		}
		logs.mu.Lock()
		defer logs.mu.Unlock()
		if strings.Contains(logs.b.String(), "secret-") {
			t.Errorf("a field value reached the log:\n%s", logs.b.String())
		}
	})
}
