package core

import (
	"sync"
	"time"
)

// Config messages: the index lists a node sends a member of its group at one layer, plain or
// compressed (indexcodec.go), with the values of config_reduce behind them.
//
// Plain:       [out count][in count, or sameAsOut][out keys][in keys][perms][values]
// Compressed:  [out count | msgCompressed][in count, or sameAsOut][out bytes][in bytes]
//              [out list][in list][zeros to a multiple of 8][perms][values]
//
// perms, only at layer 0 of a plan with layers (msgPerm set in the out count): the out keys'
// rows in the sender's top-bucket order (packtop.go), 4 bytes each, then the in keys' (unless
// sameAsOut), then zeros to a multiple of 8.
//
// Every word is 8 bytes, little-endian. The flag travels in each message, so every message
// is decided on its own (compress=auto) and the receiver needs no agreement to read it. Values
// start on an 8-byte boundary of the payload, as in plain messages, so the combiner reads them
// in place.

const (
	// sameAsOut in a config message's in-key count says the in keys are the out keys (sent once).
	sameAsOut     = ^uint64(0)
	msgCompressed = uint64(1) << 62
	msgPerm       = uint64(1) << 61
	plainHdr      = 16
	packedHdr     = 32
	// maxListKeys bounds a list's key count before any arithmetic on it (plans index keys with
	// int32; a larger count is corrupt).
	maxListKeys = 1 << 40
)

var (
	encoders = sync.Pool{New: func() any { return new(indexEncoder) }}
	decoders = sync.Pool{New: func() any { return new(indexDecoder) }}
)

// configMsg is one config message ready to send, with its figures.
type configMsg struct {
	bufs [][]byte
	msgFigures
}

// msgFigures describe the index lists of one config message, for the statistics and the
// codec's running estimates: keys, their bytes before (raw) and after (wire) compression, and
// the time encoding or decoding took (packed messages only).
type msgFigures struct {
	keys, raw, wire int
	packed          bool
	took            time.Duration
}

// buildConfigMsg makes the message carrying out, in (ignored when same: the in keys are the out
// keys), their perms (withPerm) and vals, compressed when pack is set. The buffers
// it returns are its own (or the caller's keys and values), so several messages may be in
// flight at once.
func buildConfigMsg(out, in []uint64, same bool, withPerm bool, outPerm, inPerm []int32, vals []byte, pack bool) configMsg {
	ni := uint64(len(in))
	keys := len(out) + len(in)
	if same {
		ni, keys = sameAsOut, len(out)
	}
	flags := uint64(0)
	var perms [][]byte // sent as they are, then zeros to a multiple of 8
	if withPerm {
		flags = msgPerm
		np := len(outPerm)
		perms = append(perms, permBytes(outPerm))
		if !same {
			np += len(inPerm)
			perms = append(perms, permBytes(inPerm))
		}
		if np%2 != 0 {
			perms = append(perms, make([]byte, 4))
		}
	}
	raw := 8 * keys
	if !pack {
		h := make([]byte, plainHdr)
		putU64(h, uint64(len(out))|flags)
		putU64(h[8:], ni)
		bufs := [][]byte{h, keyBytes(out)}
		if !same {
			bufs = append(bufs, keyBytes(in))
		}
		bufs = append(bufs, perms...)
		if vals != nil {
			bufs = append(bufs, vals)
		}
		return configMsg{bufs, msgFigures{keys: keys, raw: raw, wire: raw}}
	}
	start := time.Now()
	enc := encoders.Get().(*indexEncoder)
	defer encoders.Put(enc)
	b := make([]byte, packedHdr, packedHdr+raw/4+64)
	b = enc.appendList(b, out)
	ol := len(b) - packedHdr
	if !same {
		b = enc.appendList(b, in)
	}
	il := len(b) - packedHdr - ol
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	putU64(b, uint64(len(out))|msgCompressed|flags)
	putU64(b[8:], ni)
	putU64(b[16:], uint64(ol))
	putU64(b[24:], uint64(il))
	bufs := append([][]byte{b}, perms...)
	if vals != nil {
		bufs = append(bufs, vals)
	}
	return configMsg{bufs, msgFigures{keys: keys, raw: raw, wire: ol + il, packed: true, took: time.Since(start)}}
}

// configLists is what a config message carries: the key lists, their perms (nil unless the
// sender set them: layer 0 of a plan with layers) and the values (es bytes per out key).
type configLists struct {
	out, in         []uint64
	outPerm, inPerm []int32
	vals            []byte
}

// parseConfigMsg splits a config message from rank `from`: out keys, in keys, perms, then
// values (es bytes per out key, none when es == 0). wantPerm says whether perms must be there.
// Plain keys are views of b; decoded ones and perms are new slices.
func parseConfigMsg(b []byte, es, from int, wantPerm bool) (m configLists, fig msgFigures, err error) {
	if len(b) >= 8 && getU64(b)&msgCompressed != 0 {
		return parsePackedMsg(b, es, from, wantPerm)
	}
	if len(b) < plainHdr {
		return m, fig, Errorf(CodeInternal, "rank %d sent a config message of %d bytes", RankRef(from), len(b))
	}
	no, ni := getU64(b), getU64(b[8:])
	hasPerm := no&msgPerm != 0
	no &^= msgPerm
	same := ni == sameAsOut
	if same {
		ni = 0
	}
	var pl uint64
	if hasPerm && no <= maxListKeys && ni <= maxListKeys {
		pl = permLen(no, ni)
	}
	if hasPerm != wantPerm || no > uint64(len(b)) || ni > uint64(len(b)) || uint64(len(b)) != plainHdr+8*no+8*ni+pl+no*uint64(es) {
		return m, fig, Errorf(CodeInternal, "rank %d sent a malformed config message (%d out, %d in keys in %d bytes)", RankRef(from), no, ni, len(b))
	}
	ko := plainHdr + 8*no
	ki := ko + 8*ni
	m.out = bytesKeys(b[plainHdr:ko])
	m.in = m.out
	if !same {
		m.in = bytesKeys(b[ko:ki])
	}
	m.readPerms(b[ki:ki+pl], hasPerm, same)
	m.vals = b[ki+pl:]
	k := int(no + ni)
	return m, msgFigures{keys: k, raw: 8 * k, wire: 8 * k}, nil
}

// permLen is the bytes of the perms of no out and ni in keys, padded to 8.
func permLen(no, ni uint64) uint64 { return (4*(no+ni) + 7) &^ 7 }

// readPerms takes the perms out of their region p (when the message has them); packedMap
// checks them as it uses them.
func (m *configLists) readPerms(p []byte, has, same bool) {
	if !has {
		return
	}
	m.outPerm = bytesPerm(p[:4*len(m.out)])
	m.inPerm = m.outPerm
	if !same {
		m.inPerm = bytesPerm(p[4*len(m.out) : 4*(len(m.out)+len(m.in))])
	}
}

// parsePackedMsg is parseConfigMsg for a compressed message.
func parsePackedMsg(b []byte, es, from int, wantPerm bool) (m configLists, fig msgFigures, err error) {
	malformed := func(what string) error {
		return Errorf(CodeInternal, "rank %d sent a malformed compressed config message of %d bytes: %s", RankRef(from), len(b), what)
	}
	if len(b) < packedHdr {
		return m, fig, malformed("no header")
	}
	no, ni := getU64(b)&^(msgCompressed|msgPerm), getU64(b[8:])
	hasPerm := getU64(b)&msgPerm != 0
	ol, il := getU64(b[16:]), getU64(b[24:])
	same := ni == sameAsOut
	if same {
		ni = 0
	}
	rest := uint64(len(b) - packedHdr)
	switch {
	case no > maxListKeys || ni > maxListKeys:
		return m, fig, malformed("key counts out of range")
	case ol > rest || il > rest-ol || same && il != 0:
		return m, fig, malformed("list lengths do not fit")
	case hasPerm != wantPerm:
		return m, fig, malformed("perms missing or unexpected")
	}
	ps := (packedHdr + ol + il + 7) &^ 7
	var pl uint64
	if hasPerm {
		pl = permLen(no, ni)
	}
	vs := ps + pl
	if vs > uint64(len(b)) || es > 0 && no > (uint64(len(b))-vs)/uint64(es) || uint64(len(b))-vs != no*uint64(es) {
		return m, fig, malformed("the values do not match the out keys")
	}
	start := time.Now()
	dec := decoders.Get().(*indexDecoder)
	defer decoders.Put(dec)
	if m.out, err = dec.decodeList(b[packedHdr:packedHdr+ol], int(no), from); err != nil {
		return m, fig, err
	}
	m.in = m.out
	if !same {
		if m.in, err = dec.decodeList(b[packedHdr+ol:packedHdr+ol+il], int(ni), from); err != nil {
			return m, fig, err
		}
	}
	m.readPerms(b[ps:vs], hasPerm, same)
	m.vals = b[vs:]
	k := int(no + ni)
	return m, msgFigures{keys: k, raw: 8 * k, wire: int(ol + il), packed: true, took: time.Since(start)}, nil
}
