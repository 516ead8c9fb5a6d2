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

// LaneMax is the largest payload of the lane to node, 0 where there is none.
func (v *View) LaneMax(node int) int {
	if v.lanes == nil || node < 0 || node >= v.m || node == v.node {
		return 0
	}
	return v.lanes.LaneMax(v.replicas[node][0])
}

func (v *View) LanePut(to int, tag kx.Tag, b []byte) error {
	return v.translate(v.lanes.LanePut(v.replicas[to][0], tag, b))
}

func (v *View) LaneAwait(from int, tag kx.Tag) (kx.Fingerprint, []byte, error) {
	fp, b, err := v.lanes.LaneAwait(v.replicas[from][0], tag)
	return fp, b, v.translate(err)
}

func (v *View) LaneDone(from int, tag kx.Tag) { v.lanes.LaneDone(v.replicas[from][0], tag) }
