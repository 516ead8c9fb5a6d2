package netio

import (
	"fmt"

	"kylix/core"
)

// How a mailbox words a fingerprint mismatch and names message phases.

// mismatchError says how rank src's fingerprint (theirs) differs from this rank's (ours).
func mismatchError(src int, theirs, ours core.Fingerprint, seq uint64) error {
	field := theirs.Diff(ours)
	var v1, v2 string
	switch field {
	case "":
		return core.Errorf(core.CodeMismatch, "rank %d disagrees on collective %d", core.RankRef(src), core.SeqRef(seq))
	case "plan":
		v1, v2 = fmt.Sprint(theirs.Plan), fmt.Sprint(ours.Plan)
	case "dtype":
		v1, v2 = dtypeName(theirs.Dtype), dtypeName(ours.Dtype)
	case "op":
		v1, v2 = opName(theirs.Op), opName(ours.Op)
	case "width":
		v1, v2 = fmt.Sprint(theirs.Width), fmt.Sprint(ours.Width)
	case "count":
		v1, v2 = fmt.Sprint(theirs.Count), fmt.Sprint(ours.Count)
	default: // the collective itself
		return core.Errorf(core.CodeMismatch, "rank %d called %s but this rank called %s (collective %d)",
			core.RankRef(src), theirs.Kind, ours.Kind, core.SeqRef(seq))
	}
	return core.Errorf(core.CodeMismatch, "rank %d disagrees on %s: %s vs %s (collective %d, %s)",
		core.RankRef(src), field, v1, v2, core.SeqRef(seq), ours.Kind)
}

func dtypeName(d uint8) string {
	if core.Dtype(d).Valid() {
		return core.Dtype(d).String()
	}
	return fmt.Sprintf("dtype %d", d)
}

func opName(o uint16) string {
	if core.Op(o).Builtin() {
		return core.Op(o).String()
	}
	return fmt.Sprintf("op %d", o)
}

var phaseNames = map[uint8]string{
	core.PhaseConfig:     "config",
	core.PhaseDown:       "down",
	core.PhaseUp:         "up",
	core.PhaseConfigDown: "config-down",
	core.PhaseSmall:      "small",
	core.PhaseBcast:      "bcast",
	core.PhaseDense:      "dense",
}

func phaseName(p uint8) string {
	p &^= raceBit
	if n, ok := phaseNames[p]; ok {
		return n
	}
	return fmt.Sprintf("phase-%d", p)
}
