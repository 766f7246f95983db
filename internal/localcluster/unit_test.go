package localcluster

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftwatch/driftwatch/internal/localcluster/kwokstages"
)

func TestPKI(t *testing.T) {
	p, err := newPKI("c1")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.caCertPEM) {
		t.Fatal("CA certificate does not parse")
	}
	block, _ := pem.Decode(p.serverCertPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"127.0.0.1", "localhost", "kubernetes.default.svc"} {
		if _, err := cert.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	if !cert.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("first IP SAN = %v", cert.IPAddresses[0])
	}
	if block, _ := pem.Decode(p.saKeyPEM); block == nil || block.Type != "RSA PRIVATE KEY" {
		t.Error("service-account key is not an RSA private key")
	} else if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
		t.Error(err)
	}
	dir := t.TempDir()
	f := newPKIFiles(dir)
	if err := p.write(f); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(f.saKey)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("sa.key mode %v, want 0600", st.Mode().Perm())
	}
}

func TestTokenFile(t *testing.T) {
	got := string(tokenFile([]tokenEntry{
		{token: "t1", user: "admin", groups: []string{"system:masters"}},
		{token: "t2", user: "alice"},
		{token: "t3", user: "bob", groups: []string{"a", "b"}},
	}))
	want := "t1,admin,admin,\"system:masters\"\nt2,alice,alice\nt3,bob,bob,\"a,b\"\n"
	if got != want {
		t.Fatalf("tokenFile =\n%s\nwant\n%s", got, want)
	}
	if a, b := newToken(), newToken(); a == b || len(a) != 64 {
		t.Fatalf("tokens %q %q", a, b)
	}
}

func TestOptionsDefaults(t *testing.T) {
	bin := t.TempDir()
	for _, b := range []string{binEtcd, binAPIServer, binControllerManager, binScheduler, binKwok} {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o, err := Options{BinDir: bin, Full: true}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.Count != 1 || len(o.Names) != 1 || o.Names[0] != "c1" || !o.ControllerManager || o.Nodes != 1 || o.Logger == nil {
		t.Fatalf("defaults: %+v", o)
	}
	o, err = Options{BinDir: bin, Count: 3}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.Names, ",") != "c1,c2,c3" {
		t.Fatalf("names %v", o.Names)
	}
	o, err = Options{BinDir: bin, Names: []string{"eu", "us"}}.withDefaults()
	if err != nil || o.Count != 2 {
		t.Fatalf("Names only: %+v, %v", o, err)
	}

	for name, bad := range map[string]Options{
		"no bin dir":     {},
		"names mismatch": {BinDir: bin, Count: 3, Names: []string{"a"}},
		"bad name":       {BinDir: bin, Names: []string{"Not_A_Label"}},
		"duplicate name": {BinDir: bin, Names: []string{"a", "a"}},
		"reserved user":  {BinDir: bin, Users: []string{adminUser}},
		"bad user":       {BinDir: bin, Users: []string{"x,y"}},
		"missing binary": {BinDir: t.TempDir()},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := bad.withDefaults(); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestKwokStagesEmbedded(t *testing.T) {
	names := kwokstages.Names()
	if len(names) < 3 {
		t.Fatalf("embedded stages: %v", names)
	}
	y := string(kwokstages.YAML())
	for _, want := range []string{"kind: Stage", "kind: Node", "kind: Pod"} {
		if !strings.Contains(y, want) {
			t.Errorf("stages lack %q", want)
		}
	}
}

func TestTailFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var b strings.Builder
	for i := range 100 {
		b.WriteString(strings.Repeat("x", i%7) + "line\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(tailFile(path, 30), "\n")
	if len(got) != 30 || got[29] != strings.Repeat("x", 99%7)+"line" {
		t.Fatalf("tail: %d lines, last %q", len(got), got[len(got)-1])
	}
	if tailFile(filepath.Join(t.TempDir(), "missing"), 3) != "" {
		t.Fatal("tail of a missing file")
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := freePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v", ports)
		}
		seen[p] = true
	}
}

// TestStartFailureShowsLogs uses a fake etcd that exits at once: Start must
// fail quickly with the tail of its log in the error and leave no folder.
func TestStartFailureShowsLogs(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("needs /bin/sh")
	}
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'line one'\necho 'fake etcd: something broke' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, binEtcd), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, binAPIServer), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	t.Setenv("TMPDIR", parent)
	set, err := Start(t.Context(), Options{BinDir: bin, Count: 2})
	if err == nil {
		set.Stop()
		t.Fatal("Start succeeded with a broken etcd")
	}
	t.Logf("Start error:\n%v", err)
	for _, want := range []string{"etcd exited", "exit status 3", "fake etcd: something broke", "line one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("temporary folder left behind: %v", entries)
	}
}

func TestRemoveStaleTempDirs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process liveness is not checked on Windows")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name, owner string) string {
		dir := filepath.Join(tmp, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	stale := mk(tempDirPrefix+"dead", strconv.Itoa(dead.Process.Pid)+"\n")
	live := mk(tempDirPrefix+"live", strconv.Itoa(os.Getppid()))
	unowned := mk(tempDirPrefix+"new", "")
	other := mk("something-else", strconv.Itoa(dead.Process.Pid))

	removeStaleTempDirs(slog.New(slog.DiscardHandler))
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale folder kept: %v", err)
	}
	for _, dir := range []string{live, unowned, other} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s removed: %v", dir, err)
		}
	}
}

func TestStatCPU(t *testing.T) {
	// utime 250 and stime 50 ticks; the command name holds a space and a ')'.
	line := []byte("4242 (kube apiserver) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 0 0\n")
	d, err := statCPU(line)
	if err != nil || d != 3*time.Second {
		t.Fatalf("statCPU = %v, %v; want 3s", d, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 eleven 12"} {
		if _, err := statCPU([]byte(bad)); err == nil {
			t.Errorf("statCPU(%q): no error", bad)
		}
	}
}
