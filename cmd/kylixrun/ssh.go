package main

import (
	"strings"
)

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
