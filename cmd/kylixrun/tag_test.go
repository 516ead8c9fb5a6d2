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
