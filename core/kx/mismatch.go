package kx

import "fmt"

// How a fingerprint mismatch is worded, wherever it is found: a frame filed by the mailbox, a
// message read from a lane.

// MismatchError says how rank src's fingerprint (theirs) differs from this rank's (ours).
func MismatchError(src int, theirs, ours Fingerprint, seq uint64) error {
	field := theirs.Diff(ours)
	var v1, v2 string
	switch field {
	case "":
		return Errorf(CodeMismatch, "rank %d disagrees on collective %d", RankRef(src), SeqRef(seq))
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
		return Errorf(CodeMismatch, "rank %d called %s but this rank called %s (collective %d)",
			RankRef(src), theirs.Kind, ours.Kind, SeqRef(seq))
	}
	return Errorf(CodeMismatch, "rank %d disagrees on %s: %s vs %s (collective %d, %s)",
		RankRef(src), field, v1, v2, SeqRef(seq), ours.Kind)
}

func dtypeName(d uint8) string {
	if Dtype(d).Valid() {
		return Dtype(d).String()
	}
	return fmt.Sprintf("dtype %d", d)
}

func opName(o uint16) string {
	if Op(o).Builtin() {
		return Op(o).String()
	}
	return fmt.Sprintf("op %d", o)
}
