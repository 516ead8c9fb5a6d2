package members

import (
	"kylix/core/kx"
	"time"
)

// The simulated network of the agreement simulation: one endpoint per process of the old comm,
// FIFO links between them (as TCP and the shared-memory rings are), and the receive-side rules
// every real transport shares through netio/mailbox: frames of a collective left are dropped,
// a frame with another fingerprint fails the collective, an abort fails it on every peer, a
// dead peer's frames already delivered stay readable, and a wait ends after Timeout without
// data from the peer. Faults come from the schedule (agreesim_test.go) through hooks: a death
// or a stop before a send, a message delayed, a link cut.

// simPort is what the agreement uses of a process transport, and all a simulated endpoint
// implements; simTransport adapts it to kx.Transport.
type simPort interface {
	Rank() int
	Size() int
	Timeout() time.Duration
	Begin(seq uint64, fp kx.Fingerprint)
	Send(to int, tag kx.Tag, bufs ...[]byte) error
	Recv(from int, tag kx.Tag) ([]byte, error)
	Release(b []byte)
	FailedRanks() []int
	Abort(seq uint64, err error)
	SetReplicaGroups(groupOf []int) error
	Close() error
}

// simTransport is the one adapter between the simulation and kx.Transport and its three faces
// (Sender, Receiver, Peers). The methods the agreement does not use are the embedded nil
// interfaces': calling one panics, so the run reports it as a crash instead of simulating
// something the simulation does not model.
type simTransport struct {
	kx.Transport
	p simPort
}

func (t simTransport) Rank() int                      { return t.p.Rank() }
func (t simTransport) Size() int                      { return t.p.Size() }
func (t simTransport) Timeout() time.Duration         { return t.p.Timeout() }
func (t simTransport) Abort(seq uint64, err error)    { t.p.Abort(seq, err) }
func (t simTransport) SetReplicaGroups(g []int) error { return t.p.SetReplicaGroups(g) }
func (t simTransport) Close() error                   { return t.p.Close() }
func (t simTransport) Sender() kx.Sender              { return simSender{p: t.p} }
func (t simTransport) Receiver() kx.Receiver          { return simReceiver{p: t.p} }
func (t simTransport) Peers() kx.Peers                { return simPeers{p: t.p} }

type simSender struct {
	kx.Sender
	p simPort
}

func (s simSender) Send(to int, tag kx.Tag, bufs ...[]byte) error { return s.p.Send(to, tag, bufs...) }

type simReceiver struct {
	kx.Receiver
	p simPort
}

func (r simReceiver) Begin(seq uint64, fp kx.Fingerprint)       { r.p.Begin(seq, fp) }
func (r simReceiver) Recv(from int, tag kx.Tag) ([]byte, error) { return r.p.Recv(from, tag) }
func (r simReceiver) Release(b []byte)                          { r.p.Release(b) }

type simPeers struct {
	kx.Peers
	p simPort
}

func (q simPeers) FailedRanks() []int { return q.p.FailedRanks() }

type simKey struct {
	layer uint8
	phase kx.Phase
	src   int
}

type simFrame struct {
	fp   kx.Fingerprint
	data []byte
}

type simBox struct {
	msgs map[simKey][]simFrame
	fail error
}

type simLink struct {
	last  time.Duration // delivery time of the latest frame sent: frames never overtake it
	epoch int           // bumped when the link is cut: frames sent before are lost
	down  bool          // cut: new frames are lost
}

type simNet struct {
	s        *sim
	timeout  time.Duration
	liveness time.Duration
	eps      []*simEP
	links    [][]simLink // [from][to]
	// beforeSend is the schedule's hook at every send of the agreement: it may kill or stop
	// the sender (from the sender's goroutine).
	beforeSend func(ep *simEP, to int, tag kx.Tag)
	// beforeRecv is the schedule's hook at every receive of the agreement: a non-nil error is
	// a verdict the receiver comes to without the network's say (a stale one).
	beforeRecv func(ep *simEP, from int, tag kx.Tag) error
	// delay is the schedule's latency of one frame.
	delay func() time.Duration
	sent  uint64 // frames sent, numbering them
	// reorders counts frames delivered after a frame to the same receiver sent later.
	reorders int
}

type simEP struct {
	net     *simNet
	rank    int
	proc    *simProc
	started bool
	cur     uint64
	fp      kx.Fingerprint
	boxes   map[uint64]*simBox
	dead    []error
	heard   []time.Duration // last data from each peer
	closed  bool
	sends   int    // sends made, for deaths at the i-th send
	recvs   int    // receives begun, for stale verdicts at the i-th receive
	newest  uint64 // highest frame number delivered here
}

func newSimNet(s *sim, n int, timeout, liveness time.Duration) *simNet {
	nt := &simNet{s: s, timeout: timeout, liveness: liveness, links: make([][]simLink, n)}
	for i := range n {
		nt.links[i] = make([]simLink, n)
		nt.eps = append(nt.eps, &simEP{net: nt, rank: i, boxes: map[uint64]*simBox{}, dead: make([]error, n), heard: make([]time.Duration, n)})
	}
	return nt
}

func (e *simEP) Rank() int              { return e.rank }
func (e *simEP) Size() int              { return len(e.net.eps) }
func (e *simEP) Timeout() time.Duration { return e.net.timeout }
func (e *simEP) Release([]byte)         {}
func (e *simEP) Close() error           { e.closed = true; return nil }

func (e *simEP) SetReplicaGroups(groupOf []int) error { return nil }

func (e *simEP) stale(seq uint64) bool { return e.started && seq < e.cur }

func (e *simEP) box(seq uint64) *simBox {
	b := e.boxes[seq]
	if b == nil {
		b = &simBox{msgs: map[simKey][]simFrame{}}
		e.boxes[seq] = b
	}
	return b
}

func (e *simEP) Begin(seq uint64, fp kx.Fingerprint) {
	e.started, e.cur, e.fp = true, seq, fp
	for q := range e.boxes {
		if q < seq {
			delete(e.boxes, q)
		}
	}
	b := e.boxes[seq]
	if b == nil || b.fail != nil {
		return
	}
	for k, q := range b.msgs {
		for _, f := range q {
			if f.fp != fp {
				b.fail = kx.Errorf(kx.CodeMismatch, "rank %d called another collective (fingerprint)", kx.RankRef(k.src))
				return
			}
		}
	}
}

func (e *simEP) FailedRanks() []int {
	var out []int
	for r, err := range e.dead {
		if err != nil {
			out = append(out, r)
		}
	}
	return out
}

// Send schedules the frame's delivery after the link's latency, behind every earlier frame of
// the link.
func (e *simEP) Send(to int, tag kx.Tag, bufs ...[]byte) error {
	nt := e.net
	if nt.beforeSend != nil && to != e.rank {
		nt.beforeSend(e, to, tag)
	}
	e.sends++
	if to < 0 || to >= len(nt.eps) {
		return kx.Errorf(kx.CodeArg, "send: destination rank %d is not in 0..%d", kx.RankRef(to), len(nt.eps)-1)
	}
	if e.dead[to] != nil {
		return e.dead[to]
	}
	var data []byte
	for _, b := range bufs {
		data = append(data, b...)
	}
	nt.sent++
	num := nt.sent
	if to == e.rank {
		e.deliver(e.rank, tag, data, num)
		return nil
	}
	l := &nt.links[e.rank][to]
	if l.down {
		return nil // lost in the cut: the receiver finds the sender dead later
	}
	at := max(nt.s.now+nt.delay(), l.last)
	l.last = at
	ep, dst := l.epoch, nt.eps[to]
	from := e.rank
	nt.s.at(at, func() {
		if nt.links[from][to].epoch == ep {
			dst.deliver(from, tag, data, num)
		}
	})
	return nil
}

// deliver files a frame, as mailbox.deliver does.
func (e *simEP) deliver(src int, tag kx.Tag, data []byte, num uint64) {
	if e.proc == nil || e.proc.killed || e.closed {
		return
	}
	if num < e.newest {
		e.net.reorders++
	}
	e.newest = max(e.newest, num)
	e.heard[src] = e.net.s.now
	defer e.net.s.makeReady(e.proc)
	if e.stale(tag.Seq) {
		return
	}
	b := e.box(tag.Seq)
	if b.fail != nil {
		return
	}
	if e.started && tag.Seq == e.cur && tag.FP != e.fp {
		b.fail = kx.Errorf(kx.CodeMismatch, "rank %d called another collective (fingerprint)", kx.RankRef(src))
		return
	}
	k := simKey{tag.Layer, tag.Phase, src}
	b.msgs[k] = append(b.msgs[k], simFrame{tag.FP, data})
}

// Recv waits as mailbox.wait does: for the frame, a failed collective, the peer's death, or
// Timeout from the later of the wait's start and the peer's last data.
func (e *simEP) Recv(from int, tag kx.Tag) ([]byte, error) {
	if from < 0 || from >= len(e.net.eps) {
		return nil, kx.Errorf(kx.CodeArg, "recv: source rank %d is not in 0..%d", kx.RankRef(from), len(e.net.eps)-1)
	}
	e.recvs++
	if h := e.net.beforeRecv; h != nil && from != e.rank {
		if err := h(e, from, tag); err != nil {
			return nil, err
		}
	}
	start := e.net.s.now
	k := simKey{tag.Layer, tag.Phase, from}
	for {
		if e.stale(tag.Seq) {
			return nil, kx.Errorf(kx.CodeState, "recv: collective %d is over (this rank is in %d)", kx.SeqRef(tag.Seq), kx.SeqRef(e.cur))
		}
		b := e.box(tag.Seq)
		if b.fail != nil {
			return nil, b.fail
		}
		if q := b.msgs[k]; len(q) > 0 {
			b.msgs[k] = q[1:]
			return q[0].data, nil
		}
		if e.dead[from] != nil {
			return nil, e.dead[from]
		}
		due := max(start, e.heard[from]) + e.net.timeout
		if e.net.s.now >= due {
			return nil, kx.Errorf(kx.CodeTimeout, "rank %d sent nothing for %v: waited for its %s message of collective %d",
				kx.RankRef(from), e.net.timeout, tag.Phase, kx.SeqRef(tag.Seq))
		}
		e.proc.block(due)
	}
}

// Abort fails seq here at once and on every live peer when the abort frame arrives.
func (e *simEP) Abort(seq uint64, err error) {
	e.fail(seq, err)
	nt := e.net
	for to, dst := range nt.eps {
		if to == e.rank || e.dead[to] != nil || nt.links[e.rank][to].down {
			continue
		}
		l := &nt.links[e.rank][to]
		at := max(nt.s.now+nt.delay(), l.last)
		l.last = at
		ep, from := l.epoch, e.rank
		nt.s.at(at, func() {
			if nt.links[from][to].epoch == ep && dst.proc != nil && !dst.proc.killed {
				dst.fail(seq, kx.Errorf(kx.CodeOf(err), "%s (reported by rank %d)", err.Error(), from))
				nt.s.makeReady(dst.proc)
			}
		})
	}
}

func (e *simEP) fail(seq uint64, err error) {
	if e.stale(seq) {
		return
	}
	if b := e.box(seq); b.fail == nil {
		b.fail = err
		clear(b.msgs)
	}
}

// markDead tells e that rank r is gone: frames it delivered stay readable.
func (e *simEP) markDead(r int, err error) {
	if e.dead[r] == nil {
		e.dead[r] = err
		if e.proc != nil {
			e.net.s.makeReady(e.proc)
		}
	}
}

// kill crashes process rank r now: each peer finds it lost once the frames it sent have
// arrived (a reset connection after the data in flight), a short while later.
func (nt *simNet) kill(r int) {
	e := nt.eps[r]
	e.proc.kill()
	for q, peer := range nt.eps {
		if q == r || nt.links[r][q].down {
			continue
		}
		at := max(nt.s.now+nt.delay(), nt.links[r][q].last)
		nt.s.at(at, func() {
			peer.markDead(r, kx.Errorf(kx.CodePeer, "rank %d is lost: connection closed without a bye (killed)", kx.RankRef(r)))
		})
	}
}

// cut drops the link between a and b both ways, frames in flight included, and each side finds
// the other lost: what liveness does to a peer silent for liveness_ms.
func (nt *simNet) cut(a, b int) {
	for _, l := range []*simLink{&nt.links[a][b], &nt.links[b][a]} {
		l.epoch++
		l.down = true
	}
	lost := func(r int) error {
		return kx.Errorf(kx.CodePeer, "rank %d is lost: nothing heard from it for %v (liveness)", kx.RankRef(r), nt.liveness)
	}
	nt.eps[a].markDead(b, lost(b))
	nt.eps[b].markDead(a, lost(a))
}

// silence makes the links between a and b lose every frame from now on (a partition, or a
// stopped process), and has liveness cut them after liveness_ms and a little.
func (nt *simNet) silence(a, b int) {
	for _, l := range []*simLink{&nt.links[a][b], &nt.links[b][a]} {
		l.epoch++
		l.down = true
	}
	nt.s.at(nt.s.now+nt.liveness+nt.delay(), func() { nt.cut(a, b) })
}
