package coord

import (
	"hash/fnv"
	"slices"
)

// Owner returns the member that owns a cluster among members: the one with
// the highest rendezvous weight (highest random weight hashing) for the
// pair, ties broken by the smaller member id. It is a pure function of its
// arguments, so every replica that sees the same members computes the same
// owner, and a member joining or leaving moves only the clusters it wins or
// held. "" when members is empty.
func Owner(cluster string, members []string) string {
	best, bestW := "", uint64(0)
	for _, m := range members {
		w := weight(cluster, m)
		if best == "" || w > bestW || (w == bestW && m < best) {
			best, bestW = m, w
		}
	}
	return best
}

// Assign returns the clusters of clusters that member owns among members,
// sorted.
func Assign(member string, clusters, members []string) []string {
	var out []string
	for _, c := range clusters {
		if Owner(c, members) == member {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// weight is the rendezvous weight of a (cluster, member) pair: FNV-1a of
// both, separated by a byte neither id can hold, then mixed with
// SplitMix64's finaliser (FNV alone leaves the high bits of similar
// strings correlated).
func weight(cluster, member string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(cluster))
	h.Write([]byte{0})
	h.Write([]byte(member))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
