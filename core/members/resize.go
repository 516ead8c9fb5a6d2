package members

import (
	"encoding/json"
	"kylix/core/kx"
	"strconv"
	"time"
)

// Resize (kylix_resize; kylix_shrink is a resize that admits nobody): the live members agree
// on who failed (agree, as ULFM's shrink), check that they are the side that may go on, and, when
// the comm is elastic, admit every joiner waiting at that moment: the elastic mode of Zhang and
// Qiu, "Efficient, Fault-tolerant and Elastic Allreduce Framework for Iterative Algorithms" §5
// (ramp-up: tasks join at later iterations) and §6 (failure-ignorance: failed tasks rejoin).
//
// Steps, every one over the old comm's transport at agreement sequence numbers (shrink.go):
//
//  1. revoke the old comm and agree on the failed set F;
//  2. quorum: go on only with more than half of the old members alive, or exactly half with
//     old rank 0 among them. A network split thus leaves at most one side going on; the other
//     fails with CodePeer naming the ranks it lost;
//  3. without a Grower (kylix_shrink, or a comm that is not elastic) the kept members make the
//     new comm over the same process transport (shrink.go's view);
//  4. with one, every kept live member opens a listener and sends its address to the leader
//     (the lowest kept live rank); the leader makes one exchange with the join server (Admit),
//     which admits the joiners waiting then and answering within liveness_ms, and sends the
//     decision to every kept member, who pass it on to each other (relayDecision: a leader
//     that dies mid-send leaves all live members with it or all without). The leader's
//     decision is the one membership: members
//     and joiners get it from the same exchange. With joiners, every rank of the new comm
//     builds a fresh mesh (new job id, sequence numbers from 0); with none, step 3.
//
// Known limit: a joiner that dies after confirming its offer, in the middle of the new mesh, can
// leave some members with the new comm (whose first collective then fails with CodePeer naming
// it) and others with a failed resize; the rule of one membership holds for every member that
// returns a comm.
//
// A resize that fails leaves the old comm broken (as shrink does) but may be tried again on
// it: each attempt agrees at numbers of its own. Members leave a failed attempt at different
// times (one at once, another after a timeout on it), so a later attempt waits for each member's
// first set up to twice the timeout before taking it for failed. The exception is CodeTimeout from min_size:
// every member then gets Unchanged, a view of the same members at fresh numbers, so the comm
// goes on as before.

// decisionRound is the round offset of the address gather and the leader's decision, above any
// agreement round (agree bounds its rounds by 4n+8, n < 2^20 ranks).
const decisionRound = 1 << 20

// lastOfferRound is how long the join server's last offer round may run past the admit's Wait
// (netio/rendezvous: a joiner is given at least this to confirm).
const lastOfferRound = 200 * time.Millisecond

// attemptShift spaces the agreement numbers of successive attempts on one comm.
const attemptShift = 24

// Resized is the outcome of a resize.
type Resized struct {
	View *View
	Prev []int         // per rank of the new comm: its rank in the old one, -1 for a joiner
	Adm  *kx.Admission // non-nil when joiners were admitted (a fresh mesh)
}

// ResizeRequest carries what a member asks of a resize.
type ResizeRequest struct {
	RevokeSeq uint64 // the old comm's next collective, revoked
	Attempt   int    // earlier failed attempts on this comm
	MinSize   int
	Grower    kx.Grower // nil: admit nobody
	Liveness  time.Duration
	Degrees   string
	Compress  string
	MinPacket int64
}

// Unchanged is the error of a resize that admitted nobody because min_size could not be met:
// View is the old comm's membership at fresh sequence numbers, which the comm carries on with.
type Unchanged struct {
	Err  error
	View *View
}

func (u *Unchanged) Error() string { return u.Err.Error() }
func (u *Unchanged) Unwrap() error { return u.Err }

// Resize is called by every live member of the comm v is the view of.
func (v *View) Resize(rq ResizeRequest) (*Resized, error) {
	if v.epoch >= maxEpoch {
		return nil, kx.Errorf(kx.CodeState, "this comm descends from %d resizes, the most supported", maxEpoch)
	}
	epoch := v.epoch + 1
	v.Abort(rq.RevokeSeq, kx.Errorf(kx.CodePeer, "rank %d left this comm to resize it: call kylix_resize (or kylix_shrink) on every live member", v.rank))

	failed, err := agree(v, epoch, rq.Attempt<<attemptShift)
	if err != nil {
		return nil, err
	}
	if err := quorum(failed, v.size); err != nil {
		return nil, err
	}
	keep := survivors(failed, v.size, v.s)
	var kept []int // old ranks, in their new order
	holes := 0
	for r := 0; r < v.size; r++ {
		if keep(r) {
			kept = append(kept, r)
			if failed.has(r) {
				holes++
			}
		}
	}
	if rq.Grower == nil {
		if len(kept)-holes < rq.MinSize {
			return nil, v.unchanged(epoch, kx.Errorf(kx.CodeTimeout, "min_size=%d: %d members are left and no process can join (the comm is not elastic: start the job with elastic=1, kylixrun --elastic)", rq.MinSize, len(kept)-holes))
		}
		return &Resized{View: v.keepView(epoch, kept), Prev: kept}, nil
	}
	adm, err := v.admit(epoch, rq, failed, kept, holes)
	if err != nil {
		return nil, err
	}
	if adm.dec.Code == int(kx.CodeTimeout) {
		return nil, v.unchanged(epoch, kx.Errorf(kx.CodeTimeout, "%s", adm.dec.Msg))
	}
	if adm.dec.Adm.Joiners == 0 {
		adm.ln.Close()
		return &Resized{View: v.keepView(epoch, kept), Prev: kept}, nil
	}
	me := -1
	for i, p := range adm.dec.Adm.Prev {
		if p == v.rank {
			me = i
		}
	}
	if me < 0 {
		adm.ln.Close()
		return nil, kx.Errorf(kx.CodeInternal, "the admitted membership does not hold this rank (old rank %d)", v.rank)
	}
	a := adm.dec.Adm
	t, err := adm.ln.Mesh(me, *a)
	if err != nil {
		return nil, kx.Prefixed("connecting the resized comm: ", err)
	}
	nv, err := New(NewProc(t), max(a.Replication, 1))
	if err != nil {
		t.Close()
		return nil, err
	}
	return &Resized{View: nv, Prev: a.Prev, Adm: a}, nil
}

// quorum lets a side go on only with more than half of the old members alive, or exactly half
// including old rank 0: of two sides of a split, exactly one qualifies.
func quorum(failed bitset, n int) error {
	var lost []int
	for r := 0; r < n; r++ {
		if failed.has(r) {
			lost = append(lost, r)
		}
	}
	live := n - len(lost)
	if 2*live > n || (2*live == n && !failed.has(0)) {
		return nil
	}
	return kx.Errorf(kx.CodePeer, "only %d of %d members are reachable (lost ranks %v): a resize needs more than half of them, or exactly half with rank 0, so that one side of a network split goes on", live, n, lost)
}

// keepView is the view of the kept old ranks over the same process transport (shrink.go's
// numbering).
func (v *View) keepView(epoch int, kept []int) *View {
	nv := &View{rank: -1, epoch: epoch, commOf: make([]int, v.t.Size())}
	nv.attach(v.proc)
	for i := range nv.commOf {
		nv.commOf[i] = -1
	}
	for _, r := range kept {
		if r == v.rank {
			nv.rank = len(nv.procOf)
		}
		nv.commOf[v.procRank(r)] = len(nv.procOf)
		nv.procOf = append(nv.procOf, v.procRank(r))
	}
	nv.size = len(nv.procOf)
	nv.base = commBase(epoch, viewOf(epoch, nv.procOf))
	// Kept members keep whole nodes (survivors), so the transport's grouping still holds: only
	// the view's own grouping is made anew.
	nv.group(v.s)
	v.proc.acquire()
	v.dropLeftOut(nv)
	return nv
}

// peerDropper is a transport that can close its link to one peer (netio.TCP.DropPeer).
type peerDropper interface{ DropPeer(rank int) }

// dropLeftOut closes the transport's links to the old members that nv leaves out. nv runs over
// the same transport and never talks to them again (nor does any comm resized from it: those
// keep fewer ranks or make a fresh mesh), while a member left out alive (a stale verdict, a
// broken connection, a process stopped past liveness_ms) would keep its connection and
// shared-memory segment here as long as it lives, and hear nothing that tells it so: dropped,
// its resources go now and its waits on this rank fail with CodePeer at once.
func (v *View) dropLeftOut(nv *View) {
	d, ok := v.t.(peerDropper)
	if !ok {
		return
	}
	for r := 0; r < v.size; r++ {
		if pr := v.procRank(r); pr != v.t.Rank() && nv.commOf[pr] < 0 {
			d.DropPeer(pr)
		}
	}
}

// unchanged wraps err with the view of every old member at epoch's numbers.
func (v *View) unchanged(epoch int, err error) error {
	all := make([]int, v.size)
	for r := range all {
		all[r] = r
	}
	return &Unchanged{Err: err, View: v.keepView(epoch, all)}
}

// ---- the leader's exchange ------------------------------------------------------------------

// decision is what the leader sends every kept member: the admission, or why there is none.
type decision struct {
	Code int           `json:"code"`
	Msg  string        `json:"msg,omitempty"`
	Adm  *kx.Admission `json:"adm,omitempty"`
}

type admitted struct {
	dec decision
	ln  kx.MeshListener
}

// admit runs step 4: the address gather, the leader's Admit, the decision to everyone. Every
// kept live member returns the same decision, or an error (also when the decision is one).
func (v *View) admit(epoch int, rq ResizeRequest, failed bitset, kept []int, holes int) (*admitted, error) {
	leader := -1
	for _, r := range kept {
		if !failed.has(r) {
			leader = r
			break
		}
	}
	fp := kx.Fingerprint{Kind: kx.KindAgree, Plan: shrinkPlan - 1, Count: int64(epoch)<<32 | int64(v.size)}
	round := rq.Attempt<<attemptShift + decisionRound
	gather := kx.Tag{Seq: agreeSeq(epoch, round), Phase: kx.PhaseSmall, FP: fp}
	decide := kx.Tag{Seq: agreeSeq(epoch, round+1), Phase: kx.PhaseSmall, FP: fp}
	relay := kx.Tag{Seq: agreeSeq(epoch, round+2), Phase: kx.PhaseSmall, FP: fp}

	ln, err := rq.Grower.Listen()
	if err != nil {
		// Still take part, so the leader's gather fails naming this rank rather than timing out.
		ln = nil
	}
	v.Begin(gather.Seq, fp)
	if v.rank != leader {
		addr := ""
		if ln != nil {
			addr = ln.Addr()
		}
		v.sendRank(leader, gather, []byte(addr))
		v.Begin(decide.Seq, fp)
		b, rerr := v.recvRank(leader, decide)
		b, rerr = v.relayDecision(relay, leader, kept, failed, b, rerr)
		if rerr != nil {
			closeLn(ln)
			return nil, kx.Prefixed("waiting for the resize leader's decision: ", rerr)
		}
		var d decision
		jerr := json.Unmarshal(b, &d)
		switch {
		case jerr != nil:
			closeLn(ln)
			return nil, kx.Errorf(kx.CodeMismatch, "rank %d sent a malformed resize decision: %v", leader, jerr)
		case d.Code == int(kx.CodeTimeout):
			closeLn(ln)
			return &admitted{dec: d}, nil
		case d.Code != 0 || d.Adm == nil:
			closeLn(ln)
			code := kx.Code(d.Code)
			if code <= kx.OK || code > kx.CodeInternal {
				code = kx.CodeInternal // a decision without admission or code: the leader's fault
			}
			return nil, kx.Errorf(code, "%s", d.Msg)
		case err != nil:
			return nil, err
		}
		return &admitted{dec: d, ln: ln}, nil
	}

	// The leader.
	d := decision{}
	addrs := make([]string, len(kept))
	for i, r := range kept {
		switch {
		case failed.has(r): // a hole: a dead replica of a kept node
		case r == v.rank:
			if err != nil {
				d = decision{Code: int(kx.CodeOf(err)), Msg: kx.Prefixed("rank "+itoa(r)+" cannot listen for the resized comm: ", err).Error()}
			} else {
				addrs[i] = ln.Addr()
			}
		default:
			b, rerr := v.recvRank(r, gather)
			if rerr != nil {
				if d.Code == 0 {
					d = decision{Code: int(kx.CodeOf(rerr)), Msg: rerr.Error()}
				}
				continue
			}
			addrs[i] = string(b)
			v.Release(b)
			if addrs[i] == "" && d.Code == 0 {
				d = decision{Code: int(kx.CodeNet), Msg: "rank " + itoa(r) + " could not listen for the resized comm"}
			}
		}
	}
	if d.Code == 0 {
		need := max(rq.MinSize-(len(kept)-holes), 0)
		// The others must hear the outcome within their timeout, and the join server may ask
		// the joiners once more after Wait (its last offer round).
		margin := min(v.Timeout()/5, 2*time.Second) + lastOfferRound
		a, aerr := rq.Grower.Admit(kx.AdmitRequest{Members: addrs, Prev: kept, Need: need,
			Replication: v.s, Wait: max(v.Timeout()-margin, 0), Liveness: rq.Liveness,
			Degrees: rq.Degrees, Compress: rq.Compress, MinPacket: rq.MinPacket})
		switch {
		case aerr != nil && kx.CodeOf(aerr) == kx.CodeNet && need == 0:
			// The join server is gone (a job without kylixrun loses it with rank 0): a resize
			// that needs nobody still goes on, admitting nobody, so failure-ignorance works.
			d.Adm = &kx.Admission{Prev: kept}
		case aerr != nil:
			d = decision{Code: int(kx.CodeOf(aerr)), Msg: aerr.Error()}
		default:
			d.Adm = &a
		}
	}
	b, _ := json.Marshal(&d)
	v.Begin(decide.Seq, fp)
	for _, r := range kept {
		if r != v.rank && !failed.has(r) {
			v.sendRank(r, decide, b)
		}
	}
	switch {
	case d.Code == int(kx.CodeTimeout):
		closeLn(ln)
		return &admitted{dec: d}, nil
	case d.Code != 0:
		closeLn(ln)
		return nil, kx.Errorf(kx.Code(d.Code), "%s", d.Msg)
	}
	return &admitted{dec: d, ln: ln}, nil
}

// relayDecision passes the leader's decision (b, or rerr when it did not come) on to the other
// kept live members, and takes it from them when it did not come from the leader. A leader that
// dies while it sends the decision, after some members got it and before the others did, would
// otherwise leave the first with the new comm and the rest with a failed attempt that they
// retry on the old comm without them: the live members split, none with a majority, and one
// death ends the job. Each member sends what it got (the decision, or nothing) to the others
// and, when it got nothing, reads theirs: so every live member holds the decision when any live
// member got it, and when none did, all fail the attempt together. A member that got it reads
// nothing (it goes on at once); its copies reach the others before its next comm's frames,
// which those who wait drop as above their number. Returns a copy of the decision.
func (v *View) relayDecision(tag kx.Tag, leader int, kept []int, failed bitset, b []byte, rerr error) ([]byte, error) {
	msg := []byte{0}
	if rerr == nil {
		msg = append([]byte{1}, b...)
		v.Release(b)
	}
	v.Begin(tag.Seq, tag.FP)
	for _, r := range kept {
		if r != v.rank && r != leader && !failed.has(r) {
			v.sendRank(r, tag, msg)
		}
	}
	if rerr == nil {
		return msg[1:], nil
	}
	for _, r := range kept {
		if r == v.rank || r == leader || failed.has(r) {
			continue
		}
		m, err := v.recvRank(r, tag)
		if err != nil {
			continue // dead, or silent past the timeout: it holds no decision the others lack
		}
		got := len(m) > 1 && m[0] == 1
		d := append([]byte(nil), m[min(len(m), 1):]...)
		v.Release(m)
		if got {
			return d, nil
		}
	}
	return nil, rerr
}

func closeLn(ln kx.MeshListener) {
	if ln != nil {
		ln.Close()
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
