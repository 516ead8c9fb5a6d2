//go:build !linux

package netio

import "kylix/core/kx"

// Without Linux there is no shared memory, so no lanes (lanes_linux.go): LaneMax is 0 to
// every rank, and the comm never puts or waits on one.
func (t *TCP) ClaimLanes() bool     { return t.lanesClaimed.CompareAndSwap(false, true) }
func (t *TCP) LaneMax(int) int      { return 0 }
func (t *TCP) LaneDone(int, kx.Tag) {}
func (t *TCP) LanePut(to int, _ kx.Tag, _ []byte) error {
	return kx.Errorf(kx.CodeInternal, "no lane to rank %d", kx.RankRef(to))
}
func (t *TCP) LaneAwait(from int, _ kx.Tag) (kx.Fingerprint, []byte, error) {
	return kx.Fingerprint{}, nil, kx.Errorf(kx.CodeInternal, "no lane to rank %d", kx.RankRef(from))
}
