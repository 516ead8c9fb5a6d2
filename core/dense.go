package core

import "unsafe"

// Allreduce combines every rank's send vector elementwise and leaves the result in recv on
// every rank (send and recv may be the same buffer). It runs the same nested butterfly as the
// sparse path with dense ranges: down the layers each node keeps 1/d of its range and combines
// the members' copies of it (reduce-scatter), then the ranges travel back up (allgather). Every
// rank moves about 2(m-1)/m of the vector, and each element is combined by one owner in source
// order, so all ranks get the same bits.
func (c *Comm) Allreduce(send, recv []byte, d Dtype, o Op) error {
	if err := c.usable(); err != nil {
		return err
	}
	err := CheckDtypeOp(d, o)
	if err == nil && len(send) != len(recv) {
		err = Errorf(CodeArg, "send holds %d bytes but recv %d", len(send), len(recv))
	}
	if err == nil && len(send)%d.Size() != 0 {
		err = Errorf(CodeArg, "send holds %d bytes, not a whole number of %s", len(send), d)
	}
	if err != nil {
		return c.Reject(err)
	}
	es := d.Size()
	n := len(send) / es
	fp := Fingerprint{Kind: KindAllreduce, Dtype: uint8(d), Op: uint16(o), Count: int64(n)}
	return c.collective(fp, func(seq uint64) error {
		if len(send) > 0 && unsafe.SliceData(send) != unsafe.SliceData(recv) {
			copy(recv, send)
		}
		topo, err := NewTopology(c.denseDegrees(), c.Size())
		if err != nil {
			return err
		}
		lo, hi := 0, n
		type span struct{ lo, hi int }
		ranges := make([]span, topo.Layers()) // the range held above each layer
		for i := 0; i < topo.Layers(); i++ {
			ranges[i] = span{lo, hi}
			lo, hi, err = c.denseDown(seq, topo, i, recv, lo, hi, d, o)
			if err != nil {
				return err
			}
		}
		for i := topo.Layers() - 1; i >= 0; i-- {
			if err := c.denseUp(seq, topo, i, recv, ranges[i].lo, ranges[i].hi, es); err != nil {
				return err
			}
		}
		return nil
	})
}

// denseDegrees: fixed degrees from the options, else one direct layer for small jobs and a
// binary butterfly beyond (latency grows with layers, message count with degree).
func (c *Comm) denseDegrees() []int {
	m := c.Size()
	if c.degrees != nil {
		return c.degrees
	}
	spec := "direct"
	if m > 8 {
		spec = "binary"
	}
	ds, _ := ParseDegreesSpec(spec, m)
	return ds
}

// chunk is the g-th of d near-equal parts of [lo, hi).
func chunk(lo, hi, g, d int) (int, int) {
	n := hi - lo
	return lo + n*g/d, lo + n*(g+1)/d
}

// denseDown sends each member its chunk of [lo,hi) of buf and combines the members' copies of
// this node's chunk in source order. It returns this node's chunk.
func (c *Comm) denseDown(seq uint64, topo Topology, i int, buf []byte, lo, hi int, d Dtype, o Op) (int, int, error) {
	node, deg, es := c.Rank(), topo.Degrees[i], d.Size()
	me := topo.Digit(node, i)
	tag := Tag{Seq: seq, Layer: uint8(i), Phase: PhaseDense}
	sg := sendGroup{t: c.t}
	for g := 0; g < deg; g++ {
		if g != me {
			a, b := chunk(lo, hi, g, deg)
			sg.send(topo.Member(node, i, g), tag, buf[a*es:b*es])
		}
	}
	a, b := chunk(lo, hi, me, deg)
	mine := buf[a*es : b*es]
	acc := make([]byte, len(mine))
	Identity(d, o, acc)
	var rerr error
	for g := 0; g < deg && rerr == nil; g++ {
		src := mine
		if g != me {
			from := topo.Member(node, i, g)
			if src, rerr = c.t.Recv(from, tag); rerr != nil {
				break
			}
			if len(src) != len(mine) {
				rerr = Errorf(CodeMismatch, "rank %d sent %d bytes for a %d-byte chunk: counts differ", from, len(src), len(mine))
				break
			}
		}
		Combine(d, o, acc, src)
		if g != me {
			c.release(src)
		}
	}
	if err := sg.wait(); rerr == nil {
		rerr = err
	}
	if rerr == nil {
		copy(mine, acc)
	}
	return a, b, rerr
}

// denseUp sends this node's reduced chunk of [lo,hi) to every member and receives theirs.
func (c *Comm) denseUp(seq uint64, topo Topology, i int, buf []byte, lo, hi, es int) error {
	node, deg := c.Rank(), topo.Degrees[i]
	me := topo.Digit(node, i)
	tag := Tag{Seq: seq, Layer: uint8(i), Phase: PhaseUp}
	a, b := chunk(lo, hi, me, deg)
	sg := sendGroup{t: c.t}
	for g := 0; g < deg; g++ {
		if g != me {
			sg.send(topo.Member(node, i, g), tag, buf[a*es:b*es])
		}
	}
	var rerr error
	for g := 0; g < deg && rerr == nil; g++ {
		if g == me {
			continue
		}
		from := topo.Member(node, i, g)
		ga, gb := chunk(lo, hi, g, deg)
		got, err := c.t.Recv(from, tag)
		switch {
		case err != nil:
			rerr = err
		case len(got) != (gb-ga)*es:
			rerr = Errorf(CodeInternal, "rank %d sent %d bytes for chunk [%d,%d)", from, len(got), ga, gb)
		default:
			copy(buf[ga*es:gb*es], got)
			c.release(got)
		}
	}
	if err := sg.wait(); rerr == nil {
		rerr = err
	}
	return rerr
}
