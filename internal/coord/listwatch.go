package coord

import "k8s.io/client-go/kubernetes"

// listWatchClient is the client the coordinator's Lease informer is built
// on: it tells client-go's reflector to fill its cache with a LIST and then
// WATCH, not with a watch-list stream, whose retry backoff (up to 30 s
// after a refused connection or a 429) does not look at its context: an
// unreachable coordination cluster would hold a stopping replica that
// long. Every wait of the LIST and WATCH path ends with the context.
type listWatchClient struct {
	kubernetes.Interface
}

// IsWatchListSemanticsUnSupported makes client-go's reflectors use LIST and
// WATCH (see k8s.io/client-go/util/watchlist).
func (listWatchClient) IsWatchListSemanticsUnSupported() bool { return true }
