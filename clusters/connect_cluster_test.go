package clusters

import (
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftwatch/driftwatch/hub"
	"github.com/driftwatch/driftwatch/internal/localcluster"
	"github.com/driftwatch/driftwatch/internal/localcluster/lctest"
)

// countingProxy forwards TCP connections from a loopback port to target
// and counts the connections it accepted.
type countingProxy struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln}
	var mu sync.Mutex
	var open []net.Conn
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, up)
			mu.Unlock()
			p.wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer p.wg.Done()
				_, _ = io.Copy(dst, src)
				_ = dst.Close()
				_ = src.Close()
			}
			go pipe(up, c)
			go pipe(c, up)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// TestOneConnectionPerCluster: a manager watching four namespaces (twelve
// informers and the probe) reaches the cluster over one connection: its
// informers start once the first probe has opened it, and share it. When
// they all started at once on an empty pool, each dialled and handshook a
// connection of its own (thirteen here), all but one closed again.
func TestOneConnectionPerCluster(t *testing.T) {
	set := lctest.Start(t, localcluster.Options{Count: 1})
	lc := set.Clusters[0]
	kc, err := clientcmd.LoadFromFile(lc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var proxy *countingProxy
	for _, c := range kc.Clusters {
		host := c.Server[len("https://"):]
		if _, _, err := net.SplitHostPort(host); err != nil {
			t.Fatalf("server %q: %v", c.Server, err)
		}
		if proxy != nil {
			t.Fatal("the kubeconfig has more than one cluster")
		}
		proxy = startCountingProxy(t, host)
		c.Server = "https://" + proxy.ln.Addr().String()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	namespaces := []string{"conn-a", "conn-b", "conn-c", "conn-d"}
	cfg := ClusterConfig{ID: lc.Name, Kubeconfig: path, Namespaces: namespaces}
	_, be := runRegistryFor(t, cfg)
	// The writes and reads the loop makes go over the same connection.
	spec := deploymentSpec(t, lc.Name, "conn-a", "api")
	for i := range 3 {
		writeOnce(t, be, spec, i)
	}
	time.Sleep(200 * time.Millisecond) // a dial racing the last request would have been accepted by now
	if got := proxy.accepted.Load(); got != 1 {
		t.Fatalf("the manager of %d namespaces opened %d connections to the cluster, want 1", len(namespaces), got)
	}
	if st := be.Health().State; st != hub.ClusterSynced {
		t.Fatalf("cluster state %s, want synced", st)
	}
}
