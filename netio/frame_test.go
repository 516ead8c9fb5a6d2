package netio

import (
	"bytes"
	"fmt"
	"kylix/core/kx"
	"strings"
	"testing"
)

func sampleHeader() Header {
	return Header{Type: FrameData, Layer: 3, Phase: kx.PhaseUp, Job: 0x0123456789abcdef, Seq: 1<<40 + 7,
		FP:  kx.Fingerprint{Kind: kx.KindReduce, Dtype: uint8(kx.F64), Op: uint16(kx.Max), Width: -5, Plan: 0xdeadbeef, Count: -1 << 50},
		Src: 4242, Len: 1 << 20}
}

func TestHeaderLayout(t *testing.T) {
	h := sampleHeader()
	var b [HeaderSize]byte
	EncodeHeader(b[:], &h)
	want := map[int]byte{0: 'K', 1: 'Y', 2: 'L', 3: 'X', 4: ProtocolVersion, 5: 1, 6: 3, 7: byte(kx.PhaseUp),
		8: 0xef, 15: 0x01, 16: 7, 21: 1, 24: byte(kx.KindReduce), 25: byte(kx.F64), 26: byte(kx.Max),
		32: 0xef, 35: 0xde, 44: 4242 & 0xff, 45: 4242 >> 8, 48: 0, 50: 0x10}
	for off, v := range want {
		if b[off] != v {
			t.Errorf("byte %d = %#x, want %#x", off, b[off], v)
		}
	}
	got, err := DecodeHeader(b[:], MaxPayload)
	if err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Fatalf("round trip: got %+v, want %+v", got, h)
	}
}

func TestDecodeHeaderRejects(t *testing.T) {
	h := sampleHeader()
	cases := []struct {
		name  string
		edit  func(b []byte)
		bound uint64
		code  kx.Code
		msg   string
	}{
		{"magic", func(b []byte) { b[0] = 'X' }, MaxPayload, kx.CodeNet, "magic"},
		{"version", func(b []byte) { b[4] = ProtocolVersion + 1 }, MaxPayload, kx.CodeAuth, fmt.Sprintf("version %d", ProtocolVersion+1)},
		{"type0", func(b []byte) { b[5] = 0 }, MaxPayload, kx.CodeNet, "frame type 0"},
		{"type6", func(b []byte) { b[5] = 6 }, MaxPayload, kx.CodeNet, "frame type 6"},
		{"bound", func(b []byte) {}, 1<<20 - 1, kx.CodeNet, "exceeds"},
		{"short", nil, MaxPayload, kx.CodeNet, "shorter"},
	}
	for _, c := range cases {
		b := make([]byte, HeaderSize)
		EncodeHeader(b, &h)
		if c.edit == nil {
			b = b[:HeaderSize-1]
		} else {
			c.edit(b)
		}
		_, err := DecodeHeader(b, c.bound)
		if kx.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v (code %v), want code %v containing %q", c.name, err, kx.CodeOf(err), c.code, c.msg)
		}
	}
	b := make([]byte, HeaderSize)
	EncodeHeader(b, &h)
	if _, err := DecodeHeader(b, 1<<20); err != nil {
		t.Errorf("payload equal to the bound refused: %v", err)
	}
}

func TestAbortPayload(t *testing.T) {
	code, named, msg := decodeAbort(encodeAbort(kx.CodeMismatch, 1, "rank 1 rejected"))
	if code != kx.CodeMismatch || named != 1 || msg != "rank 1 rejected" {
		t.Fatalf("got %v %d %q", code, named, msg)
	}
	if _, named, _ := decodeAbort(encodeAbort(kx.CodeArg, -1, "no rank")); named != -1 {
		t.Errorf("an abort naming no rank names %d", named)
	}
	if code, _, _ := decodeAbort([]byte{0, 0, 0, 0, 0}); code != kx.CodeInternal {
		t.Errorf("code OK in an abort should become internal, got %v", code)
	}
	if code, named, _ := decodeAbort(nil); code != kx.CodeInternal || named != -1 {
		t.Errorf("empty abort: got %v %d", code, named)
	}
	if b := encodeAbort(kx.CodePeer, 0, strings.Repeat("x", 2*maxAbortPayload)); len(b) != maxAbortPayload {
		t.Errorf("long abort message not cut to the bound: %d", len(b))
	}
}

func FuzzDecodeHeader(f *testing.F) {
	h := sampleHeader()
	b := make([]byte, HeaderSize)
	EncodeHeader(b, &h)
	f.Add(b)
	for _, typ := range []FrameType{FrameAbort, FrameBye, 9} {
		h.Type = typ
		b := make([]byte, HeaderSize)
		EncodeHeader(b, &h)
		f.Add(b)
	}
	f.Add([]byte("KYLX"))
	f.Add(bytes.Repeat([]byte{0xff}, HeaderSize+3))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := DecodeHeader(data, 1<<30)
		if err != nil {
			if kx.CodeOf(err) != kx.CodeNet && kx.CodeOf(err) != kx.CodeAuth {
				t.Fatalf("error with code %v: %v", kx.CodeOf(err), err)
			}
			return
		}
		if h.Len > 1<<30 {
			t.Fatalf("accepted payload %d over the bound", h.Len)
		}
		out := make([]byte, HeaderSize)
		EncodeHeader(out, &h)
		if !bytes.Equal(out, data[:HeaderSize]) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", out, data[:HeaderSize])
		}
		h2, err := DecodeHeader(out, 1<<30)
		if err != nil || h2 != h {
			t.Fatalf("second decode: %+v %v, want %+v", h2, err, h)
		}
	})
}
