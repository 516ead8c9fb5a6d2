package main

import (
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestHostIsHere(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "localhost": true,
		"192.0.2.7": false, "2001:db8::7": false, "no-such-host.invalid": false} {
		if got := hostIsHere(host); got != want {
			t.Errorf("hostIsHere(%q) = %v", host, got)
		}
	}
}

// A tag changes at the first byte written after the change: what the rank wrote before, still
// in the pipe because the launcher had not read it yet, keeps the old tag; a line begun before
// the change keeps it too.
func TestTagStreamChangesAtAByte(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pipePending is Linux's")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	ts := newTagStream(pr, "[j1.0] ")
	if ts == nil { // a pipe has raw reads on Linux: without them, tags would change at read time
		t.Fatal("newTagStream gave no stream for a pipe")
	}
	io.WriteString(pw, "waiting\nadmitted, rank ")
	ts.change("[1 was j1.0] ")
	io.WriteString(pw, "1\nas rank 1\n")
	ts.change("[0 was j1.0] ")
	io.WriteString(pw, "as rank 0\nlast")
	pw.Close()
	var out strings.Builder
	if err := copyLines(ts, &out, ts.prefixAt, true); err != nil {
		t.Fatal(err)
	}
	want := "[j1.0] waiting\n[j1.0] admitted, rank 1\n[1 was j1.0] as rank 1\n[0 was j1.0] as rank 0\n[0 was j1.0] last\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
