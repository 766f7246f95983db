package gitsource

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshGitServer is a minimal SSH server on loopback that runs
// git upload-pack for the repositories of a fixture, for one authorized
// client key.
type sshGitServer struct {
	addr    string
	hostKey ssh.PublicKey
}

// startSSHGitServer starts the server; it stops, and its goroutines
// return, when the test ends.
func startSSHGitServer(t testing.TB, f *fixture, client ssh.PublicKey) *sshGitServer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	host, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if string(key.Marshal()) == string(client.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	cfg.AddHostKey(host)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveSSHConn(c, cfg, f)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return &sshGitServer{addr: ln.Addr().String(), hostKey: host.PublicKey()}
}

// serveSSHConn serves one connection: each session may exec
// git-upload-pack '<path>'.
func serveSSHConn(c net.Conn, cfg *ssh.ServerConfig, f *fixture) {
	sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		_ = c.Close()
		return
	}
	defer sc.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		ssh.DiscardRequests(reqs)
	}()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ch.Close()
			for req := range creqs {
				if req.Type != "exec" || len(req.Payload) < 4 {
					_ = req.Reply(false, nil)
					continue
				}
				n := binary.BigEndian.Uint32(req.Payload)
				cmdline := string(req.Payload[4 : 4+min(int(n), len(req.Payload)-4)])
				path, ok := strings.CutPrefix(cmdline, "git-upload-pack '")
				path, ok2 := strings.CutSuffix(path, "'")
				if !ok || !ok2 || strings.Contains(path, "..") {
					_ = req.Reply(false, nil)
					return
				}
				_ = req.Reply(true, nil)
				// As sshd does: once git exits, its status is sent and the
				// channel closed, whatever the client still sends (which
				// ends the copy of stdin).
				cmd := exec.Command(f.git, "upload-pack", filepath.Join(f.root, path))
				cmd.Env = gitEnv(f.home)
				cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
				stdin, err := cmd.StdinPipe()
				if err == nil {
					err = cmd.Start()
				}
				if err != nil {
					return
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _ = io.Copy(stdin, ch)
					_ = stdin.Close()
				}()
				status := uint32(0)
				if err := cmd.Wait(); err != nil {
					status = 1
				}
				_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
				return
			}
		}()
	}
}

// TestFetchSSH fetches over SSH with a key file and a known_hosts file,
// and checks that an unknown or changed host key, and a key the server
// does not accept, are refused.
func TestFetchSSH(t *testing.T) {
	f := newFixture(t)
	c := f.commit("over ssh", map[string]string{"f": "ssh"})
	f.push()
	dir := t.TempDir()
	client := newSSHKey(t, dir, "id_client")
	stranger := newSSHKey(t, dir, "id_stranger")
	srv := startSSHGitServer(t, f, client.signer.PublicKey())
	url := fmt.Sprintf("ssh://git@%s/repo.git", srv.addr)
	known := writeFile(t, dir, "known_hosts", knownhosts.Line([]string{knownhosts.Normalize(srv.addr)}, srv.hostKey)+"\n")
	other := writeFile(t, dir, "other_hosts", knownhosts.Line([]string{knownhosts.Normalize(srv.addr)}, stranger.signer.PublicKey())+"\n")
	empty := writeFile(t, dir, "empty_hosts", "# none\n")

	r := openOK(t, Options{URL: url, Ref: "main", CacheDir: t.TempDir(), Auth: Auth{SSHKeyFile: client.path, KnownHostsFile: known}})
	rev := fetchOK(t, r)
	if rev.Commit != c || readTree(t, rev.Dir, "f") != "ssh" || rev.Downloaded == 0 {
		t.Fatalf("%+v", rev)
	}
	if again := fetchOK(t, r); again.Downloaded != 0 || again.Commit != c {
		t.Fatalf("second fetch: %+v", again)
	}
	c2 := f.commit("second", map[string]string{"f": "ssh 2"})
	f.push()
	if rev := fetchOK(t, r); rev.Commit != c2 || readTree(t, rev.Dir, "f") != "ssh 2" {
		t.Fatalf("after a push: %+v", rev)
	}

	bad := []struct {
		name string
		auth Auth
		want string
	}{
		{"changed host key", Auth{SSHKeyFile: client.path, KnownHostsFile: other}, "the server's host key differs from the one in auth.knownHostsFile " + other},
		{"unknown host", Auth{SSHKeyFile: client.path, KnownHostsFile: empty}, "the server's host key is not in auth.knownHostsFile " + empty},
		{"key not accepted", Auth{SSHKeyFile: stranger.path, KnownHostsFile: known}, "unable to authenticate"},
	}
	missing := strings.Replace(url, "repo.git", "missing.git", 1)
	r = openOK(t, Options{URL: missing, CacheDir: t.TempDir(), Auth: Auth{SSHKeyFile: client.path, KnownHostsFile: known}})
	if _, err := r.Fetch(t.Context()); err == nil || !strings.Contains(err.Error(), "no such repository") || !strings.Contains(err.Error(), "does not appear to be a git repository") {
		t.Fatalf("missing repository: %v", err)
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := openOK(t, Options{URL: url, CacheDir: t.TempDir(), Auth: tc.auth})
			_, err := r.Fetch(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), url) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, url, tc.want)
			}
		})
	}
}

// TestFetchSSHTimeout points a Repo at a server that accepts connections
// and never speaks SSH: Fetch gives up after Options.Timeout.
func TestFetchSSHTimeout(t *testing.T) {
	addr := startSilentServer(t)
	dir := t.TempDir()
	k := newSSHKey(t, dir, "id")
	kh := writeFile(t, dir, "known_hosts", knownhosts.Line([]string{knownhosts.Normalize(addr)}, k.signer.PublicKey())+"\n")
	r := openOK(t, Options{URL: "ssh://git@" + addr + "/repo.git", CacheDir: t.TempDir(), Timeout: 300 * time.Millisecond,
		Auth: Auth{SSHKeyFile: k.path, KnownHostsFile: kh}})
	start := time.Now()
	_, err := r.Fetch(t.Context())
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Fetch from a silent SSH server: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the timeout took %v", d)
	}
}
