package core

import (
	"kylix/core/kernels"
	"kylix/core/keyset"
	"kylix/core/kx"
	"slices"
)

// Reduce sends this rank's out values down the configured butterfly and writes the op over
// all ranks into inVals, in the caller's in-index order.
func (p *Plan) Reduce(outVals, inVals []byte, d kx.Dtype, o kx.Op, width int) error {
	fp, b, vs, err := p.checkReduce(outVals, inVals, d, o, width)
	if err != nil {
		return err
	}
	return p.c.collective(fp, func(seq uint64) error { return p.reduceBody(seq, b, vs, outVals, inVals) })
}

// IReduce starts Reduce and returns at once. Arguments are checked now: an error is returned
// (and the slot given up through Reject, as the blocking call does) without a request. outVals
// and inVals belong to the request until Wait returns or Test reports done.
func (p *Plan) IReduce(outVals, inVals []byte, d kx.Dtype, o kx.Op, width int) (*Request, error) {
	fp, b, vs, err := p.checkReduce(outVals, inVals, d, o, width)
	if err != nil {
		return nil, err
	}
	return p.c.issue(fp, func(seq uint64) error { return p.reduceBody(seq, b, vs, outVals, inVals) })
}

// checkReduce checks a reduce's arguments and returns its fingerprint, the plan's buffers for
// its value size and its value spec.
func (p *Plan) checkReduce(outVals, inVals []byte, d kx.Dtype, o kx.Op, width int) (kx.Fingerprint, *planBufs, *valueSpec, error) {
	if err := p.usable(); err != nil {
		return kx.Fingerprint{}, nil, nil, err
	}
	c := p.c
	err := checkReduceArgs(d, o, width)
	if err == nil {
		err = checkValues("out_vals", outVals, p.nOut, d, width)
	}
	if err == nil {
		err = checkValues("in_vals", inVals, p.nIn, d, width)
	}
	var b *planBufs
	if err == nil {
		b, err = p.bufs(width*kernels.ElemBytes(d, o), "width")
	}
	if err != nil {
		return kx.Fingerprint{}, nil, nil, c.Reject(err)
	}
	fp := kx.Fingerprint{Kind: kx.KindReduce, Dtype: uint8(d), Op: uint16(o), Width: int32(width), Plan: p.id}
	return fp, b, p.valueSpec(d, o, width), nil
}

// valueSpec is the spec of a reduce's values: the last one's while the arguments repeat, as
// they do in a loop of small steps, where an allocation a call would bring the garbage
// collector's pauses (a spec is never changed once made, so a queued request keeps its own).
func (p *Plan) valueSpec(d kx.Dtype, o kx.Op, width int) *valueSpec {
	if vs := p.spec; vs != nil && vs.d == d && vs.o == o && vs.width == width {
		return vs
	}
	p.spec = newValueSpec(d, o, width)
	return p.spec
}

// reduceBody runs collective seq, a reduce whose arguments checkReduce accepted.
func (p *Plan) reduceBody(seq uint64, b *planBufs, vs *valueSpec, outVals, inVals []byte) error {
	p.expectAll(seq, b, vs, true)
	p.c.rec.Step(seq, stepFill, 0) // the timeline (timeline.go)
	p.fillLayer0(b, outVals, vs)
	for i := range p.layers {
		if err := p.down(seq, i, b, vs); err != nil {
			return err
		}
	}
	return p.up(seq, b, b.vec[len(p.layers)], inVals, vs, p.fusedUp && vs.o.Builtin()) // combineSub
}

// expectAll posts the landing place of every message this rank receives in the reduce: down
// messages into the per-source slots, up messages straight into their final position in the
// layer above. Posting everything first lets every message stream in while earlier ones are
// combined.
func (p *Plan) expectAll(seq uint64, b *planBufs, vs *valueSpec, down bool) {
	c, t := p.c, p.topo
	ues := vs.upSpec().es
	node := c.cx.Node
	for i := range p.layers {
		lm := &p.layers[i]
		me := t.Digit(node, i)
		for g := 0; g < t.Degrees[i]; g++ {
			if g == me {
				continue
			}
			from := t.Member(node, i, g)
			if down {
				c.cx.Expect(from, kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseDown}, b.slot[i][g][:len(lm.outMaps[g])*p.srcES(i, vs)])
			}
			c.cx.Expect(from, kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseUp}, b.above[i][lm.inSplit[g]*ues:lm.inSplit[g+1]*ues])
		}
	}
}

// down is one scatter-reduce layer: member g gets the contiguous slice of vec[i] for its key
// range (sent straight from it), and the members' slices are combined into vec[i+1] in source
// order, each as soon as it and every source before it have landed, while later ones still
// stream in. Order by source, never by arrival: results are bitwise reproducible.
func (p *Plan) down(seq uint64, i int, b *planBufs, vs *valueSpec) error {
	c, t, lm := p.c, p.topo, &p.layers[i]
	node, d, es := c.cx.Node, t.Degrees[i], p.srcES(i, vs)
	me := t.Digit(node, i)
	v := b.vec[i]
	tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseDown}
	c.rec.Step(seq, stepCombine, i) // the timeline (timeline.go)
	sg := c.cx.Sends()
	for g := 0; g < d; g++ {
		if g != me {
			sg.Send(t.Member(node, i, g), tag, v[lm.outSplit[g]*es:lm.outSplit[g+1]*es])
		}
	}
	dst := b.vec[i+1]
	var rerr error
	if lm.mergedBounds != nil {
		rerr = p.combineBuckets(i, b, vs, tag, dst)
	} else {
		rerr = p.combineMonotone(i, b, vs, tag, dst)
	}
	for g := 0; g < d && rerr == nil; g++ {
		if g != me { // landed whole by now (an empty tail included): counts the message
			_, rerr = c.cx.Await(t.Member(node, i, g), tag)
		}
	}
	if err := sg.Wait(); rerr == nil {
		rerr = err
	}
	return rerr
}

// combineMonotone combines the members' slices of a layer whose maps are increasing into dst.
func (p *Plan) combineMonotone(i int, b *planBufs, vs *valueSpec, tag kx.Tag, dst []byte) error {
	c, t, lm := p.c, p.topo, &p.layers[i]
	node, d, es := c.cx.Node, t.Degrees[i], vs.es
	me := t.Digit(node, i)
	v := b.vec[i]
	var cb kernels.Combiner
	if vs.o.Builtin() {
		p.identity(dst, vs)
	} else {
		cb = kernels.NewCombiner(vs.d, vs.o, vs.width, dst)
	}
	// Segment by segment of the merged vector: every source's rows that land in the segment
	// (a contiguous run, the maps being increasing) are combined in source order as soon as
	// that much of the source has landed, while the rest of every message streams in.
	cur := b.cursor[:d]
	clear(cur)
	rows := lm.outLen
	seg := max(downSegment/es, 1)
	var rerr error
	for a := 0; a < rows && rerr == nil; a += seg {
		end := min(a+seg, rows)
		for g := 0; g < d; g++ {
			m := lm.outMaps[g]
			lo := cur[g]
			hi := lo + segmentEnd(m[lo:], end)
			src := v[lm.outSplit[me]*es : lm.outSplit[me+1]*es]
			if g != me {
				if rerr = c.cx.AwaitPrefix(t.Member(node, i, g), tag, hi*es); rerr != nil {
					break
				}
				src = b.slot[i][g]
			}
			if vs.o.Builtin() {
				p.scatterMonotone(dst, src[lo*es:hi*es], m[lo:hi], vs)
			} else {
				cb.Scatter(src[lo*es:hi*es], m[lo:hi])
			}
			cur[g] = hi
		}
	}
	return rerr
}

// combineBuckets combines the members' slices of layer 0 of a packed plan into dst, sub-range
// by sub-range of the merged keys (layer0_pack.go): each member's rows of a sub-range are a
// contiguous run of its message, mapped at random only inside the sub-range's part of dst, so
// the writes stay in cache. A sub-range is combined in source order once every source's rows
// of it have landed, while the rest streams in; with threads, consecutive sub-ranges go to
// different workers (each is combined whole by one, so the bits do not depend on threads).
func (p *Plan) combineBuckets(i int, b *planBufs, vs *valueSpec, tag kx.Tag, dst []byte) error {
	c, t, lm := p.c, p.topo, &p.layers[i]
	node, d, es := c.cx.Node, t.Degrees[i], p.srcES(i, vs) // the sources' rows
	me := t.Digit(node, i)
	v := b.vec[i]
	own := v[lm.outSplit[me]*es : lm.outSplit[me+1]*es]
	builtin := vs.o.Builtin()
	var cb kernels.Combiner
	if !builtin {
		cb = kernels.NewCombiner(vs.d, vs.o, vs.width, dst)
	}
	nsub := len(lm.mergedBounds) - 1
	w := 1
	if builtin {
		w = min(keyset.WorkersFor(lm.outLen, c.cx.Threads), nsub)
	}
	// landed waits until every source's rows of the sub-ranges below s1 have landed.
	landed := func(s1 int) error {
		for g := 0; g < d; g++ {
			if g != me {
				if err := c.cx.AwaitPrefix(t.Member(node, i, g), tag, lm.outBounds[g][s1]*es); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if p.smallDown(i, es) { // all of it at once: one wait a source, not one a sub-range
		if err := landed(nsub); err != nil {
			return err
		}
	}
	for s0 := 0; s0 < nsub; {
		s1 := min(nsub, s0+w)
		if w == 1 {
			s1 = p.subGroupEnd(i, s0, vs.es)
		}
		if err := landed(s1); err != nil {
			return err
		}
		if w == 1 {
			p.combineSub(i, s0, s1, b, own, dst, vs, &cb)
		} else {
			p.combineSubs(i, s0, s1, b, own, dst, vs)
		}
		s0 = s1
	}
	return nil
}

// combineSubs combines sub-ranges s0..s1-1 of layer i, one a worker. A function of its own so
// that combineBuckets' loop variables stay on the stack: a closure that captures one it
// changes moves it to the heap, an allocation a call even where no worker runs.
func (p *Plan) combineSubs(i, s0, s1 int, b *planBufs, own, dst []byte, vs *valueSpec) {
	keyset.Parallel(s1-s0, func(k int) { p.combineSub(i, s0+k, s0+k+1, b, own, dst, vs, nil) })
}

// subGroupBytes bounds the merged rows one combineSub call covers on one thread: sub-ranges
// exist so that a large layer is combined a cache-sized piece at a time while the rest streams
// in, but each costs a kernel call per source and per member (scatter, gather), which for a
// small step's few hundred rows split in 8 or 16 sub-ranges was most of its CPU
// (docs/measurements.md, "Small steps: sub-ranges grouped").
var subGroupBytes = 32 << 10 // a variable so that tests can group a few small sub-ranges

// subGroupEnd is one past the last sub-range of layer i that joins s0's group: consecutive
// sub-ranges while their merged rows stay within subGroupBytes, and s0's at least.
func (p *Plan) subGroupEnd(i, s0, es int) int {
	mb := p.layers[i].mergedBounds
	s1 := s0 + 1
	for s1 < len(mb)-1 && (mb[s1+1]-mb[s0])*es <= subGroupBytes {
		s1++
	}
	return s1
}

// smallDown says whether what layer i's down phase receives is small enough (smallDownBytes)
// to wait for whole before combining any of it. Combining sub-range by sub-range as the
// messages land overlaps the two, but every wait that blocks costs a wake (30-45 µs one way
// here, tests/bench/pingpong.c), which small messages do not earn back (docs/measurements.md).
func (p *Plan) smallDown(i, es int) bool {
	lm := &p.layers[i]
	n := 0
	for _, m := range lm.outMaps {
		n += len(m)
	}
	return n*es <= smallDownBytes
}

// smallDownBytes is smallDown's bound (a variable so that tests can take the streaming path
// with small data).
var smallDownBytes = 2 << 20

// combineSub combines every source's rows of sub-ranges [s0, s1) into dst, in source order; a
// built-in op starts the sub-ranges from their identity, a user op folds through cb. A row
// belongs to one sub-range, so combining several at once gives every row the same sequence of
// operations as one at a time: results are bitwise the same.
func (p *Plan) combineSub(i, s0, s1 int, b *planBufs, own, dst []byte, vs *valueSpec, cb *kernels.Combiner) {
	lm := &p.layers[i]
	me := p.topo.Digit(p.c.cx.Node, i)
	es, ses := vs.es, p.srcES(i, vs) // dst's rows, the sources' rows
	user := cb != nil && cb.User()
	lo, hi := lm.mergedBounds[s0], lm.mergedBounds[s1]
	fresh := hi // RSum's floats start rows [fresh, hi) as they land: no Identity pass first
	if ses != es {
		fresh = lo
	} else if !user {
		kernels.Identity(vs.d, vs.o, dst[lo*es:hi*es])
	}
	for g := range lm.outMaps {
		src := own
		if g != me {
			src = b.slot[i][g]
		}
		a, e := lm.outBounds[g][s0], lm.outBounds[g][s1]
		switch {
		case user:
			cb.Scatter(src[a*ses:e*ses], lm.outMaps[g][a:e])
		case ses != es: // RSum's floats, each converted exactly as it is added
			fresh = kernels.FromScatterCombineFresh(vs.d, dst, src[a*ses:e*ses], lm.outMaps[g][a:e], vs.width, fresh)
		default:
			kernels.ScatterCombine(vs.d, vs.o, dst, src[a*ses:e*ses], lm.outMaps[g][a:e], vs.width)
		}
	}
	if fresh < hi {
		kernels.Identity(vs.d, vs.o, dst[fresh*es:hi*es])
	}
	if !p.fusedUp || !vs.o.Builtin() { // a user op's rows are final only at the end
		return
	}
	// The sub-range is final: gather every member's answers from it while it is in cache, into
	// the rows of the member's slot just combined (its up message) and, for this rank, into its
	// own rows of the layer above. RSum rounds the sub-range first, in place: its floats then
	// sit at the front of its span, row j at lo*es + (j-lo)*fs, which src below addresses by
	// the absolute row j; the answers go up as floats (upSpec).
	src, uvs := dst, vs
	if vs.acc {
		uvs = vs.upSpec()
		fs := uvs.es
		kernels.Round(vs.d, dst[lo*es:lo*es+(hi-lo)*fs], dst[lo*es:hi*es])
		src = dst[lo*(es-fs) : lo*(es-fs)+hi*fs]
	}
	ues := uvs.es
	for g := range lm.outMaps {
		a, e := lm.outBounds[g][s0], lm.outBounds[g][s1]
		out := b.slot[i][g]
		if g == me {
			out = b.above[i][lm.inSplit[me]*ues:]
		}
		kernels.Gather(vs.d, uvs.o, out[a*ues:e*ues], src, lm.outMaps[g][a:e], vs.width)
	}
}

// srcES is the bytes per row that layer i's down phase sends and combines from. An RSum's
// packed layer 0 sends the caller's floats: each of its rows is one caller position, a single
// contribution, folded exactly into the accumulators where it is combined (FromScatterCombine).
// So layer 0 costs RSum no more bytes than Sum; deeper layers carry accumulators.
func (p *Plan) srcES(i int, vs *valueSpec) int {
	if vs.acc && p.packed && i == 0 {
		return vs.width * vs.d.Size()
	}
	return vs.es
}

// canFuseUp says whether reduce may gather layer 0's up messages as it combines layer 0: the
// plan has that one layer, in = out on every member (the in maps are the out maps, so a
// member's answers go to the rows it sent) and the bottom is the layer's merged vector.
func (p *Plan) canFuseUp() bool {
	if !p.packed || len(p.layers) != 1 || !p.bottomIdentity {
		return false
	}
	lm := &p.layers[0]
	if !slices.Equal(lm.inSplit, lm.outSplit) || lm.inLen != lm.outLen {
		return false
	}
	for g := range lm.outMaps {
		if len(lm.inMaps[g]) != len(lm.outMaps[g]) || len(lm.inMaps[g]) > 0 && &lm.inMaps[g][0] != &lm.outMaps[g][0] {
			return false
		}
	}
	return true
}

// downSegment is how many bytes of the merged vector a down layer combines at a time.
const downSegment = 256 << 10

// segmentEnd is how many leading rows of the increasing map m land below row end.
func segmentEnd(m []int32, end int) int {
	n, _ := slices.BinarySearch(m, int32(end))
	return n
}

// up maps the bottom in keys onto the reduced out values v, then climbs the layers: each node
// gathers for every member the values of the keys that member asked for and sends them, while
// the members' answers land in place in the in-vector of the layer above. The last step
// gathers into inVals in the caller's order. The up messages' places must have been posted.
//
// gathered says that layer 0's up messages and own answers were gathered already, by the down
// phase as it combined (combineSub, canFuseUp).
//
// An RSum's bottom accumulators v are rounded to floats here, in place, once: from here on
// the values are the caller's floats (upSpec).
func (p *Plan) up(seq uint64, b *planBufs, v, inVals []byte, vs *valueSpec, gathered bool) error {
	if vs.acc && !gathered { // gathered: combineSub rounded every sub-range
		n := len(v) / vs.es * vs.width
		kernels.Round(vs.d, v[:n*vs.d.Size()], v)
		v = v[:n*vs.d.Size()]
	}
	vs = vs.upSpec()
	c, t, es := p.c, p.topo, vs.es
	node := c.cx.Node
	vin := v
	if !p.bottomIdentity {
		vin = b.vin[:len(p.bottom)*es] // a prefix when the up phase's values are smaller (RSum)
		p.gather(vin, v, p.bottom, vs)
	}
	for i := len(p.layers) - 1; i >= 0; i-- {
		lm := &p.layers[i]
		d := t.Degrees[i]
		me := t.Digit(node, i)
		tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseUp}
		c.rec.Step(seq, stepGather, i) // the timeline (timeline.go)
		sg := c.cx.Sends()
		for g := 0; g < d; g++ {
			if g == me {
				continue
			}
			stage := b.slot[i][g][:len(lm.inMaps[g])*es]
			if !gathered || i != 0 {
				p.gather(stage, vin, lm.inMaps[g], vs)
			}
			sg.Send(t.Member(node, i, g), tag, stage)
		}
		above := b.above[i]
		if !gathered || i != 0 {
			p.gather(above[lm.inSplit[me]*es:lm.inSplit[me+1]*es], vin, lm.inMaps[me], vs)
		}
		var rerr error
		for g := 0; g < d && rerr == nil; g++ {
			if g != me {
				_, rerr = c.cx.Await(t.Member(node, i, g), tag)
			}
		}
		if err := sg.Wait(); rerr == nil {
			rerr = err
		}
		if rerr != nil {
			return rerr
		}
		vin = above
	}
	if p.packed { // the answers stream out of the layer-0 buckets
		p.gather(inVals, vin, p.inRow, vs)
	} else {
		p.gather(inVals, vin, p.inPos, vs)
	}
	return nil
}

// The kernels of one reduce, each split over the comm's worker threads by ranges of its output,
// so that every element is computed by the same operations in the same order whatever the
// number of threads: the results are bitwise the same.

// fillLayer0 fills v, the rank's values in sorted key order, from the caller's out values: a gather of
// each key's first contribution (streaming writes, parallel by key range), then the repeats of
// an index folded in in caller order. A user op goes through its Combiner.
func (p *Plan) fillLayer0(b *planBufs, outVals []byte, vs *valueSpec) {
	v := b.vec[0]
	if p.packed {
		p.fillLayer0Packed(v, outVals, vs)
		return
	}
	if !vs.o.Builtin() || p.outFirst == nil {
		vs.intoAcc(v, outVals, p.outPos)
		return
	}
	if vs.acc {
		p.parallel(len(p.outFirst), func(lo, hi int) {
			kernels.FromGather(vs.d, v[lo*vs.es:hi*vs.es], outVals, p.outFirst[lo:hi], vs.width)
		})
	} else {
		p.gather(v, outVals, p.outFirst, vs)
	}
	if len(p.outRest) > 0 {
		rest := b.rest // b, not p.vals: a request issued later may have carved p.vals anew
		if vs.acc {    // the repeats as floats (smaller than their accumulators), each converted as it is added
			fvs := vs.upSpec()
			rest = rest[:len(p.outRest)*fvs.es]
			kernels.Gather(vs.d, fvs.o, rest, outVals, p.outRest, vs.width)
			kernels.FromScatterCombine(vs.d, v, rest, p.outRestPos, vs.width)
			return
		}
		kernels.Gather(vs.d, vs.o, rest, outVals, p.outRest, vs.width)
		kernels.ScatterCombine(vs.d, vs.o, v, rest, p.outRestPos, vs.width)
	}
}

// parallel runs f over ranges of n rows with the comm's worker threads (each row by one
// worker, so the bits do not depend on threads).
func (p *Plan) parallel(n int, f func(lo, hi int)) {
	if keyset.WorkersFor(n, p.c.cx.Threads) == 1 {
		f(0, n)
		return
	}
	keyset.ParallelRanges(n, p.c.cx.Threads, f)
}

// fillLayer0Packed fills the layer-0 bucket ordered layer-0 vector v of a packed plan: a stable
// partition of the caller's values by row (streaming: a few dozen write heads). Every caller
// position is a row of its own, so nothing is combined here, whatever the op.
func (p *Plan) fillLayer0Packed(v, outVals []byte, vs *valueSpec) {
	es := p.srcES(0, vs)                                       // RSum: the caller's floats, as they are
	if keyset.WorkersFor(len(p.outDst), p.c.cx.Threads) == 1 { // no closure to allocate
		kernels.Scatter(v, outVals, p.outDst, es)
		return
	}
	keyset.ParallelRanges(len(p.outDst), p.c.cx.Threads, func(lo, hi int) {
		kernels.Scatter(v, outVals[lo*es:hi*es], p.outDst[lo:hi], es)
	})
}

// gather is Gather split by ranges of dst.
func (p *Plan) gather(dst, src []byte, idx []int32, vs *valueSpec) {
	es := vs.es
	if keyset.WorkersFor(len(idx), p.c.cx.Threads) == 1 { // no closure to allocate
		kernels.Gather(vs.d, vs.o, dst, src, idx, vs.width)
		return
	}
	keyset.ParallelRanges(len(idx), p.c.cx.Threads, func(lo, hi int) {
		kernels.Gather(vs.d, vs.o, dst[lo*es:hi*es], src, idx[lo:hi], vs.width)
	})
}

// identity fills dst with the op's identity, split by ranges.
func (p *Plan) identity(dst []byte, vs *valueSpec) {
	es := vs.es
	if keyset.WorkersFor(len(dst)/es, p.c.cx.Threads) == 1 {
		kernels.Identity(vs.d, vs.o, dst)
		return
	}
	keyset.ParallelRanges(len(dst)/es, p.c.cx.Threads, func(lo, hi int) {
		kernels.Identity(vs.d, vs.o, dst[lo*es:hi*es])
	})
}

// scatterMonotone is ScatterCombine for a strictly increasing idx (a merge map), split by
// ranges of dst: the rows of src that land in a range are a contiguous run of src.
func (p *Plan) scatterMonotone(dst, src []byte, idx []int32, vs *valueSpec) {
	es := vs.es
	w := keyset.WorkersFor(len(idx), p.c.cx.Threads)
	if w == 1 {
		kernels.ScatterCombine(vs.d, vs.o, dst, src, idx, vs.width)
		return
	}
	first, span := int(idx[0]), int(idx[len(idx)-1])+1-int(idx[0]) // the rows idx touches
	parts := keyset.Split(span, w)
	keyset.Parallel(w, func(t int) {
		lo, _ := slices.BinarySearch(idx, int32(first+parts[t]))
		hi, _ := slices.BinarySearch(idx, int32(first+parts[t+1]))
		kernels.ScatterCombine(vs.d, vs.o, dst, src[lo*es:hi*es], idx[lo:hi], vs.width)
	})
}
