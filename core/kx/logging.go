package kx

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// Log levels of the log option, most quiet first: a line is printed when its level is at most
// the option's.
const (
	LogOff = iota
	LogError
	LogWarn
	LogInfo
	LogDebug
)

// ParseLogLevel maps the log option's value to a level (Options are validated already; an
// unknown value means the default, warn).
func ParseLogLevel(s string) int {
	switch s {
	case "off":
		return LogOff
	case "error":
		return LogError
	case "info":
		return LogInfo
	case "debug":
		return LogDebug
	}
	return LogWarn
}

var logMu sync.Mutex // one line at a time, whichever goroutine or comm logs

// Logf prints one line to stderr when level is at most cur, prefixed with the time (UTC, to
// the millisecond, so lines of several ranks and hosts sort together) and the rank (-1: not
// known yet).
func Logf(level, cur, rank int, format string, args ...any) {
	if level > cur || level == LogOff {
		return
	}
	r := "?"
	if rank >= 0 {
		r = fmt.Sprint(rank)
	}
	line := fmt.Sprintf("%s [kylix rank %s] %s\n", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), r,
		fmt.Sprintf(format, args...))
	logMu.Lock()
	os.Stderr.WriteString(line)
	logMu.Unlock()
}
