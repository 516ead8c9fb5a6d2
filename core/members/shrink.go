package members

import (
	"encoding/binary"
	"hash/fnv"
	"kylix/core/keyset"
	"kylix/core/kx"
	"slices"
)

// Shrink (kylix_shrink, like ULFM's MPI_Comm_shrink): after a peer failure the survivors agree on
// who is still alive and make a new comm of exactly those ranks, renumbered 0..k-1 in the order
// of their ranks in the old comm. It works through the Transport interface only, so the
// in-memory and the TCP transport behave alike.
//
// The new comm runs over the same process transport (same mailbox, same connections) through a
// View that maps its ranks to the transport's. Collectives are told apart by sequence
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
// Ownership: the process transport is shared by the old comm and every comm shrunk from it
// (Proc, reference counted).

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
	binary.LittleEndian.PutUint64(b[:], uint64(epoch))
	h.Write(b[:])
	for _, r := range members {
		binary.LittleEndian.PutUint64(b[:], uint64(r))
		h.Write(b[:])
	}
	return 1 + h.Sum64()%viewRange
}

// Shrink is called by every surviving rank of the comm v is the view of, after the comm's
// collective revokeSeq failed (or to revoke it): a resize that admits nobody (resize.go). The
// survivors agree on who failed and Shrink returns the view of the comm of the survivors,
// renumbered 0..k-1 in their order in this one, over the same process transport; its
// collectives start at its Base(). Every survivor must call Shrink within the timeout of the
// others: a rank that stays silent longer is taken for failed. attempt counts the earlier
// failed resizes of this comm. Errors: CodeState (too many shrinks), CodePeer (the others took
// this rank for failed: it is not in their new comm; or this side holds no majority),
// CodeMismatch/CodeInternal (a protocol violation).
func (v *View) Shrink(revokeSeq uint64, attempt int) (*View, error) {
	r, err := v.Resize(ResizeRequest{RevokeSeq: revokeSeq, Attempt: attempt})
	if err != nil {
		return nil, kx.Prefixed("shrink: ", err)
	}
	return r.View, nil
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
// not know to be dead, receives the set of every rank not in F, and takes in what they tell
// (judge: a rank whose set came is alive, and another's verdict on it does not count until it is
// heard again; then the accuser goes out instead). A rank that fails to answer within the
// timeout joins F. When a rank has seen two rounds in a row in
// which every set it received equalled its own and nobody failed, it decides F; it then sends
// one more round, marked "decided", reads that round from the others (confirm, below) and
// returns. A rank that receives a decided set adopts it at the end of the round (and sends
// the next round on too, marked decided).
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
// is dead. A rank that arrives late learns from the sets sent to it that the others took it for
// failed and fails with CodePeer. Sets that waited in the mailbox of a rank stopped past the
// others' timeout may all predate its being dropped, and a network cut may fall just after a
// decided message left: so a rank that decides by itself checks first that no peer died
// meanwhile (newlyDead), and every rank that decided, by itself or by adopting, reads the next
// round before it returns (confirm): a set that names it, a live peer silent for the timeout,
// or fewer peers heard than a quorum, and it fails with CodePeer instead. Should survivors still
// end with different member lists, the view hash in the sequence numbers keeps the two groups
// apart (their collectives time out, they never mix data).
func agree(t *View, epoch, roundBase int) (bitset, error) {
	n, me := t.Size(), t.Rank()
	fp := kx.Fingerprint{Kind: kx.KindAgree, Plan: shrinkPlan, Count: int64(epoch)<<32 | int64(n)}
	F := newBitset(n)
	F.addRanks(t.FailedRanks(), me)
	decided := false
	var heard bitset // a decided rank's peers known to hold F: those it adopted F from
	stable := 0
	// Sets settle two rounds after the last new failure is found, and at most n ranks fail.
	maxRounds := 4*n + agreeRounds
	msg := make([]uint64, 1+len(F))
	var pending []accusation // of the round before: judged by who is heard in this one
	for r := 0; ; r++ {
		if r >= maxRounds {
			return nil, kx.Errorf(kx.CodeInternal, "agreement on the failed ranks did not settle in %d rounds", maxRounds)
		}
		tag := kx.Tag{Seq: agreeSeq(epoch, roundBase+r), Phase: kx.PhaseSmall}
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
		// The messages are a few words: each send returns as soon as the kernel has it. Send
		// errors show on the receiving side: a dead peer's Recv fails too.
		out := tag
		out.FP = fp
		for j := 0; j < n; j++ {
			if j != me && !dead.has(j) {
				t.sendRank(j, out, keyset.WordBytes(msg))
			}
		}
		if decided {
			if err := confirm(t, F, tag, me, heard); err != nil {
				return nil, err
			}
			return F, nil
		}
		next := F.clone()
		same := true
		var adopted bitset
		deciders := newBitset(n)
		present := newBitset(n) // ranks whose set of this round came: alive and taking part
		present.add(me)
		var differ []roundSet // the sets of this round that differ from F
		namedBy := -1         // a decided rank whose set names this rank
		var ferr error
		// A rank that adopts a decided set still reads the round to its end: which peers
		// decided, and whether one took this rank for failed (confirm).
		for j := 0; j < n && ferr == nil; j++ {
			if j == me || F.has(j) {
				continue
			}
			b, err := t.recvRank(j, tag)
			if err != nil && kx.CodeOf(err) == kx.CodeTimeout && r == 0 && roundBase != 0 {
				// A later attempt: j may still be inside the one before (waiting out its own
				// timeout on a rank that left it), so it is given one timeout more to arrive.
				b, err = t.recvRank(j, tag)
			}
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
			if ok {
				present.add(j)
			}
			switch {
			case !ok:
				ferr = kx.Errorf(kx.CodeMismatch, "rank %d sent a malformed shrink agreement message (%d bytes for %d ranks)", j, len(b), n)
			case dec && G.has(me):
				// j's decision leaves this rank out, and j will not read it again: j goes out
				// of this rank's set, and the quorum says which of the two sides goes on.
				next.add(j)
				namedBy = j
			case dec:
				deciders.add(j)
				if adopted == nil {
					adopted = G
				}
			case !G.equal(F):
				differ = append(differ, roundSet{j, G})
				same = false
			}
		}
		if ferr == nil && adopted == nil {
			pending, ferr = judge(F, next, present, pending, differ, n, me, namedBy)
			same = same && next.equal(F)
		}
		switch {
		case ferr != nil:
			return nil, ferr
		case adopted != nil:
			F, decided, heard = adopted, true, deciders
		case same:
			// The sets read may have waited in the mailbox while this rank was stopped; a peer
			// found dead since the round began is news the others may have acted on (liveness
			// drops a stopped rank's links both ways), so the round is not stable.
			if late := newlyDead(t, F, me); late != nil {
				F.or(late)
				stable = 0
			} else if stable++; stable == 2 {
				decided, heard = true, newBitset(n)
			}
		default:
			F, stable = next, 0
		}
	}
}

// roundSet is the failed set a rank sent in a round.
type roundSet struct {
	from int
	set  bitset
}

// accusation: rank by's set named rank of as failed while this rank heard of in the same round.
type accusation struct{ by, of int }

// judge adds to next (the failed set this rank sends in the next round) what the sets of this
// round that differ from F tell, and returns the accusations to judge in the next round.
//
// A rank named in another's set is not simply taken for failed: a set may be a stale verdict,
// from a rank that timed out on a live peer (it was stopped, or still inside another attempt),
// and uniting every set would let that one verdict remove a live rank for everyone, and with
// it the majority (as ULFM's agreements, a rank that takes part is alive). Every rank not in F
// was either heard this round (its set came) or found failed already (next holds it), so the
// only news in the sets is about ranks this rank heard: those it holds on to for one round. A
// rank heard again in the next round, after its accuser's set was sent, is alive, and the
// accuser, whose set only grows, will never talk to it again: one of the two has to go, and
// it is the accuser, or, when the two named each other (the link between them broke), the
// higher of them (a verdict about a rank that died after its set came goes the other way:
// it is not heard again, and next holds it). A rank named by more than half of the ranks heard
// goes at once, as before: most of those taking part found it too slow. Every rank that hears the same ranks applies the
// same rule to the same sets, so the sets converge as before (F only grows), and the decision
// below stays as argued at agree. A decided set that names this rank leaves its decider out at
// once (namedBy; it reads no more sets from this rank): the decider's side holds no rank of
// its F, this rank's side only ranks of it, so quorum lets at most one of them go on. A rank
// named by so many that the others could not make a quorum with it fails at once, as it would
// one round later.
func judge(F, next, heard bitset, pending []accusation, differ []roundSet, n, me, namedBy int) ([]accusation, error) {
	for _, a := range pending {
		if !heard.has(a.of) {
			continue
		}
		// Two ranks that named each other, both heard: the connection between them broke
		// (each lost the other, e.g. a TCP timeout after a short outage of the link between
		// their hosts), and taking both out would cost two live ranks for one broken link,
		// and with them the majority. The higher of the two goes: every rank that heard both
		// makes the same choice.
		if heard.has(a.by) && slices.Contains(pending, accusation{a.of, a.by}) {
			next.add(max(a.by, a.of))
			continue
		}
		next.add(a.by)
	}
	pending = pending[:0]
	accusers := next.clone()
	present := heard.count(n)
	for k := 0; k < n; k++ {
		if F.has(k) || !heard.has(k) {
			continue
		}
		named := 0
		for _, rs := range differ {
			if rs.set.has(k) {
				named++
			}
		}
		if k != me && 2*named > present {
			next.add(k) // the word of most of the ranks taking part: k is too slow for them
			continue
		}
		for _, rs := range differ {
			if rs.set.has(k) {
				pending = append(pending, accusation{rs.from, k})
				if k == me {
					accusers.add(rs.from)
					namedBy = rs.from
				}
			}
		}
	}
	if namedBy >= 0 && quorum(accusers, n) != nil {
		return nil, tookForFailed(namedBy)
	}
	return pending, nil
}

func tookForFailed(j int) error {
	return kx.Errorf(kx.CodePeer, "rank %d took this rank for failed (it did not answer within the timeout): this rank is not in the survivors' new comm", j)
}

// newlyDead is the set of ranks the transport now reports dead that F does not hold, or nil.
func newlyDead(t *View, F bitset, me int) bitset {
	dead := newBitset(len(F) * 64)
	dead.addRanks(t.FailedRanks(), me)
	var late bitset
	for i := range dead {
		if dead[i]&^F[i] != 0 {
			late = dead
		}
	}
	return late
}

// confirm reads the round after this rank decided F (by itself, or by adopting it from the
// ranks in heard, which hold F and send no more sets). A rank that decides on sets which waited
// in its mailbox while it was stopped past the others' timeout can be the only one to decide F,
// the others having dropped it: their sets of this round name it, and it fails with CodePeer as
// a rank that arrives late does. A live peer silent for the timeout may have done the same
// behind a cut link, so it fails too. A peer found dead may be a crash after the decision (F
// stands, and the new comm's first collective fails naming it) or the other side of a split
// that goes on without this rank: so F stands only when the peers heard from with sets that do
// not name this rank, with this rank, hold a quorum of the comm (quorum), as the side that goes
// on must. Those peers read this rank's decided set in their round and adopt F (or fail), so
// a peer that names this rank alone (a stale verdict, judge) cannot take a majority with it.
func confirm(t *View, F bitset, tag kx.Tag, me int, heard bitset) error {
	n := t.Size()
	unheard := newBitset(n) // ranks whose set of this round did not come: for quorum
	namedBy := -1
	for j := 0; j < n; j++ {
		if j == me || heard.has(j) {
			continue
		}
		if F.has(j) {
			unheard.add(j)
			continue
		}
		b, err := t.recvRank(j, tag)
		switch {
		case kx.CodeOf(err) == kx.CodeTimeout:
			// Alive but silent for the timeout: it may have dropped this rank and gone on.
			return kx.Errorf(kx.CodePeer, "rank %d did not confirm the agreement within the timeout: it may have gone on without this rank", j)
		case err != nil:
			unheard.add(j)
			continue
		}
		_, G, ok := decodeAgree(b, n)
		t.Release(b)
		if ok && G.has(me) {
			unheard.add(j)
			namedBy = j
		}
	}
	if err := quorum(unheard, n); err != nil {
		if namedBy >= 0 {
			return tookForFailed(namedBy)
		}
		return kx.Prefixed("confirming the agreement: ", err)
	}
	return nil
}

// decodeAgree reads a round message: a flags word (bit 0: decided), then the failed set.
func decodeAgree(b []byte, n int) (decided bool, set bitset, ok bool) {
	w := (n + 63) / 64
	if len(b) != 8*(1+w) {
		return false, nil, false
	}
	set = make(bitset, w)
	for i := range set {
		set[i] = binary.LittleEndian.Uint64(b[8*(1+i):])
	}
	if n%64 != 0 && set[w-1]>>(n%64) != 0 {
		return false, nil, false
	}
	return binary.LittleEndian.Uint64(b)&1 != 0, set, true
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
func (s bitset) equal(o bitset) bool { return slices.Equal(s, o) }

// count is how many of the ranks 0..n-1 s holds.
func (s bitset) count(n int) int {
	c := 0
	for i := 0; i < n; i++ {
		if s.has(i) {
			c++
		}
	}
	return c
}

// addRanks adds the ranks in rs that are in range, except self.
func (s bitset) addRanks(rs []int, self int) {
	for _, r := range rs {
		if r >= 0 && r < 64*len(s) && r != self {
			s.add(r)
		}
	}
}
