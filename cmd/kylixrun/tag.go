package main

import (
	"bytes"
	"io"
	"sync"
)

// lineWriter serialises whole writes to one destination, so lines from different ranks (and
// the launcher's own messages) never interleave within a line.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// maxLine bounds how much of an unterminated line is held back; a longer line is written in
// pieces of this size, each as its own prefixed line.
const maxLine = 1 << 20

// pumpLines copies r to w with prefix before every line. Each Write to w holds only whole lines
// (all the complete lines of one read at once, to keep the number of writes low). A last line
// without a newline gets one. It returns when r ends or w fails; on a failed write it stops
// reading, so the rank sees a broken pipe as it would writing to a closed stdout itself.
func pumpLines(r io.Reader, w io.Writer, prefix string) error {
	buf := make([]byte, 64<<10)
	var partial, out []byte
	for {
		n, rerr := r.Read(buf)
		data := buf[:n]
		out = out[:0]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				partial = append(partial, data...)
				if len(partial) >= maxLine {
					out = appendLine(out, prefix, partial[:maxLine], nil)
					partial = append(partial[:0], partial[maxLine:]...)
				}
				break
			}
			out = appendLine(out, prefix, partial, data[:i])
			partial = partial[:0]
			data = data[i+1:]
		}
		if rerr != nil && len(partial) > 0 {
			out = appendLine(out, prefix, partial, nil)
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

func appendLine(out []byte, prefix string, a, b []byte) []byte {
	out = append(out, prefix...)
	out = append(out, a...)
	out = append(out, b...)
	return append(out, '\n')
}
