package hub

import (
	"fmt"
	"slices"
	"time"
)

// Contest describes a fight with another writer over one NodeID: repairs
// undone again and again by the same field manager. While it lasts the
// NodeID's status is StatusContested and repairs back off exponentially.
type Contest struct {
	// Manager is the field manager that undid the repairs ("" when it is
	// unknown, as for deletes).
	Manager string
	// Fields are the fields it changed, as the last attribution named
	// them (none for deletes).
	Fields []string `json:",omitempty"`
	// Undone counts the repairs it undid in a row.
	Undone int
	// Since is when the fight was detected.
	Since time.Time
	// Backoff is the current wait between repairs.
	Backoff time.Duration
	// NextAttempt is when the next repair goes through; zero once it went
	// through and the hub watches whether it sticks.
	NextAttempt time.Time `json:",omitzero"`
	// ClearsAt, once a repair went through, is when the fight is over if
	// that repair still holds.
	ClearsAt time.Time `json:",omitzero"`
}

// Who names the other writer for messages.
func (c Contest) Who() string {
	if c.Manager == "" {
		return "another writer (unknown field manager)"
	}
	return c.Manager
}

// fightState is the loop's bookkeeping of fights over one NodeID (part of
// nodeLoop, guarded by loopState.mu).
type fightState struct {
	// with is the manager whose drifts undid our recent repairs, undone
	// how many in a row; repairs numbers our repairs and counted is the
	// number of the last one counted as undone (each counts once).
	with    string
	undone  int
	repairs int
	counted int
	// contest is the fight being shown, nil when there is none.
	contest *Contest
}

// resetFight forgets every fight over the NodeID (its spec or ignore rules
// changed: what was fought over may be ignored now).
func (n *nodeLoop) resetFight() {
	r := n.rep
	if r == nil {
		return // nothing to forget
	}
	r.recent, r.fights, r.backoffTill = nil, 0, time.Time{}
	r.fight = fightState{repairs: r.fight.repairs, counted: r.fight.repairs}
}

// noteUndo records that a drift by manager undid our latest repair (when
// one was made within the fight window) and returns how many repairs that
// manager undid in a row. recent must already be trimmed to the window.
func (n *nodeRepairs) noteUndo(manager string) int {
	if len(n.recent) == 0 {
		n.fight.with, n.fight.undone = manager, 0
		return 0
	}
	if n.fight.counted == n.fight.repairs {
		if manager != n.fight.with {
			n.fight.with, n.fight.undone = manager, 1
		}
		return n.fight.undone
	}
	n.fight.counted = n.fight.repairs
	if manager == n.fight.with {
		n.fight.undone++
	} else {
		n.fight.with, n.fight.undone = manager, 1
	}
	return n.fight.undone
}

// managerOf is the manager an attribution names ("" for none).
func managerOf(a *Attribution) string {
	if a == nil {
		return ""
	}
	return a.Manager
}

// contestedReason is the status reason of a contested NodeID.
func contestedReason(c Contest, now time.Time) string {
	switch {
	case !c.NextAttempt.IsZero():
		return fmt.Sprintf("contested with %s: %d repairs undone; backoff %s, next repair at %s (in %s)",
			c.Who(), c.Undone, c.Backoff, c.NextAttempt.Format("15:04:05"), max(c.NextAttempt.Sub(now), 0).Round(time.Second))
	case !c.ClearsAt.IsZero():
		return fmt.Sprintf("contested with %s: last repair holding; cleared at %s if it still holds",
			c.Who(), c.ClearsAt.Format("15:04:05"))
	}
	return "contested with " + c.Who()
}

// contestFor updates the NodeID's contest for a backoff of wait ending at
// till, against the manager whose drift (with fields) was just classified.
// Callers hold h.mu.
func (n *nodeRepairs) contestFor(manager string, fields []string, wait time.Duration, till, now time.Time) Contest {
	c := n.fight.contest
	if c == nil || c.Manager != manager {
		c = &Contest{Manager: manager, Since: now}
	} else {
		cp := *c
		c = &cp
	}
	c.Fields = slices.Clone(fields)
	c.Undone = n.fight.undone
	c.Backoff = wait.Round(time.Second)
	if c.Backoff == 0 {
		c.Backoff = wait
	}
	c.NextAttempt = till
	c.ClearsAt = time.Time{}
	n.fight.contest = c
	return *c
}

// nodeExtra is what the status store keeps of a NodeID beyond its status
// that only drift sets: the latest drift record, the repairs applied and
// when the latest was verified, the differences ignore rules cover and the
// current contest. Most NodeIDs never drift, so it is a pointer that stays
// nil (see nodeStatus.more).
type nodeExtra struct {
	repair     *Repair
	repairs    int
	repairedAt time.Time
	ignored    []IgnoredField
	contest    *Contest
	// diagnosis says why a stuck rollout does not progress (see
	// NodeStatus.Diagnosis); cleared when the status is no longer stuck.
	diagnosis []string
}

// setIgnored records the differences ignore rules cover on a NodeID's last
// comparison (none clears them).
func (s *store) setIgnored(id NodeID, ignored []IgnoredField) {
	s.mu.Lock()
	n := s.nodeLocked(id)
	changed := n != nil && (len(ignored) > 0 || (n.extra != nil && len(n.extra.ignored) > 0))
	if changed {
		n.more().ignored = ignored
		n.trimExtra()
	}
	s.mu.Unlock()
	if changed {
		signal(s.dirty)
	}
}

// setContest records a NodeID's contest (nil clears it).
func (s *store) setContest(id NodeID, c *Contest) {
	s.mu.Lock()
	n := s.nodeLocked(id)
	changed := n != nil && (c != nil || (n.extra != nil && n.extra.contest != nil))
	if changed {
		n.more().contest = c
		n.trimExtra()
	}
	s.mu.Unlock()
	if changed {
		signal(s.dirty)
	}
}

// trimExtra drops an empty extra record.
func (n *nodeStatus) trimExtra() {
	if x := n.extra; x != nil && x.repair == nil && x.repairs == 0 && x.repairedAt.IsZero() &&
		len(x.ignored) == 0 && x.contest == nil && len(x.diagnosis) == 0 {
		n.extra = nil
	}
}

// fillExtra copies the extra record into a snapshot's NodeStatus.
func (n *nodeStatus) fillExtra(ns *NodeStatus) {
	x := n.extra
	if x == nil {
		return
	}
	ns.LastRepair, ns.Repairs = x.repair, x.repairs
	ns.Ignored, ns.Contested = x.ignored, x.contest
	ns.Diagnosis = x.diagnosis
}

// setDiagnosis records why a NodeID's stuck rollout does not progress
// (none clears it). The slice is the caller's to give away.
func (s *store) setDiagnosis(id NodeID, lines []string) {
	s.mu.Lock()
	n := s.nodeLocked(id)
	changed := n != nil && (len(lines) > 0 || (n.extra != nil && len(n.extra.diagnosis) > 0))
	if changed {
		n.more().diagnosis = lines
		n.trimExtra()
	}
	s.mu.Unlock()
	if changed {
		signal(s.dirty)
	}
}
