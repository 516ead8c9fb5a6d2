package core

import (
	"errors"
	"hash/fnv"
	"kylix/core/kx"
	"sync"
	"time"
)

// Shrink (kylix_shrink, like ULFM's MPI_Comm_shrink): after a peer failure the survivors agree on
// who is still alive and make a new comm of exactly those ranks, renumbered 0..k-1 in the order
// of their ranks in the old comm. It works through the Transport interface only (and the
// optional FailedRanks), so the in-memory and the TCP transport behave alike.
//
// The new comm runs over the same underlying transport (same mailbox, same connections) through
// a subTransport that maps its ranks to the transport's. Collectives are told apart by sequence
// number alone, so the new comm takes numbers from a range no earlier comm can have used:
//
//	original comm                      0 ..                          (bit 63 clear)
//	agreement for epoch e, round r     1<<63 | e<<51 | r
//	comm of epoch e                    1<<63 | e<<51 | view<<39 | n  (view in 1..4095, n = 0, 1, ...)
//
// The epoch counts the shrinks that led to a comm (the original comm is epoch 0), so every
// number of epoch e+1 is above every number of epoch e: the mailbox (which drops frames of
// sequences below the current one and keeps those above) never takes a frame of the old comm
// for one of the new, and frames of the new comm that reach a survivor still agreeing wait for
// it. view is a 12-bit hash of the member list: should survivors ever end with different
// member lists (see agree: only when a rank that merely stalled past the timeout is dropped by
// some and not by others), their comms use different numbers and never take each other's
// frames: such a rank's collectives time out instead of mixing data of different groups (two
// different lists get the same view with odds 1/4095). A shrunk comm can run 2^39 (5e11)
// collectives, far more than any job does, before its numbers could reach the next epoch's.
//
// Ownership: the underlying transport is shared by the old comm and every comm shrunk from it,
// and closed when the last of them is closed (sharedTransport, reference counted). Finalizing
// the old comm therefore never closes connections the new comm uses, in whichever order the
// comms are finalized.

const (
	shrinkBit   = uint64(1) << 63
	epochShift  = 51
	maxEpoch    = 1<<12 - 1
	viewShift   = 39
	viewRange   = 1<<12 - 1 // view ids 1..viewRange; 0 is the agreement's
	shrinkPlan  = 0xFFFFFFFF
	agreeRounds = 8 // rounds beyond 4 per rank (see agree): a bound far above what is needed
)

func agreeSeq(epoch, round int) uint64 {
	return shrinkBit | uint64(epoch)<<epochShift | uint64(round)
}

func commBase(epoch int, view uint64) uint64 {
	return shrinkBit | uint64(epoch)<<epochShift | view<<viewShift
}

// viewOf hashes a comm's epoch and member list (ranks of the underlying transport) to 1..4095.
func viewOf(epoch int, members []int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	putU64(b[:], uint64(epoch))
	h.Write(b[:])
	for _, r := range members {
		putU64(b[:], uint64(r))
		h.Write(b[:])
	}
	return 1 + h.Sum64()%viewRange
}

// shrunkError marks a comm that kylix_shrink has used: it is broken for good (cause is the
// failure that broke it before, if any), and a second Shrink is refused.
type shrunkError struct{ cause error }

func (e *shrunkError) Error() string {
	if e.cause != nil {
		return e.cause.Error() + "; the comm was then shrunk: use the comm kylix_shrink returned"
	}
	return "the comm was shrunk: use the comm kylix_shrink returned"
}

// Shrink is called by every surviving rank of c. It returns a new comm of the ranks that are
// alive, renumbered 0..k-1 in the order of their ranks in c, with c's options; when the degrees
// option was a fixed list (8x4x2) whose product is no longer k, the new comm plans with
// degrees=auto ("direct" and "binary" adapt to k).
//
// c itself is broken from then on (collectives fail with CodeState), whether Shrink succeeds or
// not; it must still be closed, and closing it does not disturb the new comm. A comm can be
// shrunk once; to drop further ranks, shrink the comm Shrink returned. Shrink on a comm that is
// not broken works too (it revokes it: peers still calling collectives on c fail at once).
//
// Every survivor must call Shrink within c's timeout of the others: a rank that stays silent
// longer is taken for failed. The time Shrink takes is a few message round trips, plus one
// timeout per round in which a rank is silent. Errors: CodeState (c was closed or already
// shrunk), CodePeer (the others took this rank for failed: it is not in their new comm),
// CodeMismatch/CodeInternal (a protocol violation).
func (c *Comm) Shrink() (*Comm, error) {
	c.ex.waitIdle() // no request in flight may touch the transport from now on
	c.mu.Lock()
	var se *shrunkError
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, kx.Errorf(kx.CodeState, "shrink: comm was finalized")
	case errors.As(c.broken, &se):
		c.mu.Unlock()
		return nil, kx.Errorf(kx.CodeState, "shrink: this comm was already shrunk (once per comm: shrink the comm kylix_shrink returned)")
	}
	c.broken = &shrunkError{cause: c.broken}
	c.mu.Unlock()

	p := c.Transport() // this comm's rank space: the underlying transport, or a subTransport
	var (
		raw    kx.Transport
		rawOf  []int
		shared *sharedTransport
		epoch  int
	)
	if st, ok := p.(*subTransport); ok {
		raw, rawOf, shared, epoch = st.raw, st.rawOf, st.shared, st.epoch
	} else {
		raw = p
		rawOf = make([]int, p.Size())
		for i := range rawOf {
			rawOf[i] = i
		}
	}
	if epoch >= maxEpoch {
		return nil, kx.Errorf(kx.CodeState, "shrink: this comm descends from %d shrinks, the most supported", maxEpoch)
	}
	epoch++

	// Revoke c: a peer that has not noticed the failure and enters c's next collective (or
	// waits in it) fails at once instead of waiting for a message this rank will not send.
	// Peers past that collective (already agreeing) drop the abort as stale.
	p.Abort(c.seq, kx.Errorf(kx.CodePeer, "rank %d left this comm to shrink it: call kylix_shrink on every survivor", p.Rank()))

	failed, err := agree(p, epoch)
	if err != nil {
		return nil, kx.Prefixed("shrink: ", err)
	}
	var members []int // ranks of c that live on
	newRank := -1
	keep := survivors(failed, p.Size(), max(c.opts.Replication, 1))
	for r := 0; r < p.Size(); r++ {
		if keep(r) {
			if r == p.Rank() {
				newRank = len(members)
			}
			members = append(members, r)
		}
	}
	if newRank < 0 { // agree never puts this rank in the failed set
		return nil, kx.Errorf(kx.CodeInternal, "shrink: this rank is not among the survivors it agreed on")
	}
	sub := &subTransport{raw: raw, rank: newRank, rawOf: make([]int, len(members)),
		newOf: make([]int, raw.Size()), epoch: epoch}
	for i := range sub.newOf {
		sub.newOf[i] = -1
	}
	for i, r := range members {
		sub.rawOf[i] = rawOf[r]
		sub.newOf[rawOf[r]] = i
	}
	sub.base = commBase(epoch, viewOf(epoch, sub.rawOf))

	if shared == nil {
		// First shrink of an original comm: from now on the transport is closed by whichever
		// comm is closed last. c's own Close goes through a lease.
		shared = &sharedTransport{t: raw, refs: 1}
		lease := &transportLease{Transport: raw, s: shared}
		c.mu.Lock()
		c.setProcTransport(lease)
		c.mu.Unlock()
	}
	shared.acquire()
	sub.shared = shared

	opts := c.opts
	opts.Rank, opts.Size = newRank, len(members)
	if _, err := kx.ParseDegreesSpec(opts.Degrees, len(members)/max(opts.Replication, 1)); err != nil {
		opts.Degrees = "auto"
	}
	nc, err := NewComm(sub, opts)
	if err != nil {
		sub.Close()
		return nil, kx.Prefixed("shrink: ", err)
	}
	nc.seq = sub.base
	nc.denseSwitchBytes = c.denseSwitchBytes
	return nc, nil
}

// survivors says which ranks of a comm of size ranks make the shrunk comm, given the agreed
// failed set. Without replication, the live ones. With replication s, every replica of each
// node that has a live replica, dead ones included, so the new comm is again s replicas of
// each of its nodes: rank k*m+j (replica k of node j) of the old comm becomes rank k*m'+j' of
// the new one, j' counting the surviving nodes. Its dead replicas stay dead members that
// nothing is sent to (kylix_failed_ranks lists them); nodes with no live replica are gone.
func survivors(failed bitset, size, s int) func(r int) bool {
	if s <= 1 {
		return func(r int) bool { return !failed.has(r) }
	}
	m := size / s
	alive := make([]bool, m)
	for r := 0; r < size; r++ {
		if !failed.has(r) {
			alive[r%m] = true
		}
	}
	return func(r int) bool { return alive[r%m] }
}

// ---- agreement on the failed set -----------------------------------------------------------

// agree returns the set of ranks of t that failed, the same on every survivor that returns
// without error. Each round r, every rank sends its failed set F (what the transport reports,
// plus ranks found dead or silent for the timeout during the agreement) to every rank it does
// not know to be dead, receives the set of every rank not in F, and unites them. A rank that
// fails to answer within the timeout joins F. When a rank has seen two rounds in a row in
// which every set it received equalled its own and nobody failed, it decides F; it then sends
// one more round, marked "decided", and returns. A rank that receives a decided set adopts it
// at once (and sends that round on too).
//
// Why survivors end with the same set: rounds are lock-step (a rank leaves round r only after
// hearing round r from every rank not in its F), and each rank sends the same set to everyone
// in a round. If rank i decides F at round r, every rank it heard from sent F in round r, and
// every rank that was waiting for i goes on to round r+1 (it cannot leave round r+1 without
// i's round r+1 message, unless it finds i dead), where it reads i's decided F and adopts it.
// A rank that decides by itself in round r saw F from everyone, so it decides the same F.
//
// A rank that dies during the shrink: if it dies before anyone decided, the others find it
// dead (at once through the transport, or after the timeout) and keep going until the sets
// agree again without it. If it dies after some ranks decided F (in which it is alive), those
// ranks' decided messages make the rest adopt F, so all survivors still agree, and the dead
// rank is a member of the new comm: its first collective fails with CodePeer naming it, and
// the application shrinks again. If a rank that decided then vanishes before telling anyone,
// the others may decide a set without it: they agree among themselves, and the vanished rank
// is dead. The one split is a rank that is not dead but silent past the timeout while others
// decide: it may end up with a comm the others are not in. The view hash in the sequence
// numbers keeps the two groups apart: its collectives time out, they never mix data. A rank
// that arrives late learns from the sets sent to it that the others took it for failed and
// fails with CodePeer (that is what the second agreeing round is for: the first round's sets
// may predate its being dropped).
func agree(t kx.Transport, epoch int) (bitset, error) {
	n, me := t.Size(), t.Rank()
	fp := kx.Fingerprint{Kind: kx.KindAgree, Plan: shrinkPlan, Count: int64(epoch)<<32 | int64(n)}
	F := newBitset(n)
	F.addRanks(t.FailedRanks(), me)
	decided := false
	stable := 0
	// Sets settle two rounds after the last new failure is found, and at most n ranks fail.
	maxRounds := 4*n + agreeRounds
	msg := make([]uint64, 1+len(F))
	for r := 0; ; r++ {
		if r >= maxRounds {
			return nil, kx.Errorf(kx.CodeInternal, "agreement on the failed ranks did not settle in %d rounds", maxRounds)
		}
		tag := kx.Tag{Seq: agreeSeq(epoch, r), Phase: kx.PhaseSmall}
		t.Begin(tag.Seq, fp)
		dead := newBitset(n)
		dead.addRanks(t.FailedRanks(), me)
		if !decided {
			F.or(dead)
		}
		msg[0] = 0
		if decided {
			msg[0] = 1
		}
		copy(msg[1:], F)
		// Every rank not known to be dead hears this round, also ranks in F that may merely be
		// slow: they learn from it that they were dropped.
		sg := sendGroup{t: t, fp: fp}
		for j := 0; j < n; j++ {
			if j != me && !dead.has(j) {
				sg.send(j, tag, keyBytes(msg))
			}
		}
		if decided {
			sg.wait()
			return F, nil
		}
		next := F.clone()
		same := true
		var adopted bitset
		var ferr error
		for j := 0; j < n && adopted == nil && ferr == nil; j++ {
			if j == me || F.has(j) {
				continue
			}
			b, err := t.Recv(j, tag)
			if err != nil {
				switch kx.CodeOf(err) {
				case kx.CodePeer, kx.CodeTimeout, kx.CodeNet:
					next.add(j)
					same = false
				default:
					ferr = err
				}
				continue
			}
			dec, G, ok := decodeAgree(b, n)
			t.Release(b)
			switch {
			case !ok:
				ferr = kx.Errorf(kx.CodeMismatch, "rank %d sent a malformed shrink agreement message (%d bytes for %d ranks)", j, len(b), n)
			case G.has(me):
				ferr = kx.Errorf(kx.CodePeer, "rank %d took this rank for failed (it did not answer within the timeout): this rank is not in the survivors' new comm", j)
			case dec:
				adopted = G
			case !G.equal(F):
				next.or(G)
				same = false
			}
		}
		sg.wait() // send errors show on the receiving side: a dead peer's Recv fails too
		switch {
		case ferr != nil:
			return nil, ferr
		case adopted != nil:
			F, decided = adopted, true
		case same:
			if stable++; stable == 2 {
				decided = true
			}
		default:
			F, stable = next, 0
		}
	}
}

// decodeAgree reads a round message: a flags word (bit 0: decided), then the failed set.
func decodeAgree(b []byte, n int) (decided bool, set bitset, ok bool) {
	w := (n + 63) / 64
	if len(b) != 8*(1+w) {
		return false, nil, false
	}
	set = make(bitset, w)
	for i := range set {
		set[i] = getU64(b[8*(1+i):])
	}
	if n%64 != 0 && set[w-1]>>(n%64) != 0 {
		return false, nil, false
	}
	return getU64(b)&1 != 0, set, true
}

type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (s bitset) has(i int) bool { return s[i/64]>>(i%64)&1 != 0 }
func (s bitset) add(i int)      { s[i/64] |= 1 << (i % 64) }
func (s bitset) clone() bitset  { return append(bitset(nil), s...) }
func (s bitset) or(o bitset) {
	for i := range s {
		s[i] |= o[i]
	}
}
func (s bitset) equal(o bitset) bool { return string(keyBytes(s)) == string(keyBytes(o)) }

// addRanks adds the ranks in rs that are in range, except self.
func (s bitset) addRanks(rs []int, self int) {
	for _, r := range rs {
		if r >= 0 && r < 64*len(s) && r != self {
			s.add(r)
		}
	}
}

// ---- shared ownership of the underlying transport ------------------------------------------

// sharedTransport counts the comms that use one transport and closes it with the last.
type sharedTransport struct {
	t    kx.Transport
	mu   sync.Mutex
	refs int
}

func (s *sharedTransport) acquire() {
	s.mu.Lock()
	s.refs++
	s.mu.Unlock()
}

func (s *sharedTransport) release() error {
	s.mu.Lock()
	s.refs--
	last := s.refs == 0
	s.mu.Unlock()
	if last {
		return s.t.Close()
	}
	return nil
}

// transportLease is the original comm's hold on a transport a shrink made shared: everything
// but Close goes straight to the transport.
type transportLease struct {
	kx.Transport
	s    *sharedTransport
	once sync.Once
}

func (l *transportLease) Close() (err error) {
	l.once.Do(func() { err = l.s.release() })
	return err
}

// Unwrap returns the shared transport.
func (l *transportLease) Unwrap() kx.Transport { return l.Transport }

// ---- the shrunk comm's transport -----------------------------------------------------------

// subTransport is a comm of some of the ranks of an underlying transport (raw): rank i here is
// rank rawOf[i] there. Sequence numbers pass through unchanged (the comm takes them from its
// own range, see above). Errors that name raw ranks are rewritten to name this comm's ranks.
type subTransport struct {
	raw    kx.Transport
	shared *sharedTransport
	rank   int
	rawOf  []int // rank here -> rank of raw
	newOf  []int // rank of raw -> rank here, -1 when not a member
	epoch  int
	base   uint64 // the comm's first sequence number
	once   sync.Once
}

func (s *subTransport) Rank() int              { return s.rank }
func (s *subTransport) Size() int              { return len(s.rawOf) }
func (s *subTransport) Timeout() time.Duration { return s.raw.Timeout() }

func (s *subTransport) Begin(seq uint64, fp kx.Fingerprint) { s.raw.Begin(seq, fp) }

func (s *subTransport) Send(to int, tag kx.Tag, bufs ...[]byte) error {
	if to < 0 || to >= len(s.rawOf) {
		return kx.Errorf(kx.CodeArg, "send: destination rank %d is not in 0..%d", to, len(s.rawOf)-1)
	}
	return s.translate(s.raw.Send(s.rawOf[to], tag, bufs...))
}

// source is rank from of this comm as a rank of the underlying transport.
func (s *subTransport) source(from int) (int, error) {
	if from < 0 || from >= len(s.rawOf) {
		return 0, kx.Errorf(kx.CodeArg, "recv: source rank %d is not in 0..%d", from, len(s.rawOf)-1)
	}
	return s.rawOf[from], nil
}

func (s *subTransport) Recv(from int, tag kx.Tag) ([]byte, error) {
	r, err := s.source(from)
	if err != nil {
		return nil, err
	}
	b, err := s.raw.Recv(r, tag)
	return b, s.translate(err)
}

// Expect ignores a source outside the comm: the Await for it reports it.
func (s *subTransport) Expect(from int, tag kx.Tag, dst []byte) {
	if r, err := s.source(from); err == nil {
		s.raw.Expect(r, tag, dst)
	}
}

func (s *subTransport) Await(from int, tag kx.Tag) (int, error) {
	r, err := s.source(from)
	if err != nil {
		return 0, err
	}
	n, err := s.raw.Await(r, tag)
	return n, s.translate(err)
}

func (s *subTransport) AwaitPrefix(from int, tag kx.Tag, n int) error {
	r, err := s.source(from)
	if err != nil {
		return err
	}
	return s.translate(s.raw.AwaitPrefix(r, tag, n))
}

// Abort goes to every live rank of the underlying transport; ranks outside this comm ignore it
// (nothing of theirs runs at this comm's sequence numbers).
func (s *subTransport) Abort(seq uint64, err error) { s.raw.Abort(seq, err) }

// Close gives up this comm's hold on the shared transport.
func (s *subTransport) Close() (err error) {
	s.once.Do(func() { err = s.shared.release() })
	return err
}

// FailedRanks lists the members of this comm that the transport has seen crash or finalize,
// numbered as in this comm.
func (s *subTransport) FailedRanks() []int {
	var out []int
	for _, r := range s.raw.FailedRanks() {
		if r >= 0 && r < len(s.newOf) && s.newOf[r] >= 0 {
			out = append(out, s.newOf[r])
		}
	}
	return out
}

func (s *subTransport) Release(b []byte) { s.raw.Release(b) }

// translate renumbers the ranks and collectives an error from the underlying transport names
// (raw numbers) into this comm's. A peer's abort arrives with its text already in this comm's
// numbers (its own subTransport renumbered it); only its reporter is mapped.
func (s *subTransport) translate(err error) error {
	var e *kx.Error
	if err == nil || !errors.As(err, &e) {
		return err
	}
	return e.Renumber(func(r int) (int, bool) {
		if r < 0 || r >= len(s.newOf) || s.newOf[r] < 0 {
			return r, false
		}
		return s.newOf[r], true
	}, func(q uint64) (uint64, bool) {
		if q < s.base || q >= agreeSeq(s.epoch+1, 0) {
			return q, false // not one of this comm's collectives
		}
		return q - s.base, true
	})
}
