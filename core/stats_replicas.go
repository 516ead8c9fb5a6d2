package core

import "kylix/core/kx"

// ReplicationStats (kylix_stats_json "replication"): the job's replication and, per peer, the
// racing copies this rank received from it (replicas.go): copies won (used), copies lost
// (dropped because another replica's copy was first) and the bytes of the lost copies that
// were read, the price of replication in duplicate traffic. Peers are numbered as the
// comm's ranks (a comm made by kylix_shrink numbers its survivors 0..k-1).
type ReplicationStats struct {
	Replicas    int                `json:"replicas"` // s
	Nodes       int                `json:"nodes"`    // size/s
	Node        int                `json:"node"`     // this rank's node
	FailedRanks []int              `json:"failed_ranks"`
	CopiesWon   uint64             `json:"copies_won"`
	CopiesLost  uint64             `json:"copies_lost"`
	DupBytes    uint64             `json:"duplicate_bytes"`
	Peers       []kx.RacePeerStats `json:"peers"` // only peers with copies; null without replication
}

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

func (c *Comm) replicationStats() ReplicationStats {
	s := max(c.opts.Replication, 1)
	st := ReplicationStats{Replicas: s, Nodes: c.nodes(), Node: c.node(), FailedRanks: c.v.FailedRanks()}
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
