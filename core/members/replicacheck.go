package members

import (
	"encoding/binary"
	"kylix/core/kx"
)

// replicaCheckLayer tags the replica check's messages apart from every other small message of
// a collective.
const replicaCheckLayer = 0xFF

// CheckReplicas compares digest, a digest of what this rank was given for collective seq, with
// the other live replicas of its node. Replicas must make the same calls with the same data
// (they send the same bytes, and the first copy to arrive is used): replicas that were given
// different data would each make the other's results wrong in silence. A difference is
// CodeMismatch naming both ranks; what names the data in the message. Without replication it
// does nothing.
func (v *View) CheckReplicas(seq uint64, fp kx.Fingerprint, what string, digest uint64) error {
	if v.s == 1 {
		return nil
	}
	tag := kx.Tag{Seq: seq, Layer: replicaCheckLayer, Phase: kx.PhaseSmall, FP: fp}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], digest)
	var mates []int // the other replicas of this rank's node, as comm ranks
	for r := v.node; r < v.size; r += v.m {
		if r != v.rank {
			mates = append(mates, r)
		}
	}
	// The digests are a word each: the sends return at once, and a dead replica's failure
	// shows in the receive from it.
	for _, r := range mates {
		v.sendRank(r, tag, b[:])
	}
	for _, r := range mates {
		got, err := v.recvRank(r, tag)
		switch {
		case kx.CodeOf(err) == kx.CodePeer:
			continue // a dead replica no longer counts
		case err != nil:
			return err
		case len(got) != 8:
			return kx.Errorf(kx.CodeInternal, "rank %d sent a replica check of %d bytes, not 8", kx.RankRef(r), len(got))
		}
		other := binary.LittleEndian.Uint64(got)
		v.Release(got)
		if other != digest {
			lo, hi := min(r, v.rank), max(r, v.rank)
			return kx.Errorf(kx.CodeMismatch, "ranks %d and %d are replicas of node %d but were given different %s: replicas must make the same calls with the same data, in the same order",
				kx.RankRef(lo), kx.RankRef(hi), v.node, what)
		}
	}
	return nil
}
