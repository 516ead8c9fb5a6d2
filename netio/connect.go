package netio

import (
	"crypto/sha256"
	"encoding/binary"
	"kylix/core/kx"
	"kylix/netio/mesh"
	"kylix/netio/rendezvous"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout is used when Options.Timeout is not set (the rendezvous's bound too).
const DefaultTimeout = rendezvous.DefaultTimeout

// Connect builds this rank's TCP transport from the parsed options: it listens, learns the
// address table (peers= or the rendezvous), dials every lower rank (retrying until the timeout,
// as peers may start later), accepts every higher one, authenticates each connection and
// returns when the full mesh is up.
//
// With rendezvous=host:port, rank 0 serves the rendezvous itself when host names this machine
// (loopback, one of its addresses, its hostname) and the port is free, so that mpirun or srun
// need no kylixrun; it stops serving once every rank has the table. When the port is taken
// (kylixrun serves it), rank 0 registers like every other rank. Other ranks retry reaching the
// rendezvous until the timeout. All ranks must be given the same secret; an empty secret
// authenticates nothing. Errors: CodeArg (options), CodeNet (cannot bind, resolve or
// accept, naming the address and rank), CodeAuth (handshake), CodeTimeout (naming the ranks still
// missing).
func Connect(o kx.Options) (*TCP, error) { return connect(o, "") }

// connect is Connect with the host to listen on ("" = all interfaces; tests use 127.0.0.1).
func connect(o kx.Options, listenHost string) (*TCP, error) {
	if o.Size < 1 || o.Rank < 0 || o.Rank >= o.Size {
		return nil, kx.Errorf(kx.CodeArg, "connect: rank=%d size=%d is not a rank of the job", o.Rank, o.Size)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if o.Size == 1 {
		return newTCP(0, 1, staticJobID(o.Secret, o.Peers), timeout, nil, nil).configure(o), nil
	}
	var (
		ln    net.Listener
		peers []string
		job   uint64
	)
	switch {
	case len(o.Peers) > 0:
		if len(o.Peers) != o.Size {
			return nil, kx.Errorf(kx.CodeArg, "connect: peers lists %d addresses for size=%d", len(o.Peers), o.Size)
		}
		_, port, err := net.SplitHostPort(o.Peers[o.Rank])
		if err != nil {
			return nil, kx.Errorf(kx.CodeArg, "connect: peers entry %d (%q) is not host:port: %v", o.Rank, o.Peers[o.Rank], err)
		}
		addr := net.JoinHostPort(listenHost, port)
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, kx.Errorf(kx.CodeNet, "rank %d cannot listen on %s (its peers entry %s): %v", o.Rank, addr, o.Peers[o.Rank], err)
		}
		peers, job = o.Peers, staticJobID(o.Secret, o.Peers)
	case o.Rendezvous != "":
		rvHost, rvPort, err := net.SplitHostPort(o.Rendezvous)
		if err != nil || rvPort == "" || rvPort == "0" {
			return nil, kx.Errorf(kx.CodeArg, "connect: rendezvous=%q is not host:port with a port other than 0", o.Rendezvous)
		}
		addr := net.JoinHostPort(listenHost, "0")
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, kx.Errorf(kx.CodeNet, "rank %d cannot listen on %s: %v", o.Rank, addr, err)
		}
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		// With no listen host the rendezvous client advertises the local address of its own
		// connection, the interface the other ranks most likely reach too. On the rendezvous
		// host itself that could be a loopback address (a hostname that /etc/hosts maps to
		// 127.0.1.1): there the rank advertises the rendezvous host, which every rank reaches.
		my := net.JoinHostPort(listenHost, port)
		bind, local := rendezvous.OnThisHost(rvHost, timeout)
		if local && listenHost == "" && rvHost != "" && !isUnspecified(rvHost) {
			my = net.JoinHostPort(rvHost, port)
		}
		// Under mpirun or srun nobody serves the rendezvous: rank 0 does, when the address names
		// its host. If it is taken (kylixrun serves it), rank 0 is a client like the others.
		var srv *rendezvous.Server
		if o.Rank == 0 && local {
			if srv, err = rendezvous.ServeOwn(net.JoinHostPort(bind, rvPort), o.Size, o.Secret, timeout); err != nil {
				ln.Close()
				return nil, err
			}
		}
		peers, job, err = rendezvous.Lookup(o.Rendezvous, o.Rank, o.Size, my, o.Secret, timeout)
		if srv != nil {
			if err == nil {
				err = srv.Wait() // every rank has its table (each send is bounded by timeout)
			}
			if err != nil || !o.Elastic {
				srv.Close()
			} else {
				keepJoinServer(srv) // grow.go: the job's join address, for rank 0's lifetime
			}
			if err != nil {
				err = kx.Errorf(kx.CodeOf(err), "%v (rank 0 served this rendezvous itself, as nothing listened on %s on its host)", err, o.Rendezvous)
			}
		}
		if err != nil {
			ln.Close()
			return nil, err
		}
	default:
		return nil, kx.Errorf(kx.CodeArg, "connect: size=%d needs peers= or rendezvous=", o.Size)
	}
	return meshTransport(ln, o, peers, job, timeout, 0)
}

// meshTransport connects rank o.Rank of the table peers (job's mesh) on ln and starts its
// transport: at start-up, and for a resized membership (grow.go), where gone bounds the wait for
// a peer that is no longer listening (mesh.Build).
func meshTransport(ln net.Listener, o kx.Options, peers []string, job uint64, timeout, gone time.Duration) (*TCP, error) {
	level := kx.ParseLogLevel(o.Log)
	debug := func(format string, args ...any) { kx.Logf(kx.LogDebug, level, o.Rank, format, args...) }
	conns, pairs, err := mesh.Build(ln, o.Rank, o.Size, peers, job, o.Secret, timeout, gone, mesh.ShmOffered(o), debug)
	if err == nil {
		err = mesh.TuneSockets(conns, o.Rank, o.Liveness) // closes them on failure
		if err != nil {
			for _, p := range pairs {
				p.Close()
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if !mesh.ShmOffered(o) {
		pairs = nil // no hello exchanged: nothing is known of the peers' hosts
	}
	t := newTCP(o.Rank, o.Size, job, timeout, conns, pairs)
	debug("shared memory with %d of %d peers; %d ranks on this host, spinning %v", t.ShmStats().Peers, o.Size-1, t.ranksOnHost, t.spin)
	return t.configure(o), nil
}

func isUnspecified(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsUnspecified()
}

// staticJobID derives the job id of a static peers table: every rank with the same secret and
// table gets the same id, and a rank of another job (another table) is refused at the handshake.
func staticJobID(secret string, peers []string) uint64 {
	sum := sha256.Sum256([]byte(secret + "\x00" + strings.Join(peers, ",")))
	return binary.LittleEndian.Uint64(sum[:8])
}
