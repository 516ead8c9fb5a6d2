package keyset

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// allocBoundK is what a decode may allocate per byte received, for messages whose keys are few:
// a repeat bitmap pays for at most repeatsPerByte (8) rows a byte, each an 8-byte row, and a
// bit of bitmap scratch a row: 65 bytes a byte; twice that leaves room for size classes. (Keys
// are held to lz4's expansion, codecMaxExpansion a byte, which honest dense lists approach:
// decodedPerByte in the fuzz targets.)
const allocBoundK = 128

// allocPerRun is the bytes f allocates per call, averaged over runs calls (TotalAlloc delta):
// averaging hides the runtime's per-span accounting of small objects.
func allocPerRun(runs int, f func()) uint64 {
	f() // pooled decoders and scratch warm
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&b)
	return (b.TotalAlloc - a.TotalAlloc) / uint64(runs)
}

// memberKey is a hashed key in layer-0 member me's range at degree d0.
func memberKey(d0, me int) uint64 {
	for x := uint64(0); ; x++ {
		if k := Hash(x); layer0Bucket(k, d0, subBits(d0))>>subBits(d0) == me {
			return k
		}
	}
}

// rowsMsg forges a compressed layer-0 rows message (in = out): one distinct key k in nrows
// rows, every row after the first repeating it, the repeat bitmap stored lz4 or raw.
func rowsMsg(t testing.TB, k uint64, nrows int, useLZ4 bool) []byte {
	var enc IndexEncoder
	list := enc.AppendList(nil, []uint64{k})
	bm := make([]byte, (nrows+7)/8)
	for r := 1; r < nrows; r++ {
		bm[r/8] |= 1 << (r % 8)
	}
	mode, payload := codecModeRaw, bm
	if useLZ4 {
		payload = make([]byte, lz4.CompressBlockBound(len(bm)))
		n, err := lz4.CompressBlock(bm, payload, nil)
		if err != nil || n == 0 {
			t.Fatalf("lz4 of the bitmap: %d, %v", n, err)
		}
		mode, payload = codecModeLZ4, payload[:n]
	}
	reps := append([]byte{byte(mode<<4 | 1), 0, 0, 0, 0}, payload...)
	binary.LittleEndian.PutUint32(reps[1:], uint32(len(payload)))
	h := make([]byte, rowsHdr)
	putU64(h, 1|msgCompressed|msgRows)
	putU64(h[8:], sameAsOut)
	putU64(h[16:], uint64(len(list)))
	putU64(h[32:], uint64(nrows))
	putU64(h[48:], uint64(len(reps)))
	b := append(append(h, list...), reps...)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

// TestLayer0RowsAmplification: a layer-0 message claiming two million rows of one key behind a
// kilobyte of lz4 bitmap made the decoder allocate 16 MiB (16,000 bytes a byte received). It is
// refused, naming the repeats, and allocates at most allocBoundK bytes a byte; the most rows a
// bitmap may pay for (a raw one: 8 a byte) decode, within the same bound; an honest sender's
// heavy repeats (the bitmap then goes raw) decode to its rows, within it too.
func TestLayer0RowsAmplification(t *testing.T) {
	const d0, me = 4, 1
	k := memberKey(d0, me)
	check := func(what string, b []byte, wantRows int, wantErr string) {
		t.Helper()
		var m ConfigLists
		var err error
		got := allocPerRun(20, func() { m, _, err = ParseConfigMsg(b, 0, 7, d0) })
		if limit := allocBoundK * uint64(len(b)); got > limit {
			t.Errorf("%s: %d bytes allocated for a message of %d bytes (bound %d: %d a byte)", what, got, len(b), limit, allocBoundK)
		}
		switch {
		case wantErr != "":
			if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), "rank 7") {
				t.Errorf("%s: error %v, want one naming rank 7 and %q", what, err, wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", what, err)
		case len(m.Out) != wantRows || slices.ContainsFunc(m.Out, func(x uint64) bool { return x != k }):
			t.Errorf("%s: %d rows decoded, want %d rows of key %#x", what, len(m.Out), wantRows, k)
		}
	}
	amp := rowsMsg(t, k, 2<<20, true)
	if len(amp) > 16<<10 {
		t.Fatalf("the forged message takes %d bytes: not an amplification", len(amp))
	}
	check("2M rows behind an lz4 bitmap", amp, 0, "repeated rows in a repeat bitmap")
	check("64K rows, raw bitmap", rowsMsg(t, k, 1<<16, false), 1<<16, "")

	rows := make([]uint64, 1<<20)
	for i := range rows {
		rows[i] = k
	}
	honest := bytes.Join(BuildConfigMsg(rows, nil, true, true, nil, true).Bufs, nil)
	check("an honest sender's 1M repeats", honest, len(rows), "")
}

// TestIndexListAmplification: a list whose chunk claims more keys than lz4 can expand its
// payload to made the decoder allocate room for up to 32K keys (256 KiB) before reading the
// chunk. It is refused before allocating.
func TestIndexListAmplification(t *testing.T) {
	b := make([]byte, codecHdr+16) // one lz4 chunk of 16 bytes claiming codecChunk keys
	b[0] = codecModeLZ4<<4 | 1
	binary.LittleEndian.PutUint32(b[1:], 16)
	n := min(codecChunk, codecMaxExpansion*len(b))
	var dec IndexDecoder
	var err error
	got := allocPerRun(20, func() { _, err = dec.DecodeList(b, n, 5) })
	if err == nil || !strings.Contains(err.Error(), "beyond lz4's expansion") || !strings.Contains(err.Error(), "rank 5") {
		t.Errorf("error %v, want one naming rank 5 and lz4's expansion", err)
	}
	if limit := allocBoundK * uint64(len(b)); got > limit {
		t.Errorf("%d bytes allocated for %d bytes (bound %d)", got, len(b), limit)
	}
	// The same through a config message (sorted keys, compressed).
	h := make([]byte, packedHdr)
	putU64(h, uint64(n)|msgCompressed)
	putU64(h[8:], sameAsOut)
	putU64(h[16:], uint64(len(b)))
	msg := append(h, b...)
	for len(msg)%8 != 0 {
		msg = append(msg, 0)
	}
	got = allocPerRun(20, func() { _, _, err = ParseConfigMsg(msg, 0, 5, 0) })
	if err == nil || !strings.Contains(err.Error(), "rank 5") {
		t.Errorf("config message: error %v, want one naming rank 5", err)
	}
	if limit := allocBoundK * uint64(len(msg)); got > limit {
		t.Errorf("config message: %d bytes allocated for %d bytes (bound %d)", got, len(msg), limit)
	}
}
