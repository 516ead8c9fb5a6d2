package rendezvous

import (
	"context"
	"errors"
	"kylix/core/kx"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"
)

// ServeOwn serves the job's rendezvous on addr from rank 0. It returns nil and no
// error when the address is in use: somebody (kylixrun) serves it already.
func ServeOwn(addr string, size int, secret string, timeout time.Duration) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil
		}
		return nil, kx.Errorf(kx.CodeNet, "rank 0 cannot serve the rendezvous on %s: %v", addr, err)
	}
	return serveOn(ln, size, secret, timeout), nil
}

// OnThisHost tells whether host, of rendezvous=host:port, names this machine: empty, a
// loopback or unspecified address, an address of one of its interfaces, its hostname, or a name
// that resolves to any of these. bind is the host to serve the rendezvous on: the address as
// given, or every interface for a name (which other machines may resolve to another address).
func OnThisHost(host string, timeout time.Duration) (bind string, local bool) {
	if host == "" {
		return "", true
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return host, isLocalAddr(a)
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		short, _, _ := strings.Cut(name, ".")
		if strings.EqualFold(host, name) || strings.EqualFold(host, short) {
			return "", true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(timeout, 10*time.Second))
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return "", false // the dial will say why, if it matters
	}
	for _, a := range ips {
		if isLocalAddr(a) {
			return "", true
		}
	}
	return "", false
}

// isLocalAddr tells whether a is a loopback or unspecified address or one of this machine's.
func isLocalAddr(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ia := range addrs {
		n, ok := ia.(*net.IPNet)
		if !ok {
			continue
		}
		if b, ok := netip.AddrFromSlice(n.IP); ok && b.Unmap() == a {
			return true
		}
	}
	return false
}
