package trace

import (
	"os"
	"syscall"
	"testing"
	"time"

	"kylix/core/kx"
)

// The writer reserves the file's blocks ahead of its end without changing its size, and Close
// gives back what was not used.
func TestReservationKeepsSizeAndIsReleased(t *testing.T) {
	old := flushEvery
	flushEvery = time.Hour // this test flushes; the writer stays asleep
	defer func() { flushEvery = old }()
	tr, err := Open(t.TempDir(), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	fp := kx.Fingerprint{Kind: kx.KindAllreduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 1, Count: 8}
	for seq := uint64(1); seq <= 100; seq++ {
		tr.Call(seq, fp, int64(seq)*1000, int64(seq)*1000+500, 32, 32, 0, 0, nil, nil)
	}
	tr.flush(nil)
	st := func() (size, allocated int64) {
		fi, err := os.Stat(tr.Path())
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size(), fi.Sys().(*syscall.Stat_t).Blocks * 512
	}
	if tr.res.off {
		t.Skip("the file system cannot reserve blocks (fallocate)")
	}
	size, allocated := st()
	if size >= reserveStep || allocated < reserveStep {
		t.Errorf("while open: size %d, allocated %d: want the size of what was written and %d reserved", size, allocated, reserveStep)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	size, allocated = st()
	if allocated > size+1<<20 {
		t.Errorf("after Close: size %d, allocated %d: the reservation was not given back", size, allocated)
	}
}
