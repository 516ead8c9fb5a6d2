//go:build !linux

package netio

import "errors"

// Outside Linux every wait sleeps until a reader goroutine filed its message.

type selfReads struct{}

func (t *TCP) startSelfRead()                       {}
func (t *TCP) interruptSelfRead()                   {}
func (t *TCP) stopSelfRead()                        {}
func (s *sockStream) rawRead(b []byte) (int, error) { return 0, errors.New("raw reads need Linux") }
func (s *sockStream) awaitReadable() error          { return nil }
func (s *sockStream) readable() bool                { return true }
