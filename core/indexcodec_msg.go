package core

import (
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
// Every word is 8 bytes, little-endian. The flag travels in each message, so every message
// is decided on its own (compress=auto) and the receiver needs no agreement to read it. Values
// start on an 8-byte boundary of the payload, as in plain messages, so the combiner reads them
// in place.

const (
	// sameAsOut in a config message's in-key count says the in keys are the out keys (sent once).
	sameAsOut     = ^uint64(0)
	msgCompressed = uint64(1) << 62
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
// keys) and vals, compressed when pack is set. The buffers it returns are its own (or the
// caller's keys and values), so several messages may be in flight at once.
func buildConfigMsg(out, in []uint64, same bool, vals []byte, pack bool) configMsg {
	ni := uint64(len(in))
	keys := len(out) + len(in)
	if same {
		ni, keys = sameAsOut, len(out)
	}
	raw := 8 * keys
	if !pack {
		h := make([]byte, plainHdr)
		putU64(h, uint64(len(out)))
		putU64(h[8:], ni)
		bufs := [][]byte{h, keyBytes(out)}
		if !same {
			bufs = append(bufs, keyBytes(in))
		}
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
	putU64(b, uint64(len(out))|msgCompressed)
	putU64(b[8:], ni)
	putU64(b[16:], uint64(ol))
	putU64(b[24:], uint64(il))
	bufs := [][]byte{b}
	if vals != nil {
		bufs = append(bufs, vals)
	}
	return configMsg{bufs, msgFigures{keys: keys, raw: raw, wire: ol + il, packed: true, took: time.Since(start)}}
}

// parseConfigMsg splits a config message from rank `from`: out keys, in keys, then values (es
// bytes per out key, none when es == 0). Plain keys are views of b; decoded ones are new slices.
func parseConfigMsg(b []byte, es, from int) (out, in []uint64, vals []byte, fig msgFigures, err error) {
	if len(b) >= 8 && getU64(b)&msgCompressed != 0 {
		return parsePackedMsg(b, es, from)
	}
	if len(b) < plainHdr {
		return nil, nil, nil, fig, Errorf(CodeInternal, "rank %d sent a config message of %d bytes", RankRef(from), len(b))
	}
	no, ni := getU64(b), getU64(b[8:])
	same := ni == sameAsOut
	if same {
		ni = 0
	}
	if no > uint64(len(b)) || ni > uint64(len(b)) || uint64(len(b)) != plainHdr+8*no+8*ni+no*uint64(es) {
		return nil, nil, nil, fig, Errorf(CodeInternal, "rank %d sent a malformed config message (%d out, %d in keys in %d bytes)", RankRef(from), no, ni, len(b))
	}
	ko := plainHdr + 8*no
	ki := ko + 8*ni
	out = bytesKeys(b[plainHdr:ko])
	in = out
	if !same {
		in = bytesKeys(b[ko:ki])
	}
	k := int(no + ni)
	return out, in, b[ki:], msgFigures{keys: k, raw: 8 * k, wire: 8 * k}, nil
}

// parsePackedMsg is parseConfigMsg for a compressed message.
func parsePackedMsg(b []byte, es, from int) (out, in []uint64, vals []byte, fig msgFigures, err error) {
	malformed := func(what string) error {
		return Errorf(CodeInternal, "rank %d sent a malformed compressed config message of %d bytes: %s", RankRef(from), len(b), what)
	}
	if len(b) < packedHdr {
		return nil, nil, nil, fig, malformed("no header")
	}
	no, ni := getU64(b)&^msgCompressed, getU64(b[8:])
	ol, il := getU64(b[16:]), getU64(b[24:])
	same := ni == sameAsOut
	if same {
		ni = 0
	}
	rest := uint64(len(b) - packedHdr)
	switch {
	case no > maxListKeys || ni > maxListKeys:
		return nil, nil, nil, fig, malformed("key counts out of range")
	case ol > rest || il > rest-ol || same && il != 0:
		return nil, nil, nil, fig, malformed("list lengths do not fit")
	}
	vs := (packedHdr + ol + il + 7) &^ 7
	if vs > uint64(len(b)) || es > 0 && no > (uint64(len(b))-vs)/uint64(es) || uint64(len(b))-vs != no*uint64(es) {
		return nil, nil, nil, fig, malformed("the values do not match the out keys")
	}
	start := time.Now()
	dec := decoders.Get().(*indexDecoder)
	defer decoders.Put(dec)
	if out, err = dec.decodeList(b[packedHdr:packedHdr+ol], int(no), from); err != nil {
		return nil, nil, nil, fig, err
	}
	in = out
	if !same {
		if in, err = dec.decodeList(b[packedHdr+ol:packedHdr+ol+il], int(ni), from); err != nil {
			return nil, nil, nil, fig, err
		}
	}
	k := int(no + ni)
	return out, in, b[vs:], msgFigures{keys: k, raw: 8 * k, wire: int(ol + il), packed: true, took: time.Since(start)}, nil
}
