package core

import (
	"kylix/core/keyset"
	"kylix/core/kx"
	"kylix/core/planning"
)

// SetMinPerWorker lets tests send small inputs down the multi-worker paths; it returns a
// function that restores the default.
func SetMinPerWorker(n int) (restore func()) { return keyset.SetForTest(&keyset.MinPerWorker, n) }

// LinkModelFor is the model measured on a link of the given latency and throughput (bytes/s)
// where a message of s bytes takes latency + s/throughput one way.
func LinkModelFor(latency, bytesPerSec float64) *planning.Links {
	sizes := []int{probeTinyBytes}
	rtt := []float64{2 * latency}
	for b := probeMinBytes; b <= probeMaxBytes; b *= 2 {
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
	c.net.tried = true
	c.setLinks(LinkModelFor(latency, bytesPerSec))
}

// SetHashMaxRows sets the largest sub-range a layer-0 member merges by hashing (topsort.go); it
// returns a function that restores the default.
func SetHashMaxRows(n int) (restore func()) { return keyset.SetForTest(&keyset.HashMaxRows, n) }

// SetSmallDownBytes sets the largest down layer reduce receives whole before combining
// (smallDown; -1: none, every layer streams sub-range by sub-range); it returns a function that
// restores the default.
func SetSmallDownBytes(n int) (restore func()) { return keyset.SetForTest(&smallDownBytes, n) }

// ProcTransport is the process transport under c's view, whose own counters tests compare with
// the comm's statistics.
func ProcTransport(c *Comm) kx.Transport { return c.v.Transport() }
