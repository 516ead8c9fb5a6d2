"""``kylix.from_mpi``: a Kylix comm over the processes of an mpi4py communicator.

MPI already knows every process: rank and size come from the communicator, rank 0 makes the
job secret and broadcasts it, and one ``allgather`` of every rank's ``host:port`` is the peers
table. No rendezvous, no ``KYLIX_*`` variables, no launcher beyond ``mpirun``/``srun``.
"""

from __future__ import annotations

import secrets
import socket
from typing import Any, Optional

from ._api import Comm, init


def _free_port(host: str) -> int:
    # Bind port 0 and let it go: another process could take the port before the library
    # listens on it (rare); init then fails on that rank and the others time out.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def from_mpi(comm: Any = None, *, host: Optional[str] = None, options: Optional[str] = None,
             **kw: Any) -> Comm:
    """Join a Kylix job made of the processes of ``comm`` (default ``MPI.COMM_WORLD``).

    Collective over ``comm``: every process calls it. The Kylix rank is the MPI rank.

    Args:
        comm: an mpi4py communicator (anything with ``Get_rank``, ``Get_size``, ``bcast`` and
            ``allgather``).
        host: the address the other ranks reach this one at. Default: ``127.0.0.1`` when every
            rank runs on this machine, else this machine's host name.
        options, kw: more options for :func:`kylix.init` (``timeout_ms=60000``, ``degrees=...``).
    """
    if comm is None:
        from mpi4py import MPI  # imported only here: mpi4py is an optional dependency

        comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    me = socket.gethostname()
    if host is None:
        hosts = comm.allgather(me)
        host = "127.0.0.1" if all(h == me for h in hosts) else me
    secret = comm.bcast(secrets.token_hex(16) if rank == 0 else None, root=0)
    peers = comm.allgather(f"{host}:{_free_port(host if host != me else '')}")
    return init(options, rank=rank, size=size, peers=peers, secret=secret, **kw)
