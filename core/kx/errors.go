package kx

import (
	"errors"
	"fmt"
	"strings"
)

// Code classifies a failure. The values match enum kylix_status in include/kylix.h; capi maps
// them one to one, so they must never be renumbered.
type Code int

const (
	OK Code = iota
	CodeArg
	CodeState
	CodeTimeout
	CodePeer
	CodeMismatch
	CodeAuth
	CodeNet
	CodeNoMem
	CodeInternal
)

var codeNames = [...]string{"ok", "invalid argument", "invalid state", "timeout", "peer failed",
	"mismatch", "authentication failed", "network error", "out of memory", "internal error"}

func (c Code) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("code(%d)", int(c))
}

// Error is the one error type that crosses package boundaries: a code for the C status and a
// message for kylix_errmsg.
//
// An error made by Errorf keeps its format and arguments beside the message, so the ranks and
// collectives it names can be renumbered as fields, never by editing text: a shrunk comm's
// transport maps the ranks of the comm it was cut from to its own (Renumber). Ranks are named with RankRef, collectives with SeqRef,
// layers with LayerRef; the first of each is also the error's Rank, Seq and Layer. A failure a
// peer reported carries that peer in Reporter, appended to the text as "(reported by rank N)".
type Error struct {
	Code Code
	Msg  string // the message, without the reporter

	format   string
	args     []any
	reporter int // the reporting peer + 1; 0 for none
	named    int // a peer's report: the rank its text named first + 1 (only the text travels)
}

// RankRef is a rank named in an error message (format it with %d).
type RankRef int

// SeqRef is a collective's sequence number named in an error message (format it with %d).
type SeqRef uint64

// LayerRef is a butterfly layer named in an error message (format it with %d).
type LayerRef int

// formerRank is a rank of the comm a shrunk comm was cut from that is not a member of it.
type formerRank int

func (r formerRank) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, "%d (of the comm before shrink)", int(r))
}

func (e *Error) Error() string {
	if e.reporter > 0 {
		return fmt.Sprintf("%s (reported by rank %d)", e.Msg, e.reporter-1)
	}
	return e.Msg
}

// Rank is the first rank the error names (the rank it blames), if any: one its own text
// names, else the one an error it wraps blames (a comm broken by a death names the dead rank).
func (e *Error) Rank() (int, bool) {
	for _, a := range e.args {
		if r, ok := a.(RankRef); ok {
			return int(r), true
		}
	}
	for _, a := range e.args {
		var w *Error
		if err, ok := a.(error); ok && errors.As(err, &w) {
			if r, ok := w.Rank(); ok {
				return r, true
			}
		}
	}
	return e.named - 1, e.named > 0
}

// Seq is the first collective the error names, if any.
func (e *Error) Seq() (uint64, bool) {
	for _, a := range e.args {
		if q, ok := a.(SeqRef); ok {
			return uint64(q), true
		}
	}
	return 0, false
}

// Layer is the first layer the error names, if any.
func (e *Error) Layer() (int, bool) {
	for _, a := range e.args {
		if l, ok := a.(LayerRef); ok {
			return int(l), true
		}
	}
	return 0, false
}

// Reporter is the peer that reported the failure, if a peer did.
func (e *Error) Reporter() (int, bool) { return e.reporter - 1, e.reporter > 0 }

// Reported is err as reported by peer rank: how a failure a peer announced reaches the waits.
// named is the rank the peer's error named first (its Rank), -1 for none: the text arrives
// already in this comm's numbers, so named is kept as it is by Renumber, like the text.
func Reported(code Code, msg string, rank, named int) *Error {
	return &Error{Code: code, Msg: msg, reporter: rank + 1, named: max(named+1, 0)}
}

// Renumber returns the error with every rank and collective it names mapped: rank(r) gives the
// new number and whether r is a member at all (a rank that is not keeps its number, marked as of
// the comm before); seq(q) gives the new number, or false to keep q.
func (e *Error) Renumber(rank func(int) (int, bool), seq func(uint64) (uint64, bool)) *Error {
	out := *e
	out.args = make([]any, len(e.args))
	for i, a := range e.args {
		switch v := a.(type) {
		case RankRef:
			if n, ok := rank(int(v)); ok {
				out.args[i] = RankRef(n)
			} else {
				out.args[i] = formerRank(v)
			}
		case SeqRef:
			if n, ok := seq(uint64(v)); ok {
				out.args[i] = SeqRef(n)
			} else {
				out.args[i] = v
			}
		case *Error:
			out.args[i] = v.Renumber(rank, seq)
		default:
			out.args[i] = a
		}
	}
	if e.format != "" {
		out.Msg = fmt.Sprintf(e.format, out.args...)
	}
	if e.reporter > 0 {
		if n, ok := rank(e.reporter - 1); ok {
			out.reporter = n + 1
		}
	}
	return &out
}

// Is lets errors.Is(err, core.ErrTimeout) match any *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Msg == "" && t.Code == e.Code
}

// Sentinels for errors.Is; they carry no message.
var (
	ErrArg      = &Error{Code: CodeArg}
	ErrState    = &Error{Code: CodeState}
	ErrTimeout  = &Error{Code: CodeTimeout}
	ErrPeer     = &Error{Code: CodePeer}
	ErrMismatch = &Error{Code: CodeMismatch}
	ErrAuth     = &Error{Code: CodeAuth}
	ErrNet      = &Error{Code: CodeNet}
	ErrNoMem    = &Error{Code: CodeNoMem}
	ErrInternal = &Error{Code: CodeInternal}
)

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), format: format, args: args}
}

// Prefixed is err with p put before its message (its code, names and reporter kept).
func Prefixed(p string, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return Errorf(CodeInternal, "%s%v", p, err)
	}
	out := *e
	out.Msg = p + out.Msg
	if out.format != "" {
		out.format = strings.ReplaceAll(p, "%", "%%") + out.format
	}
	return &out
}

// CodeOf returns the code of err: OK for nil, CodeInternal for errors that are not *Error.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// RankListFormat is a format for n ranks: "%d", "%d and %d", "%d, %d and %d" (errors that
// name every replica of a node).
func RankListFormat(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "%d"
	}
	f := ""
	for i := 0; i < n-2; i++ {
		f += "%d, "
	}
	return f + "%d and %d"
}

// Reworded returns a copy of e with the final message msg: a later Renumber leaves its text as
// it is.
func (e *Error) Reworded(msg string) *Error {
	out := *e
	out.Msg, out.format = msg, ""
	return &out
}

// AbortReason turns the error a collective failed with into what a transport's abort carries to
// the peers: its code, the rank it names first (-1: none) and its message.
func AbortReason(err error) (code Code, named int, msg string) {
	if err == nil {
		return CodeInternal, -1, "collective aborted without a reason"
	}
	code, named = CodeOf(err), -1
	if code == OK {
		code = CodeInternal
	}
	var e *Error
	if errors.As(err, &e) {
		if r, ok := e.Rank(); ok {
			named = r
		}
	}
	if e, ok := err.(*Error); ok {
		return code, named, e.Msg // a peer's report passed on: the receiver names this rank as the reporter
	}
	return code, named, err.Error()
}
