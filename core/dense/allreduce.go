// Package dense is the dense allreduce over a comm's context (core/coll): the one-round direct
// exchange for small vectors, and for large ones the nested butterfly with dense ranges, whose
// two-member layers fold as they receive (fold.go).
//
// It runs the same nested butterfly as the sparse path with dense ranges: down the layers each
// node keeps 1/d of its range and combines the members' copies of it (reduce-scatter), then
// the ranges travel back up (allgather). Every rank moves about 2(m-1)/m of the vector, and
// each element is combined by one owner in source order, so all ranks get the same bits.
package dense

import (
	"kylix/core/coll"
	"kylix/core/kernels"
	"kylix/core/kx"
	"kylix/core/memroom"
	"unsafe"
)

// Allreduce is a comm's dense allreduce: its context, its options and the scratch its
// algorithms keep from call to call. The comm makes it once (New).
type Allreduce struct {
	cx *coll.Ctx
	// Degrees are the fixed degrees of the option, nil: direct for small jobs, binary beyond.
	Degrees []int
	// Switch: a vector of up to this many bytes takes the direct exchange (negative:
	// DefaultSwitch). Every rank must use the same value.
	Switch int
	// buf is where the members' copies of this rank's chunks land in the butterfly; small is
	// this rank's own vector in the direct exchange.
	buf   []byte
	small []byte
	// lanes: what the comm's ranks agreed on their lanes (lane.go)
	lanes laneAgreement
}

// New makes the dense allreduce of the comm whose context is cx.
func New(cx *coll.Ctx, degrees []int) Allreduce {
	return Allreduce{cx: cx, Degrees: degrees, Switch: -1}
}

// Check checks an allreduce's arguments and returns its fingerprint; the comm rejects the
// call with the error.
func Check(send, recv []byte, d kx.Dtype, o kx.Op) (kx.Fingerprint, error) {
	err := kernels.CheckDtypeOp(d, o)
	if err == nil && len(send) != len(recv) {
		err = kx.Errorf(kx.CodeArg, "send holds %d bytes but recv %d", len(send), len(recv))
	}
	if err == nil && len(send)%d.Size() != 0 {
		err = kx.Errorf(kx.CodeArg, "send holds %d bytes, not a whole number of %s", len(send), d)
	}
	n := 0
	es := kernels.ElemBytes(d, o) // an accumulator for RSum, else the dtype's size
	if err == nil {
		n = len(send) / d.Size()
	}
	if err == nil { // the members' copies of this rank's chunks, or the direct exchange's
		err = memroom.Check(uint64(n*es), "count", "allreduce's receive scratch")
	}
	if err == nil && o == kx.RSum { // the accumulator vector (rsum)
		err = memroom.Check(uint64(n*es), "count", "rsum's accumulators")
	}
	if err != nil {
		return kx.Fingerprint{}, err
	}
	return kx.Fingerprint{Kind: kx.KindAllreduce, Dtype: uint8(d), Op: uint16(o), Count: int64(n)}, nil
}

// Run runs collective seq, an allreduce whose arguments Check accepted.
func (ar *Allreduce) Run(seq uint64, send, recv []byte, d kx.Dtype, o kx.Op) error {
	n, es := len(send)/d.Size(), kernels.ElemBytes(d, o)
	if o == kx.RSum {
		return ar.rsum(seq, send, recv, d, n)
	}
	if len(send) > 0 && unsafe.SliceData(send) != unsafe.SliceData(recv) {
		copy(recv, send)
	}
	if n*es <= ar.switchBytes() {
		return ar.exchange(seq, recv, d, o)
	}
	return ar.butterfly(seq, recv, nil, n, d, o)
}

// DefaultSwitch is the vector size in bytes up to which Allreduce takes the one-round
// direct exchange instead of the butterfly. Small vectors are latency-bound: one round of m-1
// messages beats 2L rounds; large ones are bandwidth-bound, where the butterfly moves
// 2(m-1)/m of the vector instead of m-1 times it. Measured with `kylix bench --dense` (README).
const DefaultSwitch = 32 << 10

func (ar *Allreduce) switchBytes() int {
	if ar.Switch < 0 {
		return DefaultSwitch
	}
	return ar.Switch
}

// rsum is Allreduce for KYLIX_RSUM: the vector is converted to accumulators (24 B a
// value for F64, 16 B for F32, allocated per call) and reduced like any other vector down the
// butterfly; each node rounds the chunk it owns once, and the chunks travel up as the caller's
// floats. The direct exchange (small vectors) sends the accumulators and every rank rounds the
// whole sum.
func (ar *Allreduce) rsum(seq uint64, send, recv []byte, d kx.Dtype, n int) error {
	acc := kernels.AlignedBytes(n * kernels.ElemBytes(d, kx.RSum))
	kernels.From(d, acc, send)
	if len(acc) > ar.switchBytes() {
		return ar.butterfly(seq, acc, recv, n, d, kx.RSum)
	}
	if err := ar.exchange(seq, acc, d, kx.RSum); err != nil {
		return err
	}
	kernels.Round(d, recv, acc)
	return nil
}

// roundUp is n rounded up to a cache line: each slot starts on one, so every dtype's kernels
// see aligned memory.
func roundUp(n int) int { return (n + 63) &^ 63 }
