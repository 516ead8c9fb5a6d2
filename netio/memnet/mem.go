package memnet

import (
	"kylix/core/kx"
	"kylix/netio/mailbox"
	"sync"
	"sync/atomic"
	"time"
)

// Mem is one rank of an in-memory job: every rank lives in the same process and Send copies the
// payload into the destination's mailbox. It shares the mailbox with TCP, so fingerprints,
// aborts, dead peers and timeouts behave exactly as on the network. Core's tests and the
// simulator run on it.
type Mem struct {
	rank  int
	job   *memJob
	mb    *mailbox.Mailbox
	stats []kx.PeerCounters

	mu   sync.Mutex
	gone error // set by Close or Kill: this rank can no longer send

	lanesClaimed atomic.Bool // lanes.go
	lanePuts     atomic.Uint64
}

type memJob struct {
	ranks   []*Mem
	timeout time.Duration
	lanes   []memLane // [from*size+to], when made by NewJobWithLanes (lanes.go)
}

// NewJob creates the size ranks of an in-memory job; any wait for a peer is bounded by
// timeout.
func NewJob(size int, timeout time.Duration) []*Mem {
	j := &memJob{ranks: make([]*Mem, size), timeout: timeout}
	for r := range j.ranks {
		j.ranks[r] = &Mem{rank: r, job: j, mb: mailbox.New(r, size, timeout), stats: make([]kx.PeerCounters, size)}
	}
	return j.ranks
}

// Sender is m itself, Receiver its mailbox, Peers the mailbox's record of failures and races;
// the in-memory transport stands for ranks on hosts of their own (tests and the simulator
// model the network between them), so no peer shares this host.
func (m *Mem) Sender() kx.Sender     { return m }
func (m *Mem) Receiver() kx.Receiver { return m.mb }
func (m *Mem) Peers() kx.Peers       { return memPeers{m.mb} }

func (m *Mem) Rank() int              { return m.rank }
func (m *Mem) Size() int              { return len(m.job.ranks) }
func (m *Mem) Timeout() time.Duration { return m.job.timeout }

func (m *Mem) goneErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gone
}

// Send copies the concatenation of bufs into rank to's mailbox.
func (m *Mem) Send(to int, tag kx.Tag, bufs ...[]byte) error {
	if err := m.goneErr(); err != nil {
		return err
	}
	n, err := kx.CheckSend(to, m.Size(), bufs)
	if err != nil {
		return err
	}
	if err := m.mb.Dead(to); err != nil {
		return err
	}
	dst := m.job.ranks[to]
	// Counted before the hand-over: a receiver woken by it may reset its statistics at once.
	m.stats[to].BytesSent.Add(uint64(n))
	m.stats[to].MsgsSent.Add(1)
	dst.stats[m.rank].BytesRecv.Add(uint64(n))
	dst.stats[m.rank].MsgsRecv.Add(1)
	dst.mb.Put(m.rank, tag, bufs, n)
	return nil
}

// WritesBack is false: in memory, a message is handed over, never read from its sender.
func (m *Mem) WritesBack(rank, n int) bool { return false }

// Abort fails collective seq here and on every live peer with err's code and message (unless
// seq already failed through a peer's abort, which reached everyone).
func (m *Mem) Abort(seq uint64, err error) {
	code, named, msg := kx.AbortReason(err)
	m.mb.Abort(seq, -1, code, named, msg)
	if m.goneErr() != nil || m.mb.AbortedByPeer(seq) {
		return
	}
	for r, p := range m.job.ranks {
		if r != m.rank && m.mb.Dead(r) == nil {
			p.mb.Abort(seq, m.rank, code, named, msg)
		}
	}
}

// Close finalizes this rank: peers see "rank N has finalized" once they have read what it sent.
func (m *Mem) Close() error {
	m.leave(kx.Errorf(kx.CodeState, "transport of rank %d is closed", kx.RankRef(m.rank)), mailbox.FinalizedError(m.rank))
	return nil
}

// Kill simulates a crash of this rank (for tests): peers see it lost, as on a reset connection,
// and this rank's own calls fail.
func (m *Mem) Kill() {
	m.leave(kx.Errorf(kx.CodePeer, "rank %d was killed", kx.RankRef(m.rank)), mailbox.LostError(m.rank, "connection closed without a bye (killed)"))
}

func (m *Mem) leave(self, peers error) {
	m.mu.Lock()
	if m.gone != nil {
		m.mu.Unlock()
		return
	}
	m.gone = self
	m.mu.Unlock()
	m.mb.Close(self)
	for r, p := range m.job.ranks {
		if r != m.rank {
			p.mb.MarkDead(m.rank, peers)
		}
	}
}

// SetReplicaGroups turns on packet racing (mailbox/race.go): rank r is a replica of node groupOf[r].
func (m *Mem) SetReplicaGroups(groupOf []int) error { return m.mb.SetReplicaGroups(groupOf) }

// SendOrLeave is Send: an in-memory send never waits for the receiver.
func (m *Mem) SendOrLeave(to int, tag kx.Tag, _ <-chan struct{}, bufs ...[]byte) error {
	return m.Send(to, tag, bufs...)
}

// Post is Send: nothing goes by reference in memory, so every post is complete.
func (m *Mem) Post(to int, tag kx.Tag, bufs ...[]byte) (kx.Posted, error) {
	return kx.Posted{}, m.Send(to, tag, bufs...)
}

// Complete has nothing to wait for (Post).
func (m *Mem) Complete(kx.Posted) error { return nil }

// Fits is always true: a send copies into the receiver's mailbox at once.
func (m *Mem) Fits(int, int) bool { return true }

// Stats returns the data messages exchanged with each rank (index = rank).
func (m *Mem) Stats() []kx.PeerStats { return kx.Snapshot(m.stats) }

// memPeers is Mem's kx.Peers.
type memPeers struct{ *mailbox.Mailbox }

func (memPeers) SameHost(int) bool      { return false }
func (memPeers) ShmStats() *kx.ShmStats { return nil }

var _ kx.Transport = (*Mem)(nil)
