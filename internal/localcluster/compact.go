package localcluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Compact compacts the cluster's etcd to its current revision and
// defragments it: the store keeps the live keys and drops every older
// version and the space they held, as a long-running control plane's
// periodic compaction (kube-apiserver's --etcd-compaction-interval, 5m by
// default) and an operator's defragmentation would. A bench that measures
// one phase after another calls it between them, so that each phase starts
// on a store without the history the phases before it wrote. It speaks to
// etcd's JSON gateway on loopback; the apiserver's watches carry on (their
// cache follows etcd from the newest revision).
func (c *Cluster) Compact(ctx context.Context) error {
	c.mu.Lock()
	base := "http://127.0.0.1:" + strconv.Itoa(c.ports.etcdClient)
	c.mu.Unlock()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: 2 * time.Minute}
	// A range of one key that need not exist answers with the store's
	// current revision in its header.
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	key := base64.StdEncoding.EncodeToString([]byte("/"))
	if err := etcdCall(ctx, client, base+"/v3/kv/range", map[string]any{"key": key, "limit": 1, "keys_only": true}, &rng); err != nil {
		return fmt.Errorf("localcluster: cluster %s: compact: read the revision: %w", c.Name, err)
	}
	rev, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
	if err != nil || rev < 1 {
		return fmt.Errorf("localcluster: cluster %s: compact: etcd answered revision %q", c.Name, rng.Header.Revision)
	}
	if err := etcdCall(ctx, client, base+"/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil); err != nil {
		return fmt.Errorf("localcluster: cluster %s: compact to revision %d: %w", c.Name, rev, err)
	}
	if err := etcdCall(ctx, client, base+"/v3/maintenance/defragment", map[string]any{}, nil); err != nil {
		return fmt.Errorf("localcluster: cluster %s: defragment: %w", c.Name, err)
	}
	return nil
}

// etcdCall posts body as JSON to one of etcd's gateway endpoints and, when
// out is not nil, decodes the answer into it. An answer other than 200 is
// an error carrying etcd's message.
func etcdCall(ctx context.Context, client *http.Client, url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}
