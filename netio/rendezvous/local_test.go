package rendezvous

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestLocalRendezvous(t *testing.T) {
	host, _ := os.Hostname()
	cases := []struct {
		host, bind string
		local      bool
	}{
		{"", "", true},
		{"127.0.0.1", "127.0.0.1", true},
		{"::1", "::1", true},
		{"0.0.0.0", "0.0.0.0", true},
		{"localhost", "", true},
		{"198.51.100.7", "198.51.100.7", false}, // TEST-NET-2: not an address of this machine
		{"kylix-no-such-host.invalid", "", false},
	}
	if host != "" {
		cases = append(cases, struct {
			host, bind string
			local      bool
		}{host, "", true})
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				cases = append(cases, struct {
					host, bind string
					local      bool
				}{n.IP.String(), n.IP.String(), true})
				break
			}
		}
	}
	for _, c := range cases {
		bind, local := OnThisHost(c.host, 2*time.Second)
		if local != c.local || (local && bind != c.bind) {
			t.Errorf("OnThisHost(%q) = %q, %v; want %q, %v", c.host, bind, local, c.bind, c.local)
		}
	}
	if strings.Contains(host, ".") {
		short, _, _ := strings.Cut(host, ".")
		if _, local := OnThisHost(short, time.Second); !local {
			t.Errorf("the short hostname %q is not local", short)
		}
	}
}
