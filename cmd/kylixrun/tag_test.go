package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// countingWriter records every Write, to check that each holds whole lines only.
type countingWriter struct {
	buf    bytes.Buffer
	writes []string
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes = append(c.writes, string(p))
	return c.buf.Write(p)
}

func TestPumpLines(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"a\n", "[1] a\n"},
		{"a\nb", "[1] a\n[1] b\n"},
		{"\n\n", "[1] \n[1] \n"},
		{"one\ntwo\nthree\n", "[1] one\n[1] two\n[1] three\n"},
	} {
		// One byte per read: lines are assembled across reads.
		for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
			var w countingWriter
			if err := pumpLines(r, &w, "[1] "); err != nil {
				t.Fatal(err)
			}
			if w.buf.String() != tc.want {
				t.Errorf("pumpLines(%q) = %q, want %q", tc.in, w.buf.String(), tc.want)
			}
			for _, wr := range w.writes {
				if !strings.HasSuffix(wr, "\n") || !strings.HasPrefix(wr, "[1] ") {
					t.Errorf("pumpLines(%q) wrote a partial line %q", tc.in, wr)
				}
			}
		}
	}
}

func TestPumpLinesLong(t *testing.T) {
	long := strings.Repeat("x", maxLine+10)
	var w countingWriter
	if err := pumpLines(strings.NewReader(long+"\nend"), &w, "[0] "); err != nil {
		t.Fatal(err)
	}
	want := "[0] " + long[:maxLine] + "\n[0] " + long[maxLine:] + "\n[0] end\n"
	if w.buf.String() != want {
		t.Errorf("long line split wrong: got %d bytes, want %d", w.buf.Len(), len(want))
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, errors.New("broken pipe") }

func TestPumpLinesWriteError(t *testing.T) {
	if err := pumpLines(strings.NewReader("a\nb\n"), failWriter{}, ""); err == nil {
		t.Error("pumpLines hid the write error")
	}
}

// Without --tag-output the ranks' bytes pass unchanged, written a whole line at a time; a last
// line without a newline stays without one.
func TestPumpExact(t *testing.T) {
	for _, in := range []string{"", "a\n", "a\nb", "one\ntwo\nthree", "\x00\x01\n\xff"} {
		for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in))} {
			var w countingWriter
			if err := pumpExact(r, &w); err != nil {
				t.Fatal(err)
			}
			if w.buf.String() != in {
				t.Errorf("pumpExact(%q) = %q", in, w.buf.String())
			}
			for i, wr := range w.writes {
				if i < len(w.writes)-1 && !strings.HasSuffix(wr, "\n") {
					t.Errorf("pumpExact(%q) wrote a partial line %q before the end", in, wr)
				}
			}
		}
	}
}

// The launcher's own line starts a line after a rank's unfinished one, on a writer that shares
// its file's line state.
func TestOwnLineStartsALine(t *testing.T) {
	var b bytes.Buffer
	at := &lineEnd{}
	out, errw := newLineWriter(&b, at), newLineWriter(&b, at)
	out.Write([]byte("partial"))
	errw.writeOwnLine("mine\n")
	out.Write([]byte("whole\n"))
	errw.writeOwnLine("again\n")
	if want := "partial\nmine\nwhole\nagain\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
