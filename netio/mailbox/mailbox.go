// Package mailbox is the receive side every transport shares: transports hand it frames,
// aborts, heartbeats and deaths, and core's waits (Recv, Post/Await) are served from it, so
// TCP and the in-memory transport fail in exactly the same ways.
//
// The door a transport uses is small: Receive (a data frame read from a stream) or Put (one
// already in memory), Abort, Heartbeat, MarkDead and Close, plus the liveness clock (Alive,
// Silence). The rest (posts, the payload pool, racing copies, waiters) stays in here.
package mailbox

import (
	"kylix/core/kx"
	"sync"
	"sync/atomic"
	"time"
)

// Mailbox files frames by sequence; each sequence's box holds its messages keyed by (layer,
// phase, source) and, once the collective is known to have failed (fingerprint mismatch or
// abort), the error every wait in it returns.
type Mailbox struct {
	rank, size int
	timeout    time.Duration
	live       liveness  // when each peer was last heard from, and which collective it is in
	race       raceTable // replication: who is whose replica, copies won and lost
	// stallEvery is how often a stalled wait logs (0: never); warnf prints the line.
	stallEvery time.Duration
	warnf      func(format string, args ...any)
	// scratch[src] is where src's reader puts racing chunks before offering them, and the
	// pieces of a folded message (fold.go); only that reader touches it.
	scratch [][]byte
	// wanted is the buffer a small frame a Recv waits for is read into on the waiting thread
	// (WantBuf), until the Recv's caller gives it back (Release, on any goroutine); wantedOut
	// while it is out. Made with the mailbox and never replaced, so that Release may compare
	// any payload with it: one compare-and-swap and one store a use, where the pool's stack
	// takes a lock each way.
	wanted    []byte
	wantedOut atomic.Bool

	mu      sync.Mutex
	started bool // Begin was called at least once
	cur     uint64
	fp      kx.Fingerprint
	boxes   []*seqBox     // by sequence: the current collective's and those of early frames (tables.go)
	dead    []error       // per rank: why it is gone, nil while alive
	bye     []bool        // per rank: it is gone because it said bye (MarkFinalized)
	anyDead atomic.Bool   // some rank is dead: Dead, asked before every send, looks under mu only then
	changes atomic.Uint64 // failures and closes so far, counted under mu (HandOver)
	closed  error         // set by Close: every wait fails with it
	waiters []*waiter
	// freeWaiters are waiters done with, for reuse; freeBoxes and freePosts the same for boxes
	// and posts (a small step allocates nothing: no collector's pauses in a loop of them).
	freeWaiters []*waiter
	freeBoxes   []*seqBox
	freePosts   []*post
	// posts are the landing places core named with Post for the current collective (cur):
	// a data frame for one of them is read straight into it (see claim).
	posts []*post
	// quiet is signalled when a post being filled lands or its reader fails (Quiesce).
	quiet sync.Cond
	// The posts that landed whole lately, for Await's look without the lock (landed.go):
	// wholes, one slot a key, and gen, the collectives begun (or quiesced) so far, which tells
	// which of them are the current collective's (written under mu).
	wholes [8]atomic.Pointer[post]
	gen    atomic.Uint64
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

// frameQ is the FIFO of one key's buffered frames: the first inline, so the usual single frame
// costs no allocation.
type frameQ struct {
	head frame
	rest []frame
}

type seqBox struct {
	seq    uint64
	msgs   []keyedQ // a FIFO per key
	fail   error    // mismatch or abort: the collective is over
	remote bool     // fail came from a peer's abort, which every peer got too
	// stalled holds peers' timeout reports. A timeout is a guess about who is to blame: in a
	// chain of waits every rank times out at about the same moment, and the first report would
	// otherwise pre-empt the ranks that wait on the culprit itself. So a report from rank r ends
	// only waits on r at once; other waits run out their own timer (still within timeout_ms)
	// and name whom they waited for.
	stalled map[int]error
	// Racing messages (copies.go): accepted[k] counts the messages of key k a copy has won
	// (filed, or landed in their place), seen[{k, r}] the frames of key k rank r has sent.
	// The i-th frame of a key from any replica carries the same message, so a frame whose
	// index is below accepted is a copy that lost, and is dropped.
	accepted map[msgKey]int
	seen     map[copyKey]int
}

// New makes the mailbox of rank in a job of size ranks; a wait for a silent peer ends after
// timeout.
func New(rank, size int, timeout time.Duration) *Mailbox {
	m := &Mailbox{
		rank:    rank,
		size:    size,
		timeout: timeout,
		live:    newLiveness(size),
		race:    raceTable{counts: make([]raceCounters, size)},
		scratch: make([][]byte, size),
		dead:    make([]error, size),
		bye:     make([]bool, size),
		wanted:  make([]byte, wantedBytes),
	}
	m.quiet.L = &m.mu
	return m
}

// free recycles the payloads nobody will read.
func (b *seqBox) free() {
	for i := range b.msgs {
		PutBuf(b.msgs[i].q.head.data)
		for _, f := range b.msgs[i].q.rest {
			PutBuf(f.data)
		}
		b.msgs[i] = keyedQ{} // element by element: a handful, where clear() is a runtime call
	}
	b.msgs = b.msgs[:0]
}

// put appends a frame to key k's queue.
func (b *seqBox) put(k msgKey, f frame) {
	if i := b.msgAt(k); i >= 0 {
		b.msgs[i].q.rest = append(b.msgs[i].q.rest, f)
		return
	}
	b.msgs = append(b.msgs, keyedQ{k: k, q: frameQ{head: f}})
}

// box is seq's box, made (or taken from the boxes of collectives left) when it has none: a
// small collective allocates nothing here.
func (m *Mailbox) box(seq uint64) *seqBox {
	b := m.boxOf(seq)
	if b == nil {
		if n := len(m.freeBoxes); n > 0 {
			b = m.freeBoxes[n-1]
			m.freeBoxes[n-1] = nil
			m.freeBoxes = m.freeBoxes[:n-1]
		} else {
			b = &seqBox{accepted: map[msgKey]int{}, seen: map[copyKey]int{}}
		}
		b.seq = seq
		m.boxes = append(m.boxes, b)
	}
	return b
}

// recycle empties a box of a collective left and keeps it for a later one.
func (m *Mailbox) recycle(b *seqBox) {
	b.free()
	// Each only when not empty (racing fills the first two, timeouts the last): an empty
	// clear still costs a call.
	if len(b.accepted) > 0 {
		clear(b.accepted)
	}
	if len(b.seen) > 0 {
		clear(b.seen)
	}
	if len(b.stalled) > 0 {
		clear(b.stalled)
	}
	b.fail, b.remote = nil, false
	if len(m.freeBoxes) < 4 {
		m.freeBoxes = append(m.freeBoxes, b)
	}
}

// stale reports whether seq belongs to a collective this rank has already left.
func (m *Mailbox) stale(seq uint64) bool { return m.started && seq < m.cur }

// Begin makes seq the current collective: older boxes are dropped and frames of seq that
// arrived early are checked against fp.
func (m *Mailbox) Begin(seq uint64, fp kx.Fingerprint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started, m.cur, m.fp = true, seq, fp
	kx.AddRelaxed(&m.gen, 1) // the posts landed whole so far are not this collective's (Landed)
	// Recycled backwards: the next collective's posts, taken from the free list's end, are then
	// the same in the same order, and each finds its key's slot holding it already (wholeSlot).
	for i := len(m.posts) - 1; i >= 0; i-- {
		p := m.posts[i]
		if p.state == postEarly {
			PutBuf(p.data)
		}
		m.recyclePost(p)
		m.posts[i] = nil
	}
	m.posts = m.posts[:0]
	kept := m.boxes[:0]
	for _, b := range m.boxes {
		if b.seq < seq {
			m.recycle(b)
		} else {
			kept = append(kept, b)
		}
	}
	for i := len(kept); i < len(m.boxes); i++ {
		m.boxes[i] = nil
	}
	m.boxes = kept
	b := m.boxOf(seq)
	if b == nil || b.fail != nil {
		return
	}
	first := -1
	var theirs kx.Fingerprint
	for _, e := range b.msgs {
		for i := -1; i < len(e.q.rest); i++ {
			f := e.q.head
			if i >= 0 {
				f = e.q.rest[i]
			}
			if f.fp != fp && (first < 0 || e.k.src < first) {
				first, theirs = e.k.src, f.fp
			}
		}
	}
	if first >= 0 {
		m.failLocked(seq, b, kx.MismatchError(first, theirs, fp, seq))
	}
}

// Current is the collective this rank is in (or was last in) and the fingerprint its frames
// carry.
func (m *Mailbox) Current() (uint64, kx.Fingerprint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur, m.fp
}

// deliver files a data frame from src. data is owned by the mailbox from now on.
func (m *Mailbox) deliver(src int, seq uint64, layer uint8, phase kx.Phase, fp kx.Fingerprint, data []byte) {
	m.deliverCopy(src, seq, layer, phase, fp, data, 0)
}

// deliverCopy is deliver; for a racing frame, idx is its place among src's frames of its key in
// seq (claimRace), and a copy of a message another replica's copy already delivered is dropped.
func (m *Mailbox) deliverCopy(src int, seq uint64, layer uint8, phase kx.Phase, fp kx.Fingerprint, data []byte, idx int) {
	m.live.heard(src)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed != nil || m.stale(seq) {
		PutBuf(data)
		return
	}
	b := m.box(seq)
	if b.fail != nil {
		PutBuf(data)
		return
	}
	if m.started && seq == m.cur && fp != m.fp {
		PutBuf(data)
		m.failLocked(seq, b, kx.MismatchError(src, fp, m.fp, seq))
		return
	}
	k := m.race.key(layer, phase, src)
	if phase&raceBit != 0 {
		if idx < b.accepted[k] { // another copy won
			PutBuf(data)
			m.race.count(src, false, len(data))
			return
		}
		b.accepted[k] = idx + 1
		m.race.count(src, true, len(data))
		if p := m.postOf(k); p != nil && p.seq == seq && p.state == postFilling {
			// Other copies are being offered into the post: complete it from this one. Only
			// past the filled prefix: that prefix is the same message, and its waiter may
			// already have combined into it in place (Await of a prefix; dense allreduce accumulates
			// in the first member's slot), so writing it again would undo that work.
			copy(p.dst[p.filled:], data[p.filled:])
			PutBuf(data)
			p.filled, p.state = len(p.dst), postLanded
			m.wakeKey(seq, k)
			return
		}
	}
	if p := m.postOf(k); p != nil && p.seq == seq && p.state == postOpen {
		// Posted after claim looked and before this frame was filed: hand it to the post.
		p.state, p.data = postEarly, data
	} else {
		b.put(k, frame{fp, data})
	}
	m.wakeKey(seq, k)
}

// Abort records that collective seq failed with code and msg: a peer's report (src >= 0, the
// error's Reporter; named is the rank its error named first, -1 for none) or this rank's own
// (src < 0). The first failure of a sequence wins; an
// abort of a sequence this rank already left is dropped, one of a future sequence waits for it.
func (m *Mailbox) Abort(seq uint64, src int, code kx.Code, named int, msg string) {
	e := &kx.Error{Code: code, Msg: msg}
	if src >= 0 {
		m.live.heard(src)
		e = kx.Reported(code, msg, src, named)
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

// AbortedByPeer reports whether collective seq failed because a peer aborted it. That peer told
// every rank (full mesh), so passing its abort on would only multiply frames.
func (m *Mailbox) AbortedByPeer(seq uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.boxOf(seq)
	return b != nil && b.remote
}

// PeerAbort is the failure a peer's abort brought to collective seq, or nil (none, or a
// failure of this rank's own).
func (m *Mailbox) PeerAbort(seq uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b := m.boxOf(seq); b != nil && b.remote {
		return b.fail
	}
	return nil
}

func (m *Mailbox) failLocked(seq uint64, b *seqBox, err error) {
	b.fail = err
	m.changes.Add(1)
	b.free() // nothing of a failed collective will be read
	for _, w := range m.waiters {
		if w.seq == seq {
			wake(w)
		}
	}
}

// MarkDead records that rank r is gone. Messages it delivered before stay readable; a wait for
// anything else from it fails at once with err. The first reason wins.
func (m *Mailbox) MarkDead(r int, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r < 0 || r >= m.size || m.dead[r] != nil {
		return
	}
	m.dead[r] = err
	m.anyDead.Store(true)
	for _, w := range m.waiters {
		wake(w) // deaths are rare; each wait checks whether it waited for r (or r's node)
	}
}

// MarkFinalized is MarkDead for a rank that said bye (FinalizedError), which Finalized tells
// apart from a death.
func (m *Mailbox) MarkFinalized(r int) {
	m.mu.Lock()
	if r >= 0 && r < m.size && m.dead[r] == nil {
		m.bye[r] = true
	}
	m.mu.Unlock()
	m.MarkDead(r, FinalizedError(r))
}

// Finalized waits up to d for rank r to be marked gone and tells whether it said bye (false
// for a death, or when nothing was marked by then). A send that waited for the peer to release
// its payload asks (netio: awaitRefCopied), where the peer's bye and its release race.
func (m *Mailbox) Finalized(r int, d time.Duration) bool {
	if r < 0 || r >= m.size {
		return false
	}
	deadline := time.Now().Add(d)
	for {
		m.mu.Lock()
		gone, bye := m.dead[r] != nil, m.bye[r]
		m.mu.Unlock()
		if gone || !time.Now().Before(deadline) {
			return bye
		}
		time.Sleep(100 * time.Microsecond) // a rare path: the reader is about to read the bye
	}
}

// Dead is why rank r is gone, or nil.
func (m *Mailbox) Dead(r int) error {
	if !m.anyDead.Load() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dead[r]
}

// FailedRanks lists the ranks that crashed or finalized, in order.
func (m *Mailbox) FailedRanks() []int {
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

// Close fails every current and future wait with err and frees what was buffered.
func (m *Mailbox) Close(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed != nil {
		return
	}
	m.closed = err
	m.changes.Add(1)
	for _, b := range m.boxes {
		b.free()
	}
	m.boxes = nil
	for _, w := range m.waiters {
		wake(w)
	}
}

// FinalizedError is what both transports say of a peer that said bye.
func FinalizedError(r int) error {
	return kx.Errorf(kx.CodePeer, "rank %d has finalized", kx.RankRef(r))
}

// LostError is what both transports say of a peer that went away without a bye.
func LostError(r int, why string) error {
	return kx.Errorf(kx.CodePeer, "rank %d is lost: %s", kx.RankRef(r), why)
}
