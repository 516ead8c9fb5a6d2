// Package nettest holds the checks netio's test packages share (netio, mailbox, rendezvous).
package nettest

import (
	"kylix/core/kx"
	"runtime"
	"strings"
	"testing"
	"time"
)

// WantErr checks err's code and that its message contains every fragment.
func WantErr(t testing.TB, err error, code kx.Code, frags ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want code %v", code)
	}
	if kx.CodeOf(err) != code {
		t.Fatalf("got %v (code %v), want code %v", err, kx.CodeOf(err), code)
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("message %q lacks %q", err.Error(), f)
		}
	}
}

// Within fails the test if f takes longer than d.
func Within(t testing.TB, d time.Duration, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	f()
	took := time.Since(start)
	if took > d {
		t.Fatalf("took %v, want under %v", took, d)
	}
	return took
}

// NoLeak fails the test if more than base goroutines are still running after a grace period.
func NoLeak(t testing.TB, base int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Fingerprints of two collectives that disagree on their kind.
var (
	FPAll = kx.Fingerprint{Kind: kx.KindAllreduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 2, Count: 10}
	FPRed = kx.Fingerprint{Kind: kx.KindReduce, Dtype: uint8(kx.F32), Op: uint16(kx.Sum), Width: 2, Count: 10}
)
