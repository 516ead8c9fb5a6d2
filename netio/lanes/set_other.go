//go:build !linux

package lanes

import (
	"kylix/core/kx"
	"kylix/netio/shm"
)

// Set: without Linux there is no shared memory, so no lanes: LaneMax is 0 to every rank, and a
// comm never puts or waits on one.
type Set struct{ size int }

func New(cfg Config, _ func() []*shm.Segment) *Set { return &Set{size: cfg.Size} }

func (s *Set) ClaimLanes() bool              { return true }
func (s *Set) Close()                        {}
func (s *Set) LaneMax(int) int               { return 0 }
func (s *Set) LaneDone(int, kx.Tag)          {}
func (s *Set) Stats() []kx.PeerStats         { return kx.Snapshot(make([]kx.PeerCounters, s.size)) }
func (s *Set) Counts() (msgs, sleeps uint64) { return 0, 0 }
func (s *Set) LanePut(to int, _ kx.Tag, _ []byte) error {
	return kx.Errorf(kx.CodeInternal, "no lane to rank %d", kx.RankRef(to))
}
func (s *Set) LaneAwait(from int, _ kx.Tag) (kx.Fingerprint, []byte, error) {
	return kx.Fingerprint{}, nil, kx.Errorf(kx.CodeInternal, "no lane to rank %d", kx.RankRef(from))
}
func (s *Set) LendLane(int) (kx.LaneLoan, bool) { return kx.LaneLoan{}, false }
func (s *Set) ReturnLane(int, *kx.LaneLoan)     {}
