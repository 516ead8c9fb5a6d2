package planning

import "testing"

// Hosts in blocks are told apart from any other placement, and the probe's figures split into
// the links within and between hosts by the pairs each round trip measured.
func TestHostLinks(t *testing.T) {
	for _, tc := range []struct {
		hostOf []int
		want   int
	}{
		{[]int{0, 0, 2, 2}, 2}, {[]int{0, 0, 0, 0}, 4}, {[]int{0, 1, 2, 3}, 1}, {[]int{0, 0, 0, 3}, 1},
		{[]int{0, 1, 0, 1}, 1}, {[]int{0, 0, 0, 3, 3, 3}, 3}, {nil, 1},
	} {
		if got := HostBlocks(tc.hostOf); got != tc.want {
			t.Errorf("HostBlocks(%v) = %d, want %d", tc.hostOf, got, tc.want)
		}
	}
	// 4 nodes on 2 hosts, shifts 1 and 2: local round trips 10 us + 1 ns/B, remote 100 us +
	// 100 ns/B. Rank r's words: shift 1, shift 2, elapsed.
	hostOf := []int{0, 0, 2, 2}
	shifts := []int{1, 2}
	sizes := []int{8, 1 << 16, 1 << 17}
	rtt := func(local bool, b int) uint64 {
		if local {
			return uint64(10e3 + b)
		}
		return uint64(100e3 + 100*b)
	}
	var agreed [][]uint64
	for _, b := range sizes {
		var all []uint64
		for r := 0; r < 4; r++ {
			for _, s := range shifts {
				all = append(all, rtt(hostOf[r] == hostOf[(r+s)%4], b))
			}
			all = append(all, 0)
		}
		agreed = append(agreed, all)
	}
	local, remote := HostLinks(sizes, agreed, shifts, 3, -1, hostOf, Median)
	if local == nil || remote == nil {
		t.Fatalf("local %v, remote %v", local, remote)
	}
	if local.Measured != 2 || remote.Measured != 6 {
		t.Errorf("measured %d local and %d remote links, want 2 and 6", local.Measured, remote.Measured)
	}
	if !(local.BytesPerSec > 50*remote.BytesPerSec) {
		t.Errorf("local %.3g B/s is not far above remote %.3g B/s", local.BytesPerSec, remote.BytesPerSec)
	}
	if l, r := HostLinks(sizes, agreed, shifts, 3, -1, []int{0, 0, 0, 0}, Median); l == nil || r != nil {
		t.Errorf("one host: local %v, remote %v", l, r)
	}
	// With rounds of their own within each host (a column after the shifts), the host links
	// come from those alone, however slow the job-wide rounds made the host pairs look.
	var withLocal [][]uint64
	for _, b := range sizes {
		var all []uint64
		for r := 0; r < 4; r++ {
			all = append(all, rtt(false, b), rtt(false, b), rtt(true, b)/2, 0)
		}
		withLocal = append(withLocal, all)
	}
	local2, remote2 := HostLinks(sizes, withLocal, shifts, 4, 2, hostOf, Median)
	if local2.Measured != 4 || remote2.Measured != 6 || !(local2.BytesPerSec > 1.5*local.BytesPerSec) {
		t.Errorf("own host rounds: local %d links at %.3g B/s (job-wide host pairs %.3g), remote %d links",
			local2.Measured, local2.BytesPerSec, local.BytesPerSec, remote2.Measured)
	}
}
