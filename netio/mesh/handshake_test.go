package mesh

import (
	"fmt"
	"io"
	"kylix/core/kx"
	"kylix/netio/internal/nettest"
	"net"
	"testing"
	"time"
)

func TestHandshakeVersionMismatch(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		buf := make([]byte, helloSize)
		io.ReadFull(b, buf)
		h := hello{version: ProtocolVersion + 1, job: 1, rank: 1, size: 2}
		b.Write(h.encode())
	}()
	_, _, err := handshake(a, false, 0, 2, -1, 1, "s", time.Second, 0)
	nettest.WantErr(t, err, kx.CodeAuth, "rank 1 failed the handshake", fmt.Sprintf("protocol version %d", ProtocolVersion+1), fmt.Sprintf("speaks %d", ProtocolVersion))
}
