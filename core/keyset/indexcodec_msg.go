package keyset

import (
	"kylix/core/kx"
	"slices"
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
// rows in its top-bucket order (packtop.go): unsorted, repeats included, one value per row. A
// compressed list is a set, so a compressed rows message carries the sets of the rows' keys
// (counts in the first two words), the row counts in two more header words, and after the
// lists each row's position in its set (perms: w bytes each, little-endian, the fewest that
// hold the larger set's positions; out then in, zeros to a multiple of 8) before the values.
// The positions are as random as the rows' order, so fixed width is about all there is to
// gain: 2 bytes a row up to 65536 keys.
//
// Compressed rows: [set out | msgCompressed | msgRows][set in, or sameAsOut][out bytes][in bytes]
//                  [out rows | w<<56][in rows][out list][in list][zeros][perms][values]
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
	rowsHdr       = 48 // a compressed rows message's header
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
// compressed, out and in are then the sets of the rows' keys and outPerm, inPerm each row's
// position in its set (setPerm). The buffers it returns are its own (or the caller's keys and
// values), so several messages may be in flight at once.
func BuildConfigMsg(out, in []uint64, same bool, rows bool, outPerm, inPerm []int32, vals []byte, pack bool) ConfigMsg {
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
	hdr := packedHdr
	if rows {
		hdr = rowsHdr
	}
	b := make([]byte, hdr, hdr+raw/4+64)
	b = enc.AppendList(b, out)
	ol := len(b) - hdr
	if !same {
		b = enc.AppendList(b, in)
	}
	il := len(b) - hdr - ol
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	putU64(b, uint64(len(out))|msgCompressed|flags)
	putU64(b[8:], ni)
	putU64(b[16:], uint64(ol))
	putU64(b[24:], uint64(il))
	bufs := [][]byte{b}
	if rows { // the rows: how many, then each one's position in its set
		w := PermWidth(max(len(out), len(in)))
		putU64(b[32:], uint64(len(outPerm))|uint64(w)<<56)
		putU64(b[40:], uint64(len(inPerm)))
		perms := outPerm
		if !same {
			perms = append(slices.Clip(outPerm), inPerm...)
		}
		bufs = append(bufs, packPerms(perms, w))
	}
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
// bytes per out key, none when es == 0). wantRows says whether the keys must be layer-0 rows
// (msgRows). Plain keys are views of b; decoded ones are new slices.
func ParseConfigMsg(b []byte, es, from int, wantRows bool) (m ConfigLists, fig MsgFigures, err error) {
	if len(b) >= 8 && getU64(b)&msgCompressed != 0 {
		return parsePackedMsg(b, es, from, wantRows)
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
func parsePackedMsg(b []byte, es, from int, wantRows bool) (m ConfigLists, fig MsgFigures, err error) {
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
	ro, ri := no, ni // values follow the out keys, or the rows
	pw := uint64(0)  // bytes a perm
	if rows {
		hdr = rowsHdr
		if len(b) < rowsHdr {
			return m, fig, malformed("no header")
		}
		ro, ri, pw = getU64(b[32:])&(1<<56-1), getU64(b[40:]), getU64(b[32:])>>56
		if same {
			ri = 0
		}
		if pw < 1 || pw > 4 {
			return m, fig, malformed("perms of a width out of range")
		}
	}
	rest := uint64(len(b)) - hdr
	switch {
	case rows != wantRows:
		return m, fig, malformed(rowsWord(rows))
	case no > maxListKeys || ni > maxListKeys || ro > maxListKeys || ri > maxListKeys:
		return m, fig, malformed("key counts out of range")
	case ol > rest || il > rest-ol || same && il != 0:
		return m, fig, malformed("list lengths do not fit")
	}
	ps := (hdr + ol + il + 7) &^ 7
	var pl uint64
	if rows {
		pl = (pw*(ro+ri) + 7) &^ 7
	}
	vs := ps + pl
	if vs > uint64(len(b)) || es > 0 && ro > (uint64(len(b))-vs)/uint64(es) || uint64(len(b))-vs != ro*uint64(es) {
		return m, fig, malformed("the values do not match the out keys")
	}
	start := time.Now()
	dec := decoders.Get().(*IndexDecoder)
	defer decoders.Put(dec)
	if m.Out, err = dec.DecodeList(b[hdr:hdr+ol], int(no), from); err != nil {
		return m, fig, err
	}
	m.In = m.Out
	if !same {
		if m.In, err = dec.DecodeList(b[hdr+ol:hdr+ol+il], int(ni), from); err != nil {
			return m, fig, err
		}
	}
	if rows { // each row's key from its set
		setOut, setIn := m.Out, m.In
		if m.Out, err = setRows(setOut, b[ps:ps+pw*ro], int(pw), from); err == nil {
			m.In = m.Out
			if !same {
				m.In, err = setRows(setIn, b[ps+pw*ro:ps+pw*(ro+ri)], int(pw), from)
			}
		}
		if err != nil {
			return m, fig, err
		}
	}
	m.Vals = b[vs:]
	k := int(no + ni)
	return m, MsgFigures{Keys: k, Raw: 8 * k, Wire: int(ol + il), Packed: true, Took: time.Since(start)}, nil
}

// setRows is the rows a compressed rows message describes: row r holds set[perm[r]], perm
// read from p (w bytes a row, little-endian). A position outside the set is corrupt input,
// refused naming the sender.
func setRows(set []uint64, p []byte, w, from int) ([]uint64, error) {
	rows := make([]uint64, len(p)/w)
	for r := range rows {
		var k uint64
		for i := w - 1; i >= 0; i-- {
			k = k<<8 | uint64(p[w*r+i])
		}
		if k >= uint64(len(set)) {
			return nil, kx.Errorf(kx.CodeInternal, "rank %d sent a malformed compressed config message: row %d is key %d of a set of %d",
				kx.RankRef(from), r, k, len(set))
		}
		rows[r] = set[k]
	}
	return rows, nil
}

// PermWidth is the bytes a perm entry takes for sets of up to n keys (1..4).
func PermWidth(n int) int {
	w := 1
	for w < 4 && n > 1<<(8*w) {
		w++
	}
	return w
}

// packPerms writes perms w bytes each, little-endian, padded with zeros to a multiple of 8.
func packPerms(perms []int32, w int) []byte {
	b := make([]byte, (w*len(perms)+7)&^7)
	for r, v := range perms {
		for i := 0; i < w; i++ {
			b[w*r+i] = byte(v >> (8 * i))
		}
	}
	return b
}

// ConfigListStart is where the first index list starts in a compressed config message b: after
// the longer header of a layer-0 rows message (msgRows), or the plain compressed one.
func ConfigListStart(b []byte) int {
	if getU64(b)&msgRows != 0 {
		return rowsHdr
	}
	return packedHdr
}
