"""Kylix: sparse allreduce over a nested, heterogeneous-degree butterfly, from Python.

A ctypes binding of libkylix.so (include/kylix.h is the manual for every call)::

    import numpy as np
    import kylix

    with kylix.init() as comm:                    # options from the environment (kylixrun)
        r = comm.rank
        plan = comm.config(out_idx=[r, 100, 7], in_idx=[100, 0, 7, 12345])
        res = plan.reduce(np.array([1.0, 2.0, 0.5]), op="sum")   # float64, shape (4,)
        total = comm.allreduce(np.arange(4, dtype=np.float32))

Layers: :mod:`kylix._raw` (one ctypes prototype per C function), :mod:`kylix._handles`
(classes owning the comm/plan/request handles), and this module's API.  Every failure raises
a :class:`KylixError` subclass carrying the status and the library's message.

The library is found through ``$KYLIX_LIBRARY`` (the file or its directory), the copy the
wheel bundles next to this package, or the system library path; ``python -m kylix`` says which.
Do not use the library in a process fork()ed after it was loaded: start workers with the
``spawn`` or ``forkserver`` multiprocessing start method.
"""

from __future__ import annotations

from . import _raw
from ._api import (
    OPS,
    Comm,
    Plan,
    Request,
    UserOp,
    init,
    op_create,
    plan_degrees,
    version,
)
from ._errors import (
    ArgumentError,
    AuthError,
    InternalError,
    KylixError,
    MismatchError,
    NetworkError,
    NoMemoryError,
    PeerError,
    StateError,
    TimeoutError,
    UserOpError,
    strerror,
)
from ._engines import from_mpi, from_spark
from ._raw import KylixLibraryNotFound

__version__ = "0.1.0"

#: The path (or name) libkylix.so was loaded from.
library_path: str = _raw.library_path

#: The numpy dtypes the library reduces.
DTYPES = ("float32", "float64", "int32", "int64", "uint64")

__all__ = [
    "init", "from_mpi", "from_spark", "Comm", "Plan", "Request", "UserOp", "op_create",
    "plan_degrees", "version", "strerror", "OPS", "DTYPES", "library_path",
    "KylixError", "ArgumentError", "StateError", "TimeoutError", "PeerError", "MismatchError",
    "AuthError", "NetworkError", "NoMemoryError", "InternalError", "UserOpError",
    "KylixLibraryNotFound",
]
