package dense

import (
	"kylix/core/kernels"
	"kylix/core/kx"
	"kylix/core/planning"
)

// butterfly reduces the n values of buf down the layers and sends the reduced ranges back
// up. With rounded (RSum: buf holds accumulators), this node's reduced chunk is rounded into
// rounded, the caller's floats, and the up phase carries those instead (it combines nothing).
func (ar *Allreduce) butterfly(seq uint64, buf, rounded []byte, n int, d kx.Dtype, o kx.Op) error {
	es := kernels.ElemBytes(d, o)
	topo, err := planning.NewTopology(ar.degrees(n*es), ar.cx.Nodes)
	if err != nil {
		return err
	}
	if topo.Layers() == 0 { // one node: buf holds the result
		if rounded != nil {
			kernels.Round(d, rounded, buf)
		}
		return nil
	}
	ranges := make([][2]int, topo.Layers()) // the range held above each layer
	lo, hi := 0, n
	for i := range ranges {
		ranges[i] = [2]int{lo, hi}
		lo, hi = chunk(lo, hi, topo.Digit(ar.cx.Node, i), topo.Degrees[i])
	}
	upBuf, upEs := buf, es // where the up phase's ranges land
	if rounded != nil {
		upBuf, upEs = rounded, d.Size()
	}
	// Without replication the up phase's places are posted now: a member that finishes the
	// down phase first sends its range up at once, and a frame that found no place would wait
	// whole in the mailbox and be copied again. Each place is a member's chunk, which this node
	// sends down in the same layer; the member's range comes up only after it had all of that.
	// (A racing copy may come up from a replica that had its copy from this node's replica.)
	early := ar.cx.Replication == 1
	last := topo.Layers() - 1
	back := ar.lastWriteBack(topo, ranges[last], es, rounded == nil) // fold.go
	if early {
		for i := range ranges {
			if i != last || !back.theirs {
				ar.expectUp(seq, topo, i, upBuf, ranges[i][0], ranges[i][1], upEs)
			}
		}
	}
	slots := ar.slots(seq, topo, n, es)
	for i, r := range ranges {
		var err error
		if slots[i] == nil {
			wb := (*writeBack)(nil)
			if i == last && back.on {
				wb = &back
			}
			err = ar.foldDown(seq, topo, i, buf, r[0], r[1], d, o, wb)
		} else {
			err = ar.down(seq, topo, i, buf, r[0], r[1], d, o, slots[i])
		}
		if err != nil {
			return err
		}
	}
	if rounded != nil {
		kernels.Round(d, rounded[lo*d.Size():hi*d.Size()], buf[lo*es:hi*es])
	}
	for i := last; i >= 0; i-- {
		r := ranges[i]
		if !early {
			ar.expectUp(seq, topo, i, upBuf, r[0], r[1], upEs)
		}
		var err error
		if i == last && back.on {
			err = ar.upBack(seq, topo, i, upBuf, r[0], r[1], upEs, back)
		} else {
			err = ar.up(seq, topo, i, upBuf, r[0], r[1], upEs)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// slots posts, for every layer, where each member's copy of this node's chunk lands: the
// comm's scratch, one slot per member and layer (every layer's own memory, so that everything
// can be posted up front and no message waits in a transport buffer). Returns slots[i][g].
func (ar *Allreduce) slots(seq uint64, topo planning.Topology, n, es int) [][][]byte {
	node := ar.cx.Node
	lo, hi := 0, n
	total := 0
	for i := 0; i < topo.Layers(); i++ {
		deg := topo.Degrees[i]
		a, b := chunk(lo, hi, topo.Digit(node, i), deg)
		if !ar.foldsLayer(deg) {
			total += (deg - 1) * roundUp((b-a)*es)
		}
		lo, hi = a, b
	}
	if len(ar.buf) < total {
		ar.buf = kernels.AlignedBytes(total)
	}
	slots := make([][][]byte, topo.Layers())
	off := 0
	lo, hi = 0, n
	for i := range slots {
		deg := topo.Degrees[i]
		me := topo.Digit(node, i)
		a, b := chunk(lo, hi, me, deg)
		size := (b - a) * es
		if ar.foldsLayer(deg) {
			lo, hi = a, b // nil: down folds the member's copy in as it arrives
			continue
		}
		slots[i] = make([][]byte, deg)
		for g := 0; g < deg; g++ {
			if g == me {
				continue
			}
			slots[i][g] = ar.buf[off : off+size : off+size]
			off += roundUp(size)
			ar.cx.Expect(topo.Member(node, i, g), kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseDense}, slots[i][g])
		}
		lo, hi = a, b
	}
	return slots
}

// foldMin is the vector size from which a small job's dense allreduce takes the binary
// butterfly too: its two-member layers fold as they receive (foldsLayer), a pass over memory
// less than direct's slots, which outweighs the extra rounds; at 4 ranks on one host the two
// cross at 4 MiB (docs/measurements.md, "Dense allreduce").
const foldMin = 4 << 20

// degrees: fixed degrees from the options, else one direct layer for small jobs and a
// binary butterfly beyond (latency grows with layers, message count with degree), or for a
// vector of size bytes large enough that folding pays (foldMin).
func (ar *Allreduce) degrees(size int) []int {
	m := ar.cx.Nodes
	if ar.Degrees != nil {
		return ar.Degrees
	}
	spec := "direct"
	if m > 8 || size >= foldMin && ar.foldsLayer(2) {
		spec = "binary"
	}
	ds, _ := kx.ParseDegreesSpec(spec, m)
	return ds
}

// chunk is the g-th of d near-equal parts of [lo, hi).
func chunk(lo, hi, g, d int) (int, int) {
	n := hi - lo
	return lo + n*g/d, lo + n*(g+1)/d
}

// segment is how much of a chunk is combined at a time: the front of every source's copy
// is combined while the rest is still streaming in.
const segment = 256 << 10

// down sends each member its chunk of [lo,hi) of buf and combines the members' copies of
// this node's chunk, which land in slots[g], in source order, segment by segment as they
// arrive.
func (ar *Allreduce) down(seq uint64, topo planning.Topology, i int, buf []byte, lo, hi int, d kx.Dtype, o kx.Op, slots [][]byte) error {
	node, deg, es := ar.cx.Node, topo.Degrees[i], kernels.ElemBytes(d, o)
	me := topo.Digit(node, i)
	tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseDense}
	sg := ar.cx.Sends()
	for g := 0; g < deg; g++ {
		if g != me {
			a, b := chunk(lo, hi, g, deg)
			sg.Send(topo.Member(node, i, g), tag, buf[a*es:b*es])
		}
	}
	a, b := chunk(lo, hi, me, deg)
	mine := buf[a*es : b*es]
	// The accumulator starts as source 0's copy and takes sources 1..d-1 in order: this
	// node's own chunk, combined in place, when it is source 0, else source 0's slot, copied
	// into place once combined. No identity fill. A user op gets the same order.
	acc := mine
	if me != 0 {
		acc = slots[0]
	}
	seg := max(segment/es, 1) * es
	var rerr error
	for off := 0; off < len(mine) && rerr == nil; off += seg {
		end := min(off+seg, len(mine))
		for g := 0; g < deg; g++ {
			src := mine
			if g != me {
				if rerr = ar.cx.AwaitPrefix(topo.Member(node, i, g), tag, end); rerr != nil {
					break
				}
				src = slots[g]
			}
			if g > 0 {
				kernels.Combine(d, o, acc[off:end], src[off:end])
			}
		}
		if rerr == nil && me != 0 {
			copy(mine[off:end], acc[off:end])
		}
	}
	for g := 0; g < deg && rerr == nil; g++ {
		if g != me { // landed whole by now: counts the message
			_, rerr = ar.cx.Await(topo.Member(node, i, g), tag)
		}
	}
	if err := sg.Wait(); rerr == nil {
		rerr = err
	}
	return rerr
}

// expectUp posts where the members' reduced chunks of [lo,hi) land in layer i's up phase:
// straight in their place in buf (the caller's recv; a failed call quiesces its places before
// it returns, see Comm.run).
func (ar *Allreduce) expectUp(seq uint64, topo planning.Topology, i int, buf []byte, lo, hi, es int) {
	node, deg := ar.cx.Node, topo.Degrees[i]
	me := topo.Digit(node, i)
	tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseUp}
	for g := 0; g < deg; g++ {
		if g != me {
			ga, gb := chunk(lo, hi, g, deg)
			ar.cx.Expect(topo.Member(node, i, g), tag, buf[ga*es:gb*es])
		}
	}
}

// up sends this node's reduced chunk of [lo,hi) to every member and waits for theirs
// (posted by expectUp).
func (ar *Allreduce) up(seq uint64, topo planning.Topology, i int, buf []byte, lo, hi, es int) error {
	node, deg := ar.cx.Node, topo.Degrees[i]
	me := topo.Digit(node, i)
	tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseUp}
	a, b := chunk(lo, hi, me, deg)
	sg := ar.cx.Sends()
	for g := 0; g < deg; g++ {
		if g != me {
			sg.Send(topo.Member(node, i, g), tag, buf[a*es:b*es])
		}
	}
	var rerr error
	for g := 0; g < deg && rerr == nil; g++ {
		if g != me {
			_, rerr = ar.cx.Await(topo.Member(node, i, g), tag)
		}
	}
	if err := sg.Wait(); rerr == nil {
		rerr = err
	}
	return rerr
}
