package dense

import (
	"kylix/core/kernels"
	"kylix/core/kx"
	"kylix/core/planning"
)

// Dense allreduce's two-member layers reduce on receive: the member's copy of this node's chunk
// is combined in as it arrives, a piece at a time through the transport's scratch
// (kx.Fold), instead of landing whole in a slot and being combined afterwards, which writes
// it to memory and reads it back.
//
// On the last layer the chunk is final once folded, and between ranks of one host the
// member's copy comes by reference from the member's own memory (netio's single copy): so each
// folded piece is written straight back over the copy it came from, while still in the cache
// (Fold.WriteBack), and the member's up message of that layer carries no data, only word that
// its range is in place. Each rank then reads its member's half once and writes it once, where
// the up phase would have copied the result across a second time.

// foldsLayer tells whether a dense layer of deg members folds. Only with two members: the
// sources must be combined in order, and a piece from the member that comes second can be
// folded at once only when the first is this node. And not with replication, whose racing
// copies each land whole.
func (ar *Allreduce) foldsLayer(deg int) bool { return deg == 2 && ar.cx.Replication == 1 }

// fold combines the other member's copy into this node's chunk: after it when this node is
// source 0, before it (through the transport's scratch, still in the cache) when it is source 1.
func fold(d kx.Dtype, o kx.Op, first bool) kx.Fold {
	f := kx.Fold{Unit: kernels.ElemBytes(d, o)}
	if first {
		f.Fn = func(mine, theirs []byte) { kernels.Combine(d, o, mine, theirs) }
	} else {
		f.Fn = func(mine, theirs []byte) {
			kernels.Combine(d, o, theirs, mine)
			copy(mine, theirs)
		}
	}
	return f
}

// writeBack is what the last layer's write-back decided, on this node's side.
type writeBack struct {
	on     bool // the last layer folds and its result may be written back
	theirs bool // this node's send of that layer goes by reference: the member may write back over it
	wrote  bool // this node wrote its folded chunk back over the member's copy
}

// lastWriteBack decides the last layer's write-back: a folding layer whose up phase carries what
// it combined (plain, not RSum's rounded floats) and, on this side, whether this node's send
// to the member goes by reference. last is the range above the last layer.
func (ar *Allreduce) lastWriteBack(topo planning.Topology, last [2]int, es int, plain bool) writeBack {
	i := topo.Layers() - 1
	if !plain || !ar.foldsLayer(topo.Degrees[i]) {
		return writeBack{}
	}
	me := topo.Digit(ar.cx.Node, i)
	ga, gb := chunk(last[0], last[1], 1-me, 2)
	return writeBack{on: true, theirs: ar.cx.WritesBack(topo.Member(ar.cx.Node, i, 1-me), (gb-ga)*es)}
}

// foldDown is down for a two-member layer (foldsLayer): the member's copy of this
// node's chunk is folded in as it arrives, posted only now, when the layers above have
// finished this chunk (a copy that comes earlier waits whole in the mailbox). With wb (the
// last layer's write-back on), the result also goes back over the member's copy when it can.
func (ar *Allreduce) foldDown(seq uint64, topo planning.Topology, i int, buf []byte, lo, hi int, d kx.Dtype, o kx.Op, wb *writeBack) error {
	es := kernels.ElemBytes(d, o)
	me := topo.Digit(ar.cx.Node, i)
	other := topo.Member(ar.cx.Node, i, 1-me)
	tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseDense}
	a, b := chunk(lo, hi, me, 2)
	ga, gb := chunk(lo, hi, 1-me, 2)
	fold := fold(d, o, me == 0)
	if wb != nil {
		fold.WriteBack, fold.WroteBack = true, &wb.wrote
	}
	ar.cx.ExpectFold(other, tag, buf[a*es:b*es], fold)
	if (hi-lo)*es >= foldReadyMin {
		if err := ar.foldReady(other, kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseReady}); err != nil {
			return err
		}
	}
	sg := ar.cx.Sends()
	sg.Send(other, tag, buf[ga*es:gb*es])
	_, rerr := ar.cx.Await(other, tag)
	if err := sg.Wait(); rerr == nil {
		rerr = err
	}
	return rerr
}

// foldReadyMin is the layer range in bytes from which the members of a folding layer tell each
// other that their fold is posted before either sends (foldReady).
const foldReadyMin = 1 << 20

// foldReady tells the member that this node's fold is posted and waits for the same word from
// it, so that no large copy comes before its post: one that does waits whole in the mailbox,
// then is folded from there, a copy more, and is never written back. A round of empty
// messages costs microseconds where the copy costs a millisecond a megabyte or so; only the
// member that is ahead waits, and it would wait for the other's copy anyway.
func (ar *Allreduce) foldReady(other int, tag kx.Tag) error {
	sg := ar.cx.Sends()
	sg.Send(other, tag, nil)
	got, err := ar.cx.Recv(other, tag)
	if err == nil {
		ar.cx.Release(got)
	}
	if werr := sg.Wait(); err == nil {
		err = werr
	}
	return err
}

// upBack is up for a last layer with write-back on. This node tells the member its
// range is in place with an empty message when it wrote it back, else sends it as usual; and
// when the member may have written back over this node's copy (back.theirs, so no place was
// posted), it takes the member's message as it comes: empty (the range is in place already) or
// the range, copied in.
func (ar *Allreduce) upBack(seq uint64, topo planning.Topology, i int, buf []byte, lo, hi, es int, back writeBack) error {
	me := topo.Digit(ar.cx.Node, i)
	other := topo.Member(ar.cx.Node, i, 1-me)
	tag := kx.Tag{Seq: seq, Layer: uint8(i), Phase: kx.PhaseUp}
	a, b := chunk(lo, hi, me, 2)
	ga, gb := chunk(lo, hi, 1-me, 2)
	sg := ar.cx.Sends()
	if back.wrote {
		sg.Send(other, tag, nil)
	} else {
		sg.Send(other, tag, buf[a*es:b*es])
	}
	var rerr error
	if !back.theirs {
		_, rerr = ar.cx.Await(other, tag)
	} else {
		var got []byte
		if got, rerr = ar.cx.Recv(other, tag); rerr == nil {
			switch len(got) {
			case 0:
			case (gb - ga) * es:
				copy(buf[ga*es:gb*es], got)
			default:
				rerr = kx.Errorf(kx.CodeInternal, "rank %d sent a dense range of %d bytes up, want %d or none",
					kx.RankRef(other), len(got), (gb-ga)*es)
			}
			ar.cx.Release(got)
		}
	}
	if err := sg.Wait(); rerr == nil {
		rerr = err
	}
	return rerr
}
