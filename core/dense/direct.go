package dense

import (
	"kylix/core/kernels"
	"kylix/core/kx"
)

// direct sends the whole vector to every rank in one round; each rank combines all m
// copies in rank order, so every rank computes the same bits.
func (ar *Allreduce) direct(seq uint64, buf []byte, d kx.Dtype, o kx.Op) error {
	m, me := ar.cx.Nodes, ar.cx.Node
	if m == 1 {
		return nil
	}
	tag := kx.Tag{Seq: seq, Phase: kx.PhaseSmall}
	// This rank's own copy (buf becomes the sum), in the comm's scratch: collectives of a comm
	// run one at a time, and every send of it is done when this returns.
	ar.small = append(ar.small[:0], buf...)
	mine := ar.small
	sg := ar.cx.Sends()
	for r := 0; r < m; r++ {
		if r != me {
			sg.Send(r, tag, mine)
		}
	}
	cb := kernels.NewCombiner(d, o, 1, buf) // a user op starts from rank 0's copy, not an identity
	var rerr error
	for r := 0; r < m && rerr == nil; r++ {
		src := mine
		if r != me {
			if src, rerr = ar.cx.Recv(r, tag); rerr != nil {
				break
			}
			if len(src) != len(mine) {
				rerr = kx.Errorf(kx.CodeMismatch, "rank %d sent %d bytes, this rank %d: counts differ", r, len(src), len(mine))
				break
			}
		}
		cb.Combine(src)
		if r != me {
			ar.cx.Release(src)
		}
	}
	if err := sg.Wait(); rerr == nil {
		rerr = err
	}
	return rerr
}
