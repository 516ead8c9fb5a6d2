package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// hostSlots is one host of --hosts or --hostfile and how many ranks it takes.
type hostSlots struct {
	host  string
	slots int
}

// parseHostList reads "h1:4,h2:2,h3" (slots default to 1; IPv6 as "[::1]:4").
func parseHostList(s string) ([]hostSlots, error) {
	var hs []hostSlots
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		h, err := parseHostEntry(part, "")
		if err != nil {
			return nil, fmt.Errorf("--hosts: %v", err)
		}
		hs = append(hs, h)
	}
	if len(hs) == 0 {
		return nil, fmt.Errorf("--hosts: no hosts in %q", s)
	}
	return hs, nil
}

// parseHostEntry splits "host:N" (or "[v6]:N", or a bare host) and applies slotsKV, the value
// of a hostfile's "slots=" if any.
func parseHostEntry(e, slotsKV string) (hostSlots, error) {
	host, slots := e, ""
	switch {
	case strings.HasPrefix(e, "["):
		end := strings.Index(e, "]")
		if end < 0 {
			return hostSlots{}, fmt.Errorf("%q: missing ']'", e)
		}
		host = e[1:end]
		rest := e[end+1:]
		if rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return hostSlots{}, fmt.Errorf("%q: expected ':slots' after ']'", e)
			}
			slots = rest[1:]
		}
	case strings.Count(e, ":") == 1:
		host, slots, _ = strings.Cut(e, ":")
	}
	// More than one colon without brackets: a bare IPv6 address.
	if host == "" {
		return hostSlots{}, fmt.Errorf("%q: empty host name", e)
	}
	if slots != "" && slotsKV != "" {
		return hostSlots{}, fmt.Errorf("%q: slots given twice", e)
	}
	if slotsKV != "" {
		slots = slotsKV
	}
	n := 1
	if slots != "" {
		var err error
		n, err = strconv.Atoi(slots)
		if err != nil || n < 1 {
			return hostSlots{}, fmt.Errorf("%q: slots must be an integer >= 1", e)
		}
	}
	return hostSlots{host: host, slots: n}, nil
}

// parseHostfile reads lines "host slots=N", "host:N" or "host"; '#' starts a comment.
func parseHostfile(name, text string) ([]hostSlots, error) {
	var hs []hostSlots
	for i, line := range strings.Split(text, "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		slotsKV := ""
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			switch {
			case ok && k == "slots" && slotsKV == "":
				slotsKV = v
				if v == "" {
					return nil, fmt.Errorf("%s:%d: slots= needs a value", name, i+1)
				}
			case ok && k == "max_slots": // Open MPI hostfiles carry it; the launcher has no use for it.
			default:
				return nil, fmt.Errorf("%s:%d: unexpected %q (want \"host slots=N\" or \"host:N\")", name, i+1, kv)
			}
		}
		h, err := parseHostEntry(f[0], slotsKV)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, i+1, err)
		}
		hs = append(hs, h)
	}
	if len(hs) == 0 {
		return nil, fmt.Errorf("%s: no hosts", name)
	}
	return hs, nil
}

func readHostfile(name string) ([]hostSlots, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("--hostfile: %v", err)
	}
	return parseHostfile(name, string(b))
}

func totalSlots(hs []hostSlots) int {
	t := 0
	for _, h := range hs {
		t += h.slots
	}
	return t
}

// placeRanks gives the host of each of n ranks: hosts in order, each filled to its slots.
// Without hosts every rank is local (""). The caller has checked that n fits.
func placeRanks(hs []hostSlots, n int) []string {
	out := make([]string, n)
	if len(hs) == 0 {
		return out
	}
	r := 0
	for _, h := range hs {
		for s := 0; s < h.slots && r < n; s++ {
			out[r] = h.host
			r++
		}
	}
	return out
}

// isLocalHost tells whether ranks on host run on this machine without ssh.
func isLocalHost(host string) bool {
	switch strings.ToLower(host) {
	case "", "localhost", "127.0.0.1", "::1":
		return true
	}
	name, err := os.Hostname()
	if err != nil || name == "" {
		return false
	}
	short, _, _ := strings.Cut(name, ".")
	return strings.EqualFold(host, name) || strings.EqualFold(host, short)
}
