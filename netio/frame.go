// Package netio moves kylix messages between ranks: the frame codec, the links to each peer (a
// socket, a shared-memory ring), the TCP and in-memory transports, and Connect, the bootstrap
// behind kylix_init. The receive side both transports share is netio/mailbox; the connections
// between every pair of ranks (handshake, shared-memory pairing, socket options) are built by
// netio/mesh; the rendezvous client and server are netio/rendezvous.
package netio

import (
	"encoding/binary"
	"kylix/core/kx"
	"kylix/netio/mesh"
	"math"
)

// Wire constants (docs/ARCHITECTURE.md, "Wire format").
const (
	HeaderSize      = 56 // bytes of a frame header
	ProtocolVersion = mesh.ProtocolVersion
)

// Magic opens every frame.
var Magic = [4]byte{'K', 'Y', 'L', 'X'}

// FrameType says what a frame carries.
type FrameType uint8

const (
	FrameData  FrameType = 1 // a message for (seq, layer, phase)
	FrameAbort FrameType = 2 // collective seq failed: 1 byte code, 4 bytes named rank + 1, the message
	FrameBye   FrameType = 3 // the sender finalized; nothing follows
	// FrameHeartbeat says the sender is alive (liveness.go); Seq is the collective it is in
	// (or was last in). Nothing follows.
	FrameHeartbeat FrameType = 4
	// FrameDataRef is a data frame whose payload stays in the sender's memory (shared memory
	// only: shmref_linux.go): where it is, then an 8-byte trailer.
	FrameDataRef FrameType = 5
)

func (t FrameType) String() string {
	switch t {
	case FrameData:
		return "data"
	case FrameAbort:
		return "abort"
	case FrameBye:
		return "bye"
	case FrameHeartbeat:
		return "heartbeat"
	case FrameDataRef:
		return "data by reference"
	}
	return "frame?"
}

// MaxPayload bounds a single data frame (kx.MaxPayload).
const MaxPayload = kx.MaxPayload

// maxAbortPayload bounds abort frames (1 byte code + message).
const maxAbortPayload = 64 << 10

// Header is a decoded frame header.
type Header struct {
	Type  FrameType
	Layer uint8
	Phase kx.Phase
	Job   uint64
	Seq   uint64
	FP    kx.Fingerprint
	Src   int    // source rank (u32 on the wire)
	Len   uint64 // payload bytes that follow the header
}

// raceBit marks a racing copy in the phase byte of a data frame (phases are < 128; the mailbox
// keys racing messages the same way).
const raceBit kx.Phase = 0x80

// phaseByte is the phase byte a message with tag travels with.
func phaseByte(tag kx.Tag) kx.Phase {
	p := tag.Phase
	if tag.Race {
		p |= raceBit
	}
	return p
}

// tag is the message tag a data frame carries.
func (h *Header) tag() kx.Tag {
	return kx.Tag{Seq: h.Seq, Layer: h.Layer, Phase: h.Phase &^ raceBit, Race: h.Phase&raceBit != 0, FP: h.FP}
}

// EncodeHeader writes h into buf[:HeaderSize] (the magic and version are implied). buf must hold
// at least HeaderSize bytes.
func EncodeHeader(buf []byte, h *Header) {
	_ = buf[HeaderSize-1]
	le := binary.LittleEndian
	copy(buf[0:4], Magic[:])
	buf[4] = ProtocolVersion
	buf[5] = byte(h.Type)
	buf[6] = h.Layer
	buf[7] = byte(h.Phase)
	le.PutUint64(buf[8:], h.Job)
	le.PutUint64(buf[16:], h.Seq)
	buf[24] = byte(h.FP.Kind)
	buf[25] = h.FP.Dtype
	le.PutUint16(buf[26:], h.FP.Op)
	le.PutUint32(buf[28:], uint32(h.FP.Width))
	le.PutUint32(buf[32:], h.FP.Plan)
	le.PutUint64(buf[36:], uint64(h.FP.Count))
	le.PutUint32(buf[44:], uint32(h.Src))
	le.PutUint64(buf[48:], h.Len)
}

// DecodeHeader parses buf[:HeaderSize]. It refuses a wrong magic, an unknown frame type or a
// payload above maxPayload (CodeNet) and another protocol version (CodeAuth). The job id is not
// checked here: the connection knows which job it belongs to.
func DecodeHeader(buf []byte, maxPayload uint64) (Header, error) {
	if len(buf) < HeaderSize {
		return Header{}, kx.Errorf(kx.CodeNet, "frame: header of %d bytes is shorter than %d", len(buf), HeaderSize)
	}
	if [4]byte(buf[0:4]) != Magic {
		return Header{}, kx.Errorf(kx.CodeNet, "frame: bad magic %q (not a kylix stream)", buf[0:4])
	}
	if buf[4] != ProtocolVersion {
		return Header{}, kx.Errorf(kx.CodeAuth, "frame: protocol version %d, this rank speaks %d", buf[4], ProtocolVersion)
	}
	le := binary.LittleEndian
	h := Header{
		Type:  FrameType(buf[5]),
		Layer: buf[6],
		Phase: kx.Phase(buf[7]),
		Job:   le.Uint64(buf[8:]),
		Seq:   le.Uint64(buf[16:]),
		FP: kx.Fingerprint{
			Kind:  kx.Kind(buf[24]),
			Dtype: buf[25],
			Op:    le.Uint16(buf[26:]),
			Width: int32(le.Uint32(buf[28:])),
			Plan:  le.Uint32(buf[32:]),
			Count: int64(le.Uint64(buf[36:])),
		},
		Src: int(le.Uint32(buf[44:])),
		Len: le.Uint64(buf[48:]),
	}
	switch h.Type {
	case FrameData, FrameAbort, FrameBye, FrameHeartbeat, FrameDataRef:
	default:
		return Header{}, kx.Errorf(kx.CodeNet, "frame: unknown frame type %d", buf[5])
	}
	if h.Len > maxPayload {
		return Header{}, kx.Errorf(kx.CodeNet, "frame: %s payload of %d bytes exceeds the bound of %d", h.Type, h.Len, maxPayload)
	}
	return h, nil
}

// encodeAbort writes an abort frame's payload: the code, the rank the error names first + 1 (0
// for none; 4 bytes), then the message, cut to fit. The named rank travels beside the text so
// that a rank failed by a peer's report still knows whom the report blames (the launcher names
// that rank as the cause).
func encodeAbort(code kx.Code, named int, msg string) []byte {
	if len(msg) > maxAbortPayload-5 {
		msg = msg[:maxAbortPayload-5]
	}
	b := make([]byte, 5+len(msg))
	if code < 0 || code > math.MaxUint8 {
		code = kx.CodeInternal
	}
	b[0] = byte(code)
	binary.LittleEndian.PutUint32(b[1:], uint32(max(named+1, 0)))
	copy(b[5:], msg)
	return b
}

// decodeAbort reverses encodeAbort; a code that is not a failure becomes CodeInternal, a
// payload too short for the named rank names none.
func decodeAbort(b []byte) (code kx.Code, named int, msg string) {
	if len(b) < 5 {
		return kx.CodeInternal, -1, "aborted without a reason"
	}
	code = kx.Code(b[0])
	if code <= kx.OK || code > kx.CodeInternal {
		code = kx.CodeInternal
	}
	return code, int(binary.LittleEndian.Uint32(b[1:])) - 1, string(b[5:])
}
