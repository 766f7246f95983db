package clusters

import "k8s.io/client-go/kubernetes"

// listWatchClient is the client the watch manager's informers are built
// on: it tells client-go's reflectors to fill their caches with a LIST and
// then WATCH, not with a watch-list stream. client-go's watch-list path
// waits out its retry backoff (up to 30s) without looking at its context
// after a refused connection or a 429, so a stopping manager of an
// unreachable or throttled cluster would wait that long for its informers;
// every wait of the LIST and WATCH path ends with the context. The LIST is
// label-filtered and served from the apiserver's watch cache (resource
// version "0"), as the watch-list stream would be.
type listWatchClient struct {
	kubernetes.Interface
}

// IsWatchListSemanticsUnSupported makes client-go's reflectors use LIST and
// WATCH (see k8s.io/client-go/util/watchlist).
func (listWatchClient) IsWatchListSemanticsUnSupported() bool { return true }
