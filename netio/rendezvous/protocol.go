package rendezvous

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// Rendezvous protocol: length-prefixed JSON messages (4-byte little-endian length).
//
//	server → client  {type:"challenge", v, nonce}
//	client → server  {type:"register", v, rank, size, addr, nonce, proof}
//	                 proof = HMAC(secret, "register" | server nonce | client nonce | rank | size | addr)
//	client → server  {type:"status?"}            (optional, when the client is about to give up)
//	server → client  {type:"status", missing}
//	server → client  {type:"table", peers, job, proof} once every rank registered
//	                 proof = HMAC(secret, "table" | server nonce | client nonce | job | peers)
//	server → client  {type:"error", code, error} on refusal (bad proof, size, duplicate rank)
//
// Both sides prove the secret; it never travels. The server serves exactly one job, then
// stays up for joiners (join.go).
const version = 1

const maxMessage = 16 << 20

type message struct {
	Type    string   `json:"type"`
	V       int      `json:"v,omitempty"`
	Nonce   []byte   `json:"nonce,omitempty"`
	Rank    int      `json:"rank,omitempty"`
	Size    int      `json:"size,omitempty"`
	Addr    string   `json:"addr,omitempty"`
	Proof   []byte   `json:"proof,omitempty"`
	Peers   []string `json:"peers,omitempty"`
	Job     uint64   `json:"job,omitempty"`
	Missing []int    `json:"missing,omitempty"`
	Code    int      `json:"code,omitempty"`
	Error   string   `json:"error,omitempty"`
	// The join port (join.go): an admit request and an admission, as kx's JSON.
	Req json.RawMessage `json:"req,omitempty"`
	Adm json.RawMessage `json:"adm,omitempty"`
}

func writeMsg(w io.Writer, m *message) error { return WriteFrame(w, m) }

func readMsg(r io.Reader) (*message, error) {
	m := &message{}
	if err := ReadFrame(r, maxMessage, m); err != nil {
		return nil, err
	}
	return m, nil
}

// WriteFrame writes v as one message of the rendezvous protocol's framing: a 4-byte
// little-endian length, then v as JSON. kylixrun's tag feed speaks it too.
func WriteFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 4+len(b))
	binary.LittleEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// ReadFrame reads one message of WriteFrame's framing, of at most max bytes, into v. A length
// over max or bytes that are not JSON give an error that says what was sent.
func ReadFrame(r io.Reader, max uint32, v any) error {
	var lb [4]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(lb[:])
	if n > max {
		return &badMessage{fmt.Sprintf("it sent %q, a message of %d bytes, over the bound", lb[:], n)}
	}
	// The buffer grows with the bytes that arrive: a stranger's length alone costs nothing.
	b, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil {
		return err
	}
	if len(b) < int(n) {
		return io.ErrUnexpectedEOF
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &badMessage{fmt.Sprintf("bad message: %v", err)}
	}
	return nil
}

// badMessage is a message that is not the rendezvous protocol's.
type badMessage struct{ why string }

func (e *badMessage) Error() string { return e.why }

// challengeWait bounds the wait for a rendezvous's first message, which it sends on accept.
const challengeWait = 5 * time.Second

func registerProof(secret string, serverNonce, clientNonce []byte, rank, size int, addr string) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("kylix-rendezvous-v1\x00register\x00"))
	writeBytes(mac, serverNonce)
	writeBytes(mac, clientNonce)
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(rank))
	binary.LittleEndian.PutUint32(b[4:], uint32(size))
	mac.Write(b[:])
	writeBytes(mac, []byte(addr))
	return mac.Sum(nil)
}

func tableProof(secret string, serverNonce, clientNonce []byte, job uint64, peers []string) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("kylix-rendezvous-v1\x00table\x00"))
	writeBytes(mac, serverNonce)
	writeBytes(mac, clientNonce)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], job)
	mac.Write(b[:])
	binary.LittleEndian.PutUint32(b[:4], uint32(len(peers)))
	mac.Write(b[:4])
	for _, p := range peers {
		writeBytes(mac, []byte(p))
	}
	return mac.Sum(nil)
}

// writeBytes writes a length-prefixed field, so concatenations cannot be ambiguous.
func writeBytes(w io.Writer, b []byte) {
	var l [4]byte
	binary.LittleEndian.PutUint32(l[:], uint32(len(b)))
	w.Write(l[:])
	w.Write(b)
}

// isTimeout reports a deadline that passed, on a connection or in a dial.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
