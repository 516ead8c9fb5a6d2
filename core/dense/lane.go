package dense

import (
	"kylix/core/coll"
	"kylix/core/kernels"
	"kylix/core/kx"
	"math"
)

// The direct exchange over lanes (coll.Lanes: shared-memory slots between the ranks of one
// host, netio/shm/lane.go): each rank writes its vector into its lane to every other and
// combines theirs, in rank order, read in place. The same sums as direct's, bit for bit, with
// none of a message's frames, filing and driving waits: on one host that software is the cost
// of a small step (docs/measurements.md, "Lanes").
//
// Whether a comm's ranks all reach each other by lanes, and how large a message the lanes
// take, is agreed once, in the comm's first small allreduce: ranks that decided on their own
// could put one rank on the lanes and another on messages, and both would wait.

// laneAgreement is what a comm's ranks agreed on their lanes.
type laneAgreement struct {
	agreed bool
	max    int // the largest payload every rank's lanes to every other take; 0: no lanes
	// putOutside is seq+1 when collective seq's lane messages were put out of Go (the C ABI's
	// express allreduce, core/express.go, which handed the collective back unfinished).
	putOutside uint64
}

// LaneBytes is the largest vector, in bytes, whose allreduce takes the lanes: 0 before the
// comm agreed on them, or without them.
func (ar *Allreduce) LaneBytes() int {
	if !ar.lanes.agreed {
		return 0
	}
	return min(ar.lanes.max, ar.switchBytes())
}

// PutOutside says that collective seq+1's lane messages were put out of Go (0: none).
func (ar *Allreduce) PutOutside(seqPlus1 uint64) { ar.lanes.putOutside = seqPlus1 }

// laneLayer is the agreement's layer in its collective (direct's messages are layer 0).
const laneLayer = 1

// lanesFor reports whether the small exchange of size bytes in collective seq takes the lanes,
// agreeing on them first in the comm's first one.
func (ar *Allreduce) lanesFor(seq uint64, size int) (bool, error) {
	cx := ar.cx
	if cx.Lanes == nil || cx.Nodes == 1 {
		return false, nil
	}
	if !ar.lanes.agreed {
		mine := math.MaxInt
		for r := 0; r < cx.Nodes; r++ {
			if r != cx.Node {
				mine = min(mine, cx.Lanes.LaneMax(r))
			}
		}
		all, err := coll.AllgatherSmallAt(cx, kx.Tag{Seq: seq, Layer: laneLayer, Phase: kx.PhaseSmall}, []uint64{uint64(mine)})
		if err != nil {
			return false, err
		}
		for _, w := range all {
			mine = min(mine, int(w))
		}
		ar.lanes = laneAgreement{agreed: true, max: mine}
	}
	return size > 0 && size <= ar.lanes.max, nil
}

// laneExchange is direct over the lanes.
func (ar *Allreduce) laneExchange(seq uint64, buf []byte, d kx.Dtype, o kx.Op) error {
	cx := ar.cx
	m, me := cx.Nodes, cx.Node
	tag := kx.Tag{Seq: seq, Phase: kx.PhaseSmall, FP: cx.FP}
	put := ar.lanes.putOutside != seq+1
	ar.lanes.putOutside = 0
	for r := 0; put && r < m; r++ {
		if r != me {
			if err := cx.Lanes.LanePut(r, tag, buf); err != nil {
				return err
			}
		}
	}
	ar.small = append(ar.small[:0], buf...) // this rank's own copy: buf becomes the sum
	mine := ar.small
	cb := kernels.NewCombiner(d, o, 1, buf)
	for r := 0; r < m; r++ {
		if r == me {
			cb.Combine(mine)
			continue
		}
		fp, src, err := cx.Lanes.LaneAwait(r, tag)
		if err != nil {
			return err
		}
		switch {
		case fp != cx.FP:
			err = kx.MismatchError(r, fp, cx.FP, seq)
		case len(src) != len(mine):
			err = kx.Errorf(kx.CodeMismatch, "rank %d sent %d bytes, this rank %d: counts differ", r, len(src), len(mine))
		default:
			cb.Combine(src)
		}
		cx.Lanes.LaneDone(r, tag)
		if err != nil {
			return err
		}
	}
	return nil
}

// exchange is the small-vector allreduce of buf in place: over the lanes where the comm's ranks
// agreed on them, else direct.
func (ar *Allreduce) exchange(seq uint64, buf []byte, d kx.Dtype, o kx.Op) error {
	lanes, err := ar.lanesFor(seq, len(buf))
	switch {
	case err != nil:
		return err
	case lanes:
		return ar.laneExchange(seq, buf, d, o)
	}
	return ar.direct(seq, buf, d, o)
}
