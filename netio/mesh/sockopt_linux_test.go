package mesh

import (
	"net"
	"testing"
	"time"
)

// tcpPair is a connected loopback pair.
func tcpPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		done <- c
	}()
	a, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-done
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// Keepalive and TCP_USER_TIMEOUT follow liveness_ms; buffers follow the policy of fixedBuf.
func TestTuneConn(t *testing.T) {
	a, _ := tcpPair(t)
	roomy := bufLimits{rmemAuto: 32 << 20, wmemAuto: 4 << 20, rmemMax: 4 << 20, wmemMax: 4 << 20}
	info, err := tuneConn(a, 5*time.Second, roomy)
	if err != nil {
		t.Fatal(err)
	}
	want := sockInfo{keepIdle: 3, keepIntvl: 1, keepCnt: 3, userTimeoutMS: 5000, rcvBuf: info.rcvBuf, sndBuf: info.sndBuf}
	if info != want {
		t.Errorf("5 s liveness: got %+v, want %+v", info, want)
	}
	// A kernel whose autotuning stops at 128 KiB: fixed 4 MiB buffers (the kernel reports
	// twice what was set, capped by rmem_max/wmem_max: at least what autotuning reached).
	small := bufLimits{rmemAuto: 128 << 10, wmemAuto: 128 << 10, rmemMax: 4 << 20, wmemMax: 4 << 20}
	info, err = tuneConn(a, 20*time.Second, small)
	if err != nil {
		t.Fatal(err)
	}
	if !info.rcvFixed || !info.sndFixed || info.rcvBuf < 128<<10 || info.sndBuf < 128<<10 {
		t.Errorf("small autotuning: %+v", info)
	}
	if info.keepIdle != 10 || info.keepIntvl != 4 || info.userTimeoutMS != 20000 {
		t.Errorf("20 s liveness: %+v", info)
	}
}

func TestFixedBufPolicy(t *testing.T) {
	for _, tc := range []struct{ auto, capMax, want int }{
		{6 << 20, 4 << 20, 0},             // autotuning reaches the target: leave it
		{128 << 10, 4 << 20, 4 << 20},     // it does not, and a fixed buffer can do better
		{128 << 10, 64 << 10, 0},          // a fixed buffer would be capped below autotuning
		{1 << 20, 1 << 20, sockBufTarget}, // granted 2 MiB beats autotuning's 1 MiB
	} {
		if got := fixedBuf(tc.auto, tc.capMax); got != tc.want {
			t.Errorf("fixedBuf(%d, %d) = %d, want %d", tc.auto, tc.capMax, got, tc.want)
		}
	}
}
