"""Layer 1: the C ABI of libkylix, one ctypes prototype per function of include/kylix.h.

Nothing here owns anything or checks anything: every function takes and returns exactly
what the C function does (handles are ``c_void_p`` integers, statuses are ``int``).
The owning classes are in :mod:`kylix._handles`, the idiomatic API in :mod:`kylix`.

The library is loaded with :class:`ctypes.CDLL`, so every call releases the GIL for its
duration (the library may run for a long time waiting on peers, and user reduction ops
call back into Python from the library's own threads).

Where the library is looked for, in order:

1. ``$KYLIX_LIBRARY``: ``libkylix.so`` or the directory holding it (an explicit choice
   always wins);
2. ``libkylix.so`` next to this file (the copy the wheel bundles);
3. the system's library path: ``ctypes.util.find_library("kylix")``, then the plain
   name ``libkylix.so`` (``LD_LIBRARY_PATH``, ``/etc/ld.so.conf``, rpath).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_int32,
    c_int64,
    c_void_p,
)

__all__ = ["lib", "library_path", "library_source", "KylixLibraryNotFound"]


class KylixLibraryNotFound(ImportError):
    """libkylix.so could not be found or loaded."""


def _candidates() -> list[tuple[str, str]]:
    """(how it was found, path or name to dlopen), in search order."""
    out: list[tuple[str, str]] = []
    env = os.environ.get("KYLIX_LIBRARY")
    if env:
        # A directory holding libkylix.so, or the file itself (as -Dkylix.library.path in Java).
        path = os.path.join(env, "libkylix.so") if os.path.isdir(env) else env
        out.append(("$KYLIX_LIBRARY", path))
        return out  # explicit: never fall back to another copy silently
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libkylix.so")
    if os.path.exists(here):
        out.append(("bundled with the package", here))
    found = ctypes.util.find_library("kylix")
    if found:
        out.append(("ctypes.util.find_library('kylix')", found))
    out.append(("the dynamic linker's search path", "libkylix.so"))
    return out


def _load() -> tuple[ctypes.CDLL, str, str]:
    errors = []
    for how, path in _candidates():
        try:
            return ctypes.CDLL(path), path, how
        except OSError as e:
            errors.append(f"  {how}: {path}: {e}")
    raise KylixLibraryNotFound(
        "kylix: cannot load libkylix.so. Tried:\n"
        + "\n".join(errors)
        + "\nInstall the package from a wheel that bundles it (`pip install ./bindings/python` "
        "in the Kylix repository), or build it with `make` (build/libkylix.so) and set "
        "KYLIX_LIBRARY to that file or its directory."
    )


lib, library_path, library_source = _load()


def _fn(name: str, restype, argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = argtypes
    return f


# Handles are opaque tokens: carried as c_void_p (Python int or None), never dereferenced.
comm_p = c_void_p
plan_p = c_void_p
request_p = c_void_p

# Status values (enum kylix_status); they never change.
KYLIX_OK = 0
KYLIX_ERR_ARG = 1
KYLIX_ERR_STATE = 2
KYLIX_ERR_TIMEOUT = 3
KYLIX_ERR_PEER = 4
KYLIX_ERR_MISMATCH = 5
KYLIX_ERR_AUTH = 6
KYLIX_ERR_NET = 7
KYLIX_ERR_NOMEM = 8
KYLIX_ERR_INTERNAL = 9

# enum kylix_dtype
KYLIX_F32 = 1
KYLIX_F64 = 2
KYLIX_I32 = 3
KYLIX_I64 = 4
KYLIX_U64 = 5

# enum kylix_op
KYLIX_SUM = 1
KYLIX_PROD = 2
KYLIX_MIN = 3
KYLIX_MAX = 4
KYLIX_BAND = 5
KYLIX_BOR = 6
KYLIX_BXOR = 7
KYLIX_RSUM = 8  # reproducible sum, f32/f64 only

# ---- version and errors ---------------------------------------------------------------------

# int kylix_version(void);
kylix_version = _fn("kylix_version", c_int, [])

# const char *kylix_strerror(int status);
kylix_strerror = _fn("kylix_strerror", c_char_p, [c_int])

# const char *kylix_errmsg(const kylix_comm *c);
kylix_errmsg = _fn("kylix_errmsg", c_char_p, [comm_p])

# ---- membership -----------------------------------------------------------------------------

# int kylix_init(const char *options, kylix_comm **out);
kylix_init = _fn("kylix_init", c_int, [c_char_p, POINTER(comm_p)])

# int kylix_finalize(kylix_comm *c);
kylix_finalize = _fn("kylix_finalize", c_int, [comm_p])

# int kylix_rank(const kylix_comm *c);
kylix_rank = _fn("kylix_rank", c_int, [comm_p])

# int kylix_size(const kylix_comm *c);
kylix_size = _fn("kylix_size", c_int, [comm_p])

# ---- sparse allreduce -----------------------------------------------------------------------

# int kylix_config(kylix_comm *c,
#                  const int64_t *out_idx, int64_t n_out,
#                  const int64_t *in_idx,  int64_t n_in,
#                  kylix_plan **plan);
kylix_config = _fn("kylix_config", c_int,
                   [comm_p, c_void_p, c_int64, c_void_p, c_int64, POINTER(plan_p)])

# int kylix_reduce(kylix_plan *p, const void *out_vals, void *in_vals,
#                  int dtype, int op, int32_t width);
kylix_reduce = _fn("kylix_reduce", c_int,
                   [plan_p, c_void_p, c_void_p, c_int, c_int, c_int32])

# int kylix_config_reduce(kylix_comm *c,
#                         const int64_t *out_idx, int64_t n_out, const void *out_vals,
#                         const int64_t *in_idx,  int64_t n_in,  void *in_vals,
#                         int dtype, int op, int32_t width,
#                         kylix_plan **plan);
kylix_config_reduce = _fn("kylix_config_reduce", c_int,
                          [comm_p, c_void_p, c_int64, c_void_p, c_void_p, c_int64, c_void_p,
                           c_int, c_int, c_int32, POINTER(plan_p)])

# int kylix_plan_free(kylix_plan *p);
kylix_plan_free = _fn("kylix_plan_free", c_int, [plan_p])

# ---- dense collectives ----------------------------------------------------------------------

# int kylix_allreduce(kylix_comm *c, const void *send, void *recv, int64_t count,
#                     int dtype, int op);
kylix_allreduce = _fn("kylix_allreduce", c_int,
                      [comm_p, c_void_p, c_void_p, c_int64, c_int, c_int])

# The same two functions without argtypes, for the lean path of kylix.Comm.allreduce and
# kylix.Plan.reduce: ctypes then converts each argument by its own type, about 0.25 us a call
# less than through argtypes' from_param.  The caller must pass exactly: c_void_p instances for
# the pointers (handle and buffers), a c_int64 instance for count, and Python ints within the
# C int range for dtype, op and width (a Python int is passed as a C int); or each of them as
# the CArgObject its type's from_param makes of its value (what the repeated call keeps).
kylix_allreduce_untyped = lib._FuncPtr(("kylix_allreduce", lib))
kylix_allreduce_untyped.restype = c_int
kylix_reduce_untyped = lib._FuncPtr(("kylix_reduce", lib))
kylix_reduce_untyped.restype = c_int

# int kylix_bcast(kylix_comm *c, void *buf, int64_t bytes, int root);
kylix_bcast = _fn("kylix_bcast", c_int, [comm_p, c_void_p, c_int64, c_int])

# int kylix_barrier(kylix_comm *c);
kylix_barrier = _fn("kylix_barrier", c_int, [comm_p])

# int kylix_mix(kylix_comm *c, void *buf, int64_t count, int dtype, int64_t step);
kylix_mix = _fn("kylix_mix", c_int, [comm_p, c_void_p, c_int64, c_int, c_int64])

# ---- non-blocking forms ---------------------------------------------------------------------

# int kylix_ireduce(kylix_plan *p, const void *out_vals, void *in_vals,
#                   int dtype, int op, int32_t width, kylix_request **req);
kylix_ireduce = _fn("kylix_ireduce", c_int,
                    [plan_p, c_void_p, c_void_p, c_int, c_int, c_int32, POINTER(request_p)])

# int kylix_iallreduce(kylix_comm *c, const void *send, void *recv, int64_t count,
#                      int dtype, int op, kylix_request **req);
kylix_iallreduce = _fn("kylix_iallreduce", c_int,
                       [comm_p, c_void_p, c_void_p, c_int64, c_int, c_int, POINTER(request_p)])

# int kylix_wait(kylix_request *r);
kylix_wait = _fn("kylix_wait", c_int, [request_p])

# int kylix_test(kylix_request *r, int *done);
kylix_test = _fn("kylix_test", c_int, [request_p, POINTER(c_int)])

# ---- user-defined reduction -----------------------------------------------------------------

# typedef void (*kylix_user_fn)(void *inout, const void *in, int64_t count, int dtype, void *ctx);
kylix_user_fn = CFUNCTYPE(None, c_void_p, c_void_p, c_int64, c_int, c_void_p)

# int kylix_op_create(kylix_user_fn fn, void *ctx, int *op);
kylix_op_create = _fn("kylix_op_create", c_int, [kylix_user_fn, c_void_p, POINTER(c_int)])

# ---- failures and elasticity ----------------------------------------------------------------

# int kylix_failed_ranks(const kylix_comm *c, int32_t *ranks, int32_t cap, int32_t *n);
kylix_failed_ranks = _fn("kylix_failed_ranks", c_int,
                         [comm_p, POINTER(c_int32), c_int32, POINTER(c_int32)])

# int kylix_shrink(kylix_comm *c, kylix_comm **survivors);
kylix_shrink = _fn("kylix_shrink", c_int, [comm_p, POINTER(comm_p)])


def _fn_since(name: str, restype, argtypes):
    """Like _fn, for a function a library older than this binding may lack: calling it then
    raises AttributeError naming the library to rebuild, and the rest of the binding works."""
    if hasattr(lib, name):
        return _fn(name, restype, argtypes)

    def missing(*_args):
        raise AttributeError(f"{library_path} has no {name}: the library is older than this "
                             "binding; rebuild it (make) or install a matching wheel")
    return missing


# int kylix_resize(kylix_comm *c, int32_t min_size, kylix_comm **next);
kylix_resize = _fn_since("kylix_resize", c_int, [comm_p, c_int32, POINTER(comm_p)])

# int kylix_members(const kylix_comm *c, int32_t *prev_ranks, int32_t cap, int32_t *n);
kylix_members = _fn_since("kylix_members", c_int,
                          [comm_p, POINTER(c_int32), c_int32, POINTER(c_int32)])

# int kylix_join_address(const kylix_comm *c, char *buf, int64_t cap, int64_t *needed);
kylix_join_address = _fn_since("kylix_join_address", c_int,
                               [comm_p, POINTER(c_char), c_int64, POINTER(c_int64)])

# ---- observability and planning -------------------------------------------------------------

# int kylix_stats_json(const kylix_comm *c, char *buf, int64_t cap, int64_t *needed);
kylix_stats_json = _fn("kylix_stats_json", c_int,
                       [comm_p, POINTER(c_char), c_int64, POINTER(c_int64)])

# int kylix_stats_reset(kylix_comm *c);
kylix_stats_reset = _fn("kylix_stats_reset", c_int, [comm_p])

# #define KYLIX_MARK_INSTANT 0 / KYLIX_MARK_BEGIN 1 / KYLIX_MARK_END 2
KYLIX_MARK_INSTANT = 0
KYLIX_MARK_BEGIN = 1
KYLIX_MARK_END = 2

# int kylix_mark(kylix_comm *c, const char *name, int kind);
kylix_mark = _fn_since("kylix_mark", c_int, [comm_p, c_char_p, c_int])

# int kylix_reject(kylix_comm *c, const char *reason);
kylix_reject = _fn("kylix_reject", c_int, [comm_p, c_char_p])

# int kylix_plan_degrees(int64_t n_features, double density, int32_t ranks, double alpha,
#                        int64_t min_packet_bytes, int32_t bytes_per_value,
#                        int32_t *degrees, int32_t cap, int32_t *layers);
kylix_plan_degrees = _fn("kylix_plan_degrees", c_int,
                         [c_int64, c_double, c_int32, c_double, c_int64, c_int32,
                          POINTER(c_int32), c_int32, POINTER(c_int32)])
