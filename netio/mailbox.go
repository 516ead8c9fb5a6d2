package netio

import (
	"kylix/core/kx"
	"sync"
	"sync/atomic"
	"time"
)

// mailbox is the receive side every transport shares: transports only deliver frames, aborts and
// deaths into it, so TCP and the in-memory transport fail in exactly the same ways.
//
// Frames are filed by sequence; each sequence's box holds its messages keyed by (layer, phase,
// source) and, once the collective is known to have failed (fingerprint mismatch or abort), the
// error every wait in it returns.
type mailbox struct {
	rank, size int
	timeout    time.Duration
	// lastData[r] is when data bytes from r last arrived (unix ns): a wait on r times out only
	// after timeout without data, so a large message still streaming in is not a late peer.
	// lastHeard[r] is when anything (data, heartbeat) last came from r: liveness (heartbeat.go).
	lastData, lastHeard []atomic.Int64
	// seqOf[r] is 1 + the latest collective r told of (its frames and heartbeats carry it), 0
	// before any: a stalled wait names the ranks that have not called its collective yet.
	seqOf []atomic.Uint64
	// stallEvery is how often a stalled wait logs (0: never); warnf prints the line.
	stallEvery time.Duration
	warnf      func(format string, args ...any)
	// Replication (race.go): groupOf[r] is rank r's node, members[g] the ranks of node g; nil
	// without replication. race counts copies won and lost per peer.
	groupOf []int
	members [][]int
	race    []raceCounters

	mu      sync.Mutex
	started bool // Begin was called at least once
	cur     uint64
	fp      kx.Fingerprint
	boxes   map[uint64]*seqBox
	dead    []error // per rank: why it is gone, nil while alive
	closed  error   // set by close: every wait fails with it
	waiters []*waiter
	// freeWaiters are waiters done with, for reuse.
	freeWaiters []*waiter
	// posts are the landing places core named with Expect for the current collective (cur):
	// a data frame for one of them is read straight into it (see claim).
	posts map[msgKey]*post
	// quiet is signalled when a post being filled lands or its reader fails (quiesce).
	quiet sync.Cond
}

type msgKey struct {
	layer uint8
	phase kx.Phase
	src   int
}

type frame struct {
	fp   kx.Fingerprint
	data []byte
}

type seqBox struct {
	msgs   map[msgKey][]frame // FIFO per key
	fail   error              // mismatch or abort: the collective is over
	remote bool               // fail came from a peer's abort, which every peer got too
	// stalled holds peers' timeout reports. A timeout is a guess about who is to blame: in a
	// chain of waits every rank times out at about the same moment, and the first report would
	// otherwise pre-empt the ranks that wait on the culprit itself. So a report from rank r ends
	// only waits on r at once; other waits run out their own timer (still within timeout_ms)
	// and name whom they waited for.
	stalled map[int]error
	// Racing messages (race.go): accepted[k] counts the messages of key k a copy has won
	// (filed, or landed in their place), seen[{k, r}] the frames of key k rank r has sent.
	// The i-th frame of a key from any replica carries the same message, so a frame whose
	// index is below accepted is a copy that lost, and is dropped.
	accepted map[msgKey]int
	seen     map[copyKey]int
}

type waiter struct {
	seq   uint64
	key   msgKey
	need  int           // a prefix wait's bytes (progress below it does not wake), else < 0
	ch    chan struct{} // buffered(1): a wake-up is never lost and never blocks the sender
	timer *time.Timer   // stopped while the waiter is free
}

// getWaiter takes a waiter from the free list (waits are frequent; their channel and timer
// are reused) or makes one. need is a prefix wait's byte count (else negative).
func (m *mailbox) getWaiter(seq uint64, k msgKey, need int) *waiter {
	if n := len(m.freeWaiters); n > 0 {
		w := m.freeWaiters[n-1]
		m.freeWaiters = m.freeWaiters[:n-1]
		w.seq, w.key, w.need = seq, k, need
		return w
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{seq: seq, key: k, need: need, ch: make(chan struct{}, 1), timer: t}
}

func newMailbox(rank, size int, timeout time.Duration) *mailbox {
	m := &mailbox{
		rank:      rank,
		size:      size,
		timeout:   timeout,
		lastData:  make([]atomic.Int64, size),
		lastHeard: make([]atomic.Int64, size),
		seqOf:     make([]atomic.Uint64, size),
		race:      make([]raceCounters, size),
		boxes:     map[uint64]*seqBox{},
		dead:      make([]error, size),
		posts:     map[msgKey]*post{},
	}
	m.quiet.L = &m.mu
	now := time.Now().UnixNano()
	for r := range m.lastHeard {
		m.lastHeard[r].Store(now) // a peer's silence counts from the start
	}
	return m
}

// free recycles the payloads nobody will read.
func (b *seqBox) free() {
	for _, q := range b.msgs {
		for _, f := range q {
			putBuf(f.data)
		}
	}
	b.msgs = map[msgKey][]frame{}
}

func (m *mailbox) box(seq uint64) *seqBox {
	b := m.boxes[seq]
	if b == nil {
		b = &seqBox{msgs: map[msgKey][]frame{}, accepted: map[msgKey]int{}, seen: map[copyKey]int{}}
		m.boxes[seq] = b
	}
	return b
}

// stale reports whether seq belongs to a collective this rank has already left.
func (m *mailbox) stale(seq uint64) bool { return m.started && seq < m.cur }

// begin makes seq the current collective: older boxes are dropped and frames of seq that
// arrived early are checked against fp.
func (m *mailbox) begin(seq uint64, fp kx.Fingerprint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started, m.cur, m.fp = true, seq, fp
	for k, p := range m.posts {
		if p.state == postEarly {
			putBuf(p.data)
		}
		delete(m.posts, k)
	}
	for s, b := range m.boxes {
		if s < seq {
			b.free()
			delete(m.boxes, s)
		}
	}
	b := m.boxes[seq]
	if b == nil || b.fail != nil {
		return
	}
	first := -1
	var theirs kx.Fingerprint
	for k, q := range b.msgs {
		for _, f := range q {
			if f.fp != fp && (first < 0 || k.src < first) {
				first, theirs = k.src, f.fp
			}
		}
	}
	if first >= 0 {
		m.failLocked(seq, b, mismatchError(first, theirs, fp, seq))
	}
}

// currentFP is the fingerprint this rank's frames carry.
func (m *mailbox) currentFP() kx.Fingerprint {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fp
}

// deliver files a data frame from src. data is owned by the mailbox from now on.
func (m *mailbox) deliver(src int, seq uint64, layer uint8, phase kx.Phase, fp kx.Fingerprint, data []byte) {
	m.deliverCopy(src, seq, layer, phase, fp, data, 0)
}

// deliverCopy is deliver; for a racing frame, idx is its place among src's frames of its key in
// seq (claimRace), and a copy of a message another replica's copy already delivered is dropped.
func (m *mailbox) deliverCopy(src int, seq uint64, layer uint8, phase kx.Phase, fp kx.Fingerprint, data []byte, idx int) {
	m.heard(src)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed != nil || m.stale(seq) {
		putBuf(data)
		return
	}
	b := m.box(seq)
	if b.fail != nil {
		putBuf(data)
		return
	}
	if m.started && seq == m.cur && fp != m.fp {
		putBuf(data)
		m.failLocked(seq, b, mismatchError(src, fp, m.fp, seq))
		return
	}
	k := m.key(layer, phase, src)
	if phase&raceBit != 0 {
		if idx < b.accepted[k] { // another copy won
			putBuf(data)
			m.raced(src, false, len(data))
			return
		}
		b.accepted[k] = idx + 1
		m.raced(src, true, len(data))
		if p := m.posts[k]; p != nil && p.seq == seq && p.state == postFilling {
			// Other copies are being offered into the post: complete it from this one.
			copy(p.dst, data)
			putBuf(data)
			p.filled, p.state = len(p.dst), postLanded
			m.wakeKey(seq, k)
			return
		}
	}
	if p := m.posts[k]; p != nil && p.seq == seq && p.state == postOpen {
		// Posted after claim looked and before this frame was filed: hand it to the post.
		p.state, p.data = postEarly, data
	} else {
		b.msgs[k] = append(b.msgs[k], frame{fp, data})
	}
	m.wakeKey(seq, k)
}

// abort records that collective seq failed with err: a peer's report (src >= 0, the error's
// Reporter) or this rank's own (src < 0). The first failure of a sequence wins; an
// abort of a sequence this rank already left is dropped, one of a future sequence waits for it.
func (m *mailbox) abort(seq uint64, src int, code kx.Code, msg string) {
	e := &kx.Error{Code: code, Msg: msg}
	if src >= 0 {
		m.heard(src)
		e = kx.Reported(code, msg, src)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed != nil || m.stale(seq) {
		return
	}
	b := m.box(seq)
	if b.fail != nil {
		return
	}
	if code == kx.CodeTimeout && src >= 0 {
		if b.stalled == nil {
			b.stalled = map[int]error{}
		}
		b.stalled[src] = e
		for _, w := range m.waiters {
			if w.seq == seq { // a racing wait is keyed by node: let each look for itself
				wake(w)
			}
		}
		return
	}
	m.failLocked(seq, b, e)
	b.remote = src >= 0
}

// abortedByPeer reports whether collective seq failed because a peer aborted it. That peer told
// every rank (full mesh), so passing its abort on would only multiply frames.
func (m *mailbox) abortedByPeer(seq uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.boxes[seq]
	return b != nil && b.remote
}

func (m *mailbox) failLocked(seq uint64, b *seqBox, err error) {
	b.fail = err
	b.free() // nothing of a failed collective will be read
	for _, w := range m.waiters {
		if w.seq == seq {
			wake(w)
		}
	}
}

// markDead records that rank r is gone. Messages it delivered before stay readable; a wait for
// anything else from it fails at once with err. The first reason wins.
func (m *mailbox) markDead(r int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r < 0 || r >= m.size || m.dead[r] != nil {
		return
	}
	m.dead[r] = err
	for _, w := range m.waiters {
		wake(w) // deaths are rare; each wait checks whether it waited for r (or r's node)
	}
}

// deadErr is why rank r is gone, or nil.
func (m *mailbox) deadErr(r int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dead[r]
}

// failedRanks lists the ranks that crashed or finalized, in order.
func (m *mailbox) failedRanks() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rs []int
	for r, e := range m.dead {
		if e != nil {
			rs = append(rs, r)
		}
	}
	return rs
}

// close fails every current and future wait with err and frees what was buffered.
func (m *mailbox) close(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed != nil {
		return
	}
	m.closed = err
	for _, b := range m.boxes {
		b.free()
	}
	m.boxes = map[uint64]*seqBox{}
	for _, w := range m.waiters {
		wake(w)
	}
}

// heard records data bytes from src (which also prove it alive).
func (m *mailbox) heard(src int) {
	if src >= 0 && src < len(m.lastHeard) {
		now := time.Now().UnixNano()
		m.lastData[src].Store(now)
		m.lastHeard[src].Store(now)
	}
}

// alive records a sign of life from src that carries no data (a heartbeat, an abort).
func (m *mailbox) alive(src int) {
	if src >= 0 && src < len(m.lastHeard) {
		m.lastHeard[src].Store(time.Now().UnixNano())
	}
}

// calling records that src has reached collective seq (a frame or heartbeat of it).
func (m *mailbox) calling(src int, seq uint64) {
	if src < 0 || src >= len(m.seqOf) {
		return
	}
	for {
		old := m.seqOf[src].Load()
		if old >= seq+1 || m.seqOf[src].CompareAndSwap(old, seq+1) {
			return
		}
	}
}

func wake(w *waiter) {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// recv waits for the message from rank `from` with tag and returns its payload, which the
// caller owns. A failed collective, a dead peer, a closed mailbox or timeout of silence from
// `from` end the wait with an error.
func (m *mailbox) recv(from int, tag kx.Tag) ([]byte, error) {
	r, err := m.wait(from, tag, recvWhole)
	return r.data, err
}

// takeMsg pops the first buffered message with key k, or returns nil.
func takeMsg(b *seqBox, k msgKey) []byte {
	q := b.msgs[k]
	if len(q) == 0 {
		return nil
	}
	data := q[0].data
	q[0] = frame{}
	if len(q) == 1 {
		delete(b.msgs, k)
	} else {
		b.msgs[k] = q[1:]
	}
	return data
}

// What wait waits for: a buffered message (recv), a posted message landed whole, or (n >= 0)
// the first n bytes of a posted message.
const (
	recvWhole = -2
	postWhole = -1
)

// wait blocks until the message is there (readyLocked). A failed collective, a dead peer (for
// a racing message: every replica of the source node dead), a closed mailbox or timeout without
// data from `from` end the wait with an error. A wait that stalls logs a line every stallEvery.
func (m *mailbox) wait(from int, tag kx.Tag, prefix int) (ready, error) {
	if from < 0 || from >= m.size {
		return ready{}, kx.Errorf(kx.CodeArg, "recv: source rank %d is not in 0..%d", kx.RankRef(from), m.size-1)
	}
	k := m.key(tag.Layer, wirePhase(tag), from)
	var w *waiter
	start := time.Now()
	nextStall := m.stallEvery
	m.mu.Lock()
	defer func() {
		if w != nil {
			m.removeWaiter(w)
			if !w.timer.Stop() { // fired and not received: drain so the next Reset starts clean
				select {
				case <-w.timer.C:
				default:
				}
			}
			select { // a wake-up that came too late must not wake the next user
			case <-w.ch:
			default:
			}
			m.freeWaiters = append(m.freeWaiters, w)
		}
		m.mu.Unlock()
	}()
	for {
		if m.closed != nil {
			return ready{}, m.closed
		}
		if m.stale(tag.Seq) {
			return ready{}, kx.Errorf(kx.CodeState, "recv: collective %d is over (this rank is in %d)", kx.SeqRef(tag.Seq), kx.SeqRef(m.cur))
		}
		b := m.box(tag.Seq)
		if b.fail != nil {
			return ready{}, b.fail
		}
		if r, ok := m.readyLocked(b, k, tag.Seq, prefix); ok {
			return r, nil
		}
		if err := m.stalledLocked(b, k, from); err != nil {
			// The rank we wait for gave up on this collective: it will not send.
			m.failLocked(tag.Seq, b, err)
			b.remote = true
			return ready{}, err
		}
		if err := m.goneLocked(k, from); err != nil {
			return ready{}, err
		}
		if w == nil {
			w = m.getWaiter(tag.Seq, k, prefix)
			m.waiters = append(m.waiters, w)
			w.timer.Reset(m.nextCheck(m.timeout, nextStall))
		}
		m.mu.Unlock()
		select {
		case <-w.ch:
			m.mu.Lock()
		case <-w.timer.C:
			m.mu.Lock()
			waited := time.Since(start)
			if nextStall > 0 && waited >= nextStall {
				m.reportStall(tag, k, from, waited)
				nextStall += m.stallEvery
			}
			// The timeout counts from the later of the start of this wait and the last data
			// from the peer (a long message may still be arriving); heartbeats do not count.
			last := max(start.UnixNano(), m.lastDataFrom(k, from))
			if left := time.Until(time.Unix(0, last).Add(m.timeout)); left > 0 {
				w.timer.Reset(m.nextCheck(left, nextStall-waited))
				continue
			}
			// One last look: the message may have raced the timer.
			if b := m.boxes[tag.Seq]; b != nil && b.fail != nil {
				return ready{}, b.fail
			} else if b != nil {
				if r, ok := m.readyLocked(b, k, tag.Seq, prefix); ok {
					return r, nil
				}
			}
			if m.closed != nil || m.goneLocked(k, from) != nil {
				continue
			}
			return ready{}, kx.Errorf(kx.CodeTimeout, "rank %d sent nothing for %v: waited for its %s message of collective %d, layer %d",
				kx.RankRef(from), m.timeout, phaseName(tag.Phase), kx.SeqRef(tag.Seq), kx.LayerRef(tag.Layer))
		}
	}
}

// nextCheck is when a waiting wait looks again: at the timeout, or earlier for a stall report.
func (m *mailbox) nextCheck(timeout, untilStall time.Duration) time.Duration {
	if m.stallEvery > 0 && untilStall > 0 && untilStall < timeout {
		return untilStall
	}
	return timeout
}

func (m *mailbox) removeWaiter(w *waiter) {
	for i, x := range m.waiters {
		if x == w {
			last := len(m.waiters) - 1
			m.waiters[i] = m.waiters[last]
			m.waiters[last] = nil
			m.waiters = m.waiters[:last]
			return
		}
	}
}

// Errors both transports give for a peer that went away.
func finalizedError(r int) error {
	return kx.Errorf(kx.CodePeer, "rank %d has finalized", kx.RankRef(r))
}

func lostError(r int, why string) error {
	return kx.Errorf(kx.CodePeer, "rank %d is lost: %s", kx.RankRef(r), why)
}
