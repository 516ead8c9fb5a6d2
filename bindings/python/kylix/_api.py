"""Layer 3: the idiomatic API (re-exported by :mod:`kylix`).

Collectives must be called by every rank of the comm in the same order.  When this binding
rejects an argument of a collective (a length that does not match, an unsupported dtype,
``copy=False`` with an array that needs a copy ...), the rank still takes its turn in the
collective with ``kylix_reject`` before :class:`ArgumentError` is raised: the other ranks then
fail with :class:`MismatchError` naming this rank and the reason instead of waiting for a rank
that never came, and the comm stays usable, exactly as for arguments the C library rejects
itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import threading
from typing import (Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple,
                    Union)

import numpy as np

from . import _handles, _raw
from ._arrays import (CODE_TO_NP, DATA_OFFSET, NP_TO_CODE, BadArg, data_address, indices, output,
                      ptr, snapshot_of, stamps, values)
from ._errors import ArgumentError, KylixError, UserOpError, error_for_status
from ._handles import CommHandle, PlanHandle, RequestHandle, check_global, errmsg

__all__ = ["Comm", "Plan", "Request", "UserOp", "init", "op_create", "plan_degrees", "version",
           "OPS"]

ArrayLike = Any  # anything np.asarray accepts; numpy arrays pass without a copy when they can

#: Built-in reduction ops by name (``op=`` also takes an ``int`` id or a :class:`UserOp`).
OPS: Dict[str, int] = {
    "sum": _raw.KYLIX_SUM, "prod": _raw.KYLIX_PROD, "min": _raw.KYLIX_MIN,
    "max": _raw.KYLIX_MAX, "band": _raw.KYLIX_BAND, "bor": _raw.KYLIX_BOR,
    "bxor": _raw.KYLIX_BXOR, "rsum": _raw.KYLIX_RSUM,
}


#: kylix_mark's kinds by name (:meth:`Comm.mark`).
_MARK_KINDS: Dict[str, int] = {"instant": _raw.KYLIX_MARK_INSTANT, "begin": _raw.KYLIX_MARK_BEGIN,
                               "end": _raw.KYLIX_MARK_END}


def version() -> Tuple[int, int, int]:
    """The loaded library's version (major, minor, patch), from ``kylix_version()``."""
    v = _raw.kylix_version()
    return (v // 10000, v // 100 % 100, v % 100)


# ---- user-defined ops -----------------------------------------------------------------------

_user_ops: List["UserOp"] = []     # every op ever created: callbacks must outlive the process
_user_ops_lock = threading.Lock()


class UserOp:
    """A reduction op defined by a Python function; create it with :func:`op_create`.

    Attributes:
        id: the op id the library handed out (usable wherever ``op=`` is).
        fn: the Python function.
    """

    def __init__(self, fn: Callable[[np.ndarray, np.ndarray], Optional[np.ndarray]]):
        self.fn = fn
        self.id = -1
        self._errors: List[BaseException] = []
        self._lock = threading.Lock()
        self._cfunc = _raw.kylix_user_fn(self._call)

    def _call(self, inout_p, in_p, count, dtype, ctx):  # runs on a library thread
        try:
            dt = CODE_TO_NP[dtype]
            nbytes = int(count) * dt.itemsize
            inout = np.frombuffer((ctypes.c_char * nbytes).from_address(inout_p), dtype=dt)
            in_ = np.frombuffer((ctypes.c_char * nbytes).from_address(in_p), dtype=dt)
            in_.flags.writeable = False
            r = self.fn(inout, in_)
            if r is not None and r is not inout:
                np.copyto(inout, r, casting="same_kind")
        except BaseException as e:  # noqa: BLE001 - must never unwind into the library
            with self._lock:
                self._errors.append(e)

    def _take_error(self) -> Optional[BaseException]:
        if not self._errors:
            return None
        with self._lock:
            errs, self._errors = self._errors, []
        return errs[0] if errs else None

    def __int__(self) -> int:
        return self.id

    def __repr__(self) -> str:
        return f"<kylix.UserOp id={self.id} fn={getattr(self.fn, '__name__', self.fn)!r}>"


def op_create(fn: Callable[[np.ndarray, np.ndarray], Optional[np.ndarray]]) -> UserOp:
    """Register a Python reduction op (``kylix_op_create``); use the result as ``op=``.

    ``fn(inout, in_)`` receives two 1-D numpy arrays of the same dtype and length, views of the
    library's buffers (no copy; valid only during the call; ``in_`` is read-only) and must
    combine them element-wise into ``inout`` (``inout[i] = inout[i] (+) in_[i]``), in place or
    by returning the combined array (then copied into ``inout``).  For 2-D values the rows are
    flattened: element i of a call is not tied to a column.  It is called from the library's
    threads (holding the GIL), many elements per call, only during a collective that uses it.
    It must not call kylix.  It should be associative (the library folds contributions in
    (rank, position) order; the bracketing depends on the degrees).  An exception in ``fn``
    cannot stop the collective: the call then raises :class:`UserOpError` on that rank.

    Ops are compared by id across ranks: create the same ops in the same order on every rank.
    They live until the process exits.
    """
    if not callable(fn):
        raise ArgumentError(f"fn: {fn!r} is not callable", call="kylix.op_create")
    op = UserOp(fn)
    out = ctypes.c_int(0)
    with _user_ops_lock:
        st = _raw.kylix_op_create(op._cfunc, None, ctypes.byref(out))
        check_global(st, "kylix_op_create")
        op.id = out.value
        _user_ops.append(op)
    return op


OpLike = Union[str, int, UserOp]

# ---- the lean path --------------------------------------------------------------------------
#
# A small collective costs the library about a microsecond; the general argument handling
# (values(), output(), np.may_share_memory, a.ctypes.data twice, _op_code, ctypes' argtypes
# conversions) cost several more.  So the hot calls (Comm.allreduce, Plan.reduce) first try a
# lean path for the common case: numpy arrays (exactly np.ndarray, not empty) of a supported dtype
# in native byte order, C-contiguous; out of the values' exact dtype and result shape,
# C-contiguous and writable (or out is arr, or out None); op a built-in name in lower case or a
# plain int in the C int range; no dtype=.  For such arguments it checks what the general path
# checks, with cheaper tests: a dict lookup for the dtype code, the flags, the address ranges of
# the two C-contiguous buffers instead of np.may_share_memory.  The data pointers are c_void_p
# views of the arrays' data field (see _arrays.DATA_OFFSET) handed to the untyped prototypes of
# _raw.  Everything else, including every argument the general path rejects, goes on to the
# general path, which raises the same errors as before (taking this rank's turn with
# kylix_reject).  tests/test_unit.py (test_lean_*) holds the two paths to the same results and
# errors and checks which path each case takes.

_ndarray = np.ndarray
_empty = np.empty
_OFF = DATA_OFFSET
_NP_TO_CODE_get = NP_TO_CODE.get
_OPS_get = OPS.get
_INT_MIN, _INT_MAX = -0x80000000, 0x7FFFFFFF
_void_p = ctypes.c_void_p
_int64 = ctypes.c_int64
# A c_void_p whose value is the word at an address: at id(a) + DATA_OFFSET, a's data pointer,
# read when ctypes converts the argument (a is alive then: the caller holds it).
_pointer_at = ctypes.c_void_p.from_address
_allreduce_untyped = _raw.kylix_allreduce_untyped
_reduce_untyped = _raw.kylix_reduce_untyped
# allreduce's count argument, one c_int64 per count seen (a program reduces few sizes): a dict
# lookup instead of building a ctypes object every call.  Never mutated once stored; bounded.
_counts: Dict[int, ctypes.c_int64] = {}
_counts_get = _counts.get


def _count(n: int) -> ctypes.c_int64:
    """The c_int64 for count n (from _counts, kept for the next call)."""
    if len(_counts) >= 256:
        _counts.clear()
    c = _counts[n] = _int64(n)
    return c


# ---- the repeated call ------------------------------------------------------------------------
#
# A loop calls allreduce (or a plan's reduce) with the same arrays every time, and the lean
# path's checks and pointer views (dtype, flags and shape through numpy, a ctypes object per
# pointer) cost several times what a test of "same as last time" does.  So a comm (a plan)
# keeps the last call the lean path accepted with an out (or in place), as a _Hot: the arrays'
# addresses, the C call's arguments, converted once (_frozen), and each array's stamp
# (_arrays.stamp_words: the words of the fields and dimensions every check of the lean path
# depends on, the data pointer among them, after the object's type pointer, _arrays.stamps).
# The next call with the same op and objects at the same addresses whose stamps are unchanged
# (so exact ndarrays: the type is in the stamp, and a comparison stops at the first word that
# differs) passes every check the lean path made,
# whether or not they are the very same objects (a new array may take a dead one's place), and
# its data pointers are the kept ones: it makes the C call with the kept arguments; anything
# else goes through the lean path.  The _Hot holds no reference to the arrays (a weak reference
# would make ndarray.resize refuse them).  The one pointer among the stamped fields whose
# target matters, the dtype's, is taken only when it is numpy's own dtype object, which never
# dies, so the same pointer is the same dtype.  A pair is kept the second time in a row it is
# seen, so alternating arrays cost a comparison.  A comm keeps its _Hot in its state
# (_handles._CommState.hot), a plan in its own (_PlanState.hot), which everything that gives a
# call more to do than the C call (closing the comm or the plan, a plan or request to clean up
# after, fork) empties: the repeated call tests nothing about the comm or the plan.


class _Hot:
    __slots__ = ("aid", "oid", "op", "f", "fb", "d", "db", "keep", "args")


# ctypes converts an argument that is a CArgObject (what a simple type's from_param makes of a
# Python value) by copying its value; a ctypes instance (c_void_p(x)) is first turned into a new
# CArgObject, and a Python int is converted as a C int: so arguments made once with from_param
# save that work at every call (about a tenth of a microsecond for allreduce's six).  Where
# from_param does not make CArgObjects (another ctypes), the arguments stay as they were.
_P, _L, _I = ctypes.c_void_p.from_param, ctypes.c_int64.from_param, ctypes.c_int.from_param
_CARG = type(_P(1)).__name__ == "CArgObject" and type(_L(1)) is type(_I(1)) is type(_P(1))


def _frozen(args: Tuple[Any, ...]) -> Tuple[Any, ...]:
    """args (c_void_p and c_int64 instances, Python ints for C ints) as CArgObjects of their
    values now; the pointers' targets must not move while the result is used."""
    if not _CARG:
        return args
    return tuple(_P(a.value) if isinstance(a, ctypes.c_void_p) else
                 _L(a.value) if isinstance(a, ctypes.c_int64) else _I(a) for a in args)


def _make_hot(arr: np.ndarray, out: np.ndarray, op: Any, dcode: int,
              args: Tuple[Any, ...]) -> Optional[_Hot]:
    """The _Hot for a call the lean path just checked with the C function's arguments args,
    or None (no stamp for these arrays, or a dtype object that is not numpy's own).  In place
    (out is arr), out's stamps are arr's."""
    dt = CODE_TO_NP[dcode]
    if arr.dtype is not dt or out.dtype is not dt:
        return None
    st = stamps((arr,) if out is arr else (arr, out))
    if st is None:
        return None
    h = _Hot()
    h.aid, h.oid, h.op = id(arr), id(out), op
    h.f, h.d, h.keep = st
    h.fb, h.db = snapshot_of(h.f), snapshot_of(h.d)
    h.args = _frozen(args)
    return h


def _keep_hot(s: Any, h: Optional[_Hot], ps: Any = None) -> None:
    """Keep h as the repeated call of comm state s (of plan state ps, a plan of that comm),
    unless the comm or the plan already needs more than the C call (a finalizer on another
    thread may have queued work since the lean path looked: both happen under s.lock)."""
    with s.lock:
        if h is not None and (s.closed or s.pending_free or s.abandoned or _handles._forked or
                              (ps is not None and ps.closed)):
            h = None
        if ps is None:
            s.hot = h
        else:
            ps.hot = h


def _lean_code(op: Any) -> Optional[int]:
    """op's code on the lean path: a built-in name or an int in C int range; else None."""
    t = type(op)
    if t is str:
        return _OPS_get(op)
    if t is int and _INT_MIN <= op <= _INT_MAX:
        return op
    return None


def _cptr(a: np.ndarray) -> ctypes.c_void_p:
    """a's data pointer for the untyped prototypes: where the layout was verified
    (_arrays.DATA_OFFSET), a view of the array's data field, read when ctypes converts the
    argument (the caller holds a then); else the documented way."""
    if _OFF is not None:
        return _pointer_at(id(a) + _OFF)
    return _void_p(data_address(a))


def _lean_out(out: Any, shape: Tuple[int, ...], dt: np.dtype, send_at: int, send_bytes: int,
              same_ok: bool) -> Optional[ctypes.c_void_p]:
    """out's data pointer, when the lean path may write the result there: an ndarray of that
    shape and dtype, C-contiguous, writable, apart from the values (or, with same_ok, at the
    very same address, as the general path allows); else None, and the general path decides."""
    if type(out) is not _ndarray or out.shape != shape:
        return None
    odt = out.dtype
    f = out.flags
    if not ((odt is dt or odt == dt) and f.c_contiguous and f.writeable):
        return None
    rp = _cptr(out)
    d = rp.value - send_at
    if (d == 0 and same_ok) or d >= send_bytes or -d >= out.nbytes:
        return rp
    return None


def _op_code(op: OpLike) -> Tuple[int, Optional[UserOp]]:
    if isinstance(op, UserOp):
        return op.id, op
    if isinstance(op, str):
        code = OPS.get(op.lower())
        if code is None:
            raise BadArg(f"op: unknown op {op!r} (use one of {', '.join(OPS)}, or an op from "
                         "kylix.op_create)")
        return code, None
    if isinstance(op, (int, np.integer)) and not isinstance(op, bool):
        return int(op), None
    raise BadArg(f"op: expected a name, an int or a kylix.UserOp, got {type(op).__name__}")


def _user_op_check(uop: Optional[UserOp], call: str) -> None:
    if uop is not None:
        e = uop._take_error()
        if e is not None:
            raise UserOpError(f"the user op {uop!r} raised {type(e).__name__}: {e}",
                              call=call) from e


def _rows_width(vals: np.ndarray) -> Tuple[int, int]:
    if vals.ndim == 1:
        return vals.shape[0], 1
    return vals.shape[0], vals.shape[1]


def _width_arg(width: int, name: str) -> int:
    if width < 1 or width > 0x7FFFFFFF:
        raise BadArg(f"{name}: width {width} (columns) must be in 1..2^31-1")
    return width


# ---- comm -----------------------------------------------------------------------------------

def _options_string(options: Union[None, str, Mapping[str, Any]], kw: Mapping[str, Any]) -> str:
    parts: List[str] = []
    items: List[Tuple[str, Any]] = []
    if isinstance(options, str):
        if options:
            parts.append(options.strip(";"))
    elif options is not None:
        items.extend(dict(options).items())
    items.extend(kw.items())
    for key, val in items:
        if val is None:
            continue
        if not isinstance(key, str) or not key or any(c in key for c in "=; "):
            raise ArgumentError(f"options: bad key {key!r}", call="kylix.init")
        if isinstance(val, bool):
            text = "true" if val else "false"
        elif isinstance(val, (list, tuple)):
            sep = "x" if key == "degrees" else ","
            text = sep.join(str(v) for v in val)
        else:
            text = str(val)
        if ";" in text or "=" in text:
            raise ArgumentError(f"options: value of {key!r} contains ';' or '=': {text!r}",
                                call="kylix.init")
        parts.append(f"{key}={text}")
    return ";".join(parts)


def init(options: Union[None, str, Mapping[str, Any]] = None, **kw: Any) -> "Comm":
    """Join a job (``kylix_init``); collective over all ranks of the job.

    With no arguments everything comes from the environment (what ``kylixrun``, Slurm or
    mpirun set).  A process joins a running elastic job with ``init(join="host:port",
    secret=...)`` (or ``kylixrun --join F``): it returns once the members' next
    :meth:`Comm.resize` admitted it, with that comm.  Options are given as keywords (``init(rank=0, size=1, timeout_ms=5000)``),
    a mapping, or the library's own ``"key=value;key=value"`` string; lists become
    ``a,b,c`` (``degrees=(8, 4, 2)`` becomes ``8x4x2``).  Keywords win over the string.

    Use the comm as a context manager (``with kylix.init() as comm:``) or call ``close()``.

    Raises:
        ArgumentError: a malformed or unknown option (the message names the key).
        AuthError, NetworkError, TimeoutError: the peers cannot be reached or refuse.
        StateError: called in a child fork()ed from a process that loaded the library.
    """
    opts = _options_string(options, kw)
    out = _raw.comm_p()
    st = _raw.kylix_init(opts.encode("utf-8"), ctypes.byref(out))
    check_global(st, "kylix_init")
    return Comm(out.value)


class Comm(CommHandle):
    """One process's membership in a job: the collectives.

    Every collective must be called by every rank, in the same order, with agreeing dtype,
    op, width and count.  One thread at a time may use a comm (and its plans and requests).
    """

    def __init__(self, ptr: int):
        super().__init__(ptr)
        self._handle = _void_p(ptr)      # for the lean path's untyped call
        self._seen = (0, 0)              # ids of the last (arr, out) the lean path took
        self._rank = _raw.kylix_rank(ptr)
        self._size = _raw.kylix_size(ptr)

    def __repr__(self) -> str:
        if self.closed:
            return "<kylix.Comm closed>"
        return f"<kylix.Comm rank={self._rank} size={self._size}>"

    @property
    def rank(self) -> int:
        """This rank, 0..size-1."""
        self._ptr("kylix_rank")
        return self._rank

    @property
    def size(self) -> int:
        """The number of ranks of the comm."""
        self._ptr("kylix_size")
        return self._size

    # -- helpers ------------------------------------------------------------------------------

    def _bad(self, call: str, err: BadArg) -> ArgumentError:
        """Take this rank's turn in the collective with ``kylix_reject``, then report."""
        c = self._ptr(call)
        _raw.kylix_reject(c, f"{call}: {err}".encode("utf-8", "replace"))
        return ArgumentError(str(err), call=call)

    # -- sparse -------------------------------------------------------------------------------

    def config(self, out_idx: ArrayLike, in_idx: ArrayLike) -> "Plan":
        """Agree on the routes for a pair of index sets (``kylix_config``); collective.

        Args:
            out_idx: the indices this rank contributes values for (integers >= 0, any order,
                may repeat); converted to int64 once if needed.
            in_idx: the indices this rank wants results for.

        Returns:
            A :class:`Plan` to reduce with any number of times.
        """
        call = "kylix_config"
        c = self._ptr(call)
        plan = _raw.plan_p()
        try:
            o = indices(out_idx, "out_idx")
            i = indices(in_idx, "in_idx")
        except BadArg as e:
            raise self._bad(call, e) from None
        st = _raw.kylix_config(c, ptr(o), o.shape[0], ptr(i), i.shape[0], ctypes.byref(plan))
        self._check(st, call)
        return Plan(self, plan.value, o.shape[0], i.shape[0])

    def config_reduce(self, out_idx: ArrayLike, out_vals: ArrayLike, in_idx: ArrayLike,
                      op: OpLike = "sum", *, keep: bool = False, out: Optional[np.ndarray] = None,
                      dtype: Any = None, copy: bool = True
                      ) -> Union[np.ndarray, Tuple[np.ndarray, "Plan"]]:
        """Config and reduce in one pass (``kylix_config_reduce``); collective.

        For index sets that change every call (mini-batches).  ``out_vals`` has one row per
        out index (1-D: width 1; 2-D: width = number of columns).

        Returns:
            The reduced values for ``in_idx`` (shape ``(len(in_idx),)`` or
            ``(len(in_idx), width)``), or ``(values, plan)`` when ``keep`` is true.
        """
        call = "kylix_config_reduce"
        c = self._ptr(call)
        plan = _raw.plan_p()
        try:
            o = indices(out_idx, "out_idx")
            i = indices(in_idx, "in_idx")
            v = values(out_vals, "out_vals", dtype=dtype, copy=copy, ndim=(1, 2))
            rows, width = _rows_width(v)
            if rows != o.shape[0]:
                raise BadArg(f"out_vals: has {rows} rows but out_idx has {o.shape[0]} indices")
            _width_arg(width, "out_vals")
            res = self._result(out, v, i.shape[0], width)
            code, uop = _op_code(op)
        except BadArg as e:
            raise self._bad(call, e) from None
        st = _raw.kylix_config_reduce(c, ptr(o), o.shape[0], ptr(v), ptr(i), i.shape[0],
                                      ptr(res), NP_TO_CODE[v.dtype], code, width,
                                      ctypes.byref(plan) if keep else None)
        self._check(st, call)
        p = Plan(self, plan.value, o.shape[0], i.shape[0]) if keep else None
        try:
            _user_op_check(uop, call)
        except KylixError:
            if p is not None:
                p.close()
            raise
        return (res, p) if keep else res

    @staticmethod
    def _result(out: Optional[np.ndarray], v: np.ndarray, n_in: int, width: int) -> np.ndarray:
        shape = (n_in,) if v.ndim == 1 else (n_in, width)
        if out is None:
            return np.empty(shape, dtype=v.dtype)
        shapes = (shape,) if v.ndim == 2 and width != 1 else ((n_in,), (n_in, 1))
        res = output(out, "out", v.dtype, shapes)
        if res.size and np.may_share_memory(res, v):
            raise BadArg("out: overlaps out_vals (the library needs separate buffers)")
        return res

    # -- dense --------------------------------------------------------------------------------

    def _dense_args(self, arr: ArrayLike, out: Optional[np.ndarray], dtype: Any, copy: bool,
                    op: OpLike) -> Tuple[np.ndarray, np.ndarray, int, Optional[UserOp]]:
        in_place = out is not None and out is arr
        if in_place:
            a = output(arr, "arr", np.asarray(arr).dtype, (np.shape(arr),))
            if dtype is not None and np.dtype(dtype) != a.dtype:
                raise BadArg(f"arr: in place (out is arr) needs dtype {a.dtype}, not {dtype}")
            send = values(a, "arr", copy=False)
            res = send
        else:
            send = values(arr, "arr", dtype=dtype, copy=copy)
            if out is None:
                res = np.empty(send.shape, dtype=send.dtype)
            else:
                res = output(out, "out", send.dtype, (send.shape, (send.size,)))
                if res.size and np.may_share_memory(res, send) and \
                        data_address(res) != data_address(send):
                    raise BadArg("out: partially overlaps arr (in place needs out is arr)")
        code, uop = _op_code(op)
        return send, res, code, uop

    def allreduce(self, arr: ArrayLike, op: OpLike = "sum", *, out: Optional[np.ndarray] = None,
                  dtype: Any = None, copy: bool = True) -> np.ndarray:
        """Dense allreduce of every element of ``arr`` (``kylix_allreduce``); collective.

        Returns a new array of ``arr``'s shape, or ``out`` (``out=arr`` works in place; ``arr``
        must then be a writable C-contiguous array of a supported dtype).
        """
        h = self._state.hot
        # The repeated call (see its note at the top).  The addresses are tested before the
        # stamps are read (they are then live objects' words, the type first), the fields
        # before the dimensions (whose pointer is among them).
        if h is not None and id(arr) == h.aid and id(out) == h.oid and op is h.op and \
                dtype is None and h.f == h.fb and h.d == h.db:
            if self._seen is not None:   # what comes next in the lean path is not a repeat
                self._seen = None        # (a load costs less than a store, every call)
            st = _allreduce_untyped(*h.args)
            if st:
                self._check(st, "kylix_allreduce")
            return out
        call = "kylix_allreduce"
        s = self._state
        if type(arr) is _ndarray and dtype is None and \
                not (s.closed or s.pending_free or s.abandoned or _handles._forked):
            # The lean path (see its note at the top), written out here without helper calls
            # (each costs as much as a check); a comm that is closed, forked or has upkeep to
            # do, and what else it does not take, go on to self._ptr and the general path.
            dt = arr.dtype
            dcode = _NP_TO_CODE_get(dt)
            n = arr.size
            t = type(op)
            code = _OPS_get(op) if t is str else \
                op if t is int and _INT_MIN <= op <= _INT_MAX else None
            if dcode is not None and code is not None and n and arr.flags.c_contiguous:
                sp = _pointer_at(id(arr) + _OFF) if _OFF is not None else _cptr(arr)
                rp = None
                if out is None:
                    res = _empty(arr.shape, dt)
                    rp = _cptr(res)
                elif out is arr:
                    if arr.flags.writeable:
                        res, rp = arr, sp
                elif type(out) is _ndarray and out.shape == arr.shape:
                    f = out.flags
                    odt = out.dtype
                    if (odt is dt or odt == dt) and f.c_contiguous and f.writeable:
                        res = out
                        rp = _pointer_at(id(out) + _OFF) if _OFF is not None else _cptr(out)
                        d = rp.value - sp.value
                        if d and d < arr.nbytes and -d < arr.nbytes:
                            rp = None            # partial overlap: the general path refuses it
                if rp is not None:
                    cnt = _counts_get(n) or _count(n)
                    st = _allreduce_untyped(self._handle, sp, rp, cnt, dcode, code)
                    if st:
                        self._check(st, call)
                    if out is not None:
                        seen = (id(arr), id(out))
                        if seen == self._seen:
                            _keep_hot(s, _make_hot(arr, out, op, dcode,
                                                   (self._handle, sp, rp, cnt, dcode, code)))
                        self._seen = seen
                    return res
        c = self._ptr(call)
        try:
            send, res, code, uop = self._dense_args(arr, out, dtype, copy, op)
        except BadArg as e:
            raise self._bad(call, e) from None
        st = _raw.kylix_allreduce(c, ptr(send), ptr(res), send.size, NP_TO_CODE[send.dtype],
                                  code)
        self._check(st, call)
        _user_op_check(uop, call)
        return res

    def iallreduce(self, arr: ArrayLike, op: OpLike = "sum", *, out: Optional[np.ndarray] = None,
                   dtype: Any = None, copy: bool = True) -> "Request":
        """Start a dense allreduce and return at once (``kylix_iallreduce``); collective.

        Arguments as for :meth:`allreduce`.  ``req.wait()`` returns the result.  The arrays
        are kept alive by the request; do not read or write them until it completes.
        """
        call = "kylix_iallreduce"
        c = self._ptr(call)
        req = _raw.request_p()
        try:
            send, res, code, uop = self._dense_args(arr, out, dtype, copy, op)
        except BadArg as e:
            raise self._bad(call, e) from None
        st = _raw.kylix_iallreduce(c, ptr(send), ptr(res), send.size, NP_TO_CODE[send.dtype],
                                   code, ctypes.byref(req))
        self._check(st, call)
        return Request(self, req.value, (send, res, arr, uop), res, call,
                       (lambda: _user_op_check(uop, call)) if uop else None)

    def bcast(self, arr: np.ndarray, root: int = 0) -> np.ndarray:
        """Copy root's ``arr`` to every rank, in place (``kylix_bcast``); collective.

        ``arr`` must be a C-contiguous numpy array (any dtype) with the same number of bytes
        on every rank, writable on the ranks other than root.  Returns ``arr``.
        """
        call = "kylix_bcast"
        c = self._ptr(call)
        try:
            if not isinstance(arr, np.ndarray):
                raise BadArg(f"arr: must be a numpy array (written in place), got "
                             f"{type(arr).__name__}")
            if not arr.flags.c_contiguous:
                raise BadArg("arr: must be C-contiguous (written in place)")
            if not isinstance(root, (int, np.integer)) or isinstance(root, bool):
                raise BadArg(f"root: expected an int, got {type(root).__name__}")
            if not 0 <= int(root) < self._size:
                raise BadArg(f"root: {root} is not a rank of this comm (size {self._size})")
            if int(root) != self._rank and not arr.flags.writeable:
                raise BadArg("arr: is read-only (written on the ranks other than root)")
        except BadArg as e:
            raise self._bad(call, e) from None
        st = _raw.kylix_bcast(c, ptr(arr), arr.nbytes, int(root))
        self._check(st, call)
        return arr

    def barrier(self) -> None:
        """Return once every rank has entered the barrier (``kylix_barrier``)."""
        call = "kylix_barrier"
        self._check(_raw.kylix_barrier(self._ptr(call)), call)

    def mix(self, arr: np.ndarray, step: int) -> np.ndarray:
        """One butterfly mixing step, in place (``kylix_mix``); collective.

        Averages ``arr`` (float32 or float64, C-contiguous, writable) with this rank's group at
        layer ``step mod L``.  After L consecutive steps every rank holds the global mean.
        Returns ``arr``.
        """
        call = "kylix_mix"
        c = self._ptr(call)
        try:
            if not isinstance(arr, np.ndarray):
                raise BadArg(f"arr: must be a numpy array (mixed in place), got "
                             f"{type(arr).__name__}")
            if arr.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
                raise BadArg(f"arr: dtype {arr.dtype}: mixing averages, it needs float32 or "
                             "float64")
            output(arr, "arr", arr.dtype, (arr.shape,))
            if not isinstance(step, (int, np.integer)) or isinstance(step, bool):
                raise BadArg(f"step: expected an int, got {type(step).__name__}")
        except BadArg as e:
            raise self._bad(call, e) from None
        st = _raw.kylix_mix(c, ptr(arr), arr.size, NP_TO_CODE[arr.dtype], int(step))
        self._check(st, call)
        return arr

    # -- failures -----------------------------------------------------------------------------

    def failed_ranks(self) -> List[int]:
        """The ranks of this comm known to have failed (``kylix_failed_ranks``); local."""
        call = "kylix_failed_ranks"
        c = self._ptr(call)
        n = ctypes.c_int32(0)
        cap = 0
        buf = None
        for _ in range(8):  # the set can only grow between the two calls
            st = _raw.kylix_failed_ranks(c, buf, cap, ctypes.byref(n))
            if st == _raw.KYLIX_OK:
                return [int(buf[k]) for k in range(n.value)] if buf is not None else []
            if st != _raw.KYLIX_ERR_ARG or n.value <= cap:
                self._check(st, call)
            cap = n.value
            buf = (ctypes.c_int32 * cap)()
        self._check(st, call)
        return []

    def shrink(self) -> "Comm":
        """A new comm of the surviving ranks, renumbered 0..k-1 (``kylix_shrink``).

        Collective over the survivors (like ULFM's MPI_Comm_shrink): after a collective failed
        with :class:`PeerError` or :class:`TimeoutError`, every surviving rank calls it within
        timeout_ms of the others and carries on with the new comm.  Afterwards this comm is
        broken for good (collectives raise :class:`StateError`; stats and failed_ranks still
        work) and can not be shrunk again; close both comms, in any order.

        Raises:
            PeerError: the other survivors left this rank out.
            StateError: this comm was already shrunk or closed.
        """
        call = "kylix_shrink"
        c = self._ptr(call)
        out = _raw.comm_p()
        st = _raw.kylix_shrink(c, ctypes.byref(out))
        self._check(st, call)
        return Comm(out.value)

    # -- elastic membership -------------------------------------------------------------------

    def resize(self, min_size: int = 0) -> "Comm":
        """The next comm of an elastic job (``kylix_resize``): the live members of this comm,
        in their order, then every process that was waiting to join, in arrival order.

        Collective over the live members (seed 004's ramp-up and failure-ignorance modes): call
        it every few iterations to admit joiners, and after a collective failed with
        :class:`PeerError` to go on without the dead.  With ``min_size``, waits up to
        timeout_ms for joiners until the new comm would have that many ranks.  Afterwards this
        comm is spent (collectives raise :class:`StateError`); close both comms, in any order.
        Plans belong to one comm: configure again on the new one.  :meth:`members` tells each
        rank of the new comm who is new, so the survivors can send the joiners the state.

        Raises:
            TimeoutError: fewer than ``min_size`` ranks within timeout_ms (this comm is unchanged).
            PeerError: this side of a split job holds no majority of the members.
            StateError: this comm was already resized or shrunk, or closed.
        """
        call = "kylix_resize"
        if not 0 <= min_size <= 0x7FFFFFFF:
            raise ArgumentError(f"min_size {min_size} must be in 0..2^31-1", call=call)
        c = self._ptr(call)
        out = _raw.comm_p()
        st = _raw.kylix_resize(c, min_size, ctypes.byref(out))
        self._check(st, call)
        return Comm(out.value)

    def members(self) -> List[int]:
        """For each rank of this comm, the rank it had in the comm this one was resized from,
        or -1 for a process that joined (``kylix_members``); local.  On a comm from
        :func:`init`, each rank's own number."""
        call = "kylix_members"
        c = self._ptr(call)
        cap = self._size
        buf = (ctypes.c_int32 * max(cap, 1))()
        n = ctypes.c_int32(0)
        self._check(_raw.kylix_members(c, buf, cap, ctypes.byref(n)), call)
        return [int(buf[k]) for k in range(min(n.value, cap))]

    def join_address(self) -> str:
        """``host:port`` where processes join this comm's job with ``kylix.init(join=...)``
        (``kylix_join_address``); local.  Raises :class:`StateError` when the job is not
        elastic."""
        call = "kylix_join_address"
        c = self._ptr(call)
        needed = ctypes.c_int64(0)
        cap = 0
        buf = None
        for _ in range(4):
            st = _raw.kylix_join_address(c, buf, cap, ctypes.byref(needed))
            if st == _raw.KYLIX_OK and buf is not None:
                return buf.value.decode("utf-8")
            if st not in (_raw.KYLIX_OK, _raw.KYLIX_ERR_ARG) or needed.value <= cap:
                self._check(st, call)
            cap = int(needed.value) + 1
            buf = ctypes.create_string_buffer(cap)
        self._check(st, call)
        raise KylixError("the join address kept growing", call=call)

    # -- observability ------------------------------------------------------------------------

    def stats(self) -> Dict[str, Any]:
        """What this comm has done, as a dict (``kylix_stats_json``, parsed); local.

        See include/kylix.h for the fields (``totals``, ``collectives``, ``plans``, ...).
        """
        call = "kylix_stats_json"
        c = self._ptr(call)
        needed = ctypes.c_int64(0)
        cap = 0
        buf = None
        for _ in range(8):  # the size changes only when a collective runs in between
            st = _raw.kylix_stats_json(c, buf, cap, ctypes.byref(needed))
            if st == _raw.KYLIX_OK and buf is not None:
                return json.loads(buf.value.decode("utf-8"))
            if st not in (_raw.KYLIX_OK, _raw.KYLIX_ERR_ARG) or needed.value <= cap:
                self._check(st, call)
            cap = int(needed.value)
            buf = ctypes.create_string_buffer(cap)
        self._check(st, call)
        raise KylixError("the stats kept growing", call=call)

    def mark(self, name: str, kind: str = "instant") -> None:
        """Record the caller's own work on the timeline (``kylix_mark``; option ``timeline``).

        ``kind`` is ``"instant"``, ``"begin"`` or ``"end"``; an ``"end"`` closes the innermost
        open span, which must have this name (else :class:`StateError`).  With the timeline off
        nothing is recorded.  Local.  Prefer :meth:`span`.
        """
        call = "kylix_mark"
        k = _MARK_KINDS.get(kind)
        if k is None:
            raise ArgumentError(f"kind: {kind!r} is not 'instant', 'begin' or 'end'", call=call)
        if not isinstance(name, str) or not name or "\0" in name:
            raise ArgumentError(f"name: {name!r} is not a non-empty str without NUL", call=call)
        self._check(_raw.kylix_mark(self._ptr(call), name.encode("utf-8"), k), call)

    @contextlib.contextmanager
    def span(self, name: str) -> Iterator[None]:
        """``with comm.span("forward"):`` shows the block as a span named ``name`` in this
        rank's "user" lane of the timeline, beside the library's calls (option ``timeline``,
        ``kylixrun --timeline DIR``).  Spans nest; the span ends also when the block raises.
        A no-op (two cheap calls) when the timeline is off.
        """
        self.mark(name, "begin")
        try:
            yield
        finally:
            self.mark(name, "end")

    def reset_stats(self) -> None:
        """Set every counter and timer of :meth:`stats` to 0 (``kylix_stats_reset``); local."""
        call = "kylix_stats_reset"
        self._check(_raw.kylix_stats_reset(self._ptr(call)), call)

    @property
    def last_error(self) -> str:
        """The library's message for the last failure on this comm (``kylix_errmsg``)."""
        if self.closed:
            return ""
        return errmsg(self._state.ptr)


# ---- plans ----------------------------------------------------------------------------------

class Plan(PlanHandle):
    """A configured pair of index sets (from :meth:`Comm.config`); reduce it any number of times.

    Attributes:
        n_out: the number of out indices (rows of ``out_vals``).
        n_in: the number of in indices (rows of the result).
    """

    def __init__(self, comm: Comm, ptr_: int, n_out: int, n_in: int):
        super().__init__(comm, ptr_)
        self._handle = _void_p(ptr_)     # for the lean path's untyped call
        self._seen = (0, 0)              # ids of the last (out_vals, out) the lean path took
        self.n_out = int(n_out)
        self.n_in = int(n_in)

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<kylix.Plan n_out={self.n_out} n_in={self.n_in}{state}>"

    def _args(self, out_vals: ArrayLike, out: Optional[np.ndarray], dtype: Any, copy: bool,
              op: OpLike) -> Tuple[np.ndarray, np.ndarray, int, int, Optional[UserOp]]:
        v = values(out_vals, "out_vals", dtype=dtype, copy=copy, ndim=(1, 2))
        rows, width = _rows_width(v)
        if rows != self.n_out:
            raise BadArg(f"out_vals: has {rows} rows but the plan was configured with "
                         f"{self.n_out} out indices")
        _width_arg(width, "out_vals")
        res = Comm._result(out, v, self.n_in, width)
        code, uop = _op_code(op)
        return v, res, width, code, uop

    def reduce(self, out_vals: ArrayLike, op: OpLike = "sum", *, out: Optional[np.ndarray] = None,
               dtype: Any = None, copy: bool = True) -> np.ndarray:
        """Reduce values over the plan (``kylix_reduce``); collective over the plan's comm.

        Args:
            out_vals: one row per out index: 1-D (width 1) or 2-D ``(n_out, width)``; any
                supported dtype (float32, float64, int32, int64, uint64), passed without a copy
                when C-contiguous, else converted once (or refused when ``copy=False``).
            op: ``"sum"``, ``"prod"``, ``"min"``, ``"max"``, ``"band"``, ``"bor"``, ``"bxor"``,
                ``"rsum"`` (reproducible sum, float32/float64: the same bits for the same
                multiset of contributions whatever the ranks, split, degrees or order; values
                are combined as 16- or 24-byte accumulators, see KYLIX_RSUM in kylix.h), an op
                id, or a :class:`UserOp`.
            out: where to write the result (shape ``(n_in,)`` / ``(n_in, width)``, same dtype,
                C-contiguous); allocated when None.
            dtype: reduce in this dtype (``out_vals`` is converted to it).

        Returns:
            Row j holds op over every rank's contributions to ``in_idx[j]`` (the op's identity
            where nobody contributed); bitwise the same on every rank.
        """
        h = self._pstate.hot
        # The repeated call, as in Comm.allreduce (never in place: out may not overlap).
        if h is not None and id(out_vals) == h.aid and id(out) == h.oid and op is h.op and \
                dtype is None and h.f == h.fb and h.d == h.db:
            if self._seen is not None:
                self._seen = None
            st = _reduce_untyped(*h.args)
            if st:
                self._comm._check(st, "kylix_reduce")
            return out
        call = "kylix_reduce"
        p = self._ptr(call)
        if dtype is None and type(out_vals) is _ndarray and out_vals.flags.c_contiguous:
            # The lean path (see its note at the top); what it does not take falls through.
            dt = out_vals.dtype
            dcode = _NP_TO_CODE_get(dt)
            code = _lean_code(op)
            shape = out_vals.shape
            nd = len(shape)
            if nd == 1:
                rows, width, rshape = shape[0], 1, (self.n_in,)
            elif nd == 2:
                rows, width = shape
                rshape = (self.n_in, width)
            else:
                rows = -1
            if dcode is not None and code is not None and rows == self.n_out and rows and \
                    self.n_in and 1 <= width <= _INT_MAX:
                sp = _cptr(out_vals)
                if out is None:
                    res = _empty(rshape, dt)
                    rp = _cptr(res)
                else:
                    res, rp = out, _lean_out(out, rshape, dt, sp.value, out_vals.nbytes, False)
                if rp is not None:
                    st = _reduce_untyped(self._handle, sp, rp, dcode, code, width)
                    if st:
                        self._comm._check(st, call)
                    if out is not None:
                        seen = (id(out_vals), id(out))
                        if seen == self._seen:
                            _keep_hot(self._comm._state,
                                      _make_hot(out_vals, out, op, dcode,
                                                (self._handle, sp, rp, dcode, code, width)),
                                      self._pstate)
                        self._seen = seen
                    return res
        try:
            v, res, width, code, uop = self._args(out_vals, out, dtype, copy, op)
        except BadArg as e:
            raise self._comm._bad(call, e) from None
        st = _raw.kylix_reduce(p, ptr(v), ptr(res), NP_TO_CODE[v.dtype], code, width)
        self._comm._check(st, call)
        _user_op_check(uop, call)
        return res

    def ireduce(self, out_vals: ArrayLike, op: OpLike = "sum", *,
                out: Optional[np.ndarray] = None, dtype: Any = None,
                copy: bool = True) -> "Request":
        """Start :meth:`reduce` and return at once (``kylix_ireduce``); collective.

        ``req.wait()`` returns the result.  The request keeps ``out_vals`` and the result
        alive until it completes; do not touch them before.
        """
        call = "kylix_ireduce"
        p = self._ptr(call)
        req = _raw.request_p()
        try:
            v, res, width, code, uop = self._args(out_vals, out, dtype, copy, op)
        except BadArg as e:
            raise self._comm._bad(call, e) from None
        st = _raw.kylix_ireduce(p, ptr(v), ptr(res), NP_TO_CODE[v.dtype], code, width,
                                ctypes.byref(req))
        self._comm._check(st, call)
        return Request(self._comm, req.value, (v, res, out_vals, uop, self), res, call,
                       (lambda: _user_op_check(uop, call)) if uop else None)


# ---- requests -------------------------------------------------------------------------------

class Request(RequestHandle):
    """A non-blocking operation in flight (from :meth:`Plan.ireduce`, :meth:`Comm.iallreduce`).

    ``wait()`` blocks and returns the result array; ``test()`` polls.  Requests of one comm
    complete in the order they were started; wait for them in any order.  As a context manager
    it waits on exit.
    """

    def wait(self) -> np.ndarray:  # noqa: D102 - documented in RequestHandle
        return super().wait()

    wait.__doc__ = RequestHandle.wait.__doc__

    def __repr__(self) -> str:
        return f"<kylix.Request {self._call} {'done' if self.done else 'in flight'}>"


# ---- planning -------------------------------------------------------------------------------

def plan_degrees(n_features: int, density: float, ranks: int, alpha: float = 1.0,
                 min_packet_bytes: int = 1 << 20, bytes_per_value: int = 4) -> Tuple[int, ...]:
    """The butterfly degrees ``degrees=auto`` would choose (``kylix_plan_degrees``).

    For ``n_features`` features of which a fraction ``density`` appears on each of ``ranks``
    nodes, power-law exponent ``alpha``, messages no smaller than ``min_packet_bytes``.
    Returns the degree of each layer, outermost first (their product is ``ranks``).
    """
    cap = 16
    for _ in range(4):
        degs = (ctypes.c_int32 * cap)()
        layers = ctypes.c_int32(0)
        st = _raw.kylix_plan_degrees(int(n_features), float(density), int(ranks), float(alpha),
                                     int(min_packet_bytes), int(bytes_per_value), degs, cap,
                                     ctypes.byref(layers))
        if st == _raw.KYLIX_OK:
            return tuple(int(degs[k]) for k in range(layers.value))
        if st == _raw.KYLIX_ERR_ARG and layers.value > cap:
            cap = layers.value
            continue
        check_global(st, "kylix_plan_degrees")
    raise error_for_status(_raw.KYLIX_ERR_INTERNAL, "degrees kept growing", "kylix_plan_degrees")
