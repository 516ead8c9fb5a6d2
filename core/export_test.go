package core

import "kylix/core/kx"

// SetMinPerWorker lets tests send small inputs down the multi-worker paths; it returns a
// function that restores the default.
func SetMinPerWorker(n int) (restore func()) {
	old := MinPerWorker
	MinPerWorker = n
	return func() { MinPerWorker = old }
}

// LinkModelFor is the model measured on a link of the given latency and throughput (bytes/s)
// where a message of s bytes takes latency + s/throughput one way.
func LinkModelFor(latency, bytesPerSec float64) *Links {
	sizes := []int{probeTinyBytes}
	rtt := []float64{2 * latency}
	for b := probeMinBytes; b <= probeMaxBytes; b *= 2 {
		sizes = append(sizes, b)
		rtt = append(rtt, 2*latency+float64(b)/bytesPerSec)
	}
	l := &Links{LatencyS: latency, Points: curvePoints(sizes, rtt), Source: "test"}
	l.finish()
	return l
}

// SetTestLinks gives c the link model of LinkModelFor instead of measuring one: compress=auto
// then decides as it would on such a network.
func SetTestLinks(c *Comm, latency, bytesPerSec float64) {
	c.net.tried = true
	c.setLinks(LinkModelFor(latency, bytesPerSec))
}

// ConfigListStart is where the first index list starts in a compressed config message b: after
// the longer header of a layer-0 rows message (msgRows), or the plain compressed one.
func ConfigListStart(b []byte) int {
	if getU64(b)&msgRows != 0 {
		return rowsHdr
	}
	return packedHdr
}

// SetHashMaxRows sets the largest sub-range a layer-0 member merges by hashing (topsort.go); it
// returns a function that restores the default.
func SetHashMaxRows(n int) (restore func()) {
	old := HashMaxRows
	HashMaxRows = n
	return func() { HashMaxRows = old }
}

// SetSmallDownBytes sets the largest down layer reduce receives whole before combining
// (smallDown; -1: none, every layer streams sub-range by sub-range); it returns a function that
// restores the default.
func SetSmallDownBytes(n int) (restore func()) {
	old := smallDownBytes
	smallDownBytes = n
	return func() { smallDownBytes = old }
}

// ProcTransport is the process transport under c's view, whose own counters tests compare with
// the comm's statistics.
func ProcTransport(c *Comm) kx.Transport { return c.v.Transport() }
