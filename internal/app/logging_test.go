package app

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// TestLogLevelNames: every record prints one of the four standard level
// names, client-go's verbosity levels (INFO-1 and below, through klog's
// slog bridge) as DEBUG, never DEBUG+1; the handler still filters by its
// level.
func TestLogLevelNames(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, logOptions(slog.LevelDebug)))
	levels := map[slog.Level]string{
		slog.LevelDebug - 2: "", // below the handler's level: not logged
		slog.LevelDebug:     "DEBUG",
		-3:                  "DEBUG", // klog V(3)
		-1:                  "DEBUG", // klog V(1)
		slog.LevelInfo:      "INFO",
		slog.LevelInfo + 2:  "INFO",
		slog.LevelWarn:      "WARN",
		slog.LevelWarn + 1:  "WARN",
		slog.LevelError:     "ERROR",
		slog.LevelError + 4: "ERROR",
	}
	for l, want := range levels {
		buf.Reset()
		log.Log(context.Background(), l, "m", "nested", slog.GroupValue(slog.String(slog.LevelKey, "kept")))
		if want == "" {
			if buf.Len() > 0 {
				t.Errorf("level %d logged below the handler's level: %s", l, buf.String())
			}
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
			t.Fatalf("level %d: %v: %s", l, err, buf.String())
		}
		if rec["level"] != want {
			t.Errorf("level %d printed as %v, want %s", l, rec["level"], want)
		}
		if !strings.Contains(buf.String(), `"nested":{"level":"kept"}`) {
			t.Errorf("an attribute named level in a group was renamed: %s", buf.String())
		}
	}
	buf.Reset()
	info := slog.New(slog.NewTextHandler(&buf, logOptions(nil)))
	info.Log(context.Background(), -1, "client-go detail")
	info.Info("shown")
	if out := buf.String(); strings.Contains(out, "client-go detail") || !strings.Contains(out, "level=INFO msg=shown") {
		t.Errorf("default level: %s", out)
	}
}
