package mailbox

import (
	"fmt"
	"kylix/core/kx"
)

// How a mailbox words a fingerprint mismatch and names message phases.

// mismatchError says how rank src's fingerprint (theirs) differs from this rank's (ours).
func mismatchError(src int, theirs, ours kx.Fingerprint, seq uint64) error {
	field := theirs.Diff(ours)
	var v1, v2 string
	switch field {
	case "":
		return kx.Errorf(kx.CodeMismatch, "rank %d disagrees on collective %d", kx.RankRef(src), kx.SeqRef(seq))
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
		return kx.Errorf(kx.CodeMismatch, "rank %d called %s but this rank called %s (collective %d)",
			kx.RankRef(src), theirs.Kind, ours.Kind, kx.SeqRef(seq))
	}
	return kx.Errorf(kx.CodeMismatch, "rank %d disagrees on %s: %s vs %s (collective %d, %s)",
		kx.RankRef(src), field, v1, v2, kx.SeqRef(seq), ours.Kind)
}

func dtypeName(d uint8) string {
	if kx.Dtype(d).Valid() {
		return kx.Dtype(d).String()
	}
	return fmt.Sprintf("dtype %d", d)
}

func opName(o uint16) string {
	if kx.Op(o).Builtin() {
		return kx.Op(o).String()
	}
	return fmt.Sprintf("op %d", o)
}

// phaseName names a frame's phase, whose top bit marks a racing copy.
func phaseName(p kx.Phase) string { return (p &^ raceBit).String() }
