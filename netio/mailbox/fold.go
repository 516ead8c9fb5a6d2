package mailbox

import (
	"io"
	"kylix/core/kx"
)

// Reduce on receive (kx.Receiver.Post with a fold). A message posted with a fold is not read into its
// place but through the reader's scratch, a piece of foldChunk bytes at a time, each piece
// combined into the place as soon as it is in: landing a large message and combining it
// afterwards writes it to memory and reads it back, a pass over main memory each, where the
// piece stays in the cache. Dense allreduce's two-member layers use it (core/dense/fold.go).

// foldChunk is about the size of a folded piece: small enough that it and its stretch of the
// place stay in a core's L2 (2 MiB here), large enough that a piece costs one read or
// process_vm_readv call among many bytes.
const foldChunk = 256 << 10

// foldPiece is the largest multiple of the fold's unit within foldChunk (at least one unit).
func foldPiece(f kx.Fold) int { return max(foldChunk/f.Unit, 1) * f.Unit }

// WriteBacker is a Payload that can write bytes back over the last ones read, in the sender's
// memory (netio's single-copy frames): a fold with WriteBack returns its result that way.
type WriteBacker interface {
	WriteBack(b []byte) error
}

// receiveFold reads the payload of the frame claimed for fold post p from src's stream r,
// folding it in piece by piece (Receive).
func (m *Mailbox) receiveFold(src int, tag kx.Tag, p *post, r Payload) error {
	piece := foldPiece(p.fold)
	if len(m.scratch[src]) < piece {
		m.scratch[src] = make([]byte, max(piece, raceChunk)) // shared with racing reads: one reader per source
	}
	buf := m.scratch[src][:piece]
	wb, back := r.(WriteBacker)
	back = back && p.fold.WriteBack
	for off := 0; off < len(p.dst); {
		end := min(off+piece, len(p.dst))
		_, err := io.ReadFull(r, buf[:end-off])
		if err == nil {
			p.fold.Fn(p.dst[off:end], buf[:end-off])
			if back { // while the piece is still in the cache
				err = wb.WriteBack(p.dst[off:end])
			}
		}
		if err != nil {
			m.unfill(src, p)
			return err
		}
		m.live.heard(src)
		off = end
		if off < len(p.dst) {
			m.progress(src, p, off, tag.Layer, tag.Phase)
		}
	}
	if back && p.fold.WroteBack != nil {
		m.mu.Lock()
		*p.fold.WroteBack = true // read by the waiter after landed's wake, under the same lock
		m.mu.Unlock()
	}
	m.landed(src, p, tag.Layer, tag.Phase)
	return nil
}

// foldPieces folds a payload already in memory (data, as long as p's place, the mailbox's own)
// into p, in the same pieces as a read one.
func foldPieces(p *post, data []byte) {
	piece := foldPiece(p.fold)
	for off := 0; off < len(p.dst); off += piece {
		end := min(off+piece, len(p.dst))
		p.fold.Fn(p.dst[off:end], data[off:end])
	}
}
