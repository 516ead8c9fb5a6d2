package core

import (
	"kylix/core/kernels"
	"kylix/core/keyset"
	"kylix/core/kx"
	"kylix/core/memroom"
	"kylix/core/planning"
	"slices"
)

// values travelling with config (config_reduce), or nil for a plain config.
type valueSpec struct {
	d     kx.Dtype
	o     kx.Op
	width int
	es    int // bytes per index inside the butterfly: width * kernels.ElemBytes
	// acc says the values are combined as KYLIX_RSUM accumulators (24 B a value for F64,
	// 16 B for F32), converted exactly from the caller's floats (never summed as floats
	// first). They travel down in that form, except reduce's packed layer 0, whose rows are
	// single contributions and go as floats (Plan.srcES). Only the down phase combines, so
	// the bottom rounds them once and the up phase carries the caller's floats (upSpec): the
	// accumulator form lives only where values are combined.
	acc bool
	up  *valueSpec // an RSum's upSpec, made with it so that a reduce allocates none
}

func newValueSpec(d kx.Dtype, o kx.Op, width int) *valueSpec {
	vs := &valueSpec{d: d, o: o, width: width, es: width * kernels.ElemBytes(d, o), acc: o == kx.RSum}
	if vs.acc {
		vs.up = &valueSpec{d: d, o: kx.Sum, width: width, es: width * d.Size()}
	}
	return vs
}

// upSpec is the spec of the up phase's values: the caller's own. An RSum's bottom values are
// final once rounded, so they climb as plain floats; a gather of a key nobody sent gives +0,
// Sum's identity and the empty sum's rounding.
func (vs *valueSpec) upSpec() *valueSpec {
	if !vs.acc {
		return vs
	}
	return vs.up
}

// intoAcc folds the caller's values into the fresh vector v: row outPos[p] gets caller row p,
// through the op's Combiner, or converted exactly into accumulators for RSum.
func (vs *valueSpec) intoAcc(v, outVals []byte, outPos []int32) {
	if vs.acc {
		kernels.Identity(vs.d, vs.o, v)
		kernels.FromScatterCombine(vs.d, v, outVals, outPos, vs.width)
		return
	}
	cb := kernels.NewCombiner(vs.d, vs.o, vs.width, v)
	cb.Scatter(outVals, outPos)
}

// Config routes the index sets down the butterfly and keeps the maps for later reduces.
func (c *Comm) Config(outIdx, inIdx []int64) (*Plan, error) {
	if err := c.st.usable(); err != nil {
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
	err := c.collective(kx.Fingerprint{Kind: kx.KindConfig, Plan: p.id}, func(seq uint64) error {
		_, err := p.configure(seq, outIdx, inIdx, nil, nil)
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
	d kx.Dtype, o kx.Op, width int, keep bool) (*Plan, error) {
	if err := c.st.usable(); err != nil {
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
		err = checkConfigRoom(len(outIdx), len(inIdx), width*kernels.ElemBytes(d, o))
	}
	if err != nil {
		return nil, c.Reject(err)
	}
	p := &Plan{c: c, id: uint32(c.seq), nOut: len(outIdx), nIn: len(inIdx)}
	vs := newValueSpec(d, o, width)
	fp := kx.Fingerprint{Kind: kx.KindConfigReduce, Dtype: uint8(d), Op: uint16(o), Width: int32(width), Plan: p.id}
	err = c.collective(fp, func(seq uint64) error {
		v, err := p.configure(seq, outIdx, inIdx, outVals, vs)
		if err != nil {
			return err
		}
		b, err := p.bufs(vs.es, "width")
		if err != nil {
			return err
		}
		p.expectAll(seq, b, vs, false)
		return p.up(seq, b, v, inVals, vs, false)
	})
	if err != nil || !keep {
		return nil, err
	}
	return p, nil
}

// configure runs the configuration pass for p. With vs it also carries and reduces the values
// and returns the fully reduced values of the bottom out keys. A plan with layers has its layer 0
// in bucket order (configurePacked); one node sorts its keys.
func (p *Plan) configure(seq uint64, outIdx, inIdx []int64, outVals []byte, vs *valueSpec) ([]byte, error) {
	// Replicas given different indices would make each other's results wrong in silence.
	// (The values are not compared: only what configures the plan.)
	if p.c.cx.Replication > 1 {
		digest := keyset.Hash(keyset.Digest(outIdx)) ^ keyset.Digest(inIdx)
		if err := p.c.v.CheckReplicas(seq, p.c.cx.FP, "index lists (out_idx or in_idx)", digest); err != nil {
			return nil, err
		}
	}
	c := p.c
	same := sameIndices(inIdx, outIdx)
	if c.cx.Nodes > 1 {
		return p.configurePacked(seq, outIdx, inIdx, outVals, vs, same)
	}
	threads := c.cx.Threads
	c.rec.Step(seq, stepSort, 0) // the timeline (timeline.go)
	so := keyset.SortUniqueInto(outIdx, threads, &c.layer0.Ent)
	outKeys, outPos := so.Keys, so.Pos
	inKeys, inPos := outKeys, outPos
	if !same { // in = out is common (PageRank, model sync): sort once
		si := keyset.SortUniqueInto(inIdx, threads, &c.layer0.Ent)
		inKeys, inPos = si.Keys, si.Pos
	}
	p.outPos, p.inPos, p.out0, p.in0 = outPos, inPos, len(outKeys), len(inKeys)
	p.outFirst, p.outRest = so.First, so.Rest
	p.outRestPos = make([]int32, len(so.Rest))
	for i, q := range so.Rest {
		p.outRestPos[i] = outPos[q]
	}
	if err := p.chooseTopology(seq, outIdx, func() int { return len(outKeys) }, same, vs); err != nil {
		return nil, err
	}
	var v []byte
	if vs != nil {
		v = make([]byte, len(outKeys)*vs.es)
		vs.intoAcc(v, outVals, outPos)
	}
	p.layers = make([]layerMap, p.topo.Layers())
	var err error
	for i := range p.layers {
		if outKeys, inKeys, v, err = p.configLayer(seq, i, outKeys, inKeys, v, vs); err != nil {
			return nil, err
		}
	}
	p.finish(outKeys, inKeys)
	return v, nil
}

// configurePacked is configure for a plan with layers and its layer 0 in bucket order: the rank
// partitions its indices by layer-0 bucket without sorting them (PackLayer0), and the layer-0 members
// sort what they receive (configTop); the layers below are configured as usual.
func (p *Plan) configurePacked(seq uint64, outIdx, inIdx []int64, outVals []byte, vs *valueSpec, same bool) ([]byte, error) {
	c := p.c
	threads := c.cx.Threads
	if err := p.chooseTopology(seq, outIdx, func() int { return keyset.EstimateUnique(outIdx, threads) }, same, vs); err != nil {
		return nil, err
	}
	d0 := p.topo.Degrees[0]
	c.rec.Step(seq, stepPartition, 0) // the timeline (timeline.go)
	out := keyset.PackLayer0(outIdx, d0, threads, &c.rowKeyBuf[0])
	in := out
	if !same {
		in = keyset.PackLayer0(inIdx, d0, threads, &c.rowKeyBuf[1])
	}
	pack := p.packLayer0(&out, &in, same) // links_compress.go: rows in set order where compressed
	notePack(c.rec, pack)                 // the timeline (timeline.go)
	p.packed = true
	p.outDst, p.inRow, p.out0, p.in0 = out.Dst, in.Dst, len(outIdx), len(inIdx)
	var v []byte
	if vs != nil { // every caller position is a row: its value moves, whatever the op
		v = make([]byte, len(outIdx)*vs.es)
		if vs.acc {
			kernels.FromScatter(vs.d, v, outVals, out.Dst, vs.width)
		} else {
			kernels.Scatter(v, outVals, out.Dst, vs.es)
		}
	}
	p.layers = make([]layerMap, p.topo.Layers())
	outKeys, inKeys, v, err := p.configTop(seq, out, in, same, v, vs, pack)
	for i := 1; i < len(p.layers) && err == nil; i++ {
		outKeys, inKeys, v, err = p.configLayer(seq, i, outKeys, inKeys, v, vs)
	}
	if err != nil {
		return nil, err
	}
	p.finish(outKeys, inKeys)
	return v, nil
}

// chooseTopology settles the plan's degrees: the comm's, a config_reduce stream's, or
// degrees=auto's from the agreed density (nUnique: this rank's distinct out indices, asked
// only then).
func (p *Plan) chooseTopology(seq uint64, outIdx []int64, nUnique func() int, same bool, vs *valueSpec) error {
	c := p.c
	l, err := c.plan.linksForConfig(seq) // the comm's first config, when needed
	noteLinks(c.rec, l)
	if err != nil {
		return err
	}
	degrees := c.plan.degrees
	if degrees == nil && vs != nil && c.plan.streamDegrees != nil {
		// config_reduce serves mini-batch streams: plan once, then keep the degrees rather than
		// pay an agreement round every step. Every rank has the same call history, so all agree.
		degrees = c.plan.streamDegrees
	}
	if degrees == nil {
		var err error
		es := 4 // bytes per value of the reduces to come: an f32 guess for a plain config
		if vs != nil {
			es = vs.es
		}
		if degrees, err = c.plan.autoDegrees(seq, outIdx, nUnique(), same, es); err != nil {
			return err
		}
		if vs != nil {
			c.plan.streamDegrees = degrees
		}
	}
	topo, err := planning.NewTopology(degrees, c.cx.Nodes)
	if err != nil {
		return err
	}
	p.topo = topo
	return nil
}

// finish completes a configured plan from its bottom keys: the bottom map (none when in = out),
// whether reduce may fuse the up gather, and the plan's statistics.
func (p *Plan) finish(outKeys, inKeys []uint64) {
	p.bottomIdentity = len(inKeys) == len(outKeys) &&
		(len(inKeys) == 0 || &inKeys[0] == &outKeys[0] || slices.Equal(inKeys, outKeys))
	if !p.bottomIdentity { // in = out needs no bottom map
		p.bottom = keyset.Lookup(inKeys, outKeys)
	}
	p.fusedUp = p.canFuseUp()
	notePlan(p.c.rec, p, p.c.cx.Node) // stats.go: degrees and per-layer key counts
}

// configTop is layer 0 of a packed plan: this rank sends each member its rows (keys as they
// are, and with vs the rows' values), and sorts the rows its senders sent into the merged keys
// it holds below the layer, with the map of every sender's rows (SortLayer0, layer0_sort.go) and the
// sub-range bounds down combines by.
func (p *Plan) configTop(seq uint64, out, in keyset.Layer0Rows, same bool, v []byte, vs *valueSpec, pack []bool) ([]uint64, []uint64, []byte, error) {
	c, t := p.c, p.topo
	d, threads := t.Degrees[0], c.cx.Threads
	node := c.cx.Node
	me := t.Digit(node, 0)
	lm := &p.layers[0]
	lm.outSplit, lm.inSplit = out.Split(d), in.Split(d)
	lists, done, err := p.exchangeConfig(seq, 0, out.Keys, in.Keys, same, v, vs, pack)
	defer done()
	if err != nil {
		return nil, nil, nil, err
	}
	c.rec.Step(seq, stepSort, 0) // the timeline (timeline.go)
	outLists := make([][]uint64, d)
	inLists := make([][]uint64, d)
	lm.outBounds = make([][]int, d)
	inBounds := lm.outBounds
	for g, m := range lists {
		outLists[g], inLists[g] = m.Out, m.In
	}
	sameIn := sameLists(inLists, outLists)
	if !sameIn {
		inBounds = make([][]int, d)
	}
	for g := 0; g < d && err == nil; g++ {
		from := t.Member(node, 0, g)
		if lm.outBounds[g], err = keyset.RowBounds(outLists[g], d, me, from); err == nil && !sameIn {
			inBounds[g], err = keyset.RowBounds(inLists[g], d, me, from)
		}
	}
	// With no layer below and in = out, nothing needs the merged keys sorted (no split points
	// below, no bottom map), so they go in order of first appearance (appearanceOrder): the
	// reduce then combines and gathers in stream (docs/measurements.md).
	appearance := len(p.layers) == 1 && sameIn
	var newOut, newIn []uint64
	var outMaps, inMaps [][]int32
	if err == nil {
		newOut, outMaps, lm.mergedBounds, err = keyset.SortLayer0(outLists, lm.outBounds, d, me, threads, appearance, &c.layer0)
	}
	newIn, inMaps = newOut, outMaps
	if err == nil && !sameIn {
		newIn, inMaps, _, err = keyset.SortLayer0(inLists, inBounds, d, me, threads, false, &c.layer0)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	nv := combineConfigValues(lists, outMaps, len(newOut), vs)
	lm.outMaps, lm.inMaps, lm.outLen, lm.inLen = outMaps, inMaps, len(newOut), len(newIn)
	return newOut, newIn, nv, nil
}

// combineConfigValues combines config_reduce's values as they came (lists[g].vals, mapped by
// maps[g]) into a new vector of n merged keys, in source order, never arrival order: bitwise
// reproducible. nil for a plain config.
func combineConfigValues(lists []keyset.ConfigLists, maps [][]int32, n int, vs *valueSpec) []byte {
	if vs == nil {
		return nil
	}
	nv := make([]byte, n*vs.es)
	cb := kernels.NewCombiner(vs.d, vs.o, vs.width, nv)
	for g, m := range lists {
		cb.Scatter(m.Vals, maps[g])
	}
	return nv
}

// exchangeConfig is one layer's exchange of config messages: member g gets out[outSplit[g]:...]
// and in[inSplit[g]:...] of the layer's splits (in ignored when same: the in keys are the out
// keys), with their values when vs != nil. It returns what every member sent, this node's own
// share as views; done releases the received payloads once the caller is through with them.
// Layer 0 of a packed plan sends rows (msgRows), compressed to the members marked in pack
// (packLayer0 put those rows in set order); the other layers decide message by message.
func (p *Plan) exchangeConfig(seq uint64, i int, out, in []uint64, same bool, v []byte, vs *valueSpec, pack []bool) ([]keyset.ConfigLists, func(), error) {
	c, t := p.c, p.topo
	node, d := c.cx.Node, t.Degrees[i]
	me := t.Digit(node, i)
	lm := &p.layers[i]
	rows := p.packed && i == 0
	phase := kx.PhaseConfig
	es := 0
	if vs != nil {
		phase, es = kx.PhaseConfigDown, vs.es
	}
	tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: phase}
	lists := make([]keyset.ConfigLists, d)
	slice := func(g int) keyset.ConfigLists {
		oa, ob := lm.outSplit[g], lm.outSplit[g+1]
		m := keyset.ConfigLists{Out: out[oa:ob], In: in[lm.inSplit[g]:lm.inSplit[g+1]]}
		if same {
			m.In = m.Out
		}
		if vs != nil {
			m.Vals = v[oa*es : ob*es]
		}
		return m
	}
	sg := c.cx.Sends()
	var serr error
	for g := 0; g < d && serr == nil; g++ {
		if g == me {
			continue
		}
		m := slice(g)
		to := t.Member(node, i, g)
		keys := len(m.Out)
		if !same {
			keys += len(m.In)
		}
		packed := pack != nil && pack[g]
		if !rows {
			packed = c.plan.compressTo(to, keys, false)
		}
		msg := keyset.BuildConfigMsg(m.Out, m.In, same, rows, m.Vals, packed)
		c.plan.noteConfigMsg(tag, msg.MsgFigures, true)
		sg.Sendv(to, tag, msg.Bufs)
	}
	payloads := make([][]byte, 0, d) // released once merged
	done := func() {
		for _, b := range payloads {
			c.cx.Release(b)
		}
	}
	rerr := serr
	for g := 0; g < d && rerr == nil; g++ {
		if g == me {
			lists[g] = slice(g)
			continue
		}
		from := t.Member(node, i, g)
		b, err := c.cx.Recv(from, tag)
		if err != nil {
			rerr = err
			break
		}
		payloads = append(payloads, b)
		rowsD0 := 0
		if rows {
			rowsD0 = d
		}
		m, fig, err := keyset.ParseConfigMsg(b, es, from, rowsD0)
		if err != nil {
			rerr = err
			break
		}
		lists[g] = m
		c.plan.noteConfigMsg(tag, fig, false)
	}
	if err := sg.Wait(); rerr == nil {
		rerr = err
	}
	return lists, done, rerr
}

// configLayer splits this node's sorted keys among its layer-i group, sends each member its
// slice (with values when vs != nil), and merges what the members sent into the keys (and
// values) this node holds below the layer.
func (p *Plan) configLayer(seq uint64, i int, out, in []uint64, v []byte, vs *valueSpec) ([]uint64, []uint64, []byte, error) {
	t := p.topo
	lm := &p.layers[i]
	p.c.rec.Step(seq, stepPartition, i) // the timeline (timeline.go)
	lm.outSplit = keyset.SplitPoints(out, t.Degrees, i)
	lm.inSplit = keyset.SplitPoints(in, t.Degrees, i)
	same := len(in) == len(out) && (len(in) == 0 || &in[0] == &out[0]) // in = out, shared
	lists, done, err := p.exchangeConfig(seq, i, out, in, same, v, vs, nil)
	defer done()
	if err != nil {
		return nil, nil, nil, err
	}
	outLists := make([][]uint64, len(lists))
	inLists := make([][]uint64, len(lists))
	for g, m := range lists {
		outLists[g], inLists[g] = m.Out, m.In
	}
	p.c.rec.Step(seq, stepMerge, i) // the timeline (timeline.go)
	newOut, outMaps := keyset.TreeMerge(outLists)
	newIn, inMaps := newOut, outMaps
	if !sameLists(inLists, outLists) {
		newIn, inMaps = keyset.TreeMerge(inLists)
	}
	nv := combineConfigValues(lists, outMaps, len(newOut), vs) // the values travel in sorted order
	lm.outMaps, lm.inMaps, lm.outLen, lm.inLen = outMaps, inMaps, len(newOut), len(newIn)
	return newOut, newIn, nv, nil
}

// checkConfigRoom refuses a config whose scratch cannot be had: per index about 16 bytes of
// sort scratch, 4 of position map and 8 of key, then the keys and maps of the layers below (as
// many again), plus for config_reduce es bytes of value per index at layer 0 and per layer.
func checkConfigRoom(nOut, nIn, es int) error {
	n := uint64(nOut) + uint64(nIn)
	need := memroom.Add(memroom.Mul(n, 56, 1), memroom.Mul(n, uint64(es), 4))
	arg := "out_idx/in_idx"
	if es > 0 && memroom.Mul(n, uint64(es), 4) > memroom.Mul(n, 56, 1) {
		arg = "width"
	}
	return memroom.Check(need, arg, "config's scratch")
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
