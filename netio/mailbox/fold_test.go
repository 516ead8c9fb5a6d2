package mailbox

import (
	"bytes"
	"kylix/core/kx"
	"testing"
	"time"
)

// foldPayload is a Payload over b that records what is written back over it.
type foldPayload struct {
	b, back []byte
	pos     int
}

func (p *foldPayload) Read(dst []byte) (int, error) {
	n := copy(dst, p.b[p.pos:])
	p.pos += n
	return n, nil
}

func (p *foldPayload) Discard(n int) (int, error) { p.pos += n; return n, nil }

func (p *foldPayload) WriteBack(b []byte) error {
	copy(p.back[p.pos-len(b):], b)
	return nil
}

// xorFold folds by xor and records the length of every piece.
func xorFold(unit int, pieces *[]int) kx.Fold {
	return kx.Fold{Unit: unit, Fn: func(dst, src []byte) {
		*pieces = append(*pieces, len(src))
		for i := range dst {
			dst[i] ^= src[i]
		}
	}}
}

func xorOf(a, b []byte) []byte {
	x := make([]byte, len(a))
	for i := range a {
		x[i] = a[i] ^ b[i]
	}
	return x
}

// pattern is n bytes that differ from piece to piece.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7+i/1000) ^ seed
	}
	return b
}

// A folded message is combined into its place, never copied there: read from a stream (in
// pieces of whole units, the last one short), handed over in memory (Put), or buffered because
// it came before its post (folded by Await). Only the stream that can write back does, and
// only when asked.
func TestFoldOnReceive(t *testing.T) {
	const unit = 24 // an RSum accumulator: pieces must not split one
	n := 3*(foldChunk/unit*unit) + 5*unit
	tag := kx.Tag{FP: fpAll, Seq: 3, Layer: 1, Phase: kx.PhaseDense}
	for _, how := range []string{"stream", "stream-writeback", "put", "early"} {
		t.Run(how, func(t *testing.T) {
			m := New(0, 2, time.Second)
			m.Begin(3, fpAll)
			mine, theirs := pattern(n, 1), pattern(n, 2)
			want := xorOf(mine, theirs)
			var pieces []int
			f := xorFold(unit, &pieces)
			wrote := false
			f.WriteBack, f.WroteBack = how == "stream-writeback", &wrote
			pl := &foldPayload{b: theirs, back: make([]byte, n)}
			switch how {
			case "early":
				m.deliver(1, 3, 1, kx.PhaseDense, fpAll, append([]byte(nil), theirs...))
				m.Post(1, tag, mine, f)
			case "put":
				m.Post(1, tag, mine, f)
				m.Put(1, tag, [][]byte{theirs[:100], theirs[100:]}, n)
			default:
				m.Post(1, tag, mine, f)
				if err := m.Receive(1, tag, n, pl); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := m.Await(1, tag, kx.Whole); err != nil || got != n {
				t.Fatalf("await: %d, %v", got, err)
			}
			if !bytes.Equal(mine, want) {
				t.Fatal("the place does not hold the fold of both")
			}
			if len(pieces) != 4 || pieces[0]%unit != 0 || pieces[3] != 5*unit {
				t.Fatalf("pieces %v, want three of whole units near %d and the rest", pieces, foldChunk)
			}
			if how == "stream-writeback" {
				if !wrote || !bytes.Equal(pl.back, want) {
					t.Fatalf("wrote back %v, want the folded place over the sender's bytes", wrote)
				}
			} else if wrote || bytes.Count(pl.back, []byte{0}) != n {
				t.Fatalf("wrote back without being asked or able to")
			}
			if !bytes.Equal(theirs, pattern(n, 2)) && how == "put" {
				t.Fatal("Put's fold wrote into the sender's buffers")
			}
		})
	}
}

// A racing message cannot be folded: its copies would each be.
func TestFoldRefusesRacing(t *testing.T) {
	m := New(0, 2, time.Second)
	m.Begin(1, fpAll)
	defer func() {
		if recover() == nil {
			t.Fatal("ExpectFold of a racing message did not panic")
		}
	}()
	var pieces []int
	m.Post(1, kx.Tag{FP: fpAll, Seq: 1, Phase: kx.PhaseDense, Race: true}, make([]byte, 8), xorFold(4, &pieces))
}
