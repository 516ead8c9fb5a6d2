//go:build linux

package shm

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// SendFDs sends fds (at most 16) over a unix stream socket with SCM_RIGHTS, along with one
// byte so that the message is not empty. The fds stay open here; the peer gets its own.
// The connection's write deadline applies.
func SendFDs(c *net.UnixConn, fds ...int) error {
	if len(fds) == 0 || len(fds) > 16 {
		return fmt.Errorf("shm: SendFDs of %d fds", len(fds))
	}
	n, oobn, err := c.WriteMsgUnix([]byte{'F'}, unix.UnixRights(fds...), nil)
	if err == nil && (n != 1 || oobn == 0) {
		err = errors.New("shm: SendFDs: short write")
	}
	return err
}

// RecvFDs receives one SendFDs message carrying exactly n fds (close-on-exec, as Go's net
// asks for on Linux). Extra or missing fds are an error; any received are closed then.
// The connection's read deadline applies.
func RecvFDs(c *net.UnixConn, n int) ([]int, error) {
	var b [1]byte
	oob := make([]byte, unix.CmsgSpace(4*16))
	_, oobn, flags, _, err := c.ReadMsgUnix(b[:], oob)
	if err != nil {
		return nil, err
	}
	return parseRights(oob[:oobn], flags, n)
}

// SendFDsRaw and RecvFDsRaw do the same on a raw socket fd (e.g. one inherited by a child
// process or made with socketpair), blocking.
func SendFDsRaw(sock int, fds ...int) error {
	if len(fds) == 0 || len(fds) > 16 {
		return fmt.Errorf("shm: SendFDs of %d fds", len(fds))
	}
	return unix.Sendmsg(sock, []byte{'F'}, unix.UnixRights(fds...), nil, 0)
}

func RecvFDsRaw(sock int, n int) ([]int, error) {
	var b [1]byte
	oob := make([]byte, unix.CmsgSpace(4*16))
	_, oobn, flags, _, err := unix.Recvmsg(sock, b[:], oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return parseRights(oob[:oobn], flags, n)
}

func parseRights(oob []byte, flags, n int) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("shm: RecvFDs: %w", err)
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, got...)
		}
	}
	if flags&unix.MSG_CTRUNC != 0 || len(fds) != n {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("shm: RecvFDs: got %d fds, want %d (truncated: %v)", len(fds), n, flags&unix.MSG_CTRUNC != 0)
	}
	return fds, nil
}
