package core

import (
	"kylix/core/coll"
	"kylix/core/kx"
)

// Bcast copies root's buf to every rank along a binomial tree: log2(m) rounds, each rank
// receiving once from its parent and forwarding to its children (coll.Bcast).
func (c *Comm) Bcast(buf []byte, root int) error {
	if err := c.st.usable(); err != nil {
		return err
	}
	m := c.cx.Nodes
	if root < 0 || root >= m {
		return c.Reject(kx.Errorf(kx.CodeArg, "root: %d is not a rank of this %d-rank comm", root, m))
	}
	// The root travels in Width so ranks that disagree on it fail with a mismatch.
	fp := kx.Fingerprint{Kind: kx.KindBcast, Width: int32(root), Count: int64(len(buf))}
	return c.collective(fp, func(seq uint64) error { return coll.Bcast(&c.cx, seq, buf, root) })
}

// Barrier returns once every rank has entered it (dissemination: ceil(log2 m) rounds of
// empty messages to rank+2^k).
func (c *Comm) Barrier() error {
	return c.collective(kx.Fingerprint{Kind: kx.KindBarrier}, func(seq uint64) error { return coll.Dissemination(&c.cx, seq) })
}
