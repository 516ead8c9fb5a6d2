"""numpy arrays <-> the library's buffers: dtype codes, zero-copy checks, conversions."""

from __future__ import annotations

import ctypes
import sys
from typing import Any, Optional, Tuple

import numpy as np

from . import _raw


class BadArg(Exception):
    """A bad argument found in Python; the API turns it into ArgumentError(call=its name)."""


# The dtypes the library reduces, and their enum kylix_dtype codes.  Native byte order only.
NP_TO_CODE = {
    np.dtype(np.float32): _raw.KYLIX_F32,
    np.dtype(np.float64): _raw.KYLIX_F64,
    np.dtype(np.int32): _raw.KYLIX_I32,
    np.dtype(np.int64): _raw.KYLIX_I64,
    np.dtype(np.uint64): _raw.KYLIX_U64,
}
CODE_TO_NP = {v: k for k, v in NP_TO_CODE.items()}

# Unsupported dtypes that convert without loss (when copying is allowed).
_WIDEN = {
    np.dtype(np.bool_): np.dtype(np.int32),
    np.dtype(np.int8): np.dtype(np.int32),
    np.dtype(np.int16): np.dtype(np.int32),
    np.dtype(np.uint8): np.dtype(np.int32),
    np.dtype(np.uint16): np.dtype(np.int32),
    np.dtype(np.uint32): np.dtype(np.int64),
    np.dtype(np.float16): np.dtype(np.float32),
}

_I64 = np.dtype(np.int64)
_SUPPORTED = "float32, float64, int32, int64, uint64"


def _native(dt: np.dtype) -> np.dtype:
    return dt if dt.isnative else dt.newbyteorder("=")


def supported_dtype(dtype: Any, name: str = "dtype") -> np.dtype:
    """np.dtype(dtype) if the library reduces it, else ArgumentError naming `name`."""
    try:
        dt = _native(np.dtype(dtype))
    except TypeError as e:
        raise BadArg(f"{name}: {dtype!r} is not a dtype ({e})") from None
    if dt not in NP_TO_CODE:
        raise BadArg(f"{name}: dtype {dt} is not supported (use one of {_SUPPORTED})")
    return dt


def _target_dtype(a: np.ndarray, name: str, dtype: Any) -> np.dtype:
    if dtype is not None:
        return supported_dtype(dtype, "dtype")
    dt = _native(a.dtype)
    if dt in NP_TO_CODE:
        return dt
    widened = _WIDEN.get(dt)
    if widened is not None:
        return widened
    raise BadArg(f"{name}: dtype {a.dtype} is not supported (use one of {_SUPPORTED}, "
                        "or pass dtype=...)")


def values(arr: Any, name: str, *, dtype: Any = None, copy: bool = True,
           ndim: Optional[Tuple[int, ...]] = None) -> np.ndarray:
    """arr as a C-contiguous array of a supported dtype, zero-copy when it already is one.

    Otherwise converted once (np.ascontiguousarray/astype), or refused when copy is False.
    """
    a = arr if isinstance(arr, np.ndarray) else np.asarray(arr)
    if ndim is not None and a.ndim not in ndim:
        want = " or ".join(f"{d}-D" for d in ndim)
        raise BadArg(f"{name}: expected a {want} array, got shape {a.shape}")
    target = _target_dtype(a, name, dtype)
    if a.dtype == target and a.flags.c_contiguous:
        return a
    if not copy:
        why = []
        if a.dtype != target:
            why.append(f"dtype {a.dtype} is not {target}")
        if not a.flags.c_contiguous:
            why.append("it is not C-contiguous")
        raise BadArg(f"{name}: cannot pass it without a copy ({' and '.join(why)}) and "
                            "copy=False; pass np.ascontiguousarray(x, dtype=...) or copy=True")
    if a.dtype.kind not in "biuf":
        raise BadArg(f"{name}: will not convert dtype {a.dtype} to {target}")
    return np.ascontiguousarray(a, dtype=target)


def indices(arr: Any, name: str) -> np.ndarray:
    """arr as a 1-D C-contiguous int64 array (other integer types are converted once)."""
    a = arr if isinstance(arr, np.ndarray) else np.asarray(arr)
    if a.ndim != 1:
        raise BadArg(f"{name}: expected a 1-D array of indices, got shape {a.shape}")
    if a.size == 0:
        return np.empty(0, dtype=_I64)
    if a.dtype.kind not in "iu":
        raise BadArg(f"{name}: indices must be integers, got dtype {a.dtype}")
    if a.dtype == _I64 and a.flags.c_contiguous:
        return a
    if a.dtype.kind == "u" and a.dtype.itemsize == 8 and int(a.max()) > np.iinfo(np.int64).max:
        raise BadArg(f"{name}: index {int(a.max())} does not fit in int64")
    return np.ascontiguousarray(a, dtype=_I64)


def output(out: Any, name: str, dtype: np.dtype, shapes: Tuple[Tuple[int, ...], ...]) -> np.ndarray:
    """Check a caller-provided result buffer: exact dtype, one of `shapes`, C-contiguous, writable."""
    if not isinstance(out, np.ndarray):
        raise BadArg(f"{name}: must be a numpy array, got {type(out).__name__}")
    if out.dtype != dtype:
        raise BadArg(f"{name}: dtype {out.dtype} does not match the values' dtype {dtype}")
    if out.shape not in shapes:
        want = " or ".join(str(s) for s in shapes)
        raise BadArg(f"{name}: shape {out.shape}, expected {want}")
    if not out.flags.c_contiguous:
        raise BadArg(f"{name}: must be C-contiguous (the library writes it in place)")
    if not out.flags.writeable:
        raise BadArg(f"{name}: is read-only")
    return out


# The data pointer of an ndarray.  ``a.ctypes.data`` costs about a microsecond (it builds a
# numpy._ctypes object every time) and ``a.__array_interface__`` nearly as much (a dict), which
# on an 8-float allreduce is more than the library's own work.  CPython lays out every ndarray
# (subclasses included) as numpy's PyArrayObject: the object header, then ``char *data``, so
# the pointer is one machine word at id(a) + sizeof(PyObject), read for ~0.15 us.  That layout
# is checked at import against ``a.ctypes.data`` on probe arrays (offset views, a subclass, each
# supported dtype); where it does not hold (another interpreter, a numpy with another layout)
# DATA_OFFSET is None and data_address() falls back to ``a.ctypes.data``.
_word = ctypes.c_size_t.from_address


def _probe_data_offset() -> Optional[int]:
    try:
        if sys.implementation.name != "cpython" or \
                ctypes.sizeof(ctypes.c_size_t) != ctypes.sizeof(ctypes.c_void_p):
            return None
        off = object.__basicsize__

        class _Sub(np.ndarray):
            pass

        base = np.arange(64, dtype=np.float64)
        probes = [base, base[5:], base[::3], base.reshape(8, 8)[2:, 1:], base.view(_Sub)[7:],
                  base.view(np.uint8)[3:]]
        probes += [np.ones(3, dtype=dt) for dt in NP_TO_CODE]
        for a in probes:
            if _word(id(a) + off).value != a.ctypes.data:
                return None
        return off
    except Exception:  # noqa: BLE001 - any surprise: use the documented (slow) way
        return None


#: Offset of PyArrayObject's data pointer from id(a), or None where that does not hold.
DATA_OFFSET: Optional[int] = _probe_data_offset()


def data_address(a: np.ndarray) -> int:
    """The address of a's first element; ``a`` must be a numpy array (any subclass)."""
    if DATA_OFFSET is not None:
        return _word(id(a) + DATA_OFFSET).value
    return a.ctypes.data


def ptr(a: Optional[np.ndarray]) -> Optional[int]:
    """The data pointer to hand to C (None for an empty array)."""
    if a is None or a.size == 0:
        return None
    if DATA_OFFSET is not None and isinstance(a, np.ndarray):
        return _word(id(a) + DATA_OFFSET).value
    return a.ctypes.data


# What a repeated call needs to know has not changed about an array it checked before.  numpy
# lays out PyArrayObject as the object header, then ``char *data``, ``int nd``, ``npy_intp
# *dimensions``, ``npy_intp *strides``, ``PyObject *base``, ``PyArray_Descr *descr``, ``int
# flags``: every way to change an existing array in place (``a.shape =``, ``a.strides =``,
# ``a.dtype =``, ``a.resize``, ``a.flags.writeable =``) changes those words or the shape
# they point to (``a.shape =`` with the same number of dimensions and ``a.resize`` write the
# dimensions in place).  So the bytes of those fields plus the bytes of the dimensions,
# compared with a copy taken when the array was checked, say whether the checks still hold, for
# far less than reading dtype, shape and flags through numpy.  The layout is verified at import
# (STAMP_LEN is None where it does not hold; the callers then always check through numpy).
_FIELDS_END = 52     # data(8) nd(4+4) dimensions(8) strides(8) base(8) descr(8) flags(4)


def _probe_stamp() -> Optional[int]:
    if DATA_OFFSET is None:
        return None
    try:
        off = DATA_OFFSET
        _int = ctypes.c_int.from_address
        base = np.arange(64, dtype=np.float64)
        ro = np.ones(4)
        ro.flags.writeable = False
        for a in [base, base[::2], base.reshape(8, 8), base.reshape(8, 8).T, ro,
                  np.ones((2, 3, 1), np.int32)]:
            dims = _word(id(a) + off + 16).value
            if _int(id(a) + off + 8).value != a.ndim or \
                    _word(id(a) + off + 40).value != id(a.dtype) or \
                    _int(id(a) + off + 48).value != a.flags.num or \
                    tuple(ctypes.c_ssize_t.from_address(dims + 8 * i).value
                          for i in range(a.ndim)) != a.shape:
                return None
        return _FIELDS_END
    except Exception:  # noqa: BLE001 - any surprise: always check through numpy
        return None


#: Bytes of PyArrayObject's fields from ``data`` through ``flags``, or None where the layout
#: does not hold.
STAMP_LEN: Optional[int] = _probe_stamp()


# The repeated call compares the stamps at every call.  A memoryview of the stamp's bytes as
# 64-bit words compares with a kept copy of itself without building anything (a ctypes view's
# ``.raw`` builds a bytes object each time, for a slower comparison).  The fields are taken
# through the padding after ``flags``, to a whole number of words (STAMP_WORDS; the next field,
# the weak reference list, is left out): numpy never writes that padding, and were it to
# change the call would only go through the full checks.
STAMP_WORDS: Optional[int] = None if STAMP_LEN is None else (STAMP_LEN + 7) // 8


def stamp_words(a: np.ndarray) -> Optional[Tuple[memoryview, memoryview]]:
    """Two memoryviews (format ``Q``) of a's fields (see STAMP_LEN) and a's dimensions, or None
    (no stamp for this array: 0-d, or the layout was not verified).  Valid while a is alive
    and, for the second, while the first's words are unchanged (the dimensions' pointer is
    among them): compare the first before reading the second."""
    if STAMP_WORDS is None or DATA_OFFSET is None or a.ndim == 0:
        return None
    fields = (ctypes.c_char * (8 * STAMP_WORDS)).from_address(id(a) + DATA_OFFSET)
    dims = (ctypes.c_char * (8 * a.ndim)).from_address(_word(id(a) + DATA_OFFSET + 16).value)
    return memoryview(fields).cast("B").cast("Q"), memoryview(dims).cast("B").cast("Q")


# The repeated call compares the stamps of both its arrays, fields first, then dimensions.  One
# memoryview whose elements are the words of several places in memory (an indirect buffer: an
# array of pointers with a suboffset of 0, as PEP 3118 describes them, made with
# PyMemoryView_FromBuffer) compares them all in one comparison, about 17 ns less per pair than
# two.  The memoryview holds the addresses, not the words: it reads them at each comparison.
# Checked at import on known words; where it cannot be made (no ctypes.pythonapi, another
# layout of Py_buffer) the stamps are tuples of stamp_words views, compared item by item.
class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
                ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
                ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)), ("internal", ctypes.c_void_p)]


def _gather_words(addrs: Any, from_buffer: Any) -> Tuple[memoryview, Any]:
    n = len(addrs)
    ptrs = (ctypes.c_void_p * n)(*addrs)
    shape, strides, sub = (ctypes.c_ssize_t * 1)(n), (ctypes.c_ssize_t * 1)(8), \
        (ctypes.c_ssize_t * 1)(0)
    b = _PyBuffer(ctypes.addressof(ptrs), None, 8 * n, 8, 1, 1, b"Q", shape, strides, sub, None)
    return from_buffer(ctypes.byref(b)), (ptrs, shape, strides, sub, b)


def _probe_gather() -> Any:
    try:
        if sys.implementation.name != "cpython" or STAMP_WORDS is None:
            return None
        f = ctypes.pythonapi.PyMemoryView_FromBuffer
        f.restype, f.argtypes = ctypes.py_object, [ctypes.POINTER(_PyBuffer)]
        w = (ctypes.c_uint64 * 4)(11, 22, 33, 2**64 - 1)
        at = ctypes.addressof(w)
        mv, keep = _gather_words([at + 16, at, at + 24], f)
        snap = memoryview(bytes((ctypes.c_uint64 * 3)(*mv.tolist()))).cast("Q")
        if mv.format != "Q" or mv.tolist() != [33, 11, 2**64 - 1] or not mv == snap:
            return None
        w[0] = 12
        if mv == snap or mv.tolist() != [33, 12, 2**64 - 1]:
            return None
        return f
    except Exception:  # noqa: BLE001 - any surprise: compare the stamps one by one
        return None


_from_buffer = _probe_gather()
#: True where the stamps of a call's arrays are gathered into one memoryview each.
GATHER = _from_buffer is not None


def _probe_type_word() -> bool:
    """Whether an object's type pointer is the word after its reference count (CPython's
    object header), checked on known objects."""
    try:
        if sys.implementation.name != "cpython":
            return False
        class _Sub(np.ndarray):
            pass
        objs = [np.ones(3), np.arange(4).reshape(2, 2), np.ones(2).view(_Sub), 1.5, "s", [], ()]
        return all(_word(id(o) + TYPE_OFFSET).value == id(type(o)) for o in objs)
    except Exception:  # noqa: BLE001 - any surprise: no stamps, always check through numpy
        return False


#: Where an object's type pointer is from id(o): the first word of a stamp (stamps), so that a
#: stamp that still matches also says the object is an exact ndarray.
TYPE_OFFSET = 8
_TYPE_WORD = _probe_type_word()


def stamps(arrays: Tuple[np.ndarray, ...]) -> Optional[Tuple[Any, Any, Any]]:
    """The stamps of arrays (see stamp_words) as (fields, dimensions, keep): fields and
    dimensions each compare with their snapshot_of() in one ``==`` (all the arrays' type
    pointers, then their fields, then, once they matched, all their dimensions); keep holds
    what they need alive.  None where an array has no stamp.  The type pointers come first: a
    comparison stops at the first word that differs, so an object of another type that took an
    array's address (a smaller one, perhaps) is never read past its header."""
    words = [stamp_words(a) for a in arrays]
    if not _TYPE_WORD or any(w is None for w in words):
        return None
    if not GATHER:
        types = tuple(memoryview((ctypes.c_char * 8).from_address(id(a) + TYPE_OFFSET))
                      .cast("B").cast("Q") for a in arrays)
        return types + tuple(w[0] for w in words), tuple(w[1] for w in words), None
    f_addrs = [id(a) + TYPE_OFFSET for a in arrays]
    d_addrs = []
    for a in arrays:
        base = id(a) + DATA_OFFSET
        f_addrs += [base + 8 * i for i in range(STAMP_WORDS)]
        dims = _word(base + 16).value
        d_addrs += [dims + 8 * i for i in range(a.ndim)]
    f, fkeep = _gather_words(f_addrs, _from_buffer)
    d, dkeep = _gather_words(d_addrs, _from_buffer)
    return f, d, (fkeep, dkeep)


def snapshot_of(stamp: Any) -> Any:
    """A copy of a stamp from stamps() (or of a stamp_words view), to compare it with."""
    if isinstance(stamp, tuple):
        return tuple(snapshot_of(v) for v in stamp)
    vals = stamp.tolist()
    return memoryview(bytes((ctypes.c_uint64 * len(vals))(*vals))).cast("Q")
