package members

import "kylix/core/kx"

// The comm's lanes (kx.Lanes) addressed by node: a comm without replication whose transport has
// lanes, which it claimed (two comms of one transport would write the same slots). Errors are
// renumbered as the data path's.

// HasLanes reports whether the comm's transport has lanes and the comm no replication: the
// same on every rank of a comm (what each rank's lanes reach is not, which its comm agrees on:
// core/dense/lane.go).
func (v *View) HasLanes() bool {
	_, ok := v.t.(kx.Lanes)
	return ok && v.s == 1
}

// ClaimLanes claims the transport's lanes for this view's comm (HasLanes): false when another
// comm of the transport has them.
func (v *View) ClaimLanes() bool {
	if !v.HasLanes() || !v.t.(kx.Lanes).ClaimLanes() {
		return false
	}
	v.lanes = v.t.(kx.Lanes)
	return true
}

// TakeLanes moves old's claim on the lanes to v where both views are over one transport: a comm
// that goes on over it after a resize (members unchanged, or only fewer), at fresh sequence
// numbers, which no message of old's can carry.
func (v *View) TakeLanes(old *View) {
	if old.lanes != nil && old.t == v.t && v.HasLanes() {
		v.lanes, old.lanes = old.lanes, nil
	}
}

// LaneMax is the largest payload of the lane to node, 0 where there is none.
func (v *View) LaneMax(node int) int {
	if v.lanes == nil || node < 0 || node >= v.m || node == v.node {
		return 0
	}
	return v.lanes.LaneMax(v.replicas[node][0])
}

// LanePut, LaneAwait and LaneDone need the lanes (LaneMax above 0): the comm agreed on them.
func (v *View) LanePut(to int, tag kx.Tag, b []byte) error {
	if v.lanes == nil {
		return errNoLanes
	}
	return v.translate(v.lanes.LanePut(v.replicas[to][0], tag, b))
}

func (v *View) LaneAwait(from int, tag kx.Tag) (kx.Fingerprint, []byte, error) {
	if v.lanes == nil {
		return kx.Fingerprint{}, nil, errNoLanes
	}
	fp, b, err := v.lanes.LaneAwait(v.replicas[from][0], tag)
	return fp, b, v.translate(err)
}

var errNoLanes = kx.Errorf(kx.CodeInternal, "a lane call on a comm without lanes")

func (v *View) LaneDone(from int, tag kx.Tag) { v.lanes.LaneDone(v.replicas[from][0], tag) }

// LendLanes lends the lane to every other node out of Go (kx.LaneLender), into ls by node
// (ls[v.Node()] is left zero): false, lending nothing, where the comm's lanes cannot be lent.
func (v *View) LendLanes(ls []kx.LaneLoan) bool {
	lender, ok := v.lanes.(kx.LaneLender)
	if !ok || len(ls) != v.m {
		return false
	}
	for n := range ls {
		if n == v.node {
			ls[n] = kx.LaneLoan{}
			continue
		}
		l, ok := lender.LendLane(v.replicas[n][0])
		if !ok {
			for m := range n {
				if m != v.node {
					lender.ReturnLane(v.replicas[m][0], &ls[m])
				}
			}
			return false
		}
		ls[n] = l
	}
	return true
}

// ReturnLanes takes back what LendLanes lent.
func (v *View) ReturnLanes(ls []kx.LaneLoan) {
	lender := v.lanes.(kx.LaneLender)
	for n := range ls {
		if n != v.node {
			lender.ReturnLane(v.replicas[n][0], &ls[n])
		}
	}
}
