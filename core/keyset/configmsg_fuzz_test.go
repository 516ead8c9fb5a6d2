package keyset

import (
	"bytes"
	"kylix/core/kx"
	"kylix/internal/fuzzcheck"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// decodedPerByte bounds what a config message may make the decoder allocate per byte received.
// A list holds at most codecMaxExpansion keys a byte (lz4's expansion, which honest dense lists
// approach), each costing 16 bytes (the key or its row, and the sort's or the partition's
// scratch); a repeat bitmap pays for at most repeatsPerByte rows a byte, 8 bytes each, and a
// bit of scratch a row; twice that for size classes.
const decodedPerByte = codecMaxExpansion*16 + 2*repeatsPerByte*8

// FuzzConfigMsg: whatever a peer sends as a config message (sorted keys or layer-0 rows, plain
// or compressed, with 0, 4 or 8 bytes of values a key), ParseConfigMsg returns an error naming
// the sender, or lists whose values match them; what parses re-encodes to lists that parse the
// same (a plain message to the very bytes); the received bytes are never written; a decode
// allocates in proportion to the bytes, not to the counts they claim; and a later decode leaves
// an earlier one's lists alone (the decoders are pooled).
func FuzzConfigMsg(f *testing.F) {
	r := rand.New(rand.NewPCG(81, 82))
	keys := hashedKeys(codecCases()["stride 300"])[:500]
	for _, pack := range []bool{false, true} {
		f.Add(bytes.Join(BuildConfigMsg(keys, keys[:100], false, false, make([]byte, 4*len(keys)), pack).Bufs, nil), uint8(1), false)
		f.Add(bytes.Join(BuildConfigMsg(keys, nil, true, false, nil, pack).Bufs, nil), uint8(0), false)
		lists, _ := topLists(f, r, 2, 150, 4, 1)
		so, si := setOrdered(lists[0], 4), setOrdered(lists[1], 4)
		f.Add(bytes.Join(BuildConfigMsg(so, si, false, true, make([]byte, 8*len(so)), pack).Bufs, nil), uint8(2), true)
		f.Add(bytes.Join(BuildConfigMsg(so, nil, true, true, nil, pack).Bufs, nil), uint8(0), true)
	}
	f.Add([]byte{}, uint8(0), false)
	f.Add(bytes.Repeat([]byte{0xff}, 64), uint8(0), true)
	f.Fuzz(func(t *testing.T, b []byte, esSel uint8, rows bool) {
		es := []int{0, 4, 8}[esSel%3]
		d0 := 0
		if rows {
			d0 = 4
		}
		sent := slices.Clone(b)
		var m ConfigLists
		var err error
		fuzzcheck.Bounded(t, "ParseConfigMsg", len(b), decodedPerByte, func() { m, _, err = ParseConfigMsg(b, es, 7, d0) })
		if !bytes.Equal(b, sent) {
			t.Fatal("parsing wrote into the received message")
		}
		if err != nil {
			if kx.CodeOf(err) != kx.CodeInternal || !strings.Contains(err.Error(), "rank 7") {
				t.Fatalf("error with code %v not naming the sender: %v", kx.CodeOf(err), err)
			}
			return
		}
		if len(m.Vals) != es*len(m.Out) {
			t.Fatalf("%d bytes of values for %d keys of %d bytes", len(m.Vals), len(m.Out), es)
		}
		packed := getU64(b)&msgCompressed != 0
		same := getU64(b[8:]) == sameAsOut
		out, in := slices.Clone(m.Out), slices.Clone(m.In)
		var vals []byte
		if es > 0 {
			vals = m.Vals
		}
		again := bytes.Join(BuildConfigMsg(m.Out, m.In, same, rows, vals, packed).Bufs, nil)
		if !packed && !bytes.Equal(again, b) {
			t.Fatalf("a plain message re-encodes to other bytes:\n got %x\nwant %x", again, b)
		}
		m2, _, err := ParseConfigMsg(again, es, 7, d0)
		if err != nil {
			t.Fatalf("the re-encoded message does not parse: %v", err)
		}
		if !slices.Equal(m2.Out, out) || !slices.Equal(m2.In, in) || !bytes.Equal(m2.Vals, vals) && es > 0 {
			t.Fatalf("decode(encode(decode(b))) differs: %d/%d out, %d/%d in", len(m2.Out), len(out), len(m2.In), len(in))
		}
		if !slices.Equal(m.Out, out) || !slices.Equal(m.In, in) {
			t.Fatal("a later decode wrote into an earlier one's lists")
		}
	})
}
