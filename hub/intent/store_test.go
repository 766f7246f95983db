package intent

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/driftwatch/driftwatch/hub"
)

// t0 returns a fixed time in UTC, so that JSON round trips compare equal.
func t0() time.Time { return time.Date(2026, 3, 14, 15, 9, 26, 535000000, time.UTC) }

func openT(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(path, Options{Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func ref(cluster, ns, name string, kind hub.Kind) hub.SpecRef {
	return hub.SpecRef{
		ID:        hub.NewNodeID(cluster, ns, name, kind),
		Namespace: ns, Name: name, Kind: kind,
		Application: "shop", Hash: "sha256:" + name,
	}
}

func load(t *testing.T, s *Store) hub.Intent {
	t.Helper()
	in, err := s.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return in
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	s := openT(t, path)

	colon := ref("prod-eu", "acme:eu", "api", hub.KindDeployment) // a resource with a colon
	svc := ref("prod-us", "shop", "front", hub.KindService)
	cm := ref("prod-us", "", "cluster-wide", hub.KindConfigMap)
	holds := []hub.Hold{
		{Target: hub.HoldTarget{Scope: hub.HoldApplication, Name: "shop"}, Reason: "incident 42", By: "carol", Since: t0(), Until: t0().Add(time.Hour)},
		{Target: hub.HoldTarget{Scope: hub.HoldCluster, Name: "prod-eu"}, Since: t0(), Until: t0().Add(2 * time.Hour)},
		{Target: hub.HoldTarget{Scope: hub.HoldNode, Name: colon.ID.String()}, Reason: "debugging", Since: t0(), Until: t0().Add(-time.Minute)},
	}
	want := hub.Intent{
		Paused:        map[string]bool{"prod-eu": true, "staging": true},
		PausedAt:      map[string]time.Time{"prod-eu": at0(), "staging": at0().Add(time.Minute)},
		PauseNotes:    map[string]hub.SwitchNote{"prod-eu": {By: "alice", Reason: "INC-4211: failover"}},
		Policies:      map[string]hub.Policy{"shop": hub.PolicyWarn, "billing": hub.PolicyRepair},
		PolicySetAt:   map[string]time.Time{"shop": at0(), "billing": at0()},
		PolicyNotes:   map[string]hub.SwitchNote{"shop": {By: "dave", Reason: "DB migration"}},
		Holds:         holds, // already in target order
		Decommissions: []hub.DecommissionRecord{{Ref: colon, Since: t0()}, {Ref: cm, Since: t0().Add(time.Second), Orphan: true}},
		Applied:       map[hub.NodeID]hub.SpecRef{colon.ID: colon, svc.ID: svc, cm.ID: cm},
	}
	sortDecommissions(want.Decommissions)

	for c := range want.Paused {
		// A pause made again replaces its note (staging's is cleared).
		must(t, s.SetPaused(c, true, at0(), hub.SwitchNote{By: "bob"}))
		must(t, s.SetPaused(c, true, want.PausedAt[c].In(time.FixedZone("CET", 3600)), want.PauseNotes[c]))
	}
	for a, p := range want.Policies {
		must(t, s.SetPolicy(a, p, at0(), want.PolicyNotes[a]))
	}
	for i := len(holds) - 1; i >= 0; i-- {
		must(t, s.PutHold(holds[i]))
	}
	for _, d := range want.Decommissions {
		must(t, s.PutDecommission(d))
	}
	for _, r := range want.Applied {
		must(t, s.PutApplied(r))
	}
	// Put replaces.
	must(t, s.PutHold(hub.Hold{Target: holds[0].Target, Reason: "old", Since: t0(), Until: t0()}))
	must(t, s.PutHold(holds[0]))

	if got := load(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("Load before reopen:\n got %+v\nwant %+v", got, want)
	}
	must(t, s.Close())

	s = openT(t, path)
	if got := load(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("Load after reopen:\n got %+v\nwant %+v", got, want)
	}
}

func sortDecommissions(ds []hub.DecommissionRecord) {
	for i := range ds {
		for j := i + 1; j < len(ds); j++ {
			if ds[j].Ref.ID.String() < ds[i].Ref.ID.String() {
				ds[i], ds[j] = ds[j], ds[i]
			}
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestEmptyStore(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "hub.db"))
	got := load(t, s)
	if got.Paused == nil || got.Policies == nil || got.Applied == nil {
		t.Errorf("Load of an empty store has nil maps: %+v", got)
	}
	if len(got.Paused)+len(got.Policies)+len(got.Applied)+len(got.Holds)+len(got.Decommissions) != 0 {
		t.Errorf("Load of an empty store = %+v", got)
	}
	if s.Path() == "" {
		t.Error("Path is empty")
	}
}

func TestDelete(t *testing.T) {
	a := ref("prod", "shop", "api", hub.KindDeployment)
	b := ref("prod", "shop", "db", hub.KindService)
	hold := hub.Hold{Target: hub.HoldTarget{Scope: hub.HoldCluster, Name: "prod"}, Since: t0(), Until: t0().Add(time.Hour)}
	tests := []struct {
		name  string
		del   func(*Store) error
		check func(*testing.T, hub.Intent)
	}{
		{"unpause", func(s *Store) error { return s.SetPaused("prod", false, at0(), hub.SwitchNote{}) }, func(t *testing.T, in hub.Intent) {
			if len(in.Paused) != 1 || !in.Paused["dev"] {
				t.Errorf("Paused = %v, want only dev", in.Paused)
			}
		}},
		{"policy", func(s *Store) error { return s.SetPolicy("shop", "", at0(), hub.SwitchNote{}) }, func(t *testing.T, in hub.Intent) {
			if len(in.Policies) != 1 || in.Policies["web"] != hub.PolicyWarn {
				t.Errorf("Policies = %v, want only web", in.Policies)
			}
		}},
		{"hold", func(s *Store) error { return s.DeleteHold(hold.Target) }, func(t *testing.T, in hub.Intent) {
			if len(in.Holds) != 0 {
				t.Errorf("Holds = %v, want none", in.Holds)
			}
		}},
		{"expired hold", func(s *Store) error { return s.DeleteExpiredHold(hold) }, func(t *testing.T, in hub.Intent) {
			if len(in.Holds) != 0 {
				t.Errorf("Holds = %v, want none", in.Holds)
			}
		}},
		{"expired hold, renewed since", func(s *Store) error {
			// The hold the caller saw expire was replaced by a later one:
			// the later one stays.
			old := hold
			old.Until = hold.Until.Add(-time.Hour)
			return s.DeleteExpiredHold(old)
		}, func(t *testing.T, in hub.Intent) {
			if len(in.Holds) != 1 || !in.Holds[0].Until.Equal(hold.Until) {
				t.Errorf("Holds = %v, want the renewed %v", in.Holds, hold)
			}
		}},
		{"decommission", func(s *Store) error { return s.DeleteDecommission(a.ID) }, func(t *testing.T, in hub.Intent) {
			if len(in.Decommissions) != 1 || in.Decommissions[0].Ref.ID != b.ID {
				t.Errorf("Decommissions = %v, want only %s", in.Decommissions, b.ID)
			}
		}},
		{"applied", func(s *Store) error { return s.DeleteApplied(b.ID) }, func(t *testing.T, in hub.Intent) {
			if _, ok := in.Applied[a.ID]; len(in.Applied) != 1 || !ok {
				t.Errorf("Applied = %v, want only %s", in.Applied, a.ID)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hub.db")
			s := openT(t, path)
			must(t, s.SetPaused("prod", true, at0(), hub.SwitchNote{}))
			must(t, s.SetPaused("dev", true, at0(), hub.SwitchNote{}))
			must(t, s.SetPolicy("shop", hub.PolicyWarn, at0(), hub.SwitchNote{}))
			must(t, s.SetPolicy("web", hub.PolicyWarn, at0(), hub.SwitchNote{}))
			must(t, s.PutHold(hold))
			for _, r := range []hub.SpecRef{a, b} {
				must(t, s.PutDecommission(hub.DecommissionRecord{Ref: r, Since: t0()}))
				must(t, s.PutApplied(r))
			}
			must(t, tt.del(s))
			must(t, tt.del(s)) // deleting what is not there is not an error
			must(t, s.Close())
			tt.check(t, load(t, openT(t, path)))
		})
	}
}

func TestInvalidArguments(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "hub.db"))
	bad := hub.NodeID{Cluster: "prod", Kind: hub.KindService} // no resource
	tests := []struct {
		name string
		op   func() error
	}{
		{"pause empty cluster", func() error { return s.SetPaused("", true, at0(), hub.SwitchNote{}) }},
		{"policy empty app", func() error { return s.SetPolicy("", hub.PolicyWarn, at0(), hub.SwitchNote{}) }},
		{"hold bad scope", func() error { return s.PutHold(hub.Hold{Target: hub.HoldTarget{Scope: "team", Name: "x"}}) }},
		{"hold bad node", func() error {
			return s.PutHold(hub.Hold{Target: hub.HoldTarget{Scope: hub.HoldNode, Name: "nonsense"}})
		}},
		{"delete hold empty name", func() error { return s.DeleteHold(hub.HoldTarget{Scope: hub.HoldCluster}) }},
		{"decommission", func() error { return s.PutDecommission(hub.DecommissionRecord{Ref: hub.SpecRef{ID: bad}}) }},
		{"delete decommission", func() error { return s.DeleteDecommission(bad) }},
		{"applied", func() error { return s.PutApplied(hub.SpecRef{ID: bad}) }},
		{"delete applied", func() error { return s.DeleteApplied(hub.NodeID{}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), s.Path()) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
	got := load(t, s)
	if len(got.Paused)+len(got.Policies)+len(got.Applied)+len(got.Holds)+len(got.Decommissions) != 0 {
		t.Errorf("invalid writes stored something: %+v", got)
	}
}

func TestConcurrentWriters(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "hub.db"))
	const writers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*3)
	for w := range writers {
		wg.Go(func() {
			cluster := fmt.Sprintf("c%d", w)
			for i := range each {
				r := ref(cluster, "ns", fmt.Sprintf("obj%d", i), hub.KindConfigMap)
				errs <- s.PutApplied(r)
				errs <- s.SetPaused(cluster, i%2 == 0, at0(), hub.SwitchNote{})
				if _, err := s.Load(); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := load(t, s)
	if len(got.Applied) != writers*each {
		t.Errorf("Applied has %d records, want %d", len(got.Applied), writers*each)
	}
	if len(got.Paused) != 0 { // each writer's last SetPaused is false
		t.Errorf("Paused = %v, want none", got.Paused)
	}
}

func TestCloseIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	s, err := Open(path, Options{})
	must(t, err)
	if _, err := os.Stat(path + ".owner"); err != nil {
		t.Fatalf("owner sidecar while open: %v", err)
	}
	must(t, s.Close())
	must(t, s.Close())
	if _, err := os.Stat(path + ".owner"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("owner sidecar after Close: %v, want it removed", err)
	}
	if err := s.SetPaused("prod", true, at0(), hub.SwitchNote{}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("SetPaused after Close = %v, want an error naming the file", err)
	}
	if _, err := s.Load(); err == nil {
		t.Error("Load after Close: no error")
	}
}

func TestPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "driftwatch")
	path := filepath.Join(dir, "hub.db")
	openT(t, path)
	for _, c := range []struct {
		path string
		want fs.FileMode
	}{
		{dir, fs.ModeDir | 0o700},
		{filepath.Dir(dir), fs.ModeDir | 0o700},
		{path, 0o600},
		{path + ".owner", 0o600},
	} {
		st, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != c.want {
			t.Errorf("%s: mode %v, want %v", c.path, st.Mode(), c.want)
		}
	}
}

func TestOwnerSidecar(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	s, err := Open(path, Options{Now: func() time.Time { return t0() }})
	must(t, err)
	defer s.Close()
	b, err := os.ReadFile(path + ".owner")
	must(t, err)
	host, _ := os.Hostname()
	want := fmt.Sprintf("pid %d on %s since 2026-03-14T15:09:26Z\n", os.Getpid(), host)
	if string(b) != want {
		t.Errorf("owner sidecar = %q, want %q", b, want)
	}
}

func TestOwnerSidecarErrors(t *testing.T) {
	t.Run("cannot write", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hub.db")
		must(t, os.MkdirAll(filepath.Join(path+".owner", "x"), 0o700)) // a folder cannot be renamed over
		if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "owner file") {
			t.Fatalf("Open = %v, want an owner file error", err)
		}
		must(t, os.RemoveAll(path+".owner"))
		openT(t, path) // the failed Open released the file
	})
	t.Run("cannot remove", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hub.db")
		s, err := Open(path, Options{})
		must(t, err)
		must(t, os.Remove(path+".owner"))
		must(t, os.MkdirAll(filepath.Join(path+".owner", "x"), 0o700))
		if err := s.Close(); err == nil || !strings.Contains(err.Error(), "remove owner") {
			t.Fatalf("Close = %v, want a remove owner error", err)
		}
		must(t, os.RemoveAll(path+".owner"))
		openT(t, path) // the file was closed all the same
	})
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	openT(t, path)

	start := time.Now()
	_, err := Open(path, Options{Timeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("second Open took %v with a 100ms timeout", d)
	}
	for _, want := range []string{path, "pid " + strconv.Itoa(os.Getpid()), "locked by another driftwatch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}

	// Without a readable sidecar the error still says it is locked.
	must(t, os.WriteFile(path+".owner", nil, 0o600))
	_, err = Open(path, Options{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "owner unknown") {
		t.Errorf("Open with an empty sidecar = %v, want ErrLocked, owner unknown", err)
	}
	must(t, os.Remove(path+".owner"))
	_, err = Open(path, Options{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "owner unknown") {
		t.Errorf("Open without a sidecar = %v, want ErrLocked, owner unknown", err)
	}
}

// helperEnv makes the test binary hold a store open, as another driftwatch.
const helperEnv = "DRIFTWATCH_INTENT_TEST_HOLD"

// TestLockedByOtherProcess re-runs the test binary as another driftwatch
// that holds the store open (the child mode at the top of this test).
func TestLockedByOtherProcess(t *testing.T) {
	if path := os.Getenv(helperEnv); path != "" {
		s, err := Open(path, Options{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = s.Close()
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "hub.db")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestLockedByOtherProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}

	_, err = Open(path, Options{Timeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open = %v, want ErrLocked", err)
	}
	if want := "pid " + strconv.Itoa(cmd.Process.Pid) + " "; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the helper's pid", err)
	}

	_ = stdin.Close()
	must(t, cmd.Wait())
	openT(t, path) // released when the other process closed it
}

// writeBolt creates a bbolt file directly, as another program or an older
// driftwatch would.
func writeBolt(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	must(t, err)
	must(t, db.Update(fn))
	must(t, db.Close())
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	s := openT(t, path)
	must(t, s.Close())
	writeBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketMeta)).Put([]byte(keyVersion), []byte("7"))
	})
	before, err := os.ReadFile(path)
	must(t, err)

	_, err = Open(path, Options{})
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Open = %v, want ErrNewerSchema", err)
	}
	for _, want := range []string{path, "schema version 7", "knows up to 2", "written by a newer driftwatch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	after, err := os.ReadFile(path)
	must(t, err)
	if string(before) != string(after) {
		t.Error("refusing a newer file changed it")
	}
	if _, err := os.Stat(path + ".owner"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("owner sidecar after a refused Open: %v", err)
	}
}

func TestMigrateV0(t *testing.T) {
	a := ref("prod", "shop", "api", hub.KindDeployment)
	tests := []struct {
		name   string
		fill   func(tx *bolt.Tx) error
		wantIn hub.Intent
	}{
		{"no buckets", func(*bolt.Tx) error { return nil }, hub.Intent{}},
		{"some buckets", func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket([]byte(bucketApplied))
			if err != nil {
				return err
			}
			if err := b.Put([]byte(a.ID.String()), []byte(`{"id":"prod:shop/api:deployment","namespace":"shop","name":"api","kind":"deployment","application":"shop","hash":"sha256:api"}`)); err != nil {
				return err
			}
			p, err := tx.CreateBucket([]byte(bucketPaused))
			if err != nil {
				return err
			}
			return p.Put([]byte("prod"), []byte("true"))
		}, hub.Intent{Paused: map[string]bool{"prod": true}, Applied: map[hub.NodeID]hub.SpecRef{a.ID: a}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hub.db")
			writeBolt(t, path, tt.fill)
			s := openT(t, path)
			got := load(t, s)
			if len(got.Paused) != len(tt.wantIn.Paused) || len(got.Applied) != len(tt.wantIn.Applied) ||
				(len(tt.wantIn.Applied) > 0 && !reflect.DeepEqual(got.Applied, tt.wantIn.Applied)) {
				t.Errorf("Load after migration = %+v, want %+v", got, tt.wantIn)
			}
			must(t, s.Close())
			if v := readVersion(t, path); v != "2" {
				t.Errorf("schema version after migration = %q, want 2", v)
			}
		})
	}
}

// TestMigrateV1: a version 1 file (pauses without notes) is brought to
// version 2 with its pauses as they were, and takes notes from then on.
func TestMigrateV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	writeBolt(t, path, func(tx *bolt.Tx) error {
		for _, name := range []string{bucketMeta, bucketPaused, bucketPolicies, bucketHolds, bucketDecommissions, bucketApplied} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		if err := tx.Bucket([]byte(bucketMeta)).Put([]byte(keyVersion), []byte("1")); err != nil {
			return err
		}
		return tx.Bucket([]byte(bucketPaused)).Put([]byte("prod"), []byte("true"))
	})
	s := openT(t, path)
	got := load(t, s)
	if !got.Paused["prod"] || len(got.PausedAt) != 0 || len(got.PauseNotes) != 0 {
		t.Errorf("Load after migration = %+v, want prod paused without time or note", got)
	}
	note := hub.SwitchNote{By: "alice", Reason: "INC-1"}
	must(t, s.SetPaused("dev", true, at0(), note))
	must(t, s.Close())
	if v := readVersion(t, path); v != "2" {
		t.Errorf("schema version after migration = %q, want 2", v)
	}
	s = openT(t, path)
	got = load(t, s)
	if !got.Paused["prod"] || !got.Paused["dev"] || got.PauseNotes["dev"] != note || !got.PausedAt["dev"].Equal(at0()) || len(got.PauseNotes) != 1 {
		t.Errorf("Load after a pause with a note = %+v", got)
	}
	// Resuming deletes the note with the pause.
	must(t, s.SetPaused("dev", false, at0(), hub.SwitchNote{}))
	if got := load(t, s); got.Paused["dev"] || len(got.PauseNotes) != 0 || len(got.PausedAt) != 0 {
		t.Errorf("Load after resume = %+v, want dev's pause and note gone", got)
	}
}

func readVersion(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	must(t, err)
	defer db.Close()
	var v string
	must(t, db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(bucketMeta)); b != nil {
			v = string(b.Get([]byte(keyVersion)))
		}
		return nil
	}))
	return v
}

func TestMigrationFramework(t *testing.T) {
	mark := func(key string) migration {
		return func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucketMeta)).Put([]byte(key), []byte("done")) }
	}
	fail := func(*bolt.Tx) error { return errors.New("boom") }

	if n := len(migrations()); n != 2 {
		t.Fatalf("len(migrations()) = %d, want 2 (schema version 2)", n)
	}

	t.Run("steps from the file's version", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hub.db")
		s := openT(t, path) // version 2
		must(t, s.upgrade([]migration{0: fail, 1: fail, 2: mark("step2"), 3: mark("step3")}))
		must(t, s.upgrade([]migration{0: fail, 1: fail, 2: fail, 3: fail})) // up to date: nothing runs
		must(t, s.Close())
		if v := readVersion(t, path); v != "4" {
			t.Errorf("version = %q, want 4", v)
		}
		db, err := bolt.Open(path, 0o600, nil)
		must(t, err)
		defer db.Close()
		must(t, db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(bucketMeta))
			if b.Get([]byte("step2")) == nil || b.Get([]byte("step3")) == nil {
				t.Error("a step did not run")
			}
			return nil
		}))
	})
	t.Run("a failing step changes nothing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hub.db")
		s := openT(t, path)
		err := s.upgrade([]migration{0: fail, 1: fail, 2: mark("step2"), 3: fail})
		if err == nil || !strings.Contains(err.Error(), "migrate schema version 3 to 4: boom") {
			t.Fatalf("upgrade = %v, want the step's error", err)
		}
		must(t, s.Close())
		if v := readVersion(t, path); v != "2" {
			t.Errorf("version = %q, want 2", v)
		}
	})
}

func TestDefaultPath(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		name   string
		getenv func(string) string
		hubID  string
		want   string
	}{
		{"xdg", env("XDG_STATE_HOME", "/state", "HOME", "/home/u"), "prod-hub", "/state/driftwatch/prod-hub.db"},
		{"home", env("HOME", "/home/u"), "prod-hub", "/home/u/.local/state/driftwatch/prod-hub.db"},
		{"relative xdg ignored", env("XDG_STATE_HOME", "state", "HOME", "/home/u"), "h", "/home/u/.local/state/driftwatch/h.db"},
		{"no home", env(), "h", ""},
		{"relative home", env("HOME", "home"), "h", ""},
		{"empty id", env("HOME", "/home/u"), "", ""},
		{"dot", env("HOME", "/home/u"), ".", ""},
		{"dotdot", env("HOME", "/home/u"), "..", ""},
		{"slash", env("HOME", "/home/u"), "../etc/x", ""},
		{"backslash", env("HOME", "/home/u"), `a\b`, ""},
		{"nul", env("HOME", "/home/u"), "a\x00b", ""},
		{"dots inside", env("HOME", "/home/u"), "a..b", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DefaultPath(tt.getenv, tt.hubID); got != tt.want {
				t.Errorf("DefaultPath(%q) = %q, want %q", tt.hubID, got, tt.want)
			}
		})
	}
}

func TestOpenEmptyPath(t *testing.T) {
	if _, err := Open("", Options{}); err == nil {
		t.Error("Open(\"\") succeeded")
	}
}

// TestAppliedGroupCommit checks the group commit of applied records: many
// writers putting and deleting records concurrently, each call returning
// only once its own write is durable, lose nothing and resurrect nothing.
func TestAppliedGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	s := openT(t, path)
	const writers, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r := ref(fmt.Sprintf("c%d", w), "ns", fmt.Sprintf("obj%d", i), hub.KindDeployment)
				errs <- s.PutApplied(r)
				if i%2 == 0 {
					errs <- s.DeleteApplied(r.ID)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := load(t, openT(t, path)) // what the file holds, not a cache
	if len(got.Applied) != writers*each/2 {
		t.Fatalf("Applied has %d records, want %d", len(got.Applied), writers*each/2)
	}
	for id := range got.Applied {
		var i int
		if _, err := fmt.Sscanf(id.Name(), "obj%d", &i); err != nil || i%2 == 0 {
			t.Errorf("record %s should have been deleted", id)
		}
	}
}

// at0 is the time tests pause clusters at.
func at0() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }
