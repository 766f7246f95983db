package hub

// TakeOver prepares the hub to manage a cluster this replica has just
// taken over from another: it re-reads the intent the replicas share and
// adopts what holds for the cluster. This stand-in re-reads the operator's
// overrides (pauses, holds, policies) only; the full method also adopts
// the cluster's applied and decommission records.
func (h *Hub) TakeOver(cluster string) error { return h.RefreshIntent() }
