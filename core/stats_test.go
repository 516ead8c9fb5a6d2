package core_test

import (
	"encoding/json"
	"fmt"
	"kylix/core/kx"
	"kylix/core/stats"
	"kylix/netio/memnet"
	"sync"
	"testing"
	"time"

	"kylix/core"
)

// memTotals sums a Mem transport's per-peer counters (self-sends included, as the transport
// counts them; core never sends to itself in config and reduce).
func memTotals(c *core.Comm) stats.Traffic {
	var t stats.Traffic
	for _, p := range core.ProcTransport(c).(*memnet.Mem).Stats() {
		t.Add(stats.Traffic{BytesSent: p.BytesSent, BytesRecv: p.BytesRecv, MsgsSent: p.MsgsSent, MsgsRecv: p.MsgsRecv})
	}
	return t
}

// planTraffic sums every layer and phase of a plan record, with the agreement exchange.
func planTraffic(p stats.PlanStats) stats.Traffic {
	t := p.Agree
	for _, l := range p.Layers {
		for _, x := range []stats.Traffic{l.Config, l.ReduceDown, l.ReduceUp, l.ConfigReduceDown, l.ConfigReduceUp} {
			t.Add(x)
		}
	}
	return t
}

// TestStatsMatchTransport: per-layer figures of config, reduce and config_reduce add up exactly
// to what the in-memory transport carried, and each layer's bytes follow from its key counts.
func TestStatsMatchTransport(t *testing.T) {
	for _, tc := range []struct {
		m       int
		degrees string
	}{{4, "2x2"}, {6, "3x2"}, {6, "auto"}} {
		t.Run(fmt.Sprintf("m%d_%s", tc.m, tc.degrees), func(t *testing.T) {
			const n, width = 20000, 3
			es := width * kx.F32.Size()
			var mu sync.Mutex
			snaps := make([]stats.Stats, tc.m)
			errs := runJob(t, tc.m, tc.degrees, func(c *core.Comm) error {
				rd := genRank(77, c.Rank(), n, 1500+100*c.Rank(), 1200+70*c.Rank(), width)
				p, err := c.Config(rd.out, rd.in)
				if err != nil {
					return err
				}
				vals := encode(kx.F32, kx.Sum, rd.vals)
				in := make([]byte, len(rd.in)*es)
				for range 3 {
					if err := p.Reduce(vals, in, kx.F32, kx.Sum, width); err != nil {
						return err
					}
				}
				if _, err := c.ConfigReduce(rd.out, vals, rd.in, in, kx.F32, kx.Sum, width, false); err != nil {
					return err
				}
				js, err := c.StatsJSON()
				if err != nil {
					return err
				}
				var st stats.Stats
				if err := json.Unmarshal(js, &st); err != nil {
					return fmt.Errorf("stats JSON does not parse: %v\n%s", err, js)
				}
				// Mem counts a message received when the sender delivers it; no peer sends
				// anything after the last collective, so the counts are final here.
				got := st.Totals
				if want := memTotals(c); got != want {
					return fmt.Errorf("totals %+v, transport counted %+v", got, want)
				}
				var sum stats.Traffic
				for _, ps := range st.Plans {
					sum.Add(planTraffic(ps))
				}
				sum.Add(planTrafficRetired(st.Retired))
				if sum != got {
					return fmt.Errorf("plans' per-layer traffic sums to %+v, totals %+v", sum, got)
				}
				p.Free()
				mu.Lock()
				snaps[c.Rank()] = c.Stats() // after Free: the record says so
				mu.Unlock()
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			// Static figures against the bytes of each layer, on every rank.
			for r, st := range snaps {
				if len(st.Plans) != 2 {
					t.Fatalf("rank %d: %d plan records, want 2 (config and config_reduce)", r, len(st.Plans))
				}
				cfg, cr := st.Plans[0], st.Plans[1]
				if cfg.CreatedBy != "config" || cr.CreatedBy != "config_reduce" || !cfg.Configured || !cr.Configured {
					t.Fatalf("rank %d: plan records %+v / %+v", r, cfg, cr)
				}
				if cfg.Calls.Config != 1 || cfg.Calls.Reduce != 3 || cr.Calls.ConfigReduce != 1 {
					t.Errorf("rank %d: calls %+v %+v", r, cfg.Calls, cr.Calls)
				}
				if tc.degrees != "auto" && kx.FormatDegrees(cfg.Degrees) != tc.degrees {
					t.Errorf("rank %d: degrees %v, want %s", r, cfg.Degrees, tc.degrees)
				}
				for _, ps := range []stats.PlanStats{cfg, cr} {
					for _, l := range ps.Layers {
						hdr := uint64(16 * (l.Degree - 1))
						keys := uint64(8 * (l.OutKeysSent + l.InKeysSent))
						check := func(what string, got, want uint64) {
							if got != want {
								t.Errorf("rank %d plan %d layer %d: %s = %d, want %d", r, ps.ID, l.Layer, what, got, want)
							}
						}
						msgs := uint64(l.Degree - 1)
						if ps.CreatedBy == "config" {
							check("config bytes sent", l.Config.BytesSent, hdr+keys)
							check("config bytes recv", l.Config.BytesRecv, hdr+uint64(8*(l.OutKeysRecv+l.InKeysRecv)))
							check("config msgs", l.Config.MsgsSent, msgs)
							check("reduce down bytes sent", l.ReduceDown.BytesSent, 3*uint64(es*l.OutKeysSent))
							check("reduce down bytes recv", l.ReduceDown.BytesRecv, 3*uint64(es*l.OutKeysRecv))
							check("reduce up bytes sent", l.ReduceUp.BytesSent, 3*uint64(es*l.InKeysRecv))
							check("reduce up bytes recv", l.ReduceUp.BytesRecv, 3*uint64(es*l.InKeysSent))
							check("reduce msgs", l.ReduceDown.MsgsSent+l.ReduceUp.MsgsRecv, 6*msgs)
						} else {
							check("config_reduce down bytes", l.ConfigReduceDown.BytesSent, hdr+keys+uint64(es*l.OutKeysSent))
							check("config_reduce up bytes", l.ConfigReduceUp.BytesSent, uint64(es*l.InKeysRecv))
						}
						if l.OutKeysAbove < l.OutKeysSent || l.OutKeysBelow > l.OutKeysAbove-l.OutKeysSent+l.OutKeysRecv {
							t.Errorf("rank %d layer %d: inconsistent key counts %+v", r, l.Layer, l)
						}
					}
				}
				if !cfg.Freed {
					t.Errorf("rank %d: the freed plan is not marked freed", r)
				}
				if st.Compression.Ratio != 1 || st.Compression.Active {
					t.Errorf("rank %d: compression %+v", r, st.Compression)
				}
				if s := st.PhaseSeconds; s.Config <= 0 || s.ReduceDown <= 0 || s.ReduceUp <= 0 || s.ConfigReduceDown <= 0 {
					t.Errorf("rank %d: phase seconds %+v", r, s)
				}
			}
			// What one rank sent at a layer, another received.
			for li := range snaps[0].Plans[0].Layers {
				var sent, recv uint64
				for _, st := range snaps {
					l := st.Plans[0].Layers[li]
					sent += l.Config.BytesSent + l.ReduceDown.BytesSent + l.ReduceUp.BytesSent
					recv += l.Config.BytesRecv + l.ReduceDown.BytesRecv + l.ReduceUp.BytesRecv
				}
				if sent != recv {
					t.Errorf("layer %d: %d bytes sent in all, %d received", li, sent, recv)
				}
			}
		})
	}
}

func planTrafficRetired(r stats.RetiredStats) stats.Traffic {
	t := r.Agree
	for _, l := range r.Layers {
		for _, x := range []stats.Traffic{l.Config, l.ReduceDown, l.ReduceUp, l.ConfigReduceDown, l.ConfigReduceUp} {
			t.Add(x)
		}
	}
	return t
}

// TestStatsResetAndFields: the JSON carries the documented fields; a reset zeroes the counters
// but keeps the plan's figures; rejected calls and dense collectives are counted by kind.
func TestStatsResetAndFields(t *testing.T) {
	errs := runJob(t, 4, "2x2", func(c *core.Comm) error {
		if k := c.Stats().Kernels; k != "avx512" && k != "avx2" && k != "go" {
			return fmt.Errorf("kernels = %q", k)
		}
		rd := genRank(5, c.Rank(), 3000, 200, 150, 1)
		p, err := c.Config(rd.out, rd.in)
		if err != nil {
			return err
		}
		defer p.Free()
		buf := make([]byte, 64)
		if err := c.Allreduce(buf, buf, kx.F64, kx.Sum); err != nil {
			return err
		}
		_ = p.Reduce(nil, nil, kx.F32, kx.Sum, 1) // rejected: wrong lengths
		var m map[string]any
		js, _ := c.StatsJSON()
		if err := json.Unmarshal(js, &m); err != nil {
			return err
		}
		for _, k := range []string{"version", "rank", "size", "degrees_option", "degrees", "threads", "kernels",
			"options", "since_unix_s", "compression", "totals", "phase_seconds", "collectives", "plans", "retired_plans"} {
			if _, ok := m[k]; !ok {
				return fmt.Errorf("field %q missing from %s", k, js)
			}
		}
		st := c.Stats()
		if st.DegreesOption != "2x2" || kx.FormatDegrees(st.Degrees) != "2x2" {
			return fmt.Errorf("degrees %q %v", st.DegreesOption, st.Degrees)
		}
		if k := st.Collectives["allreduce"]; k.Calls != 1 || k.Traffic.BytesSent == 0 || st.PhaseSeconds.Dense <= 0 {
			return fmt.Errorf("allreduce %+v dense %v", k, st.PhaseSeconds.Dense)
		}
		if k := st.Collectives["invalid-arguments"]; k.Calls != 1 || k.Errors != 1 {
			return fmt.Errorf("rejected call: %+v", k)
		}
		if k := st.Collectives["reduce"]; k.Calls != 0 {
			return fmt.Errorf("reduce: %+v", k)
		}
		if err := c.Barrier(); err != nil { // every rank has read its counters
			return err
		}
		c.ResetStats()
		st = c.Stats()
		if st.Totals != (stats.Traffic{}) || len(st.Plans) != 1 || st.Plans[0].Calls != (stats.PlanCalls{}) {
			return fmt.Errorf("after reset: totals %+v, plans %+v", st.Totals, st.Plans)
		}
		pl := st.Plans[0]
		if len(pl.Layers) != 2 || pl.Layers[0].OutKeysAbove != pl.OutKeys || pl.Layers[0].Config != (stats.Traffic{}) {
			return fmt.Errorf("after reset: plan figures %+v", pl)
		}
		before := memTotals(c)
		vals := make([]byte, len(rd.out)*4)
		in := make([]byte, len(rd.in)*4)
		if err := p.Reduce(vals, in, kx.F32, kx.Sum, 1); err != nil {
			return err
		}
		st = c.Stats()
		after := memTotals(c)
		if st.Totals.BytesSent != after.BytesSent-before.BytesSent || st.Totals.MsgsSent != after.MsgsSent-before.MsgsSent {
			return fmt.Errorf("after reset and one reduce: %+v, transport moved %d bytes", st.Totals, after.BytesSent-before.BytesSent)
		}
		if st.Plans[0].Calls.Reduce != 1 {
			return fmt.Errorf("calls after reset %+v", st.Plans[0].Calls)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestStatsBoundedPlans: a mini-batch loop of config_reduce without keeping the plan does not
// grow the record list beyond the bound; what is dropped is aggregated, nothing is lost.
func TestStatsBoundedPlans(t *testing.T) {
	errs := runJob(t, 2, "direct", func(c *core.Comm) error {
		out := []int64{1, 2, 3}
		vals := make([]byte, 3*8)
		in := make([]byte, 3*8)
		for i := 0; i < 150; i++ {
			p, err := c.ConfigReduce(out, vals, out, in, kx.F64, kx.Sum, 1, true)
			if err != nil {
				return err
			}
			p.Free()
		}
		st := c.Stats()
		if len(st.Plans) > 64 || st.Retired.Plans+len(st.Plans) != 150 {
			return fmt.Errorf("%d records and %d retired, want at most 64 and 150 in all", len(st.Plans), st.Retired.Plans)
		}
		sum := planTrafficRetired(st.Retired)
		for _, ps := range st.Plans {
			sum.Add(planTraffic(ps))
		}
		if sum != st.Totals || st.Totals != memTotals(c) {
			return fmt.Errorf("records %+v, totals %+v, transport %+v", sum, st.Totals, memTotals(c))
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestStatsHoldStillBetweenCalls: figures the transport moves in the background (here a
// replica's copy that lands after the call it raced in has returned) do not change the JSON
// between two looks with no call between them, so kylix_stats_json's size protocol (cap 0,
// allocate *needed, call again) holds; the next collective shows them.
func TestStatsHoldStillBetweenCalls(t *testing.T) {
	const s, m = 2, 2
	late := make(chan struct{}) // closed once the late replica's allreduce has returned
	errs := runReplicated(t, s, m, "direct", func(c *core.Comm, _ *memnet.Mem) error {
		send := encode(kx.F64, kx.Sum, []float64{1, 2, 3, 4})
		recv := make([]byte, len(send))
		if c.Rank() == 3 { // node 1's second replica sends its copies after rank 0 has its result
			time.Sleep(100 * time.Millisecond)
		}
		if err := c.Allreduce(send, recv, kx.F64, kx.Sum); err != nil {
			return err
		}
		if c.Rank() == 3 {
			close(late)
		}
		if c.Rank() == 0 {
			a, err := c.StatsJSON()
			if err != nil {
				return err
			}
			<-late
			time.Sleep(20 * time.Millisecond) // rank 3's copies have landed here
			b, err := c.StatsJSON()
			if err != nil {
				return err
			}
			if string(a) != string(b) {
				return fmt.Errorf("the stats changed with no call between two looks:\n%s\n%s", a, b)
			}
		}
		if err := c.Allreduce(send, recv, kx.F64, kx.Sum); err != nil {
			return err
		}
		if st := c.Stats().Replication; c.Rank() == 0 && st.CopiesLost == 0 {
			return fmt.Errorf("after the next collective the late copies are still not shown: %+v", st)
		}
		return nil
	})
	expectNoErrors(t, errs)
}
