//go:build linux

package shm

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Real processes where it matters: the test binary re-executes itself as the peer
// (-test.run=^TestChild$ with childEnv naming the role). The peer gets one end of a
// socketpair as fd 3 and receives the segment's memfd over it with SCM_RIGHTS.
const (
	childEnv  = "KYLIX_SHM_CHILD"
	spinEnv   = "KYLIX_SHM_SPIN"
	countEnv  = "KYLIX_SHM_COUNT"
	addrEnv   = "KYLIX_SHM_ADDR"
	childSock = 3
)

func TestChild(t *testing.T) {
	role := os.Getenv(childEnv)
	if role == "" {
		t.Skip("runs only as the child process the two-process tests start (KYLIX_SHM_CHILD set)")
	}
	if err := runChild(role); err != nil {
		fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild(role string) error {
	switch role {
	case "tcpecho":
		return tcpEcho()
	case "tcpsink":
		return tcpSink()
	}
	spin, _ := time.ParseDuration(os.Getenv(spinEnv))
	fds, err := RecvFDsRaw(childSock, 1)
	if err != nil {
		return err
	}
	seg, err := Open(fds[0], Options{Spin: spin, Poll: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	defer seg.Close()
	var none Wait
	switch role {
	case "echo": // every frame back as it came, until the parent closes
		buf := make([]byte, 1<<20)
		return serve(seg, func(n int) error {
			if n > len(buf) {
				buf = make([]byte, n)
			}
			if err := seg.Reader().ReadFull(none, buf[:n]); err != nil {
				return err
			}
			return seg.Writer().WriteFrame(none, buf[:n])
		})
	case "sink": // receive frames into one buffer; answer an empty frame with an empty one
		buf := make([]byte, 1<<20)
		return serve(seg, func(n int) error {
			if n == 0 {
				return seg.Writer().WriteFrame(none)
			}
			for n > 0 {
				k := min(n, len(buf))
				if err := seg.Reader().ReadFull(none, buf[:k]); err != nil {
					return err
				}
				n -= k
			}
			return nil
		})
	case "produce": // checksummed frames of random sizes, then Close
		count, _ := strconv.Atoi(os.Getenv(countEnv))
		return produce(seg.Writer(), count, 4*seg.RingSize(), 1)
	case "stall-writer": // one frame of four rings: blocks once the ring is full
		big := make([]byte, 4*seg.RingSize())
		return seg.Writer().WriteFrame(none, big)
	case "idle": // maps the segment and never reads
		time.Sleep(time.Hour)
	case "exit-unclosed": // maps the segment and leaves without Close
		os.Exit(0)
	}
	return fmt.Errorf("unknown role %q", role)
}

// serve hands each frame's length to f until the parent closes the segment.
func serve(seg *Segment, f func(n int) error) error {
	for {
		n, err := seg.Reader().Next(Wait{})
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := f(n); err != nil {
			return err
		}
	}
}

// produce writes count frames: an 8-byte header (index, crc32 of the payload) and a
// payload of random size 0..maxPayload cut into up to three parts, so multi-buffer frames,
// wrap-around and frames larger than the ring all occur.
func produce(w *Writer, count, maxPayload int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 7))
	payload := make([]byte, maxPayload)
	var hdr [8]byte
	for i := 0; i < count; i++ {
		n := randSize(rng, maxPayload)
		p := payload[:n]
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		binary.LittleEndian.PutUint32(hdr[0:], uint32(i))
		binary.LittleEndian.PutUint32(hdr[4:], crc32.ChecksumIEEE(p))
		a := rng.IntN(n + 1)
		b := a + rng.IntN(n-a+1)
		var err error
		if i%2 == 0 {
			err = w.WriteFrame(Wait{}, hdr[:], p[:a], p[a:b], p[b:])
		} else { // as a transport writes: its header, then its buffers
			err = w.WriteFrameHead(Wait{}, hdr[:], [][]byte{p[:a], p[a:b], p[b:]})
		}
		if err != nil {
			return fmt.Errorf("frame %d: %w", i, err)
		}
	}
	return nil
}

// randSize favours small frames (the common case) but reaches maxPayload.
func randSize(rng *rand.Rand, maxPayload int) int {
	switch rng.IntN(4) {
	case 0:
		return rng.IntN(64)
	case 1:
		return rng.IntN(maxPayload/16 + 1)
	default:
		return rng.IntN(maxPayload + 1)
	}
}

// consume reads count frames written by produce, in random pieces, and checks each.
func consume(r *Reader, count, maxPayload int, seed uint64, wt Wait) error {
	rng := rand.New(rand.NewPCG(seed^0x55, 9))
	buf := make([]byte, maxPayload)
	var hdr [8]byte
	for i := 0; i < count; i++ {
		n, err := r.Next(wt)
		if err != nil {
			return fmt.Errorf("frame %d: %w", i, err)
		}
		if n < 8 || n-8 > maxPayload {
			return fmt.Errorf("frame %d: length %d", i, n)
		}
		if err := r.ReadFull(wt, hdr[:]); err != nil {
			return err
		}
		p := buf[:n-8]
		for off := 0; off < len(p); {
			k := 1 + rng.IntN(len(p)-off)
			if err := r.ReadFull(wt, p[off:off+k]); err != nil {
				return fmt.Errorf("frame %d at %d: %w", i, off, err)
			}
			off += k
		}
		if r.Remaining() != 0 {
			return fmt.Errorf("frame %d: %d left", i, r.Remaining())
		}
		if idx := binary.LittleEndian.Uint32(hdr[0:]); idx != uint32(i) {
			return fmt.Errorf("frame %d arrived as %d", i, idx)
		}
		if sum := binary.LittleEndian.Uint32(hdr[4:]); sum != crc32.ChecksumIEEE(p) {
			return fmt.Errorf("frame %d (%d bytes): checksum %08x, want %08x", i, len(p), crc32.ChecksumIEEE(p), sum)
		}
	}
	return nil
}

type child struct {
	cmd  *exec.Cmd
	seg  *Segment
	done chan error
}

// startChild starts a helper in role and, for shared-memory roles, gives it a fresh
// segment (returned as c.seg, the parent's side). Cleanup closes the segment, lets the
// child end on its own for a while and then kills it; it never touches other processes.
func startChild(tb testing.TB, role string, ring int, opt Options, env ...string) *child {
	tb.Helper()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	theirs := os.NewFile(uintptr(sp[1]), "shm-child-sock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role}, env...)...)
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// The helper must not outlive a test binary that is itself killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	theirs.Close()
	c := &child{cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	tb.Cleanup(func() {
		if c.seg != nil {
			c.seg.Close()
		}
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-c.done
		}
	})
	if ring > 0 {
		seg, err := Create(ring, opt)
		if err != nil {
			unix.Close(sp[0])
			tb.Fatal(err)
		}
		c.seg = seg
		if err := SendFDsRaw(sp[0], seg.Fd()); err != nil {
			tb.Fatal(err)
		}
		seg.CloseFD()
	}
	unix.Close(sp[0])
	return c
}

// wait returns the child's exit error, bounded so that a hung child fails the test.
func (c *child) wait(tb testing.TB) error {
	select {
	case err := <-c.done:
		c.done <- err // keep it for Cleanup
		return err
	case <-time.After(60 * time.Second):
		tb.Fatal("child did not exit")
		return nil
	}
}

func (c *child) kill(tb testing.TB) {
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
}

// TCP counterparts for the benchmarks: the same payloads behind an 8-byte length, over loopback.
func tcpConn() (net.Conn, error) {
	return net.Dial("tcp", os.Getenv(addrEnv))
}

func tcpEcho() error {
	c, err := tcpConn()
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 8+1<<20)
	for {
		if _, err := io.ReadFull(c, buf[:8]); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		n := int(binary.LittleEndian.Uint64(buf))
		if _, err := io.ReadFull(c, buf[8:8+n]); err != nil {
			return err
		}
		if _, err := c.Write(buf[:8+n]); err != nil {
			return err
		}
	}
}

func tcpSink() error {
	c, err := tcpConn()
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		n := int(binary.LittleEndian.Uint64(hdr[:]))
		if n == 0 {
			if _, err := c.Write(hdr[:]); err != nil {
				return err
			}
			continue
		}
		for n > 0 {
			k, err := c.Read(buf[:min(n, len(buf))])
			if err != nil {
				return err
			}
			n -= k
		}
	}
}
