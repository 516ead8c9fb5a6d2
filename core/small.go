package core

import (
	"kylix/core/keyset"
	"kylix/core/kx"
)

// allgatherSmall gives every rank every rank's few words, in rank order. Each rank sends its
// words straight to every other: m-1 tiny messages, fine for the agreement exchanges it serves.
func (c *Comm) allgatherSmall(seq uint64, words []uint64) ([]uint64, error) {
	m, me, k := c.nodes(), c.node(), len(words)
	tag := kx.Tag{Seq: seq, Phase: kx.PhaseSmall}
	sg := c.sends()
	for r := 0; r < m; r++ {
		if r != me {
			sg.send(r, tag, keyset.WordBytes(words))
		}
	}
	all := make([]uint64, m*k)
	copy(all[me*k:], words)
	var rerr error
	for r := 0; r < m && rerr == nil; r++ {
		if r == me {
			continue
		}
		b, err := c.recv(r, tag)
		switch {
		case err != nil:
			rerr = err
		case len(b) != 8*k:
			rerr = kx.Errorf(kx.CodeInternal, "rank %d sent %d bytes in an agreement exchange, want %d", r, len(b), 8*k)
		default:
			copy(all[r*k:], keyset.BytesWords(b))
		}
	}
	if err := sg.wait(); rerr == nil {
		rerr = err
	}
	return all, rerr
}

// Bcast copies root's buf to every rank along a binomial tree: log2(m) rounds, each rank
// receiving once from its parent and forwarding to its children.
func (c *Comm) Bcast(buf []byte, root int) error {
	if err := c.usable(); err != nil {
		return err
	}
	m, me := c.nodes(), c.node()
	if root < 0 || root >= m {
		return c.Reject(kx.Errorf(kx.CodeArg, "root: %d is not a rank of this %d-rank comm", root, m))
	}
	// The root travels in Width so ranks that disagree on it fail with a mismatch.
	fp := kx.Fingerprint{Kind: kx.KindBcast, Width: int32(root), Count: int64(len(buf))}
	return c.collective(fp, func(seq uint64) error {
		// Agree first. A tree leaf hears only from its path to the root, and ranks that
		// disagree on the root would all wait for a parent that never sends. A completed
		// dissemination round means every rank heard, through a chain of matching
		// fingerprints, from every other, so all agree on root and size before data moves.
		if err := c.dissemination(seq); err != nil {
			return err
		}
		tag := kx.Tag{Seq: seq, Phase: kx.PhaseBcast}
		vr := (me - root + m) % m // rank relative to root
		mask := 1
		for mask < m {
			if vr&mask != 0 {
				from := (vr - mask + root) % m
				b, err := c.recv(from, tag)
				if err != nil {
					return err
				}
				if len(b) != len(buf) {
					return kx.Errorf(kx.CodeMismatch, "rank %d broadcast %d bytes, this rank expected %d", from, len(b), len(buf))
				}
				copy(buf, b)
				break
			}
			mask <<= 1
		}
		sg := c.sends()
		for mask >>= 1; mask > 0; mask >>= 1 {
			if vr+mask < m {
				sg.send((vr+mask+root)%m, tag, buf)
			}
		}
		return sg.wait()
	})
}

// Barrier returns once every rank has entered it (dissemination: ceil(log2 m) rounds of
// empty messages to rank+2^k).
func (c *Comm) Barrier() error {
	return c.collective(kx.Fingerprint{Kind: kx.KindBarrier}, c.dissemination)
}

// dissemination runs ceil(log2 m) rounds in which rank r tells r+2^k and hears from r-2^k:
// afterwards every rank has heard, directly or through others, from every rank in this
// collective.
func (c *Comm) dissemination(seq uint64) error {
	m, me := c.nodes(), c.node()
	for k, dist := 0, 1; dist < m; k, dist = k+1, dist*2 {
		tag := kx.Tag{Seq: seq, Layer: uint8(k), Phase: kx.PhaseSmall, FP: c.fp}
		if err := c.send((me+dist)%m, tag); err != nil {
			return err
		}
		b, err := c.recv((me-dist+m)%m, tag)
		if err != nil {
			return err
		}
		c.release(b)
	}
	return nil
}
