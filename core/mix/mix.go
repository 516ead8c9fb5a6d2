// Package mix is butterfly mixing over a comm's context (core/coll).
package mix

import (
	"errors"
	"kylix/core/coll"
	"kylix/core/kernels"
	"kylix/core/kx"
	"kylix/core/planning"
	"strings"
)

// Butterfly mixing (Zhao and Canny, "Butterfly Mixing: Accelerating Incremental-Update Algorithms on Clusters", §4.2): instead of a full allreduce
// on every step of an iterative algorithm, each step averages the model with this rank's group
// at one layer of the butterfly, cycling through the layers. One mix step costs one exchange
// of the vector with d-1 peers; after the L layers have each been mixed once (with no other
// change to the vectors) every rank holds the global mean, because the layers of the nested
// butterfly form a product of groups: layer i averages over digit i while the other digits
// stay fixed.
//
// Mixing uses the degrees option when it is fixed ("direct", "binary", "4x2", ...), else the
// binary butterfly of the mixing paper: one direct layer would make every step a full average,
// which is the allreduce mixing is meant to replace. Degree-1 factors are dropped (they move
// nothing), so L is the number of factors above 1.

// Mix is a comm's butterfly mixing: its context and the fixed degrees of the option (nil:
// binary).
type Mix struct {
	cx      *coll.Ctx
	Degrees []int
}

// New makes the mixing of the comm whose context is cx.
func New(cx *coll.Ctx, degrees []int) Mix { return Mix{cx: cx, Degrees: degrees} }

// Layers is L, the number of layers Mix cycles through: Mix at steps s, s+1, ..., s+L-1 leaves
// every rank with the global mean. It is at least 1 (a one-rank job has one layer that moves
// nothing), so step % Layers() is always defined.
func (mx *Mix) Layers() int {
	topo, err := planning.NewTopology(mx.degrees(), mx.cx.Nodes)
	if err != nil {
		return 1
	}
	return max(1, topo.Layers())
}

// Check checks a mix step's arguments and returns its fingerprint; the comm rejects the call
// with the error. Integer dtypes and a negative step are CodeArg.
func Check(buf []byte, d kx.Dtype, step int64) (kx.Fingerprint, error) {
	var err error
	switch {
	case !d.Valid():
		err = kx.Errorf(kx.CodeArg, "dtype: %d is not a kylix_dtype", int(d))
	case !d.IsFloat():
		err = kx.Errorf(kx.CodeArg, "dtype: mixing averages, so it needs KYLIX_F32 or KYLIX_F64, not %s", d)
	case step < 0:
		err = kx.Errorf(kx.CodeArg, "step: %d is negative", step)
	case len(buf)%d.Size() != 0:
		err = kx.Errorf(kx.CodeArg, "buf holds %d bytes, not a whole number of %s", len(buf), d)
	}
	if err != nil {
		return kx.Fingerprint{}, err
	}
	n := len(buf) / d.Size()
	// The step travels in the fingerprint's plan (low 32 bits) and width (high 32 bits) fields,
	// which mix does not otherwise use. A rank on another step (or count, dtype, collective)
	// fails the call on itself and on its butterfly neighbours (see layer), which tell all
	// the others; a rank that has finished its step by then keeps a correct mix with its group.
	return kx.Fingerprint{Kind: kx.KindMix, Dtype: uint8(d), Count: int64(n),
		Plan: uint32(step), Width: int32(uint32(uint64(step) >> 32))}, nil
}

// Run is collective seq, a mix step whose arguments Check accepted: it replaces buf (a whole
// number of elements of the float dtype d) with the average of buf over this rank's group at
// layer step mod L of the butterfly. Every member of the group sends its whole buf to every
// other member and sums the d copies in member order (digit 0 first, never arrival order),
// then divides by d, so all members end with the bitwise-same vector. The step is part of the
// fingerprint: ranks that disagree on it fail with CodeMismatch, never a timeout. On failure
// buf is unchanged.
func (mx *Mix) Run(seq uint64, buf []byte, d kx.Dtype, step int64) error {
	topo, err := planning.NewTopology(mx.degrees(), mx.cx.Nodes)
	if err != nil {
		return err
	}
	if topo.Layers() == 0 {
		return nil // one rank: its vector is the mean
	}
	return stepMismatch(mx.layer(seq, topo, int(step%int64(topo.Layers())), buf, d))
}

// stepMismatch renames the fingerprint fields that carry the step in a mismatch message ("rank
// 2 disagrees on plan: 5 vs 4 (collective 9, mix)" becomes "... on step: 5 vs 4 ..."), before the
// error is passed on to the peers. Any other error is returned as is.
func stepMismatch(err error) error {
	var e *kx.Error
	if !errors.As(err, &e) || e.Code != kx.CodeMismatch || !strings.Contains(e.Msg, ", "+kx.KindMix.String()+")") {
		return err
	}
	msg := strings.Replace(e.Msg, "disagrees on plan: ", "disagrees on step: ", 1)
	msg = strings.Replace(msg, "disagrees on width: ", "disagrees on step (high 32 bits): ", 1)
	if msg == e.Msg {
		return err
	}
	return e.Reworded(msg) // the text is final (already renumbered below core)
}

// layer averages buf with the members of this node's layer-i group. It also sends an empty
// message to, and waits for one from, each butterfly neighbour outside that group (the members
// of its groups at the other layers): the neighbour set does not depend on the step, so ranks
// that disagree on the step (and hence on the layer) still hear from each other in this
// collective and fail with a mismatch, instead of one waiting for data the other never sends.
// That is sum(d_i - 1) - (d - 1) empty frames per step, none for a one-layer butterfly.
func (mx *Mix) layer(seq uint64, topo planning.Topology, i int, buf []byte, d kx.Dtype) error {
	node, deg := mx.cx.Node, topo.Degrees[i]
	me := topo.Digit(node, i)
	tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseDense}
	sg := mx.cx.Sends()
	for g := 0; g < deg; g++ {
		if g != me {
			sg.Send(topo.Member(node, i, g), tag, buf)
		}
	}
	for j := 0; j < topo.Layers(); j++ {
		for g := 0; j != i && g < topo.Degrees[j]; g++ {
			if g != topo.Digit(node, j) {
				sg.Send(topo.Member(node, j, g), kx.Tag{Seq: seq, Layer: uint8(j), Phase: kx.PhaseSmall}, nil)
			}
		}
	}
	// acc starts as member 0's vector: ours copied (buf is still being sent), or the received
	// payload, which we own. Then members 1..deg-1 are added in order.
	var acc []byte
	accOwned := false // acc came from the transport and goes back to its pool
	var rerr error
	for g := 0; g < deg && rerr == nil; g++ {
		src := buf
		if g != me {
			from := topo.Member(node, i, g)
			if src, rerr = mx.cx.Recv(from, tag); rerr != nil {
				break
			}
			if len(src) != len(buf) {
				rerr = kx.Errorf(kx.CodeMismatch, "rank %d sent %d bytes to mix with %d: counts differ", from, len(src), len(buf))
				mx.cx.Release(src)
				break
			}
		}
		switch {
		case g == 0 && g == me:
			acc = append([]byte(nil), buf...)
		case g == 0:
			acc, accOwned = src, true
		default:
			kernels.Combine(d, kx.Sum, acc, src)
			if g != me {
				mx.cx.Release(src)
			}
		}
	}
	for j := 0; j < topo.Layers() && rerr == nil; j++ {
		for g := 0; j != i && g < topo.Degrees[j] && rerr == nil; g++ {
			if g == topo.Digit(node, j) {
				continue
			}
			from := topo.Member(node, j, g)
			b, err := mx.cx.Recv(from, kx.Tag{Seq: seq, Layer: uint8(j), Phase: kx.PhaseSmall})
			switch {
			case err != nil:
				rerr = err
			case len(b) != 0:
				rerr = kx.Errorf(kx.CodeInternal, "rank %d sent %d bytes where mix expects an empty message", from, len(b))
			}
			mx.cx.Release(b)
		}
	}
	if err := sg.Wait(); rerr == nil {
		rerr = err
	}
	if rerr == nil {
		kernels.Divide(d, acc, deg)
		copy(buf, acc) // only now: the sends read buf until sg.wait returned
	}
	if accOwned {
		mx.cx.Release(acc)
	}
	return rerr
}

// degrees: the fixed degrees option, else binary.
func (mx *Mix) degrees() []int {
	if mx.Degrees != nil {
		return mx.Degrees
	}
	ds, _ := kx.ParseDegreesSpec("binary", mx.cx.Nodes)
	return ds
}
