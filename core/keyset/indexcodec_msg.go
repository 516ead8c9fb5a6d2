package keyset

import (
	"kylix/core/kx"
	"sync"
	"time"
)

// Config messages: the index lists a node sends a member of its group at one layer, plain or
// compressed (indexcodec.go), with the values of config_reduce behind them.
//
// Plain:       [out count][in count, or sameAsOut][out keys][in keys][values]
// Compressed:  [out count | msgCompressed][in count, or sameAsOut][out bytes][in bytes]
//              [out list][in list][zeros to a multiple of 8][values]
//
// At layer 0 of a plan with layers (msgRows set in the out count) the keys are the sender's
// rows in its layer-0 bucket order (layer0_pack.go): unsorted, repeats included, one value per
// row. A compressed rows message carries rows the sender put in set order (layer0_setorder.go):
// the set of their keys (counts in the first two words), the row counts and the bytes of each
// side's repeat bitmap (0 when no row repeats) in four more header words, and after each
// list its bitmap; the receiver rebuilds the rows from those alone.
//
// Compressed rows: [set out | msgCompressed | msgRows][set in, or sameAsOut][out bytes][in bytes]
//                  [out rows][in rows][out repeat bytes][in repeat bytes]
//                  [out list][out repeats][in list][in repeats][zeros][values]
//
// Every word is 8 bytes, little-endian. The flags travel in each message, so every message
// is decided on its own (compress=auto) and the receiver needs no agreement to read it. Values
// start on an 8-byte boundary of the payload, as in plain messages, so the Combiner reads them
// in place.

const (
	// sameAsOut in a config message's in-key count says the in keys are the out keys (sent once).
	sameAsOut     = ^uint64(0)
	msgCompressed = uint64(1) << 62
	msgRows       = uint64(1) << 61
	plainHdr      = 16
	packedHdr     = 32
	rowsHdr       = 64 // a compressed rows message's header
	// maxListKeys bounds a list's key count before any arithmetic on it (plans index keys with
	// int32; a larger count is corrupt).
	maxListKeys = 1 << 40
)

var (
	encoders = sync.Pool{New: func() any { return new(IndexEncoder) }}
	decoders = sync.Pool{New: func() any { return new(IndexDecoder) }}
)

// ConfigMsg is one config message ready to send, with its figures.
type ConfigMsg struct {
	Bufs [][]byte
	MsgFigures
}

// MsgFigures describe the index lists of one config message, for the statistics and the
// codec's running estimates: keys, their bytes before (raw) and after (wire) compression, and
// the time encoding or decoding took (packed messages only).
type MsgFigures struct {
	Keys, Raw, Wire int
	Packed          bool
	Took            time.Duration
}

// BuildConfigMsg makes the message carrying out, in (ignored when same: the in keys are the out
// keys) and vals, compressed when pack is set. rows marks the keys as layer-0 rows (msgRows);
// compressed, they must be in set order (SetOrder). The buffers it returns are its own (or the
// caller's keys and values), so several messages may be in flight at once.
func BuildConfigMsg(out, in []uint64, same bool, rows bool, vals []byte, pack bool) ConfigMsg {
	ni := uint64(len(in))
	keys := len(out) + len(in)
	if same {
		ni, keys = sameAsOut, len(out)
	}
	flags := uint64(0)
	if rows {
		flags = msgRows
	}
	raw := 8 * keys
	if !pack {
		h := make([]byte, plainHdr)
		putU64(h, uint64(len(out))|flags)
		putU64(h[8:], ni)
		bufs := [][]byte{h, WordBytes(out)}
		if !same {
			bufs = append(bufs, WordBytes(in))
		}
		if vals != nil {
			bufs = append(bufs, vals)
		}
		return ConfigMsg{bufs, MsgFigures{Keys: keys, Raw: raw, Wire: raw}}
	}
	start := time.Now()
	enc := encoders.Get().(*IndexEncoder)
	defer encoders.Put(enc)
	b := make([]byte, packedHdr, rowsHdr+raw/4+64)
	var ol, il int
	if rows {
		b = b[:rowsHdr]
		var oreps, ireps, no int
		b, ol, oreps, no = enc.appendRows(b, out)
		putU64(b, uint64(no)|msgCompressed|flags)
		putU64(b[8:], ni)
		putU64(b[32:], uint64(len(out)))
		putU64(b[48:], uint64(oreps))
		if !same {
			var nin int
			b, il, ireps, nin = enc.appendRows(b, in)
			putU64(b[8:], uint64(nin))
			putU64(b[40:], uint64(len(in)))
			putU64(b[56:], uint64(ireps))
		}
		ol, il = ol+oreps, il+ireps // the figures count a side's bitmap with its list
		putU64(b[16:], uint64(ol-oreps))
		putU64(b[24:], uint64(il-ireps))
	} else {
		b = enc.AppendList(b, out)
		ol = len(b) - packedHdr
		if !same {
			b = enc.AppendList(b, in)
		}
		il = len(b) - packedHdr - ol
		putU64(b, uint64(len(out))|msgCompressed)
		putU64(b[8:], ni)
		putU64(b[16:], uint64(ol))
		putU64(b[24:], uint64(il))
	}
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	bufs := [][]byte{b}
	if vals != nil {
		bufs = append(bufs, vals)
	}
	return ConfigMsg{bufs, MsgFigures{Keys: keys, Raw: raw, Wire: ol + il, Packed: true, Took: time.Since(start)}}
}

// ConfigLists is what a config message carries: the key lists (a rows message's rows, in the
// sender's order) and the values (es bytes per out key or row).
type ConfigLists struct {
	Out, In []uint64
	Vals    []byte
}

// ParseConfigMsg splits a config message from rank `from`: out keys, in keys, then values (es
// bytes per out key, none when es == 0). rowsD0 > 0 says the keys must be layer-0 rows
// (msgRows) of a layer of that degree; 0, sorted keys. Plain keys are views of b; decoded ones
// are new slices.
func ParseConfigMsg(b []byte, es, from int, rowsD0 int) (m ConfigLists, fig MsgFigures, err error) {
	wantRows := rowsD0 > 0
	if len(b) >= 8 && getU64(b)&msgCompressed != 0 {
		return parsePackedMsg(b, es, from, rowsD0)
	}
	if len(b) < plainHdr {
		return m, fig, kx.Errorf(kx.CodeInternal, "rank %d sent a config message of %d bytes", kx.RankRef(from), len(b))
	}
	no, ni := getU64(b), getU64(b[8:])
	rows := no&msgRows != 0
	no &^= msgRows
	same := ni == sameAsOut
	if same {
		ni = 0
	}
	if rows != wantRows || no > uint64(len(b)) || ni > uint64(len(b)) || uint64(len(b)) != plainHdr+8*no+8*ni+no*uint64(es) {
		what := ""
		if rows != wantRows {
			what = ", " + rowsWord(rows)
		}
		return m, fig, kx.Errorf(kx.CodeInternal, "rank %d sent a malformed config message (%d out, %d in keys in %d bytes%s)", kx.RankRef(from), no, ni, len(b), what)
	}
	ko := plainHdr + 8*no
	ki := ko + 8*ni
	m.Out = BytesWords(b[plainHdr:ko])
	m.In = m.Out
	if !same {
		m.In = BytesWords(b[ko:ki])
	}
	m.Vals = b[ki:]
	k := int(no + ni)
	return m, MsgFigures{Keys: k, Raw: 8 * k, Wire: 8 * k}, nil
}

// rowsWord says what is wrong with a message whose rows flag is not the one expected.
func rowsWord(rows bool) string {
	if rows {
		return "layer-0 rows where sorted keys belong"
	}
	return "sorted keys where layer-0 rows belong"
}

// parsePackedMsg is parseConfigMsg for a compressed message.
func parsePackedMsg(b []byte, es, from int, rowsD0 int) (m ConfigLists, fig MsgFigures, err error) {
	malformed := func(what string) error {
		return kx.Errorf(kx.CodeInternal, "rank %d sent a malformed compressed config message of %d bytes: %s", kx.RankRef(from), len(b), what)
	}
	if len(b) < packedHdr {
		return m, fig, malformed("no header")
	}
	no, ni := getU64(b)&^(msgCompressed|msgRows), getU64(b[8:])
	rows := getU64(b)&msgRows != 0
	ol, il := getU64(b[16:]), getU64(b[24:])
	same := ni == sameAsOut
	if same {
		ni = 0
	}
	hdr := uint64(packedHdr)
	ro, ri := no, ni      // values follow the out keys, or the rows
	var orep, irep uint64 // bytes of the repeat bitmaps
	if rows {
		hdr = rowsHdr
		if len(b) < rowsHdr {
			return m, fig, malformed("no header")
		}
		ro, ri, orep, irep = getU64(b[32:]), getU64(b[40:]), getU64(b[48:]), getU64(b[56:])
		if same {
			ri = 0
		}
	}
	rest := uint64(len(b)) - hdr
	switch {
	case rows != (rowsD0 > 0):
		return m, fig, malformed(rowsWord(rows))
	case no > maxListKeys || ni > maxListKeys || ro > maxListKeys || ri > maxListKeys:
		return m, fig, malformed("key counts out of range")
	case ol > rest || orep > rest-ol || il > rest-ol-orep || irep > rest-ol-orep-il || same && il+irep != 0:
		return m, fig, malformed("list lengths do not fit")
	}
	vs := (hdr + ol + orep + il + irep + 7) &^ 7
	if vs > uint64(len(b)) || es > 0 && ro > (uint64(len(b))-vs)/uint64(es) || uint64(len(b))-vs != ro*uint64(es) {
		return m, fig, malformed("the values do not match the out keys")
	}
	start := time.Now()
	dec := decoders.Get().(*IndexDecoder)
	defer decoders.Put(dec)
	lo, ro0, li := hdr, hdr+ol, hdr+ol+orep // out list, out repeats, in list
	if rows {
		m.Out, err = dec.decodeRows(b[lo:ro0], b[ro0:li], int(no), int(ro), rowsD0, from)
	} else {
		m.Out, err = dec.DecodeList(b[lo:ro0], int(no), from)
	}
	if err != nil {
		return m, fig, err
	}
	m.In = m.Out
	if !same {
		if rows {
			m.In, err = dec.decodeRows(b[li:li+il], b[li+il:li+il+irep], int(ni), int(ri), rowsD0, from)
		} else {
			m.In, err = dec.DecodeList(b[li:li+il], int(ni), from)
		}
		if err != nil {
			return m, fig, err
		}
	}
	m.Vals = b[vs:]
	k := int(ro + ri)
	return m, MsgFigures{Keys: k, Raw: 8 * k, Wire: int(ol + orep + il + irep), Packed: true, Took: time.Since(start)}, nil
}

// ConfigListStart is where the first index list starts in a compressed config message b: after
// the longer header of a layer-0 rows message (msgRows), or the plain compressed one.
func ConfigListStart(b []byte) int {
	if getU64(b)&msgRows != 0 {
		return rowsHdr
	}
	return packedHdr
}
