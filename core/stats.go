package core

import (
	"encoding/json"
	"kylix/core/kernels"
	"kylix/core/kx"
	"kylix/core/stats"
	"weak"
)

// The comm's side of its statistics: the recorder (core/stats) counts, these hooks and
// Stats add what only the comm knows.

// planStatic is the record of a freshly configured plan: its degrees and per-layer key counts.
func planStatic(p *Plan, rank int) stats.PlanStats {
	st := stats.PlanStats{Degrees: p.Degrees(), NOut: p.nOut, NIn: p.nIn, OutKeys: p.out0, InKeys: p.in0,
		BottomOut: p.out0, BottomIn: p.in0, Layers: make([]stats.LayerStats, len(p.layers))}
	for i := range p.layers {
		lm := &p.layers[i]
		d := p.topo.Degrees[i]
		me := p.topo.Digit(rank, i)
		ls := stats.LayerStats{Layer: i, Degree: d, OutKeysAbove: lm.outSplit[d], InKeysAbove: lm.inSplit[d],
			OutKeysBelow: lm.outLen, InKeysBelow: lm.inLen}
		ls.OutKeysSent = ls.OutKeysAbove - (lm.outSplit[me+1] - lm.outSplit[me])
		ls.InKeysSent = ls.InKeysAbove - (lm.inSplit[me+1] - lm.inSplit[me])
		for g := 0; g < d; g++ {
			if g != me {
				ls.OutKeysRecv += len(lm.outMaps[g])
				ls.InKeysRecv += len(lm.inMaps[g])
			}
		}
		st.Layers[i] = ls
		st.BottomOut, st.BottomIn = lm.outLen, lm.inLen
	}
	return st
}

// notePlan records p, freshly configured on node, in rec (configure calls it): the record
// stays while p is reachable.
func notePlan(rec *stats.Recorder, p *Plan, node int) {
	wp := weak.Make(p)
	rec.NotePlan(p.id, planStatic(p, node), func() bool { return wp.Value() != nil })
}

// Stats returns a snapshot of the comm's statistics, cumulative since NewComm or the last
// ResetStats. Local: no communication. Safe to call while a collective is running.
func (c *Comm) Stats() stats.Stats {
	st := c.rec.Snapshot()
	st.Rank, st.Size = c.Rank(), c.Size()
	st.DegreesOption = c.opts.Degrees
	if st.DegreesOption == "" {
		st.DegreesOption = "auto"
	}
	if c.plan.degrees != nil {
		st.Degrees = append([]int{}, c.plan.degrees...)
	}
	st.Threads, st.Kernels = c.cx.Threads, kernels.Level()
	st.Options = stats.StatsOptions{TimeoutMS: c.opts.Timeout.Milliseconds(), LivenessMS: c.opts.Liveness.Milliseconds(), Threads: c.cx.Threads,
		Log: c.opts.Log, MinPacket: c.opts.MinPacket, Replication: c.opts.Replication,
		Compress: c.opts.Compress, Degrees: st.DegreesOption, Shm: c.opts.Shm}
	if st.Options.Shm == "" {
		st.Options.Shm = "auto"
	}
	st.Compression.Option = c.opts.Compress
	st.Compression.Note = compressNote(c.opts.Compress)
	st.Options.MinPacket = c.plan.minPacket()
	st.Links = c.plan.links()
	st.Replication, st.Shm = c.held.get(st.Generation, func() (stats.ReplicationStats, *kx.ShmStats) {
		sh := c.v.ShmStats()
		if sh != nil {
			sh.ExpressCalls = c.expressCalls.Load()
		}
		return c.race.stats(c.v, max(c.opts.Replication, 1)), sh
	})
	return st
}

// StatsJSON is Stats as a JSON object (field names in include/kylix.h, kylix_stats_json).
func (c *Comm) StatsJSON() ([]byte, error) {
	b, err := json.Marshal(c.Stats())
	if err != nil {
		return nil, kx.Errorf(kx.CodeInternal, "stats: %v", err)
	}
	return b, nil
}

// ResetStats sets every counter and timer to zero and restarts the clock of since_unix_s.
// Configured plans keep their degrees and key counts; records of freed plans are dropped.
func (c *Comm) ResetStats() {
	c.race.reset(c.v) // first: the reset's new generation reads the racing from the new base
	c.rec.Reset()
}
