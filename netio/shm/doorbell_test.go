//go:build linux

package shm

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pairWithBells maps one segment twice in this process, the attacher with copies of the
// creator's doorbells, as SendFDs would give them.
func pairWithBells(t *testing.T) (a, b *Segment) {
	t.Helper()
	a, err := Create(MinRing, Options{Poll: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	bells, err := a.AddDoorbells()
	if err != nil {
		t.Fatal(err)
	}
	fd, _ := unix.Dup(a.Fd())
	a.CloseFD()
	b, err = Open(fd, Options{Poll: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dups := make([]int, len(bells))
	for i, f := range bells {
		dups[i], _ = unix.Dup(f)
	}
	if err := b.UseDoorbells(dups); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// With doorbells, sleeping waits are woken by the peer (the poll is a second here: a lost
// wake would make the rounds below take seconds, and the test's own deadline fails them),
// frames larger than the ring stream through it, and a Close wakes a sleeping reader.
func TestDoorbells(t *testing.T) {
	a, b := pairWithBells(t)
	wt := Wait{Deadline: time.Now().Add(30 * time.Second)}
	big := bytes.Repeat([]byte{1, 2, 3}, 3*MinRing)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, len(big))
		for i := 0; i < 200; i++ {
			n, err := b.Reader().ReadFrame(wt, buf)
			if err != nil {
				done <- err
				return
			}
			if err := b.Writer().WriteFrame(wt, buf[:n]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	buf := make([]byte, len(big))
	for i := 0; i < 200; i++ {
		msg := big[:1+i*97%len(big)]
		if err := a.Writer().WriteFrame(wt, msg); err != nil {
			t.Fatal(err)
		}
		n, err := a.Reader().ReadFrame(wt, buf)
		if err != nil || !bytes.Equal(buf[:n], msg) {
			t.Fatalf("round %d: %d bytes, %v", i, n, err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a.Stats().Sleeps == 0 && b.Stats().Sleeps == 0 {
		t.Error("no wait ever slept: the doorbells were not exercised")
	}
	go func() {
		time.Sleep(20 * time.Millisecond) // let the reader fall asleep first
		a.Close()
	}()
	if _, err := b.Reader().Next(wt); !errors.Is(err, io.EOF) {
		t.Fatalf("reader after the peer's Close: %v", err)
	}
	b.Close()
}
