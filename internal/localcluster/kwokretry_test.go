package localcluster

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeKwokBin makes a binaries folder whose control-plane binaries are the
// real ones of binDir and whose kwok is a script: its first `crashes` runs
// print a Go runtime crash and exit with status 2 (as kwok v0.8.0 does when
// its start-up races), later runs exec the real kwok. Each run appends a
// line to the returned count file.
func fakeKwokBin(t *testing.T, binDir string, crashes int) (dir, countFile string) {
	t.Helper()
	dir = t.TempDir()
	for _, name := range []string{binEtcd, binAPIServer, binControllerManager, binScheduler} {
		if err := os.Symlink(filepath.Join(binDir, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	countFile = filepath.Join(dir, "kwok-runs")
	script := "#!/bin/sh\n" +
		"echo run >> '" + countFile + "'\n" +
		"if [ \"$(wc -l < '" + countFile + "')\" -le " + strconv.Itoa(crashes) + " ]; then\n" +
		"  echo 'fatal error: concurrent map writes' >&2\n" +
		"  exit 2\n" +
		"fi\n" +
		"exec '" + filepath.Join(binDir, binKwok) + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, binKwok), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, countFile
}

func kwokRuns(t *testing.T, countFile string) int {
	t.Helper()
	b, err := os.ReadFile(countFile)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestKwokCrashAtStartIsRetried runs a full cluster whose kwok crashes in its
// first start-up: Start starts kwok again and the fake nodes come up. A
// kwok that crashes every time fails Start after kwokStarts runs, with its
// log in the error.
func TestKwokCrashAtStartIsRetried(t *testing.T) {
	binDir := os.Getenv("DRIFTWATCH_BIN_DIR") // lctest.EnvBinDir; lctest imports this package
	if binDir == "" {
		t.Skip("real-cluster test: run scripts/test.sh (needs the local control-plane binaries)")
	}
	t.Parallel()
	t.Run("once", func(t *testing.T) {
		t.Parallel()
		bin, count := fakeKwokBin(t, binDir, 1)
		logPath := filepath.Join(t.TempDir(), "start.log")
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		defer logFile.Close()
		set, err := Start(t.Context(), Options{BinDir: bin, Names: []string{"kwok-once"}, Full: true, Nodes: 1,
			Logger: slog.New(slog.NewTextHandler(logFile, nil))})
		if err != nil {
			t.Fatalf("Start with a kwok that crashes once: %v", err)
		}
		defer func() {
			if err := set.Stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		}()
		if n := kwokRuns(t, count); n != kwokStarts {
			t.Errorf("kwok ran %d times, want %d", n, kwokStarts)
		}
		if logs, _ := os.ReadFile(logPath); !strings.Contains(string(logs), "kwok exited while the fake nodes started") {
			t.Errorf("the retry was not logged:\n%s", logs)
		}
	})
	t.Run("always", func(t *testing.T) {
		t.Parallel()
		bin, count := fakeKwokBin(t, binDir, 1000)
		set, err := Start(t.Context(), Options{BinDir: bin, Names: []string{"kwok-always"}, Full: true, Nodes: 1})
		if err == nil {
			set.Stop()
			t.Fatal("Start succeeded with a kwok that always crashes")
		}
		for _, want := range []string{"kwok exited", "exit status 2", "concurrent map writes"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		}
		if n := kwokRuns(t, count); n != kwokStarts {
			t.Errorf("kwok ran %d times, want %d", n, kwokStarts)
		}
	})
}
