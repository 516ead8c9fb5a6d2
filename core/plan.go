package core

import (
	"kylix/core/kernels"
	"kylix/core/kx"
	"kylix/core/planning"
)

// Plan is a configured pair of index sets: the per-layer split points and position maps
// computed once by config, so every reduce is pure streaming (paper §III-A).
type Plan struct {
	c      *Comm
	id     uint32
	topo   planning.Topology
	nOut   int
	nIn    int
	outPos []int32 // caller's out position -> position in the rank's sorted unique out keys
	inPos  []int32 // caller's in position -> position in the rank's sorted unique in keys
	// outFirst[u] is the first caller position of unique out key u, outRest the caller
	// positions that repeat an earlier one (ascending): reduce gathers the out values into
	// key order (streaming writes, parallel by key range) and folds the repeats after.
	outFirst, outRest []int32
	outRestPos        []int32 // outPos of each outRest position
	out0              int     // rows of the rank's layer-0 out vector: unique out keys, or (packed) out positions
	in0               int
	layers            []layerMap
	bottom            []int32 // bottom in-key position -> bottom out-key position, -1 if nobody sent it
	// bottomIdentity: the bottom in keys are the bottom out keys (in = out), so the bottom
	// map is skipped and the reduced out values are the in values.
	bottomIdentity bool
	// packed: the plan has layers and keeps its layer-0 vector in layer-0 bucket order (layer0_pack.go),
	// every caller position a row. outDst[j] is the row caller out position j fills, inRow[j]
	// the row caller in position j reads its answer from.
	packed        bool
	fusedUp       bool // reduce gathers layer 0's up messages as it combines (canFuseUp)
	outDst, inRow []int32
	vals          *planBufs  // value buffers, sized by the first reduce (planbufs.go)
	spec          *valueSpec // the last reduce's (Plan.valueSpec)
	freed         bool
}

// layerMap is what config learned about one communication layer.
type layerMap struct {
	outSplit []int     // d+1 bounds: out keys above this layer sent to member g
	inSplit  []int     // likewise for in keys
	outMaps  [][]int32 // member g's out keys -> positions in the merged out keys below
	inMaps   [][]int32 // member g's in keys -> positions in the merged in keys below
	outLen   int       // merged out keys below this layer
	inLen    int
	// Layer 0 of a packed plan: the senders' rows come in layer-0 bucket order and the maps are of
	// those rows, random inside each sub-range (SortLayer0). outBounds[g] are sender g's rows per sub-range
	// and mergedBounds the merged out keys' (down combines sub-range by sub-range); nil on
	// the other layers, whose maps are increasing.
	outBounds    [][]int
	mergedBounds []int
}

// Degrees returns the plan's layer degrees (empty for one node).
func (p *Plan) Degrees() []int { return append([]int(nil), p.topo.Degrees...) }

// Free releases the plan; later use fails with CodeState. A request already issued on the
// plan still completes: while any collective is queued the maps are left to the garbage
// collector instead of being dropped under the executor's feet.
func (p *Plan) Free() {
	p.freed = true
	p.c.rec.NoteFreed(p.id)
	if p.c.ex.active() {
		return
	}
	p.layers, p.outPos, p.inPos, p.bottom, p.vals, p.outFirst, p.outRest, p.outRestPos = nil, nil, nil, nil, nil, nil, nil, nil
	p.outDst, p.inRow = nil, nil
}

func (p *Plan) usable() error {
	if p.freed {
		return kx.Errorf(kx.CodeState, "plan was freed")
	}
	return p.c.st.usable()
}

// checkIndices refuses negative indices, naming the argument and position.
func checkIndices(name string, idx []int64) error {
	for i, v := range idx {
		if v < 0 {
			return kx.Errorf(kx.CodeArg, "%s[%d] = %d is negative", name, i, v)
		}
	}
	return nil
}

// checkValues validates a value buffer's length for n indices.
func checkValues(name string, b []byte, n int, d kx.Dtype, width int) error {
	if want := n * width * d.Size(); len(b) != want {
		return kx.Errorf(kx.CodeArg, "%s holds %d bytes, want %d (%d indices x width %d x %d bytes)",
			name, len(b), want, n, width, d.Size())
	}
	return nil
}

func checkReduceArgs(d kx.Dtype, o kx.Op, width int) error {
	if width < 1 {
		return kx.Errorf(kx.CodeArg, "width: %d is below 1", width)
	}
	return kernels.CheckDtypeOp(d, o)
}
