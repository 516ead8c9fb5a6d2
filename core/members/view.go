package members

import (
	"errors"
	"kylix/core/kx"
	"sync"
	"time"
)

// View is one comm's window onto a process transport. The comm's ranks are its members,
// numbered 0..Size()-1 (rank i is process procOf[i]; an original comm is every process, in
// order). With replication s the members form Nodes() = Size()/s nodes: rank r is replica r/m
// of node r%m, and the data path (Send, Recv, Expect, Await, AwaitPrefix) addresses nodes.
// Without replication a node is a rank.
type View struct {
	proc  *Proc
	t     kx.Transport // proc.T
	snd   kx.Sender    // t's three faces, looked up once
	rcv   kx.Receiver
	peers kx.Peers

	rank, size int
	procOf     []int // comm rank -> process rank; nil for an original comm (the identity)
	commOf     []int // process rank -> comm rank, -1 for a process outside the comm
	epoch      int   // shrinks that led to this comm (shrink.go)
	base       uint64

	s, m, node int
	replicas   [][]int // node -> the process ranks of its replicas, in replica order

	lanes kx.Lanes // the transport's, once this comm claimed them (lanes.go)

	once sync.Once
}

// New is the view of an original comm: every process of p, in s replicas of size/s nodes. With
// s > 1 the transport is told the grouping, which turns on packet racing.
func New(p *Proc, s int) (*View, error) {
	n := p.T.Size()
	if s < 1 || n%s != 0 {
		return nil, kx.Errorf(kx.CodeArg, "replication: size=%d is not a multiple of replication=%d", n, s)
	}
	v := &View{rank: p.T.Rank(), size: n}
	v.attach(p)
	v.group(s)
	if s > 1 {
		groupOf := make([]int, n)
		for r := range groupOf {
			groupOf[r] = r % v.m
		}
		if err := p.T.SetReplicaGroups(groupOf); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// attach makes v a view of p's transport.
func (v *View) attach(p *Proc) {
	v.proc, v.t = p, p.T
	v.snd, v.rcv, v.peers = p.T.Sender(), p.T.Receiver(), p.T.Peers()
}

// group sorts the members into m = size/s nodes.
func (v *View) group(s int) {
	v.s, v.m = s, v.size/s
	v.node = v.rank % v.m
	v.replicas = make([][]int, v.m)
	for r := 0; r < v.size; r++ {
		v.replicas[r%v.m] = append(v.replicas[r%v.m], v.procRank(r))
	}
}

// Rank and Size count the comm's processes, replicas included (kylix_rank, kylix_size).
func (v *View) Rank() int { return v.rank }
func (v *View) Size() int { return v.size }

// Node and Nodes are what the algorithms work with: this rank's node and the number of nodes.
func (v *View) Node() int  { return v.node }
func (v *View) Nodes() int { return v.m }

// Replication is s, the replicas of each node.
func (v *View) Replication() int { return v.s }

// Base is the comm's first collective sequence number (0 for an original comm).
func (v *View) Base() uint64 { return v.base }

func (v *View) procRank(r int) int {
	if v.procOf == nil {
		return r
	}
	return v.procOf[r]
}

// commRank is process rank p's rank in this comm, if it is a member.
func (v *View) commRank(p int) (int, bool) {
	if v.commOf == nil {
		return p, p >= 0 && p < v.size
	}
	if p < 0 || p >= len(v.commOf) || v.commOf[p] < 0 {
		return p, false
	}
	return v.commOf[p], true
}

func (v *View) Timeout() time.Duration { return v.t.Timeout() }

// Begin, Abort and Quiesce act on the process transport: sequence numbers are the comm's own
// (shrink.go), so they need no mapping. An abort reaches every live process; those outside the
// comm have nothing running at its numbers and drop it.
func (v *View) Begin(seq uint64, fp kx.Fingerprint) { v.rcv.Begin(seq, fp) }
func (v *View) Abort(seq uint64, err error)         { v.t.Abort(seq, err) }
func (v *View) Quiesce(seq uint64)                  { v.rcv.Quiesce(seq) }

// Release gives a payload of Recv back to the transport.
func (v *View) Release(b []byte) { v.rcv.Release(b) }

// Close gives up this comm's hold on the process transport (closed with the last comm).
func (v *View) Close() (err error) {
	v.once.Do(func() { err = v.proc.release() })
	return err
}

// FailedRanks lists the members the transport has seen crash or finalize, as comm ranks,
// ascending.
func (v *View) FailedRanks() []int {
	var out []int
	for _, p := range v.peers.FailedRanks() {
		if r, ok := v.commRank(p); ok {
			out = append(out, r)
		}
	}
	return out
}

// SendFits tells whether a message of n bytes to node goes out now (kx.Sender.Fits); with
// replication, never: the copies to the replicas go out in parallel (Send).
func (v *View) SendFits(node, n int) bool {
	if v.s != 1 || node < 0 || node >= v.m {
		return false
	}
	return v.snd.Fits(v.replicas[node][0], n)
}

// Post is Send for a message that may go by reference (kx.Sender.Post); with replication it is
// Send, and the message complete.
func (v *View) Post(to int, tag kx.Tag, bufs ...[]byte) (kx.Posted, error) {
	if v.s != 1 || to < 0 || to >= v.m {
		return kx.Posted{}, v.Send(to, tag, bufs...)
	}
	ps, err := v.snd.Post(v.replicas[to][0], tag, bufs...)
	return ps, v.translate(err)
}

// Complete waits until the peer copied a posted message (kx.Sender.Complete).
func (v *View) Complete(ps kx.Posted) error { return v.translate(v.snd.Complete(ps)) }

// WritesBack tells whether a message of n bytes to node goes by reference
// (kx.Sender.WritesBack); with replication, never (racing copies are not).
func (v *View) WritesBack(node, n int) bool {
	if v.s != 1 || node < 0 || node >= v.m {
		return false
	}
	return v.snd.WritesBack(v.replicas[node][0], n)
}

// SameHost tells whether messages to node stay on this host (its first replica's).
func (v *View) SameHost(node int) bool {
	return node >= 0 && node < v.m && v.peers.SameHost(v.replicas[node][0])
}

// ShmStats returns the transport's shared-memory figures, when it has them.
func (v *View) ShmStats() *kx.ShmStats { return v.peers.ShmStats() }

// RaceStats returns the racing copies received from each member, indexed and named by comm
// rank.
func (v *View) RaceStats() []kx.RacePeerStats {
	all := v.peers.RaceStats()
	if v.commOf == nil {
		return all
	}
	out := make([]kx.RacePeerStats, v.size)
	for r := range out {
		out[r].Rank = r
	}
	for _, p := range all {
		if r, ok := v.commRank(p.Rank); ok {
			p.Rank = r
			out[r] = p
		}
	}
	return out
}

// translate renumbers the ranks and collectives an error of the process transport names into
// this comm's. A peer's abort arrives with its text already in this comm's numbers (its own
// view renumbered it); only its reporter is mapped.
func (v *View) translate(err error) error {
	if err == nil || v.commOf == nil {
		return err // kept apart from renumber so that the data path's calls allocate nothing
	}
	return v.renumber(err)
}

func (v *View) renumber(err error) error {
	var e *kx.Error
	if !errors.As(err, &e) {
		return err
	}
	return e.Renumber(v.commRank, func(q uint64) (uint64, bool) {
		if q < v.base || q >= agreeSeq(v.epoch+1, 0) {
			return q, false // not one of this comm's collectives
		}
		return q - v.base, true
	})
}

// Transport is the process transport under the view (tests and tools read its own counters).
func (v *View) Transport() kx.Transport { return v.t }
