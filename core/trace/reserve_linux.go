//go:build linux

package trace

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// reserveStep is how far past the file's end the writer has its blocks allocated at a time.
const reserveStep = 16 << 20

// reservation is the writer's allocation of the file's blocks ahead of its end.
type reservation struct {
	end int64 // allocated through here
	off bool  // the file system cannot (or a call failed): not asked again
}

// reserve has the blocks of f allocated through n bytes past its end, reserveStep at a time,
// with FALLOC_FL_KEEP_SIZE: the file's size does not change, so a killed rank's file still
// ends at its last whole line. A write into blocks allocated already costs about half as much
// on ext4 (docs/measurements.md, "The timeline's cost"), and the writer's time is taken from a
// rank's calls. Release gives back what was not used.
func (r *reservation) reserve(f *os.File, n int) {
	if r.off {
		return
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil || pos+int64(n) <= r.end {
		return
	}
	from := max(pos, r.end)
	if unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, from, reserveStep) != nil {
		r.off = true
		return
	}
	r.end = from + reserveStep
}

// release frees the blocks reserved past the file's end (f is complete).
func (r *reservation) release(f *os.File) {
	if r.end == 0 {
		return
	}
	if pos, err := f.Seek(0, io.SeekCurrent); err == nil {
		f.Truncate(pos)
	}
}
