package core

import (
	"errors"
	"fmt"
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
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

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
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
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
