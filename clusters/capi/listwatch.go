package capi

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// listWatchClient and listWatchDynamic are the clients discovery's
// informers are built on: they tell client-go's reflectors to fill their
// caches with a LIST and then WATCH, not with a watch-list stream, whose
// retry backoff (up to 30 s after a refused connection or a 429) does not
// look at its context: an unreachable management cluster would hold a
// stopping hub that long. Every wait of the LIST and WATCH path ends with
// the context.
type listWatchClient struct {
	kubernetes.Interface
}

// IsWatchListSemanticsUnSupported makes client-go's reflectors use LIST and
// WATCH (see k8s.io/client-go/util/watchlist).
func (listWatchClient) IsWatchListSemanticsUnSupported() bool { return true }

// listWatchDynamic is listWatchClient for the dynamic client.
type listWatchDynamic struct {
	dynamic.Interface
}

// IsWatchListSemanticsUnSupported makes client-go's reflectors use LIST and
// WATCH.
func (listWatchDynamic) IsWatchListSemanticsUnSupported() bool { return true }
