package core

import (
	"kylix/core/keyset"
	"kylix/core/kx"
	"kylix/core/planning"
)

// SetMinPerWorker lets tests send small inputs down the multi-worker paths; it returns a
// function that restores the default.
func SetMinPerWorker(n int) (restore func()) { return setInt(&keyset.MinPerWorker, n) }

// LinkModelFor is the model measured on a link of the given latency and throughput (bytes/s)
// where a message of s bytes takes latency + s/throughput one way, at the sizes core/probe
// sweeps: a tiny probe, then 16 KiB doubling to 8 MiB.
func LinkModelFor(latency, bytesPerSec float64) *planning.Links {
	sizes := []int{64}
	rtt := []float64{2 * latency}
	for b := 16 << 10; b <= 8<<20; b *= 2 {
		sizes = append(sizes, b)
		rtt = append(rtt, 2*latency+float64(b)/bytesPerSec)
	}
	l := &planning.Links{LatencyS: latency, Points: planning.CurvePoints(sizes, rtt), Source: "test"}
	l.Finish()
	return l
}

// SetTestLinks gives c the link model of LinkModelFor instead of measuring one: compress=auto
// then decides as it would on such a network.
func SetTestLinks(c *Comm, latency, bytesPerSec float64) {
	c.plan.net.tried = true
	c.plan.setLinks(LinkModelFor(latency, bytesPerSec))
}

// SetHashMaxRows sets the largest sub-range a layer-0 member merges by hashing (layer0_sort.go); it
// returns a function that restores the default.
func SetHashMaxRows(n int) (restore func()) { return setInt(&keyset.HashMaxRows, n) }

// SetSmallDownBytes sets the largest down layer reduce receives whole before combining
// (smallDown; -1: none, every layer streams sub-range by sub-range); it returns a function that
// restores the default.
func SetSmallDownBytes(n int) (restore func()) { return setInt(&smallDownBytes, n) }

// SetSubGroupBytes sets how many bytes of merged rows one combine call may cover (subGroupEnd);
// it returns a function that restores the default.
func SetSubGroupBytes(n int) (restore func()) { return setInt(&subGroupBytes, n) }

// ProcTransport is the process transport under c's view, whose own counters tests compare with
// the comm's statistics.
func ProcTransport(c *Comm) kx.Transport { return c.v.Transport() }

// MixLayers is L, the number of layers Mix cycles through: Mix at steps s, s+1, ..., s+L-1 leaves
// every rank with the global mean (mix.Mix.Layers).
func (c *Comm) MixLayers() int { return c.mix.Layers() }

// setInt sets one of the tuning variables to v and returns the function that restores it:
// tests send small inputs down the paths meant for large ones.
func setInt(p *int, v int) (restore func()) {
	old := *p
	*p = v
	return func() { *p = old }
}
