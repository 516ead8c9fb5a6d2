package core

import (
	"kylix/core/kx"
	"kylix/core/stats"
)

func (c *Comm) raceCounts() []kx.RacePeerStats {
	if c.v.Replication() > 1 {
		return c.v.RaceStats()
	}
	return nil
}

func (c *Comm) resetRaceBase() {
	now := c.raceCounts()
	c.mu.Lock()
	c.raceBase = now
	c.mu.Unlock()
}

func (c *Comm) replicationStats() stats.ReplicationStats {
	s := max(c.opts.Replication, 1)
	st := stats.ReplicationStats{Replicas: s, Nodes: c.nodes(), Node: c.node(), FailedRanks: c.v.FailedRanks()}
	if st.FailedRanks == nil {
		st.FailedRanks = []int{}
	}
	now := c.raceCounts()
	c.mu.Lock()
	base := c.raceBase
	c.mu.Unlock()
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
