package fuzzcheck

import (
	"net"
	"time"
)

// ConnStub is what a scripted net.Conn of a fuzz target does not care about: deadlines are
// ignored (the script never blocks), the addresses are fixed loopback ones, Close does
// nothing. Embed it and write Read and Write.
type ConnStub struct{}

func (ConnStub) Close() error                       { return nil }
func (ConnStub) LocalAddr() net.Addr                { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (ConnStub) RemoteAddr() net.Addr               { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (ConnStub) SetDeadline(t time.Time) error      { return nil }
func (ConnStub) SetReadDeadline(t time.Time) error  { return nil }
func (ConnStub) SetWriteDeadline(t time.Time) error { return nil }
