package mailbox

import (
	"kylix/core/kx"
	"sync/atomic"
)

// Packet racing ("Kylix: A Sparse Allreduce for Commodity Clusters", §V). With replication
// every message for a node goes to all of its live replicas, so a receiver gets up to s copies
// of each message, one from each replica of the source node. Those copies are byte for byte
// the same (replicas hold the same data), so the receiver keys them by the source's node, lets
// the first copy win and drops the rest (copies.go).

// raceBit marks a racing message in the phase of its key, as netio's frames mark it on the
// wire (phases are < 128).
const raceBit kx.Phase = 0x80

// wirePhase is the phase a message with tag is keyed by.
func wirePhase(tag kx.Tag) kx.Phase {
	if tag.Race {
		return tag.Phase | raceBit
	}
	return tag.Phase
}

// raceTable is who is whose replica and how the races went. Its grouping is set once, under
// the mailbox's lock, before the first racing message, and only read after.
type raceTable struct {
	// groupOf[r] is rank r's node, members[g] the ranks of node g; nil without replication.
	groupOf []int
	members [][]int
	counts  []raceCounters // per peer
}

// raceCounters count, per peer, the copies that won and lost a race and the bytes of the lost
// ones (what replication costs in duplicate traffic).
type raceCounters struct {
	won, lost, dupBytes atomic.Uint64
}

// SetReplicaGroups turns on racing: rank r belongs to node groupOf[r]. Called once, before the
// first racing message (core's replicated comm does it at creation); a second call with the
// same grouping is a no-op, another grouping is refused.
func (m *Mailbox) SetReplicaGroups(groupOf []int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(groupOf) != m.size {
		return kx.Errorf(kx.CodeInternal, "replication: %d group entries for %d ranks", len(groupOf), m.size)
	}
	return m.race.setGroups(groupOf)
}

func (rt *raceTable) setGroups(groupOf []int) error {
	if rt.groupOf != nil {
		for r, g := range groupOf {
			if rt.groupOf[r] != g {
				return kx.Errorf(kx.CodeArg, "replication: this job's transport already groups its ranks differently")
			}
		}
		return nil
	}
	n := 0
	for _, g := range groupOf {
		n = max(n, g+1)
	}
	rt.members = make([][]int, n)
	for r, g := range groupOf {
		rt.members[g] = append(rt.members[g], r)
	}
	rt.groupOf = append([]int(nil), groupOf...)
	return nil
}

// key files a message: by source rank, or for a racing message by the source's node.
func (rt *raceTable) key(layer uint8, phase kx.Phase, src int) msgKey {
	if phase&raceBit != 0 && rt.groupOf != nil && src >= 0 && src < len(rt.groupOf) {
		src = rt.groupOf[src]
	}
	return msgKey{layer, phase, src}
}

// sources are the ranks a message with key k may come from: the members of the source's node
// for a racing message, else from alone (returned in one, with nil: waits call this on every
// wake-up, and the common case must not allocate).
func (rt *raceTable) sources(k msgKey, from int) (group []int, one int) {
	if k.phase&raceBit != 0 && rt.groupOf != nil {
		return rt.members[k.src], -1
	}
	return nil, from
}

// count counts a copy from src: won, or lost after reading n bytes of it.
func (rt *raceTable) count(src int, won bool, n int) {
	if src < 0 || src >= len(rt.counts) {
		return
	}
	c := &rt.counts[src]
	if won {
		c.won.Add(1)
		return
	}
	c.lost.Add(1)
	c.dupBytes.Add(uint64(n))
}

// RaceStats returns, per rank, the racing copies it won and lost and the bytes of the lost ones.
func (m *Mailbox) RaceStats() []kx.RacePeerStats {
	rt := &m.race
	out := make([]kx.RacePeerStats, len(rt.counts))
	for r := range rt.counts {
		c := &rt.counts[r]
		out[r] = kx.RacePeerStats{Rank: r, CopiesWon: c.won.Load(), CopiesLost: c.lost.Load(), DupBytes: c.dupBytes.Load()}
	}
	return out
}
