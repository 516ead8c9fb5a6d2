"""Kylix comms inside the engines users already run: mpi4py, Spark barrier mode.

The engine already knows every process, so no launcher or rendezvous is needed: the rank and
size come from the engine, and one all-gather of every rank's ``host:port`` (with the job
secret made by rank 0) is the peers table of :func:`kylix.init`.
"""

from __future__ import annotations

import secrets
import socket
from typing import Any, Callable, List, Optional

from ._api import Comm, init


def _free_port(host: str) -> int:
    """A port for this rank's listener, free a moment ago, announced before the library binds it.

    Chosen at random below the kernel's ephemeral port range: a port-0 pick races, since the
    kernel hands that same port to the next port-0 listen or outgoing connection of any process
    on the host (a Spark executor's own connections, say), and the library's bind then fails.
    Random from the OS (``secrets``): forked engine workers share the ``random`` module's state.
    """
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    lo = max(low - 12000, 1024)
    hi = max(low, lo + 1000)  # a range starting near 1024 leaves no room below: take some above
    for _ in range(200):
        p = lo + secrets.randbelow(hi - lo)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, p))
            except OSError:
                continue
        return p
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # all taken: any free port
        s.bind((host, 0))
        return s.getsockname()[1]


def _join(rank: int, size: int, allgather: Callable[[str], List[str]], host: str,
          options: Optional[str], kw: Any) -> Comm:
    """One all-gather of ``rank|host:port|secret`` (only rank 0 sends a secret), then init."""
    bind = "" if host not in ("127.0.0.1", "localhost") else host
    mine = f"{rank}|{host}:{_free_port(bind)}|{secrets.token_hex(16) if rank == 0 else ''}"
    peers: List[str] = [""] * size
    secret = ""
    for m in allgather(mine):
        r, addr, s = m.split("|")
        peers[int(r)] = addr                 # in rank order, whatever order the engine returns
        secret = secret or s
    if not all(peers) or not secret:
        raise RuntimeError(f"kylix: the all-gather returned {peers!r}: not one address per rank")
    return init(options, rank=rank, size=size, peers=peers, secret=secret, **kw)


def _local_or(hosts: List[str], me: str) -> str:
    return "127.0.0.1" if all(h == me for h in hosts) else me


def from_mpi(comm: Any = None, *, host: Optional[str] = None, options: Optional[str] = None,
             **kw: Any) -> Comm:
    """Join a Kylix job made of the processes of an mpi4py communicator; collective over it.

    The Kylix rank and size are ``comm``'s (default ``MPI.COMM_WORLD``).

    Args:
        comm: an mpi4py communicator (anything with ``Get_rank``, ``Get_size``, ``allgather``).
        host: the address the other ranks reach this one at. Default: ``127.0.0.1`` when every
            rank runs on this machine, else this machine's host name.
        options, kw: more options for :func:`kylix.init` (``timeout_ms=60000``, ``degrees=...``).
    """
    if comm is None:
        from mpi4py import MPI  # imported only here: mpi4py is an optional dependency

        comm = MPI.COMM_WORLD
    if host is None:
        me = socket.gethostname()
        host = _local_or(comm.allgather(me), me)
    return _join(comm.Get_rank(), comm.Get_size(), comm.allgather, host, options, kw)


def from_spark(ctx: Any = None, *, host: Optional[str] = None, options: Optional[str] = None,
               **kw: Any) -> Comm:
    """Join a Kylix job made of the tasks of a Spark barrier stage; every task calls it.

    The rank is ``ctx.partitionId()``, the size the number of tasks in the stage, and the
    peers come from ``ctx.allGather``.

    Args:
        ctx: the task's ``pyspark.BarrierTaskContext`` (default ``BarrierTaskContext.get()``).
        host: the address the other tasks reach this one at. Default: this task's executor
            address from ``ctx.getTaskInfos()``, or ``127.0.0.1`` when every task runs there.
        options, kw: more options for :func:`kylix.init`.
    """
    if ctx is None:
        from pyspark import BarrierTaskContext

        ctx = BarrierTaskContext.get()
    infos = ctx.getTaskInfos()
    if host is None:
        hosts = [i.address.rsplit(":", 1)[0] for i in infos]
        host = _local_or(hosts, hosts[ctx.partitionId()])
    return _join(ctx.partitionId(), len(infos), ctx.allGather, host, options, kw)
