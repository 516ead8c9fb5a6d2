package main

import (
	"bytes"
	"io"
	"math"
	"sync"
)

// lineWriter serialises whole writes to one destination, so lines from different ranks (and
// the launcher's own messages) never interleave within a line.
type lineWriter struct {
	w  io.Writer
	at *lineEnd // shared by the writers of one file (stdout and stderr after 2>&1)
}

// lineEnd is whether the last byte written to a file ended a line.
type lineEnd struct {
	mu  sync.Mutex
	mid bool // the last write left a line unfinished
}

func newLineWriter(w io.Writer, at *lineEnd) *lineWriter {
	if at == nil {
		at = &lineEnd{}
	}
	return &lineWriter{w: w, at: at}
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.at.mu.Lock()
	defer l.at.mu.Unlock()
	n, err := l.w.Write(p)
	if n > 0 {
		l.at.mid = p[n-1] != '\n'
	}
	return n, err
}

// writeOwnLine writes one of the launcher's own lines (ending in a newline) on a line of its
// own: after a newline when a rank's last write left its line unfinished.
func (l *lineWriter) writeOwnLine(line string) {
	l.at.mu.Lock()
	defer l.at.mu.Unlock()
	if l.at.mid {
		line = "\n" + line
	}
	_, _ = io.WriteString(l.w, line)
	l.at.mid = false
}

// maxLine bounds how much of an unterminated line is held back; a longer line is written in
// pieces of this size, each as its own prefixed line.
const maxLine = 1 << 20

// pumpLines copies r to w with prefix before every line. Each Write to w holds only whole lines
// (all the complete lines of one read at once, to keep the number of writes low). A last line
// without a newline gets one. It returns when r ends or w fails; on a failed write it stops
// reading, so the rank sees a broken pipe as it would writing to a closed stdout itself.
func pumpLines(r io.Reader, w io.Writer, prefix string) error {
	return copyLines(r, w, constPrefix(prefix), true)
}

// pumpExact copies r to w byte for byte, in writes of whole lines as pumpLines does; a last
// line without a newline stays without one.
func pumpExact(r io.Reader, w io.Writer) error {
	return copyLines(r, w, constPrefix(""), false)
}

// constPrefix is a prefixAt whose prefix never changes.
func constPrefix(p string) func(int64) (string, int64) {
	return func(int64) (string, int64) { return p, math.MaxInt64 }
}

// copyLines is pumpLines, and pumpExact without endLines. prefixAt gives the prefix of the
// line that starts at byte off of r, and the offset up to which it holds as far as is known,
// so that a tag can change while the rank runs, from a given byte on (tags.go).
func copyLines(r io.Reader, w io.Writer, prefixAt func(off int64) (prefix string, until int64), endLines bool) error {
	buf := make([]byte, 64<<10)
	var partial, out []byte
	var off, lineStart int64 // bytes of r so far; where partial starts
	var prefix string
	var until int64 = -1 // prefix holds for the lines that start before until
	at := func(o int64) string {
		if o >= until {
			prefix, until = prefixAt(o)
		}
		return prefix
	}
	for {
		n, rerr := r.Read(buf)
		data := buf[:n]
		pos := off
		off += int64(n)
		until = -1 // ask again at every read: the tag may have changed meanwhile
		out = out[:0]
		for len(data) > 0 {
			if len(partial) == 0 {
				lineStart = pos
			}
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				partial = append(partial, data...)
				if len(partial) >= maxLine {
					out = appendPiece(out, at(lineStart), partial[:maxLine], endLines)
					partial = append(partial[:0], partial[maxLine:]...)
					lineStart += maxLine
				}
				break
			}
			out = appendLine(out, at(lineStart), partial, data[:i])
			partial = partial[:0]
			data = data[i+1:]
			pos += int64(i + 1)
		}
		if rerr != nil && len(partial) > 0 {
			out = appendPiece(out, at(lineStart), partial, endLines)
			partial = partial[:0]
		}
		if len(out) > 0 {
			if _, err := w.Write(out); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// appendPiece appends an unfinished line: as its own line, or as it is.
func appendPiece(out []byte, prefix string, a []byte, endLine bool) []byte {
	if endLine {
		return appendLine(out, prefix, a, nil)
	}
	return append(append(out, prefix...), a...)
}

func appendLine(out []byte, prefix string, a, b []byte) []byte {
	out = append(out, prefix...)
	out = append(out, a...)
	out = append(out, b...)
	return append(out, '\n')
}
