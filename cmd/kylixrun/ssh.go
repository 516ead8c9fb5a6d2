package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// remoteUpMarker is the line the remote script writes to stderr first, once ssh has logged in;
// the launcher drops it from the rank's stderr.
const remoteUpMarker = "kylixrun: remote rank running"

// sshStartupsPerHost bounds the ssh sessions to one host that are still logging in. sshd's
// default MaxStartups (10:30:100) drops connections beyond 10 unauthenticated ones, which a
// host with more slots than that would otherwise see on every job start.
const sshStartupsPerHost = 8

// sshStartupWait is how long a session may hold its startup slot without the marker showing
// (an --ssh command that merges stderr into stdout never shows it): then the slot is freed.
const sshStartupWait = 10 * time.Second

// sshSlot waits until host has a free startup slot (or a signal comes: then it returns the
// signal and no slot). release frees the slot; it may be called any number of times.
func (j *job) sshSlot(host string, sigs <-chan os.Signal) (release func(), sig os.Signal) {
	if j.sshSlots == nil {
		j.sshSlots = map[string]chan struct{}{}
	}
	ch := j.sshSlots[host]
	if ch == nil {
		ch = make(chan struct{}, sshStartupsPerHost)
		j.sshSlots[host] = ch
	}
	select {
	case ch <- struct{}{}:
	case s := <-sigs:
		return nil, s
	}
	var once sync.Once
	free := func() { once.Do(func() { <-ch }) }
	t := time.AfterFunc(sshStartupWait, free)
	return func() { t.Stop(); free() }, nil
}

// markerFilter passes r through without the first line that is exactly marker, and calls seen
// when that line comes.
type markerFilter struct {
	br     *bufio.Reader
	marker []byte // with its newline
	seen   func()
	done   bool
	rest   []byte
}

func newMarkerFilter(r io.Reader, marker string, seen func()) *markerFilter {
	return &markerFilter{br: bufio.NewReaderSize(r, 64<<10), marker: []byte(marker + "\n"), seen: seen}
}

func (m *markerFilter) Read(p []byte) (int, error) {
	for {
		if len(m.rest) > 0 {
			n := copy(p, m.rest)
			m.rest = m.rest[n:]
			return n, nil
		}
		if m.done {
			return m.br.Read(p)
		}
		line, err := m.br.ReadSlice('\n')
		if bytes.Equal(line, m.marker) {
			m.done = true
			m.seen()
			continue
		}
		if len(line) > 0 {
			n := copy(p, line)
			m.rest = append(m.rest[:0], line[n:]...)
			return n, nil
		}
		return 0, err
	}
}

// shellQuote makes s one word for a POSIX shell (and for csh and fish, which agree on plain
// single quotes).
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("_@%+=:,./-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// remoteScript is the sh program a remote rank runs under ssh. It
//   - writes remoteUpMarker to stderr: ssh has logged in, the launcher may start the next one,
//   - changes to the launcher's working directory (exit 127 if it does not exist there),
//   - reads KYLIX_SECRET from the first line of stdin, so the secret never shows on a command
//     line (ps on either machine),
//   - runs the program with the rank's KYLIX_* variables and stdin from /dev/null,
//   - watches the rest of stdin, which the launcher holds open for the life of the rank: when the
//     launcher or its ssh goes away, stdin ends and the program gets SIGTERM, then SIGKILL 2 s
//     later, so no rank outlives its job on a remote host,
//   - exits with the program's status (128+signal for a signal death, as locally).
//
// env holds "KEY=value" pairs without the secret.
func remoteScript(cwd string, env, argv []string) string {
	var b strings.Builder
	b.WriteString("printf '%s\\n' " + shellQuote(remoteUpMarker) + " >&2; ")
	b.WriteString("cd " + shellQuote(cwd) + " || exit 127; ")
	b.WriteString("IFS= read -r KYLIX_SECRET || exit 127; export KYLIX_SECRET; ")
	b.WriteString("exec 3<&0; env")
	for _, kv := range env {
		b.WriteString(" " + shellQuote(kv))
	}
	// "--" would be passed to the program by some env(1)s, so a program name starting with '-'
	// is made a path instead.
	for i, a := range argv {
		if i == 0 && strings.HasPrefix(a, "-") {
			a = "./" + a
		}
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString(" </dev/null 3<&- & p=$!; ")
	b.WriteString("trap 'kill -TERM $p 2>/dev/null' HUP INT TERM; ")
	b.WriteString("{ cat >/dev/null; kill -TERM $p; sleep 2; kill -KILL $p; } <&3 >/dev/null 2>&1 & w=$!; ")
	b.WriteString("exec 3<&-; ")
	// A trapped signal interrupts wait with a status above 128 while the program still runs.
	b.WriteString("while :; do wait $p; s=$?; kill -0 $p 2>/dev/null || break; done; ")
	b.WriteString("kill $w 2>/dev/null; exit $s")
	return b.String()
}

// sshArgv is the local command that starts one remote rank.
func sshArgv(ssh []string, host, cwd string, env, argv []string) []string {
	out := append([]string(nil), ssh...)
	out = append(out, "-o", "BatchMode=yes", host, "sh -c "+shellQuote(remoteScript(cwd, env, argv)))
	return out
}
