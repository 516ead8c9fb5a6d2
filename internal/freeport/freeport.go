// Package freeport gives tests loopback addresses for static peers tables and rendezvous
// servers: ports that were free when chosen and that nothing else is handed in between.
//
// The usual trick (listen on port 0, note the port, close it) races: the kernel hands that
// same port to the next port-0 listen or outgoing connection of any process, and in CI a
// parallel test's client socket took one before the rank meant to bind it could. Ports below
// the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range) are never handed out
// that way, so a port chosen there at random and checked free can be taken only by another
// test choosing ports explicitly, which this package avoids within a process and makes
// unlikely across processes (several thousand ports to choose from).
package freeport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// span is how many ports below the ephemeral range are chosen from.
const span = 12000

var (
	mu    sync.Mutex
	given = map[int]bool{} // ports already handed out by this process
)

// Loopback returns n distinct "127.0.0.1:port" addresses, each free a moment ago.
func Loopback(t testing.TB, n int) []string {
	t.Helper()
	lo, hi := window()
	mu.Lock()
	defer mu.Unlock()
	addrs := make([]string, 0, n)
	for tries := 0; len(addrs) < n; tries++ {
		if tries > 100*n+1000 {
			t.Fatalf("freeport: no free loopback port in [%d, %d) after %d tries", lo, hi, tries)
		}
		p := lo + rand.IntN(hi-lo)
		if given[p] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue // someone has it
		}
		ln.Close()
		given[p] = true
		addrs = append(addrs, addr)
	}
	return addrs
}

// window is the range ports are chosen from: the span just below the ephemeral range, or
// above it where it starts too low to leave room below.
func window() (lo, hi int) {
	elo, ehi := 32768, 60999 // Linux's default ephemeral range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			a, errA := strconv.Atoi(f[0])
			b, errB := strconv.Atoi(f[1])
			if errA == nil && errB == nil {
				elo, ehi = a, b
			}
		}
	}
	lo, hi = max(elo-span, 1024), elo
	if hi-lo < 1000 && 65536-(ehi+1) > hi-lo {
		lo, hi = ehi+1, 65536
	}
	return lo, hi
}
