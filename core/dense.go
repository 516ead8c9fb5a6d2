package core

import (
	"kylix/core/kernels"
	"kylix/core/kx"
	"kylix/core/planning"
	"unsafe"
)

// Allreduce combines every rank's send vector elementwise and leaves the result in recv on
// every rank (send and recv may be the same buffer). It runs the same nested butterfly as the
// sparse path with dense ranges: down the layers each node keeps 1/d of its range and combines
// the members' copies of it (reduce-scatter), then the ranges travel back up (allgather). Every
// rank moves about 2(m-1)/m of the vector, and each element is combined by one owner in source
// order, so all ranks get the same bits.
func (c *Comm) Allreduce(send, recv []byte, d kx.Dtype, o kx.Op) error {
	fp, err := c.checkAllreduce(send, recv, d, o)
	if err != nil {
		return err
	}
	return c.collective(fp, func(seq uint64) error { return c.allreduceBody(seq, send, recv, d, o) })
}

// IAllreduce starts Allreduce and returns at once; arguments and buffers as for IReduce.
func (c *Comm) IAllreduce(send, recv []byte, d kx.Dtype, o kx.Op) (*Request, error) {
	fp, err := c.checkAllreduce(send, recv, d, o)
	if err != nil {
		return nil, err
	}
	return c.issue(fp, func(seq uint64) error { return c.allreduceBody(seq, send, recv, d, o) })
}

// checkAllreduce checks an allreduce's arguments and returns its fingerprint.
func (c *Comm) checkAllreduce(send, recv []byte, d kx.Dtype, o kx.Op) (kx.Fingerprint, error) {
	if err := c.usable(); err != nil {
		return kx.Fingerprint{}, err
	}
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
		err = checkRoom(uint64(n*es), "count", "allreduce's receive scratch")
	}
	if err == nil && o == kx.RSum { // the accumulator vector (rsumAllreduce)
		err = checkRoom(uint64(n*es), "count", "rsum's accumulators")
	}
	if err != nil {
		return kx.Fingerprint{}, c.Reject(err)
	}
	return kx.Fingerprint{Kind: kx.KindAllreduce, Dtype: uint8(d), Op: uint16(o), Count: int64(n)}, nil
}

// allreduceBody runs collective seq, an allreduce whose arguments checkAllreduce accepted.
func (c *Comm) allreduceBody(seq uint64, send, recv []byte, d kx.Dtype, o kx.Op) error {
	n, es := len(send)/d.Size(), kernels.ElemBytes(d, o)
	if o == kx.RSum {
		return c.rsumAllreduce(seq, send, recv, d, n)
	}
	if len(send) > 0 && unsafe.SliceData(send) != unsafe.SliceData(recv) {
		copy(recv, send)
	}
	if n*es <= c.denseSwitch() {
		return c.allreduceDirect(seq, recv, d, o)
	}
	return c.denseButterfly(seq, recv, nil, n, d, o)
}

// denseButterfly reduces the n values of buf down the layers and sends the reduced ranges back
// up. With rounded (RSum: buf holds accumulators), this node's reduced chunk is rounded into
// rounded, the caller's floats, and the up phase carries those instead (it combines nothing).
func (c *Comm) denseButterfly(seq uint64, buf, rounded []byte, n int, d kx.Dtype, o kx.Op) error {
	es := kernels.ElemBytes(d, o)
	topo, err := planning.NewTopology(c.denseDegrees(n*es), c.nodes())
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
		lo, hi = chunk(lo, hi, topo.Digit(c.node(), i), topo.Degrees[i])
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
	early := c.v.Replication() == 1
	last := topo.Layers() - 1
	back := c.lastWriteBack(topo, ranges[last], es, rounded == nil) // dense_fold.go
	if early {
		for i := range ranges {
			if i != last || !back.theirs {
				c.expectUp(seq, topo, i, upBuf, ranges[i][0], ranges[i][1], upEs)
			}
		}
	}
	slots := c.denseSlots(seq, topo, n, es)
	for i, r := range ranges {
		var err error
		if slots[i] == nil {
			wb := (*writeBack)(nil)
			if i == last && back.on {
				wb = &back
			}
			err = c.denseFoldDown(seq, topo, i, buf, r[0], r[1], d, o, wb)
		} else {
			err = c.denseDown(seq, topo, i, buf, r[0], r[1], d, o, slots[i])
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
			c.expectUp(seq, topo, i, upBuf, r[0], r[1], upEs)
		}
		var err error
		if i == last && back.on {
			err = c.denseUpBack(seq, topo, i, upBuf, r[0], r[1], upEs, back)
		} else {
			err = c.denseUp(seq, topo, i, upBuf, r[0], r[1], upEs)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// denseSlots posts, for every layer, where each member's copy of this node's chunk lands: the
// comm's scratch, one slot per member and layer (every layer's own memory, so that everything
// can be posted up front and no message waits in a transport buffer). Returns slots[i][g].
func (c *Comm) denseSlots(seq uint64, topo planning.Topology, n, es int) [][][]byte {
	node := c.node()
	lo, hi := 0, n
	total := 0
	for i := 0; i < topo.Layers(); i++ {
		deg := topo.Degrees[i]
		a, b := chunk(lo, hi, topo.Digit(node, i), deg)
		if !c.foldsLayer(deg) {
			total += (deg - 1) * roundUp((b-a)*es)
		}
		lo, hi = a, b
	}
	if len(c.denseBuf) < total {
		c.denseBuf = kernels.AlignedBytes(total)
	}
	slots := make([][][]byte, topo.Layers())
	off := 0
	lo, hi = 0, n
	for i := range slots {
		deg := topo.Degrees[i]
		me := topo.Digit(node, i)
		a, b := chunk(lo, hi, me, deg)
		size := (b - a) * es
		if c.foldsLayer(deg) {
			lo, hi = a, b // nil: denseDown folds the member's copy in as it arrives
			continue
		}
		slots[i] = make([][]byte, deg)
		for g := 0; g < deg; g++ {
			if g == me {
				continue
			}
			slots[i][g] = c.denseBuf[off : off+size : off+size]
			off += roundUp(size)
			c.expect(topo.Member(node, i, g), kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseDense}, slots[i][g])
		}
		lo, hi = a, b
	}
	return slots
}

// denseFoldMin is the vector size from which a small job's dense allreduce takes the binary
// butterfly too: its two-member layers fold as they receive (foldsLayer), a pass over memory
// less than direct's slots, which outweighs the extra rounds. At 4 ranks on one host
// (tests/bench/kylix_allreduce.c, direct against degrees=2x2) the two cross at 4 MiB: 2x2 is
// level at 4 MiB and takes 0.8x of direct's time at 16 MiB.
const denseFoldMin = 4 << 20

// denseDegrees: fixed degrees from the options, else one direct layer for small jobs and a
// binary butterfly beyond (latency grows with layers, message count with degree), or for a
// vector of size bytes large enough that folding pays (denseFoldMin).
func (c *Comm) denseDegrees(size int) []int {
	m := c.nodes()
	if c.degrees != nil {
		return c.degrees
	}
	spec := "direct"
	if m > 8 || size >= denseFoldMin && c.foldsLayer(2) {
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

// denseSegment is how much of a chunk is combined at a time: the front of every source's copy
// is combined while the rest is still streaming in.
const denseSegment = 256 << 10

// denseDown sends each member its chunk of [lo,hi) of buf and combines the members' copies of
// this node's chunk, which land in slots[g], in source order, segment by segment as they
// arrive.
func (c *Comm) denseDown(seq uint64, topo planning.Topology, i int, buf []byte, lo, hi int, d kx.Dtype, o kx.Op, slots [][]byte) error {
	node, deg, es := c.node(), topo.Degrees[i], kernels.ElemBytes(d, o)
	me := topo.Digit(node, i)
	tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseDense}
	sg := c.sends()
	for g := 0; g < deg; g++ {
		if g != me {
			a, b := chunk(lo, hi, g, deg)
			sg.send(topo.Member(node, i, g), tag, buf[a*es:b*es])
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
	seg := max(denseSegment/es, 1) * es
	var rerr error
	for off := 0; off < len(mine) && rerr == nil; off += seg {
		end := min(off+seg, len(mine))
		for g := 0; g < deg; g++ {
			src := mine
			if g != me {
				if rerr = c.awaitPrefix(topo.Member(node, i, g), tag, end); rerr != nil {
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
			_, rerr = c.await(topo.Member(node, i, g), tag)
		}
	}
	if err := sg.wait(); rerr == nil {
		rerr = err
	}
	return rerr
}

// expectUp posts where the members' reduced chunks of [lo,hi) land in layer i's up phase:
// straight in their place in buf (the caller's recv; a failed call quiesces its places before
// it returns, see Comm.run).
func (c *Comm) expectUp(seq uint64, topo planning.Topology, i int, buf []byte, lo, hi, es int) {
	node, deg := c.node(), topo.Degrees[i]
	me := topo.Digit(node, i)
	tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseUp}
	for g := 0; g < deg; g++ {
		if g != me {
			ga, gb := chunk(lo, hi, g, deg)
			c.expect(topo.Member(node, i, g), tag, buf[ga*es:gb*es])
		}
	}
}

// denseUp sends this node's reduced chunk of [lo,hi) to every member and waits for theirs
// (posted by expectUp).
func (c *Comm) denseUp(seq uint64, topo planning.Topology, i int, buf []byte, lo, hi, es int) error {
	node, deg := c.node(), topo.Degrees[i]
	me := topo.Digit(node, i)
	tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseUp}
	a, b := chunk(lo, hi, me, deg)
	sg := c.sends()
	for g := 0; g < deg; g++ {
		if g != me {
			sg.send(topo.Member(node, i, g), tag, buf[a*es:b*es])
		}
	}
	var rerr error
	for g := 0; g < deg && rerr == nil; g++ {
		if g != me {
			_, rerr = c.await(topo.Member(node, i, g), tag)
		}
	}
	if err := sg.wait(); rerr == nil {
		rerr = err
	}
	return rerr
}

// DefaultDenseSwitch is the vector size in bytes up to which Allreduce takes the one-round
// direct exchange instead of the butterfly. Small vectors are latency-bound: one round of m-1
// messages beats 2L rounds; large ones are bandwidth-bound, where the butterfly moves
// 2(m-1)/m of the vector instead of m-1 times it. Measured with `kylix bench --dense` (README).
const DefaultDenseSwitch = 32 << 10

// SetDenseSwitch changes the direct/butterfly switch point of this comm (benchmarks); every
// rank must use the same value. Negative restores the default.
func (c *Comm) SetDenseSwitch(bytes int) { c.denseSwitchBytes = bytes }

func (c *Comm) denseSwitch() int {
	if c.denseSwitchBytes < 0 {
		return DefaultDenseSwitch
	}
	return c.denseSwitchBytes
}

// allreduceDirect sends the whole vector to every rank in one round; each rank combines all m
// copies in rank order, so every rank computes the same bits.
func (c *Comm) allreduceDirect(seq uint64, buf []byte, d kx.Dtype, o kx.Op) error {
	m, me := c.nodes(), c.node()
	if m == 1 {
		return nil
	}
	tag := kx.Tag{Seq: seq, Phase: kx.PhaseSmall}
	// This rank's own copy (buf becomes the sum), in the comm's scratch: collectives of a comm
	// run one at a time, and every send of it is done when this returns.
	c.smallBuf = append(c.smallBuf[:0], buf...)
	mine := c.smallBuf
	sg := c.sends()
	for r := 0; r < m; r++ {
		if r != me {
			sg.send(r, tag, mine)
		}
	}
	cb := kernels.NewCombiner(d, o, 1, buf) // a user op starts from rank 0's copy, not an identity
	var rerr error
	for r := 0; r < m && rerr == nil; r++ {
		src := mine
		if r != me {
			if src, rerr = c.recv(r, tag); rerr != nil {
				break
			}
			if len(src) != len(mine) {
				rerr = kx.Errorf(kx.CodeMismatch, "rank %d sent %d bytes, this rank %d: counts differ", r, len(src), len(mine))
				break
			}
		}
		cb.Combine(src)
		if r != me {
			c.release(src)
		}
	}
	if err := sg.wait(); rerr == nil {
		rerr = err
	}
	return rerr
}

// rsumAllreduce is Allreduce for KYLIX_RSUM: the vector is converted to accumulators (24 B a
// value for F64, 16 B for F32, allocated per call) and reduced like any other vector down the
// butterfly; each node rounds the chunk it owns once, and the chunks travel up as the caller's
// floats. The direct exchange (small vectors) sends the accumulators and every rank rounds the
// whole sum.
func (c *Comm) rsumAllreduce(seq uint64, send, recv []byte, d kx.Dtype, n int) error {
	acc := kernels.AlignedBytes(n * kernels.ElemBytes(d, kx.RSum))
	kernels.From(d, acc, send)
	if len(acc) > c.denseSwitch() {
		return c.denseButterfly(seq, acc, recv, n, d, kx.RSum)
	}
	if err := c.allreduceDirect(seq, acc, d, kx.RSum); err != nil {
		return err
	}
	kernels.Round(d, recv, acc)
	return nil
}
