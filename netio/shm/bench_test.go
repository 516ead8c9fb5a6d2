//go:build linux

package shm

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// One process and its re-executed child; loopback TCP with the same frames in the same
// run as the baseline (absolute times on this shared VM mean little, ratios do).
// ns/op is one round trip (ping-pong) or one 1 MiB frame (stream).
//
//	go test -run '^$' -bench . -benchtime 2s ./netio/shm

const benchRing = 1 << 18

var benchModes = []struct {
	name string
	spin time.Duration
}{
	{"shm-spin", 100 * time.Microsecond},
	{"shm-spin10us", 10 * time.Microsecond},
	{"shm-sleep", 0},
}

func BenchmarkPingPong(b *testing.B) {
	for _, size := range []int{64, 1024} {
		for _, m := range benchModes {
			b.Run(fmt.Sprintf("%s/%dB", m.name, size), func(b *testing.B) {
				c := startChild(b, "echo", benchRing, Options{Spin: m.spin}, spinEnv+"="+m.spin.String())
				buf := make([]byte, size)
				w, r := c.seg.Writer(), c.seg.Reader()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := w.WriteFrame(Wait{}, buf); err != nil {
						b.Fatal(err)
					}
					if _, err := r.ReadFrame(Wait{}, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("tcp/%dB", size), func(b *testing.B) {
			conn := tcpChild(b, "tcpecho")
			buf := make([]byte, 8+size)
			binary.LittleEndian.PutUint64(buf, uint64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := conn.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(conn, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkStream1MiB(b *testing.B) {
	const frame = 1 << 20
	for _, m := range benchModes {
		for _, ring := range []int{1 << 16, 1 << 18, 1 << 20} {
			b.Run(fmt.Sprintf("%s/ring%dK", m.name, ring>>10), func(b *testing.B) {
				c := startChild(b, "sink", ring, Options{Spin: m.spin}, spinEnv+"="+m.spin.String())
				buf := make([]byte, frame)
				w, r := c.seg.Writer(), c.seg.Reader()
				b.SetBytes(frame)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := w.WriteFrame(Wait{}, buf); err != nil {
						b.Fatal(err)
					}
				}
				// An empty frame and its answer: everything before it was consumed.
				if err := w.WriteFrame(Wait{}); err != nil {
					b.Fatal(err)
				}
				if _, err := r.ReadFrame(Wait{}, nil); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
	b.Run("tcp", func(b *testing.B) {
		conn := tcpChild(b, "tcpsink")
		var hdr [8]byte
		binary.LittleEndian.PutUint64(hdr[:], frame)
		payload := make([]byte, frame)
		b.SetBytes(frame)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			// writev straight from the caller's memory (field note); WriteTo consumes nb.
			nb := net.Buffers{hdr[:], payload}
			if _, err := nb.WriteTo(conn); err != nil {
				b.Fatal(err)
			}
		}
		var zero [8]byte
		if _, err := conn.Write(zero[:]); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn, zero[:]); err != nil {
			b.Fatal(err)
		}
	})
}

// tcpChild starts a TCP helper and returns the accepted loopback connection.
func tcpChild(b *testing.B, role string) net.Conn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	startChild(b, role, 0, Options{}, addrEnv+"="+ln.Addr().String())
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(60 * time.Second))
	conn, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	// Registered after startChild's cleanup, so it runs first: the child sees EOF and exits.
	b.Cleanup(func() { conn.Close() })
	return conn
}
