package core

import (
	"kylix/core/kernels"
	"kylix/core/memroom"
	"slices"
)

// planBufs is the value memory a plan owns, sized for es bytes per index by the first reduce
// and reused by every later one (gloo's algorithms register their buffers once, in the
// constructor): a reduce on a configured plan allocates no value memory. A wider width or dtype
// grows it; a narrower one uses a prefix of it.
//
// Everything is carved from one block, each piece starting on a cache line (so every dtype's
// kernels see aligned memory). The pieces are never shared between two uses that can overlap in
// time, because the transport may write a posted place at any moment of the collective:
//   - vec[i]: out values above layer i (vec[0] the rank's sorted unique out keys, vec[L] the
//     bottom), read by the down phase of layer i;
//   - slot[i][g]: where member g's down message of layer i lands; after it has been combined it
//     stages the up message for g (the only use of it left in the collective);
//   - above[i]: in values above layer i, the landing place of the members' up messages of layer
//     i (above[0] is the rank's sorted unique in keys);
//   - vin: the bottom's in values, when the bottom map is not the identity.
type planBufs struct {
	es    int
	block []byte
	vec   [][]byte
	slot  [][][]byte
	above [][]byte
	vin   []byte
	rest  []byte // the caller's repeated out values, gathered to be folded in (layer 0)
	// cursor is the down phase's per-source progress (rows combined), one per member.
	cursor []int
}

const bufAlign = 64

func roundUp(n int) int { return (n + bufAlign - 1) &^ (bufAlign - 1) }

// bufs returns the plan's buffers for es bytes per index, allocating them when the plan has
// none large enough. arg names the argument that sets es, for the out-of-memory message.
func (p *Plan) bufs(es int, arg string) (*planBufs, error) {
	if b := p.vals; b != nil && b.es == es {
		return b, nil
	}
	var need uint64
	for _, n := range p.bufSizes() {
		need = memroom.Add(need, memroom.Add(memroom.Mul(uint64(n), uint64(es), 1), bufAlign))
	}
	if b := p.vals; b != nil && need <= uint64(len(b.block)) {
		return p.carve(b.block, es), nil
	}
	if err := memroom.Check(need, arg, "the plan's value buffers"); err != nil {
		return nil, err
	}
	return p.carve(kernels.AlignedBytes(int(need)), es), nil
}

// bufSizes lists the index counts of the pieces in carve order (each takes count*es bytes,
// rounded up to bufAlign): vec[0..L], slot[i][g] for every i and g, above[0..L-1], vin, rest.
func (p *Plan) bufSizes() []int {
	L := len(p.layers)
	s := make([]int, 0, 2*L+2+len(p.layers)*8)
	s = append(s, p.out0)
	for i := range p.layers {
		s = append(s, p.layers[i].outLen)
	}
	for i := range p.layers {
		lm := &p.layers[i]
		for g := range lm.outMaps {
			s = append(s, max(len(lm.outMaps[g]), len(lm.inMaps[g])))
		}
	}
	if L > 0 {
		s = append(s, p.in0)
	}
	for i := 1; i < L; i++ {
		s = append(s, p.layers[i-1].inLen)
	}
	if p.bottomIdentity {
		s = append(s, 0)
	} else {
		s = append(s, len(p.bottom))
	}
	return append(s, len(p.outRest))
}

// carve cuts the pieces for es bytes per index out of block.
func (p *Plan) carve(block []byte, es int) *planBufs {
	off := 0
	take := func(n int) []byte {
		b := block[off : off+n*es : off+n*es]
		off += roundUp(n * es)
		return b
	}
	L := len(p.layers)
	b := &planBufs{es: es, block: block, vec: make([][]byte, L+1), slot: make([][][]byte, L), above: make([][]byte, L)}
	b.vec[0] = take(p.out0)
	for i := range p.layers {
		b.vec[i+1] = take(p.layers[i].outLen)
	}
	for i := range p.layers {
		lm := &p.layers[i]
		b.slot[i] = make([][]byte, len(lm.outMaps))
		for g := range lm.outMaps {
			b.slot[i][g] = take(max(len(lm.outMaps[g]), len(lm.inMaps[g])))
		}
	}
	if L > 0 {
		b.above[0] = take(p.in0)
	}
	for i := 1; i < L; i++ {
		b.above[i] = take(p.layers[i-1].inLen)
	}
	if !p.bottomIdentity {
		b.vin = take(len(p.bottom))
	}
	b.rest = take(len(p.outRest))
	b.cursor = make([]int, slices.Max(append([]int{0}, p.topo.Degrees...)))
	p.vals = b
	return b
}
