//go:build !linux

package netio

import (
	"errors"
	"kylix/core/kx"
)

// Outside Linux every wait sleeps until a reader goroutine filed its message.

type selfReads struct{}

func (t *TCP) startSelfRead()                       {}
func (t *TCP) interruptSelfRead()                   {}
func (t *TCP) stopSelfRead()                        {}
func (s *sockStream) rawRead(b []byte) (int, error) { return 0, errors.New("raw reads need Linux") }
func (s *sockStream) readFd(uintptr)                {}
func (s *sockStream) awaitReadable() error          { return nil }
func (s *sockStream) readable() bool                { return true }

func (t *TCP) recvDriven(int, kx.Tag) ([]byte, bool, error)    { return nil, false, nil }
func (t *TCP) awaitDriven(int, kx.Tag, int) (int, bool, error) { return 0, false, nil }
