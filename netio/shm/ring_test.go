//go:build linux

package shm

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair makes both sides of a segment in this process (goroutine tests): the creator's fd
// is duplicated and opened as the peer would.
func pair(tb testing.TB, ring int, opt Options) (a, b *Segment) {
	tb.Helper()
	a, err := Create(ring, opt)
	if err != nil {
		tb.Fatal(err)
	}
	fd, err := unix.Dup(a.Fd())
	if err != nil {
		tb.Fatal(err)
	}
	a.CloseFD()
	if b, err = Open(fd, opt); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// bounded is the wait of every test call: a hang fails instead of blocking the run.
func bounded() Wait { return Wait{Deadline: time.Now().Add(60 * time.Second)} }

var spinModes = []struct {
	name string
	opt  Options
}{
	{"spin-off", Options{}},
	{"spin-on", Options{Spin: 50 * time.Microsecond}},
}

func TestRingGoroutines(t *testing.T) {
	const ring, count = 4096, 3000
	for _, m := range spinModes {
		t.Run(m.name, func(t *testing.T) {
			a, b := pair(t, ring, m.opt)
			errc := make(chan error, 1)
			go func() { errc <- produce(a.Writer(), count, 4*ring, 3) }()
			if err := consume(b.Reader(), count, 4*ring, 3, bounded()); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			a.Close()
			if _, err := b.Reader().Next(bounded()); err != io.EOF {
				t.Fatalf("after the writer's Close: %v, want io.EOF", err)
			}
			// Spinning follows the option, read from the counters rather than a timing.
			if st := b.Stats(); (st.Spins > 0) != (m.opt.Spin > 0) || st.SpinHits > st.Spins {
				t.Fatalf("spin %v, stats %+v", m.opt.Spin, st)
			}
			t.Logf("reader %+v, writer %+v", b.Stats(), a.Stats())
		})
	}
}

func TestRingProcesses(t *testing.T) {
	const ring, count = 8192, 2000
	for _, m := range spinModes {
		t.Run(m.name+"/child-writes", func(t *testing.T) {
			c := startChild(t, "produce", ring, m.opt, spinEnv+"="+m.opt.Spin.String(), countEnv+"="+strconv.Itoa(count))
			if err := consume(c.seg.Reader(), count, 4*ring, 1, bounded()); err != nil {
				t.Fatal(err)
			}
			if _, err := c.seg.Reader().Next(bounded()); err != io.EOF {
				t.Fatalf("after the child's Close: %v, want io.EOF", err)
			}
			if err := c.wait(t); err != nil {
				t.Fatal(err)
			}
		})
		t.Run(m.name+"/echo", func(t *testing.T) {
			c := startChild(t, "echo", ring, m.opt, spinEnv+"="+m.opt.Spin.String())
			errc := make(chan error, 1)
			// Written and read by two goroutines: the echo of a frame larger than the
			// ring comes back while the frame is still being sent.
			go func() { errc <- produce(c.seg.Writer(), count, 4*ring, 5) }()
			if err := consume(c.seg.Reader(), count, 4*ring, 5, bounded()); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			c.seg.Close()
			if err := c.wait(t); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A peer killed while it streams a frame larger than the ring: the reader gets what was
// sent, then *PeerDeadError naming the peer (not a timeout, not a hang).
func TestPeerKilledMidFrame(t *testing.T) {
	const ring = 8192
	c := startChild(t, "stall-writer", ring, Options{Poll: 10 * time.Millisecond})
	r := c.seg.Reader()
	n, err := r.Next(bounded())
	if err != nil || n != 4*ring {
		t.Fatalf("Next: %d, %v", n, err)
	}
	buf := make([]byte, n)
	if err := r.ReadFull(bounded(), buf[:ring/2]); err != nil {
		t.Fatal(err)
	}
	c.kill(t)
	err = r.ReadFull(bounded(), buf[ring/2:])
	var dead *PeerDeadError
	if !errors.As(err, &dead) || !errors.Is(err, ErrPeerDead) {
		t.Fatalf("after kill -9: %v, want *PeerDeadError", err)
	}
	if dead.Pid != c.cmd.Process.Pid {
		t.Fatalf("dead pid %d, child is %d", dead.Pid, c.cmd.Process.Pid)
	}
}

// The writer's side: the reader is killed while the writer waits for space mid-frame.
func TestPeerKilledWhileWriting(t *testing.T) {
	const ring = 8192
	c := startChild(t, "idle", ring, Options{Poll: 10 * time.Millisecond})
	w := c.seg.Writer()
	errc := make(chan error, 1)
	go func() { errc <- w.WriteFrame(bounded(), make([]byte, 4*ring)) }()
	// The writer publishes a full ring before it sleeps; kill the reader only then, and
	// only once it has attached (a peer that never attached has no pid to watch: that
	// is the handshake's deadline to catch).
	for w.tail.Load() < ring || !c.seg.PeerAttached() {
		select {
		case err := <-errc:
			t.Fatalf("writer ended before the kill: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	c.kill(t)
	if err := <-errc; !errors.Is(err, ErrPeerDead) {
		t.Fatalf("after kill -9: %v, want ErrPeerDead", err)
	}
}

func TestAbandoned(t *testing.T) {
	t.Run("peer-exits-without-close", func(t *testing.T) {
		c := startChild(t, "exit-unclosed", 4096, Options{Poll: 10 * time.Millisecond})
		if _, err := c.seg.Reader().Next(bounded()); !errors.Is(err, ErrPeerDead) {
			t.Fatalf("Next: %v, want ErrPeerDead", err)
		}
	})
	t.Run("never-attached", func(t *testing.T) {
		s, err := Create(4096, Options{Poll: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Reader().Next(Wait{Deadline: time.Now().Add(30 * time.Millisecond)}); err != ErrTimeout {
			t.Fatalf("Next: %v, want ErrTimeout", err)
		}
		if s.PeerAttached() {
			t.Fatal("attached without a peer")
		}
	})
	t.Run("closed-at-boundary-and-mid-frame", func(t *testing.T) {
		a, b := pair(t, 4096, Options{})
		if err := a.Writer().WriteFrame(bounded(), []byte("hello")); err != nil {
			t.Fatal(err)
		}
		// A frame cut by the writer's death-free Close: part of a 3-ring frame is sent.
		errc := make(chan error, 1)
		go func() { errc <- a.Writer().WriteFrame(bounded(), make([]byte, 3*4096)) }()
		buf := make([]byte, 3*4096)
		if n, err := b.Reader().ReadFrame(bounded(), buf); err != nil || string(buf[:n]) != "hello" {
			t.Fatalf("ReadFrame: %q, %v", buf[:n], err)
		}
		if _, err := b.Reader().Next(bounded()); err != nil {
			t.Fatal(err)
		}
		if err := b.Reader().ReadFull(bounded(), buf[:100]); err != nil {
			t.Fatal(err)
		}
		a.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("writer after its own Close: %v, want ErrClosed", err)
		}
		err := b.Reader().ReadFull(bounded(), buf[100:])
		if !errors.Is(err, ErrPeerClosed) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("mid-frame after the peer's Close: %v", err)
		}
		if err := b.Writer().WriteFrame(bounded(), make([]byte, 2*4096)); !errors.Is(err, ErrPeerClosed) {
			t.Fatalf("writing to a closed reader: %v, want ErrPeerClosed", err)
		}
	})
}

// Abort and Close reach a sleeping waiter at once: Poll is an hour, so only the wake can
// end these waits before the test's bound.
func TestAbortInterruptClose(t *testing.T) {
	for _, m := range spinModes {
		t.Run(m.name, func(t *testing.T) {
			opt := m.opt
			opt.Poll = time.Hour
			_, b := pair(t, 4096, opt)
			abort := make(chan struct{})
			errc := make(chan error, 1)
			go func() {
				_, err := b.Reader().Next(Wait{Abort: abort})
				errc <- err
			}()
			time.Sleep(5 * time.Millisecond) // let it go to sleep (either way the result holds)
			close(abort)
			b.Interrupt()
			if err := waitErr(t, errc); err != ErrAborted {
				t.Fatalf("aborted Next: %v", err)
			}
			go func() {
				_, err := b.Reader().Next(Wait{})
				errc <- err
			}()
			time.Sleep(5 * time.Millisecond)
			b.Close()
			if err := waitErr(t, errc); err != ErrClosed {
				t.Fatalf("Next during Close: %v", err)
			}
			if err := b.Writer().WriteFrame(Wait{}, nil); err != ErrClosed {
				t.Fatalf("WriteFrame after Close: %v", err)
			}
		})
	}
}

func waitErr(tb testing.TB, errc chan error) error {
	select {
	case err := <-errc:
		return err
	case <-time.After(60 * time.Second):
		tb.Fatal("waiter was not woken")
		return nil
	}
}

func countFDs(tb testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	return len(ents)
}

// Creating, opening, using and closing segments leaves no fd behind (memfds, pidfds).
func TestNoFDLeak(t *testing.T) {
	before := countFDs(t)
	for i := 0; i < 1000; i++ {
		a, err := Create(MinRing, Options{})
		if err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Dup(a.Fd())
		if err != nil {
			t.Fatal(err)
		}
		b, err := Open(fd, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			a.CloseFD()
		}
		if err := a.Writer().WriteFrame(bounded(), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		var one [1]byte
		if n, err := b.Reader().ReadFrame(bounded(), one[:]); err != nil || n != 1 || one[0] != byte(i) {
			t.Fatalf("cycle %d: %d %v", i, n, err)
		}
		b.peerGone() // opens the pidfd on the creator
		a.peerGone()
		b.Close()
		a.Close()
	}
	if after := countFDs(t); after != before {
		t.Fatalf("fds: %d before, %d after 1000 cycles", before, after)
	}
}

func TestSendRecvFDsUnixConn(t *testing.T) {
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]*net.UnixConn, 2)
	for i, fd := range sp {
		f := os.NewFile(uintptr(fd), "sp")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c.(*net.UnixConn)
	}
	a, err := Create(MinRing, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := SendFDs(conns[0], a.Fd()); err != nil {
		t.Fatal(err)
	}
	a.CloseFD()
	fds, err := RecvFDs(conns[1], 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(fds[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Writer().WriteFrame(bounded(), []byte("hi"), []byte(" there")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := a.Reader().ReadFrame(bounded(), buf); err != nil || string(buf[:n]) != "hi there" {
		t.Fatalf("%q %v", buf[:n], err)
	}
	// A message with an unexpected number of fds is refused and leaves none open.
	before := countFDs(t)
	if err := SendFDs(conns[0], 0, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := RecvFDs(conns[1], 1); err == nil {
		t.Fatal("two fds accepted as one")
	}
	if after := countFDs(t); after != before {
		t.Fatalf("fds: %d before, %d after a refused message", before, after)
	}
}

func TestOpenRefuses(t *testing.T) {
	fd, err := unix.MemfdCreate("not-ours", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	unix.Ftruncate(fd, hdrSize+2*MinRing)
	if _, err := Open(fd, Options{}); !errors.Is(err, ErrBadSegment) {
		t.Fatalf("unsealed memfd: %v", err)
	}
	a, err := Create(MinRing, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i := 0; i < 2; i++ {
		fd, _ := unix.Dup(a.Fd())
		b, err := Open(fd, Options{})
		if i == 0 {
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
		} else if !errors.Is(err, ErrBadSegment) {
			t.Fatalf("second Open: %v", err)
		}
	}
	if _, err := Create(5000, Options{}); err == nil {
		t.Fatal("ring of 5000 bytes accepted")
	}
}

func TestPidAliveFallback(t *testing.T) {
	if !pidAlive(os.Getpid()) {
		t.Fatal("this process reported dead")
	}
	c := startChild(t, "idle", 0, Options{})
	pid := c.cmd.Process.Pid
	c.kill(t)
	c.wait(t)
	if pidAlive(pid) {
		t.Fatalf("reaped child %d reported alive", pid)
	}
}

// The data path allocates nothing: a plan's buffers go straight in and out (house style).
func TestNoAllocs(t *testing.T) {
	a, b := pair(t, 4096, Options{})
	hdr, payload, dst := make([]byte, 16), make([]byte, 1000), make([]byte, 1016)
	w, r := a.Writer(), b.Reader()
	allocs := testing.AllocsPerRun(200, func() {
		if err := w.WriteFrame(Wait{}, hdr, payload); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadFrame(Wait{}, dst); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per frame", allocs)
	}
}

// NextInto reads a frame's head with its length in one call: frames shorter than the head are
// left whole (Next's contract), longer ones continue where the head ends, across the ring's wrap.
func TestNextInto(t *testing.T) {
	a, b := pair(t, 4096, Options{})
	w, r := a.Writer(), b.Reader()
	for i, n := range []int{0, 10, 56, 57, 300, 1000, 3000, 56, 2500, 7} {
		frame := make([]byte, n)
		for k := range frame {
			frame[k] = byte(i*31 + k)
		}
		if err := w.WriteFrame(bounded(), frame); err != nil {
			t.Fatal(err)
		}
		var head [56]byte
		got, err := r.NextInto(bounded(), head[:])
		if err != nil || got != n {
			t.Fatalf("frame %d of %d bytes: NextInto = %d, %v", i, n, got, err)
		}
		all := make([]byte, 0, n)
		if n >= len(head) {
			all = append(all, head[:]...)
		}
		rest := make([]byte, r.Remaining())
		if err := r.ReadFull(bounded(), rest); err != nil {
			t.Fatalf("frame %d: the rest: %v", i, err)
		}
		if all = append(all, rest...); !bytes.Equal(all, frame) {
			t.Fatalf("frame %d of %d bytes: read back differs", i, n)
		}
	}
}

// A run of reads under Direct reads as without it, takes no entry of its own, sees a Close
// that comes during the run, and keeps the mapping until the run ends.
func TestDirectReads(t *testing.T) {
	a, b := pair(t, 4096, Options{})
	w, r := a.Writer(), b.Reader()
	r.Direct(true)
	held := b.state.Load()
	for i, n := range []int{0, 60, 3000, 700} {
		frame := bytes.Repeat([]byte{byte(i + 1)}, n)
		if err := w.WriteFrame(bounded(), frame); err != nil {
			t.Fatal(err)
		}
		if !r.Ready() {
			t.Fatalf("frame %d: not ready under Direct", i)
		}
		dst := make([]byte, n)
		if got, err := r.ReadFrame(bounded(), dst); err != nil || got != n || !bytes.Equal(dst, frame) {
			t.Fatalf("frame %d of %d bytes under Direct: %d, %v", i, n, got, err)
		}
		if st := b.state.Load(); st != held {
			t.Fatalf("frame %d: the segment's count moved under Direct: %d, held %d", i, st, held)
		}
	}
	if err := w.WriteFrame(bounded(), []byte("late")); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if !r.Ready() { // closing: Next reports it
		t.Fatal("Ready after Close under Direct: false")
	}
	if _, err := r.Next(bounded()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close under Direct: %v, want ErrClosed", err)
	}
	if b.state.Load()&^closingBit == 0 {
		t.Fatal("the run's entry is gone before the run ended")
	}
	r.Direct(false)
	if st := b.state.Load(); st != closingBit {
		t.Fatalf("after the run: state %#x, want only the closing bit (unmapped)", st)
	}
}
