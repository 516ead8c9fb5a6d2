package memnet

import (
	"kylix/core/kx"
	"sync"
	"time"
)

// Lanes in memory (kx.Lanes), for tests of what runs over the shared-memory lanes of netio
// (netio/shm/lane.go): the same semantics (one message a collective to each peer, keyed by its
// sequence, waits that end as the mailbox's do), none of the speed. A job has them only when
// made by NewJobWithLanes, through the transport WithLanes returns: the in-memory transport
// otherwise stands for ranks on hosts of their own, which have no lanes.

// LaneMax is the shared-memory lanes' (shm.LaneMax).
const LaneMax = 352

// NewJobWithLanes is NewJob whose ranks also have lanes to each other.
func NewJobWithLanes(size int, timeout time.Duration) []*Mem {
	ranks := NewJob(size, timeout)
	j := ranks[0].job
	j.lanes = make([]memLane, size*size)
	for i := range j.lanes {
		j.lanes[i].msgs = map[uint64]laneMsg{}
	}
	return ranks
}

// LaneMem is a rank of a job made by NewJobWithLanes, with its lanes (kx.Lanes).
type LaneMem struct{ *Mem }

// WithLanes is m as a transport with lanes (m's job must be made by NewJobWithLanes).
func (m *Mem) WithLanes() LaneMem { return LaneMem{m} }

// HasLanes tells whether m's job was made by NewJobWithLanes.
func (m *Mem) HasLanes() bool { return m.job.lanes != nil }

// LanePuts counts the lane messages m put (tests: the lanes were taken).
func (m *Mem) LanePuts() uint64 { return m.lanePuts.Load() }

// memLane is the lane from one rank to another: its messages by sequence, until read.
type memLane struct {
	mu   sync.Mutex
	msgs map[uint64]laneMsg
}

type laneMsg struct {
	fp kx.Fingerprint
	b  []byte
}

func (m *Mem) lane(from, to int) *memLane { return &m.job.lanes[from*len(m.job.ranks)+to] }

// ClaimLanes gives the lanes to the first comm that asks.
func (m LaneMem) ClaimLanes() bool { return m.lanesClaimed.CompareAndSwap(false, true) }

// LaneMax is LaneMax to every other rank.
func (m LaneMem) LaneMax(rank int) int {
	if m.job.lanes == nil || rank == m.rank || rank < 0 || rank >= m.Size() {
		return 0
	}
	return LaneMax
}

// LanePut copies b into the lane to rank to.
func (m LaneMem) LanePut(to int, tag kx.Tag, b []byte) error {
	if err := m.goneErr(); err != nil {
		return err
	}
	if m.LaneMax(to) < len(b) {
		return kx.Errorf(kx.CodeInternal, "lane put of %d bytes to rank %d, which has no lane for it", len(b), kx.RankRef(to))
	}
	if err := m.mb.Dead(to); err != nil {
		return err
	}
	l := m.lane(m.rank, to)
	l.mu.Lock()
	l.msgs[tag.Seq] = laneMsg{tag.FP, append([]byte(nil), b...)}
	l.mu.Unlock()
	m.lanePuts.Add(1)
	m.stats[to].BytesSent.Add(uint64(len(b)))
	m.stats[to].MsgsSent.Add(1)
	return nil
}

// LaneAwait polls the lane from rank from, asking the mailbox between looks whether the
// collective failed or the peer is gone.
func (m LaneMem) LaneAwait(from int, tag kx.Tag) (kx.Fingerprint, []byte, error) {
	if m.LaneMax(from) == 0 {
		return kx.Fingerprint{}, nil, kx.Errorf(kx.CodeInternal, "lane wait for rank %d, which has no lane", kx.RankRef(from))
	}
	l := m.lane(from, m.rank)
	start := time.Now()
	nap := time.Microsecond
	look := func() (laneMsg, bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		msg, ok := l.msgs[tag.Seq]
		if ok {
			m.stats[from].BytesRecv.Add(uint64(len(msg.b)))
			m.stats[from].MsgsRecv.Add(1)
		}
		return msg, ok
	}
	for {
		if msg, ok := look(); ok {
			return msg.fp, msg.b, nil
		}
		if err := m.mb.Verdict(from, tag); err != nil {
			if msg, ok := look(); ok { // put before the peer finalized or died: still read
				return msg.fp, msg.b, nil
			}
			return kx.Fingerprint{}, nil, err
		}
		if time.Since(start) >= m.job.timeout {
			return kx.Fingerprint{}, nil, kx.Errorf(kx.CodeTimeout, "rank %d sent nothing for %v: waited for its lane message of collective %d",
				kx.RankRef(from), m.job.timeout, kx.SeqRef(tag.Seq))
		}
		time.Sleep(nap)
		nap = min(2*nap, time.Millisecond)
	}
}

// LaneDone drops the message read.
func (m LaneMem) LaneDone(from int, tag kx.Tag) {
	l := m.lane(from, m.rank)
	l.mu.Lock()
	delete(l.msgs, tag.Seq)
	l.mu.Unlock()
}
