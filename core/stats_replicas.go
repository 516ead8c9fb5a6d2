package core

import (
	"kylix/core/kx"
	"kylix/core/members"
	"kylix/core/stats"
	"sync"
)

// raceBase is the transport's racing counts at the last ResetStats: the statistics report
// what raced since.
type raceBase struct {
	mu   sync.Mutex // Stats may run on another goroutine than ResetStats
	base []kx.RacePeerStats
}

// raceCounts are the transport's racing counts of view v (none without replication).
func raceCounts(v *members.View) []kx.RacePeerStats {
	if v.Replication() > 1 {
		return v.RaceStats()
	}
	return nil
}

func (b *raceBase) reset(v *members.View) {
	now := raceCounts(v)
	b.mu.Lock()
	b.base = now
	b.mu.Unlock()
}

// stats are the replication statistics of view v with s replicas a node.
func (b *raceBase) stats(v *members.View, s int) stats.ReplicationStats {
	st := stats.ReplicationStats{Replicas: s, Nodes: v.Nodes(), Node: v.Node(), FailedRanks: v.FailedRanks()}
	if st.FailedRanks == nil {
		st.FailedRanks = []int{}
	}
	now := raceCounts(v)
	b.mu.Lock()
	base := b.base
	b.mu.Unlock()
	for i, p := range now {
		if i < len(base) {
			p.CopiesWon -= base[i].CopiesWon
			p.CopiesLost -= base[i].CopiesLost
			p.DupBytes -= base[i].DupBytes
		}
		if p.CopiesWon+p.CopiesLost == 0 {
			continue
		}
		st.CopiesWon += p.CopiesWon
		st.CopiesLost += p.CopiesLost
		st.DupBytes += p.DupBytes
		st.Peers = append(st.Peers, p)
	}
	return st
}
