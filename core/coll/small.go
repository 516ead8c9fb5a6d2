package coll

import (
	"kylix/core/keyset"
	"kylix/core/kx"
)

// AllgatherSmall gives every node every node's few words, in node order. Each node sends its
// words straight to every other: m-1 tiny messages, fine for the agreement exchanges it serves.
func AllgatherSmall(cx *Ctx, seq uint64, words []uint64) ([]uint64, error) {
	return AllgatherSmallAt(cx, kx.Tag{Seq: seq, Phase: kx.PhaseSmall}, words)
}

// AllgatherSmallAt is AllgatherSmall on messages of tag: an agreement inside a collective that
// sends other small messages.
func AllgatherSmallAt(cx *Ctx, tag kx.Tag, words []uint64) ([]uint64, error) {
	m, me, k := cx.Nodes, cx.Node, len(words)
	sg := cx.Sends()
	for r := 0; r < m; r++ {
		if r != me {
			sg.Send(r, tag, keyset.WordBytes(words))
		}
	}
	all := make([]uint64, m*k)
	copy(all[me*k:], words)
	var rerr error
	for r := 0; r < m && rerr == nil; r++ {
		if r == me {
			continue
		}
		b, err := cx.Recv(r, tag)
		switch {
		case err != nil:
			rerr = err
		case len(b) != 8*k:
			rerr = kx.Errorf(kx.CodeInternal, "rank %d sent %d bytes in an agreement exchange, want %d", r, len(b), 8*k)
		default:
			copy(all[r*k:], keyset.BytesWords(b))
		}
	}
	if err := sg.Wait(); rerr == nil {
		rerr = err
	}
	return all, rerr
}

// Bcast copies root's buf to every node along a binomial tree: log2(m) rounds, each node
// receiving once from its parent and forwarding to its children.
func Bcast(cx *Ctx, seq uint64, buf []byte, root int) error {
	// Agree first. A tree leaf hears only from its path to the root, and ranks that disagree
	// on the root would all wait for a parent that never sends. A completed dissemination
	// round means every rank heard, through a chain of matching fingerprints, from every
	// other, so all agree on root and size before data moves.
	if err := Dissemination(cx, seq); err != nil {
		return err
	}
	m, me := cx.Nodes, cx.Node
	tag := kx.Tag{Seq: seq, Phase: kx.PhaseBcast}
	vr := (me - root + m) % m // rank relative to root
	mask := 1
	for mask < m {
		if vr&mask != 0 {
			from := (vr - mask + root) % m
			b, err := cx.Recv(from, tag)
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
	sg := cx.Sends()
	for mask >>= 1; mask > 0; mask >>= 1 {
		if vr+mask < m {
			sg.Send((vr+mask+root)%m, tag, buf)
		}
	}
	return sg.Wait()
}

// Dissemination is the barrier: ceil(log2 m) rounds in which node r tells r+2^k and hears from
// r-2^k. Afterwards every node has heard, directly or through others, from every node in this
// collective.
func Dissemination(cx *Ctx, seq uint64) error {
	m, me := cx.Nodes, cx.Node
	for k, dist := 0, 1; dist < m; k, dist = k+1, dist*2 {
		tag := kx.Tag{Seq: seq, Layer: uint8(k), Phase: kx.PhaseSmall, FP: cx.FP}
		if err := cx.Send((me+dist)%m, tag); err != nil {
			return err
		}
		b, err := cx.Recv((me-dist+m)%m, tag)
		if err != nil {
			return err
		}
		cx.Release(b)
	}
	return nil
}
