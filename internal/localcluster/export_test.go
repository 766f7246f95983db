package localcluster

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
)

// PIDs returns the process ids of c's running components by binary name
// (tests only).
func PIDs(c *Cluster) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := map[string]int{}
	for name, p := range c.procs {
		if !p.exited() {
			pids[name] = p.pid()
		}
	}
	return pids
}

// EtcdRevisionReadable reports whether c's etcd still holds the version
// of key at revision rev, or has compacted it away (tests only).
func EtcdRevisionReadable(c *Cluster, key string, rev int64) (bool, error) {
	c.mu.Lock()
	base := "http://127.0.0.1:" + strconv.Itoa(c.ports.etcdClient)
	c.mu.Unlock()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	err := etcdCall(context.Background(), client, base+"/v3/kv/range",
		map[string]any{"key": base64.StdEncoding.EncodeToString([]byte(key)), "revision": strconv.FormatInt(rev, 10)}, nil)
	switch {
	case err == nil:
		return true, nil
	case strings.Contains(err.Error(), "compacted"):
		return false, nil
	}
	return false, err
}
