package kerneltest

import "testing"

// guardBytes sentinel bytes follow every guarded buffer: more than any vector kernel's widest
// store.
const guardBytes = 64

// Guarded returns b's bytes followed by sentinel bytes, and the dst view (len(b), capacity
// ending at the sentinels), so a kernel that writes past the end of dst is caught.
func Guarded(b []byte) (all, dst []byte) {
	all = make([]byte, len(b)+guardBytes)
	copy(all, b)
	for i := len(b); i < len(all); i++ {
		all[i] = 0xA5 ^ byte(i)
	}
	return all, all[:len(b):len(b)]
}

// CheckGuard fails t when a sentinel byte after the first n bytes of all was overwritten.
func CheckGuard(t *testing.T, what string, all []byte, n int) {
	t.Helper()
	for i := n; i < len(all); i++ {
		if all[i] != 0xA5^byte(i) {
			t.Fatalf("%s: sentinel byte %d past the end of dst overwritten", what, i-n)
		}
	}
}
