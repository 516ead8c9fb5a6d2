package core

import (
	"math"
	"slices"
)

// DefaultAlpha is the power-law exponent degrees=auto assumes. Prop. 4.1's density curve
// depends only weakly on it (paper Fig. 4), and the data does not reveal it cheaply.
const DefaultAlpha = 1.0

// values travelling with config (config_reduce), or nil for a plain config.
type valueSpec struct {
	d     Dtype
	o     Op
	width int
	es    int // bytes per index: width * element size
}

// Config routes the index sets down the butterfly and keeps the maps for later reduces.
func (c *Comm) Config(outIdx, inIdx []int64) (*Plan, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := checkIndices("out_idx", outIdx); err != nil {
		return nil, c.Reject(err)
	}
	if err := checkIndices("in_idx", inIdx); err != nil {
		return nil, c.Reject(err)
	}
	if err := checkConfigRoom(len(outIdx), len(inIdx), 0); err != nil {
		return nil, c.Reject(err)
	}
	p := &Plan{c: c, id: uint32(c.seq), nOut: len(outIdx), nIn: len(inIdx)}
	err := c.collective(Fingerprint{Kind: KindConfig, Plan: p.id}, func(seq uint64) error {
		_, err := p.configure(seq, outIdx, inIdx, nil, nil, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// ConfigReduce configures and reduces in one pass down and one up: indices and values travel
// together (mini-batches whose indices change every step). The plan is returned when keep.
func (c *Comm) ConfigReduce(outIdx []int64, outVals []byte, inIdx []int64, inVals []byte,
	d Dtype, o Op, width int, keep bool) (*Plan, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	err := checkIndices("out_idx", outIdx)
	if err == nil {
		err = checkIndices("in_idx", inIdx)
	}
	if err == nil {
		err = checkReduceArgs(d, o, width)
	}
	if err == nil {
		err = checkValues("out_vals", outVals, len(outIdx), d, width)
	}
	if err == nil {
		err = checkValues("in_vals", inVals, len(inIdx), d, width)
	}
	if err == nil {
		err = checkConfigRoom(len(outIdx), len(inIdx), width*d.Size())
	}
	if err != nil {
		return nil, c.Reject(err)
	}
	p := &Plan{c: c, id: uint32(c.seq), nOut: len(outIdx), nIn: len(inIdx)}
	vs := &valueSpec{d: d, o: o, width: width, es: width * d.Size()}
	fp := Fingerprint{Kind: KindConfigReduce, Dtype: uint8(d), Op: uint16(o), Width: int32(width), Plan: p.id}
	err = c.collective(fp, func(seq uint64) error {
		v, err := p.configure(seq, outIdx, inIdx, outVals, vs, keep)
		if err != nil {
			return err
		}
		b, err := p.bufs(vs.es, "width")
		if err != nil {
			return err
		}
		p.expectAll(seq, b, vs.es, false)
		return p.up(seq, b, v, inVals, vs, false)
	})
	if err != nil || !keep {
		return nil, err
	}
	return p, nil
}

// configure runs the configuration pass for p. With vs it also carries and reduces the values
// and returns the fully reduced values of the bottom out keys. pack puts the top in bucket
// order (packtop.go): it costs config a pass and 4 bytes a key on the wire at layer 0 and
// pays back on every reduce, so a one-shot config_reduce whose plan is not kept skips it.
func (p *Plan) configure(seq uint64, outIdx, inIdx []int64, outVals []byte, vs *valueSpec, pack bool) ([]byte, error) {
	c := p.c
	threads := c.threads()
	so := sortUniqueInto(outIdx, threads, &c.sortBuf)
	outKeys, outPos := so.keys, so.pos
	inKeys, inPos := outKeys, outPos
	same := sameIndices(inIdx, outIdx)
	si := so
	if !same { // in = out is common (PageRank, model sync): sort once
		si = sortUniqueInto(inIdx, threads, &c.sortBuf)
		inKeys, inPos = si.keys, si.pos
	}
	p.outPos, p.inPos, p.out0, p.in0 = outPos, inPos, len(outKeys), len(inKeys)
	p.outFirst, p.outRest = so.first, so.rest
	p.outRestPos = make([]int32, len(so.rest))
	for i, q := range so.rest {
		p.outRestPos[i] = outPos[q]
	}

	if err := c.linksForConfig(seq); err != nil { // the comm's first config, when needed
		return nil, err
	}
	degrees := c.degrees
	if degrees == nil && vs != nil && c.streamDegrees != nil {
		// config_reduce serves mini-batch streams: plan once, then keep the degrees rather than
		// pay an agreement round every step. Every rank has the same call history, so all agree.
		degrees = c.streamDegrees
	}
	if degrees == nil {
		var err error
		es := 4 // bytes per value of the reduces to come: an f32 guess for a plain config
		if vs != nil {
			es = vs.es
		}
		if degrees, err = c.autoDegrees(seq, outIdx, len(outKeys), same, es); err != nil {
			return nil, err
		}
		if vs != nil {
			c.streamDegrees = degrees
		}
	}
	topo, err := NewTopology(degrees, c.nodes())
	if err != nil {
		return nil, err
	}
	p.topo = topo

	var v []byte
	if vs != nil {
		v = make([]byte, len(outKeys)*vs.es)
		cb := newCombiner(vs.d, vs.o, vs.width, v)
		cb.scatter(outVals, outPos)
	}
	var outRowKey, inRowKey []int32
	if pack && topo.Layers() > 0 {
		outRowKey, inRowKey = p.packRows(outIdx, inIdx, so, si, same)
	}
	p.layers = make([]layerMap, topo.Layers())
	for i := range p.layers {
		outKeys, inKeys, v, err = p.configLayer(seq, i, outKeys, inKeys, v, vs, outRowKey, inRowKey)
		if err != nil {
			return nil, err
		}
		outRowKey, inRowKey = nil, nil
	}
	p.bottomIdentity = len(inKeys) == len(outKeys) &&
		(len(inKeys) == 0 || &inKeys[0] == &outKeys[0] || slices.Equal(inKeys, outKeys))
	if !p.bottomIdentity { // in = out needs no bottom map
		p.bottom = lookup(inKeys, outKeys)
	}
	p.fusedUp = p.canFuseUp()
	c.statsPlan(p) // stats.go: degrees and per-layer key counts
	return v, nil
}

// packRows puts the plan's layer-0 vectors in top-bucket order (packTop, packtop.go) and keeps the rows
// reduce streams the caller's values into and the answers out of. It returns the sorted key
// of every row (out, in), whose slices the layer-0 config messages carry as perms. The sorted-order
// maps are dropped: a packed plan's reduce does not use them.
func (p *Plan) packRows(outIdx, inIdx []int64, so, si sorted, same bool) (outRowKey, inRowKey []int32) {
	d0, threads := p.topo.Degrees[0], p.c.threads()
	outRowKey, p.outDst = packTop(outIdx, so.keys, so.pos, so.repeat, d0, threads, &p.c.rowKeyBuf[0])
	p.outAll = answerRows(p.outDst, so.pos, so.first, so.repeat)
	p.outRestRow = make([]int32, len(so.rest))
	for i, q := range so.rest {
		p.outRestRow[i] = p.outAll[q]
	}
	inRowKey, p.inRow = outRowKey, p.outAll
	if !same {
		var inDst []int32
		inRowKey, inDst = packTop(inIdx, si.keys, si.pos, si.repeat, d0, threads, &p.c.rowKeyBuf[1])
		p.inRow = answerRows(inDst, si.pos, si.first, si.repeat)
	}
	p.packed = true
	p.outPos, p.inPos, p.outFirst, p.outRest, p.outRestPos = nil, nil, nil, nil, nil
	return outRowKey, inRowKey
}

// configLayer splits this node's sorted keys among its layer-i group, sends each member its
// slice (with values when vs != nil), and merges what the members sent into the keys (and
// values) this node holds below the layer.
//
// At layer 0 of a packed plan outRowKey and inRowKey are this node's rows of its sorted keys in
// top-bucket order: each message carries its slices' rows (perms), and the maps kept are of
// the senders' bucket-ordered rows, with the sub-range bounds that down combines by.
func (p *Plan) configLayer(seq uint64, i int, out, in []uint64, v []byte, vs *valueSpec, outRowKey, inRowKey []int32) ([]uint64, []uint64, []byte, error) {
	c, t := p.c, p.topo
	node, d := c.node(), t.Degrees[i]
	me := t.Digit(node, i)
	lm := &p.layers[i]
	withPerm := p.packed && i == 0 // layer 0 of a packed plan: messages carry perms
	lm.outSplit = SplitPoints(out, t.Degrees, i)
	lm.inSplit = SplitPoints(in, t.Degrees, i)
	phase := PhaseConfig
	es := 0
	if vs != nil {
		phase, es = PhaseConfigDown, vs.es
	}
	tag := Tag{Seq: seq, Layer: uint8(i), Phase: phase}

	same := len(in) == len(out) && (len(in) == 0 || &in[0] == &out[0]) // in = out, shared
	sg := c.sends()
	for g := 0; g < d; g++ {
		if g == me {
			continue
		}
		oa, ob := lm.outSplit[g], lm.outSplit[g+1]
		ia, ib := lm.inSplit[g], lm.inSplit[g+1]
		var vals []byte
		if vs != nil {
			vals = v[oa*es : ob*es]
		}
		to := t.Member(node, i, g)
		keys := ob - oa
		if !same {
			keys += ib - ia
		}
		var outPerm, inPerm []int32
		if withPerm {
			outPerm, inPerm = outRowKey[oa:ob], inRowKey[ia:ib]
		}
		msg := buildConfigMsg(out[oa:ob], in[ia:ib], same, withPerm, outPerm, inPerm, vals, c.compressTo(to, keys))
		c.noteConfigMsg(tag, msg.msgFigures, true)
		sg.send(to, tag, msg.bufs...)
	}

	outLists := make([][]uint64, d)
	inLists := make([][]uint64, d)
	valLists := make([][]byte, d)
	outPerms := make([][]int32, d)
	inPerms := make([][]int32, d)
	payloads := make([][]byte, 0, d) // released once merged
	defer func() {
		for _, b := range payloads {
			c.release(b)
		}
	}()
	var rerr error
	for g := 0; g < d && rerr == nil; g++ {
		if g == me {
			oa, ob := lm.outSplit[g], lm.outSplit[g+1]
			outLists[g] = out[oa:ob]
			inLists[g] = in[lm.inSplit[g]:lm.inSplit[g+1]]
			if vs != nil {
				valLists[g] = v[oa*es : ob*es]
			}
			if withPerm {
				outPerms[g] = outRowKey[oa:ob]
				inPerms[g] = outPerms[g]
				if !same {
					inPerms[g] = inRowKey[lm.inSplit[g]:lm.inSplit[g+1]]
				}
			}
			continue
		}
		from := t.Member(node, i, g)
		b, err := c.t.Recv(from, tag)
		if err != nil {
			rerr = err
			break
		}
		payloads = append(payloads, b)
		m, fig, err := parseConfigMsg(b, es, from, withPerm)
		if err != nil {
			rerr = err
			break
		}
		outLists[g], inLists[g], valLists[g], outPerms[g], inPerms[g] = m.out, m.in, m.vals, m.outPerm, m.inPerm
		c.noteConfigMsg(tag, fig, false)
	}
	if err := sg.wait(); rerr == nil {
		rerr = err
	}
	if rerr != nil {
		return nil, nil, nil, rerr
	}

	newOut, outMaps := treeMerge(outLists)
	newIn, inMaps := newOut, outMaps
	sameIn := sameLists(inLists, outLists)
	if !sameIn {
		newIn, inMaps = treeMerge(inLists)
	}
	var nv []byte
	if vs != nil { // the values travel in sorted order at config: combine with the sorted maps
		nv = make([]byte, len(newOut)*es)
		cb := newCombiner(vs.d, vs.o, vs.width, nv)
		for g := 0; g < d; g++ { // source order, never arrival order: bitwise reproducible
			cb.scatter(valLists[g], outMaps[g])
		}
	}
	if withPerm {
		b := subBits(d)
		lm.outBounds = make([][]int, d)
		for g := 0; g < d; g++ {
			from := t.Member(node, i, g)
			lm.outBounds[g] = bucketBounds(outLists[g], d, b, me<<b, 1<<b)
			var err error
			if outMaps[g], err = packedMap(outMaps[g], outPerms[g], from); err == nil && !sameIn {
				inMaps[g], err = packedMap(inMaps[g], inPerms[g], from)
			}
			if err != nil {
				return nil, nil, nil, err
			}
		}
		lm.mergedBounds = bucketBounds(newOut, d, b, me<<b, 1<<b)
	}
	lm.outMaps, lm.inMaps, lm.outLen, lm.inLen = outMaps, inMaps, len(newOut), len(newIn)
	return newOut, newIn, nv, nil
}

// checkConfigRoom refuses a config whose scratch cannot be had: per index about 16 bytes of
// sort scratch, 4 of position map and 8 of key, then the keys and maps of the layers below (as
// many again), plus for config_reduce es bytes of value per index at the top and per layer.
func checkConfigRoom(nOut, nIn, es int) error {
	n := uint64(nOut) + uint64(nIn)
	need := addSize(mulSize(n, 56, 1), mulSize(n, uint64(es), 4))
	arg := "out_idx/in_idx"
	if es > 0 && mulSize(n, uint64(es), 4) > mulSize(n, 56, 1) {
		arg = "width"
	}
	return checkRoom(need, arg, "config's scratch")
}

// sameIndices reports whether two index lists are the same list: the same memory, or equal
// content (checked only when the lengths agree, and stopping at the first difference).
func sameIndices(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b)
}

// sameLists reports whether every in list is its out list (in = out on every member).
func sameLists(in, out [][]uint64) bool {
	for g := range in {
		if len(in[g]) != len(out[g]) || len(in[g]) > 0 && &in[g][0] != &out[g][0] {
			return false
		}
	}
	return true
}

// autoDegrees agrees with every rank on the feature count, the mean out density and whether
// in = out everywhere, then asks the planner (planFor): the cost model on the measured links,
// or Prop. 4.1's rule with min_packet. Every rank computes the same answer from the same agreed
// numbers.
func (c *Comm) autoDegrees(seq uint64, outIdx []int64, nUnique int, same bool, es int) ([]int, error) {
	m := c.nodes()
	if m == 1 {
		return nil, nil
	}
	var maxIdx int64 = -1
	for _, x := range outIdx {
		maxIdx = max(maxIdx, x)
	}
	all, err := c.allgatherSmall(seq, []uint64{uint64(nUnique), uint64(maxIdx + 1), uint64(b2i(same))})
	if err != nil {
		return nil, err
	}
	var total, n uint64
	for r := 0; r < m; r++ {
		total += all[3*r]
		n = max(n, all[3*r+1])
		same = same && all[3*r+2] == 1
	}
	if n == 0 || total == 0 {
		return []int{m}, nil
	}
	density := min(float64(total)/float64(m)/float64(n), 1)
	// Plans are memoised by feature count and density to two significant digits: the planner
	// costs milliseconds, and repeated configs of similar data must not pay it every time.
	key := planKey{n: n, density: math.Float64bits(roundSig(density, 2)), same: same, es: es}
	if ds, ok := c.planCache[key]; ok {
		return ds, nil
	}
	ds, err := c.planFor(int64(n), density, m, same, es) // costmodel_plan.go
	if err != nil {
		ds = []int{m} // the planner refuses only degenerate inputs; direct always works
	}
	if c.planCache == nil || len(c.planCache) > 256 {
		c.planCache = map[planKey][]int{}
	}
	c.planCache[key] = ds
	return ds, nil
}

type planKey struct {
	n       uint64
	density uint64
	same    bool
	es      int
}

// roundSig rounds x > 0 to d significant digits.
func roundSig(x float64, d int) float64 {
	if x <= 0 {
		return x
	}
	p := math.Pow(10, float64(d)-math.Ceil(math.Log10(x)))
	return math.Round(x*p) / p
}
