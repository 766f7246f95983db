package coord

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// memberInfo is what the agreement rule reads of one live replica.
type memberInfo struct {
	id string
	// hash is the desired-state hash its membership Lease publishes ("":
	// none, taken as agreeing).
	hash string
	// since is when it joined: its membership Lease's acquire time, as the
	// replica wrote it (every replica reads the same value, so every one
	// orders the replicas alike).
	since time.Time
	// owner is true while it holds at least one claim.
	owner bool
}

// reference returns the desired-state hash a replica must publish to take
// clusters: the hash most of the live replicas holding claims publish, or,
// while none holds one, the hash most of the live replicas publish. A tie
// goes to the hash of the replica that joined first (then the smaller id).
// Replicas that publish no hash do not count; "" when none publishes one.
//
// A replica whose hash differs from the reference gives its claims up, so
// the owners are the replicas that agree: a replica started or reloaded
// with another config never outvotes them, and the fleet moves to a new
// config once most of its owners run it.
func reference(ms []memberInfo) string {
	owners := false
	for _, m := range ms {
		owners = owners || (m.owner && m.hash != "")
	}
	count := make(map[string]int)
	first := make(map[string]memberInfo) // per hash, its replica that joined first
	for _, m := range ms {
		if m.hash == "" || (owners && !m.owner) {
			continue
		}
		count[m.hash]++
		if f, ok := first[m.hash]; !ok || older(m, f) {
			first[m.hash] = m
		}
	}
	best := ""
	for _, h := range slices.Sorted(maps.Keys(count)) {
		switch {
		case best == "", count[h] > count[best]:
			best = h
		case count[h] == count[best] && older(first[h], first[best]):
			best = h
		}
	}
	return best
}

// older reports whether a joined before b (ties: the smaller id).
func older(a, b memberInfo) bool {
	if !a.since.Equal(b.since) {
		return a.since.Before(b.since)
	}
	return a.id < b.id
}

// agrees reports whether a replica may take clusters under the reference
// hash ref: it publishes ref, or no hash, or there is no reference.
func agrees(hash, ref string) bool { return hash == "" || ref == "" || hash == ref }

// eligible returns the ids of the replicas that may take clusters under
// the reference ref, sorted.
func eligible(ms []memberInfo, ref string) []string {
	var out []string
	for _, m := range ms {
		if agrees(m.hash, ref) {
			out = append(out, m.id)
		}
	}
	slices.Sort(out)
	return out
}

// refusal says why replica self, of ms, may take no cluster under the
// reference ref ("" when it may).
func refusal(self string, ms []memberInfo, ref string) string {
	i := slices.IndexFunc(ms, func(m memberInfo) bool { return m.id == self })
	if i < 0 || agrees(ms[i].hash, ref) {
		return ""
	}
	var with []string
	owners := false
	for _, m := range ms {
		owners = owners || (m.owner && m.hash == ref)
	}
	for _, m := range ms {
		if m.hash == ref && (m.owner || !owners) {
			with = append(with, m.id)
		}
	}
	slices.Sort(with)
	whose := "the live replicas"
	if owners {
		whose = "the replicas owning clusters"
	}
	return fmt.Sprintf("its desired state (hash %s) differs from that of %s (hash %s: %s): it takes no cluster until their configs agree",
		short(ms[i].hash), whose, short(ref), strings.Join(with, ", "))
}

// short abbreviates a hash for messages.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
