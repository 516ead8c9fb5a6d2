"""Helpers for the worker scripts that every rank of a kylixrun job runs.

A worker prints one line per check, like the C tests in tests/c/:

    r<rank> PASS|FAIL|INFO <text>
    r<rank> DONE fails=<n>

and exits 1 when a check failed; the pytest side (conftest.py) asserts on these lines.
The data of every case is a function of (seed, rank) only, so any rank can regenerate every
other rank's contribution and compute the expected result with plain numpy, independently of
the library.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import traceback
from typing import Callable, Optional, Sequence

import numpy as np

# A hung call is reported by the tests (with every thread's stack), never waited out.
faulthandler.dump_traceback_later(int(os.environ.get("KYLIX_TEST_WATCHDOG_S", "100")), exit=True)

DTYPES = (np.float32, np.float64, np.int32, np.int64, np.uint64)


class Checker:
    def __init__(self, name: str, rank: Optional[int] = None):
        self.name = name
        self.rank = rank if rank is not None else int(os.environ.get("KYLIX_RANK", "-1"))
        self.fails = 0
        self.passes = 0

    def _line(self, kind: str, text: str) -> None:
        print(f"r{self.rank} {kind} {text}", flush=True)

    def info(self, text: str) -> None:
        self._line("INFO", text)

    def ok(self, cond: bool, text: str) -> bool:
        if cond:
            self.passes += 1
            self._line("PASS", text)
        else:
            self.fails += 1
            self._line("FAIL", text)
        return bool(cond)

    def equal(self, got: np.ndarray, want: np.ndarray, text: str) -> bool:
        got = np.asarray(got)
        want = np.asarray(want)
        same = got.shape == want.shape and got.dtype == want.dtype
        if same and got.size:
            same = np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()
        if not same:
            detail = f"shape {got.shape}/{want.shape} dtype {got.dtype}/{want.dtype}"
            if got.shape == want.shape and got.size:
                bad = np.argwhere(got != want)
                if bad.size:
                    k = tuple(bad[0])
                    detail += (f"; first difference at {k}: got {got[k]!r} want {want[k]!r} "
                               f"({len(bad)} differ)")
            return self.ok(False, f"{text}: {detail}")
        return self.ok(True, text)

    def raises(self, exc_type, fn: Callable, *args, match: Sequence[str] = (), text: str = "",
               **kw):
        """Call fn; PASS if it raises exc_type whose message contains every string in match."""
        label = text or getattr(fn, "__name__", "call")
        try:
            fn(*args, **kw)
        except exc_type as e:
            msg = str(e)
            missing = [m for m in match if m not in msg]
            self.ok(not missing, f"{label}: {type(e).__name__} ({msg})"
                    + (f" lacks {missing}" if missing else ""))
            return e
        except Exception as e:  # noqa: BLE001
            self.ok(False, f"{label}: raised {type(e).__name__} ({e}), want {exc_type.__name__}")
            return e
        self.ok(False, f"{label}: did not raise, want {exc_type.__name__}")
        return None

    def guard(self, fn: Callable, *args, **kw):
        """Run one case; an unexpected exception is a FAIL, not a crash of the worker."""
        try:
            return fn(*args, **kw)
        except Exception as e:  # noqa: BLE001
            self.ok(False, f"{getattr(fn, '__name__', 'case')} raised {type(e).__name__}: {e}\n"
                    + traceback.format_exc().replace("\n", "\n  | "))
            return None

    def finish(self) -> None:
        self._line("DONE", f"fails={self.fails} passes={self.passes}")
        sys.stdout.flush()
        faulthandler.cancel_dump_traceback_later()
        sys.exit(1 if self.fails else 0)


# ---- data, as a function of (seed, rank) -----------------------------------------------------

# Indices: small ones, ones far apart (2^40 + k, near 2^62) to exercise hashing; every rank
# also asks for indices nobody contributes (they must come back as the op's identity).
POOL = np.concatenate([np.arange(0, 400, dtype=np.int64),
                       (1 << 40) + np.arange(0, 16, dtype=np.int64),
                       np.array([(1 << 62) + 5, (1 << 62) + 1], dtype=np.int64)])
NOBODY = np.array([10**9 + 7, 10**9 + 8, (1 << 61) + 3], dtype=np.int64)


def sparse_indices(seed: int, rank: int, size: int):
    """(out_idx, in_idx) of rank for case seed; the last rank contributes nothing when seed%3==0."""
    rng = np.random.default_rng([seed, rank, 1])
    n_out = int(rng.integers(40, 250))
    if seed % 3 == 0 and rank == size - 1:
        n_out = 0
    out_idx = rng.choice(POOL, size=n_out, replace=True)          # repeats on purpose
    n_in = int(rng.integers(30, 200))
    in_idx = np.concatenate([rng.choice(POOL, size=n_in, replace=True), NOBODY])
    rng.shuffle(in_idx)
    if seed % 5 == 0 and rank == 0:
        in_idx = in_idx[:0]                                          # wants nothing
    return out_idx.astype(np.int64), in_idx.astype(np.int64)


OPNUM = {"sum": 1, "prod": 2, "min": 3, "max": 4, "band": 5, "bor": 6, "bxor": 7, "absmax": 8}


def raw_values(seed: int, rank: int, rows: int, width: int, op: str) -> np.ndarray:
    """Integer-valued data whose reductions are exact in every dtype and in any order."""
    rng = np.random.default_rng([seed, rank, 2, width, OPNUM[op]])
    if op == "prod":
        return rng.choice(np.array([1, 2, 3, 1, 1]), size=(rows, width))
    if op in ("band", "bor", "bxor"):
        return rng.integers(0, 1 << 30, size=(rows, width))
    return rng.integers(-64, 64, size=(rows, width))


def cast(raw: np.ndarray, dtype, op: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (raw / 4).astype(dt) if op not in ("prod",) else raw.astype(dt)
    if dt.kind == "u":
        return (raw + 64).astype(dt) if op not in ("band", "bor", "bxor", "prod") else raw.astype(dt)
    return raw.astype(dt)


def identity(op: str, dtype) -> np.generic:
    dt = np.dtype(dtype)
    if op == "sum" or op in ("bor", "bxor"):
        return dt.type(0)
    if op == "prod":
        return dt.type(1)
    if op == "band":
        return dt.type(-1) if dt.kind == "i" else np.iinfo(dt).max
    big = np.inf if dt.kind == "f" else np.iinfo(dt).max
    small = -np.inf if dt.kind == "f" else np.iinfo(dt).min
    return dt.type(big if op == "min" else small)


UFUNC = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
         "band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}


def reference_sparse(outs, vals, in_idx, op: str, dtype, width: int) -> np.ndarray:
    """Expected rows for in_idx: op over every rank's (out_idx, vals), identity elsewhere."""
    dt = np.dtype(dtype)
    allidx = np.unique(np.concatenate([o for o in outs] + [in_idx, NOBODY]))
    acc = np.full((allidx.size, width), identity(op, dt), dtype=dt)
    for o, v in zip(outs, vals):
        if o.size:
            UFUNC[op].at(acc, np.searchsorted(allidx, o), v.reshape(o.size, width))
    return acc[np.searchsorted(allidx, in_idx)]


def absmax(inout: np.ndarray, in_: np.ndarray) -> None:
    """abs-max, the earlier contribution wins ties: associative, not commutative on ties."""
    np.copyto(inout, in_, where=np.abs(in_) > np.abs(inout))


def reference_userop_sparse(outs, vals, in_idx, width: int, fn=absmax) -> np.ndarray:
    """Fold every contribution in (rank, position) order with fn; zeros where none."""
    dt = vals[0].dtype
    acc = {}
    for o, v in zip(outs, vals):
        v = v.reshape(o.size, width)
        for k, ix in enumerate(o.tolist()):
            row = v[k].copy()
            if ix in acc:
                fn(acc[ix], row)
            else:
                acc[ix] = row
    res = np.zeros((in_idx.size, width), dtype=dt)
    for j, ix in enumerate(in_idx.tolist()):
        if ix in acc:
            res[j] = acc[ix]
    return res
