#!/usr/bin/env python3
"""Per-call cost of a 1M-value sparse reduce from Python against C, measured in the same run.

    kylixrun -n 2 -- python3 bench_reduce.py [--values 1000000] [--rounds 100]

Every rank configures one plan (out and in sets of --values random indices out of 4x as many
features, float32, SUM) and then, in --rounds rounds of one call per variant (the order
rotating, so that drift and other load hit every variant alike), times reduces of the same
plan and the same buffers with:

  c        kylix_reduce called and timed in C (bench/c_loop.c, compiled here with gcc; the
           function pointer is the kylix_reduce Python loaded)
  raw      kylix._raw.kylix_reduce (layer 1: one ctypes call with prepared pointers)
  out=     plan.reduce(vals, out=buf)   (the idiomatic API, no allocation)
  alloc    plan.reduce(vals)            (the idiomatic API, allocates the result)

It reports the median per-call time of each and the median of the paired differences to C
(call by call within a round). On a shared 2-core machine those differences are noise of a
few hundred microseconds either way, so it also times the binding alone, deterministically:
the same plan.reduce calls with kylix_reduce swapped for a C no-op of the same signature
(argument checks, pointers and the ctypes transition, without the collective).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import kylix
from kylix import _raw
from kylix._arrays import NP_TO_CODE, ptr

HERE = os.path.dirname(os.path.abspath(__file__))


def build_c_loop(tmp: str) -> ctypes.CDLL:
    inc = os.environ.get("KYLIX_INCLUDE")
    if not inc:
        lib = os.path.realpath(kylix.library_path)
        for cand in (os.path.join(os.path.dirname(lib), "include"),
                     os.path.join(HERE, "..", "..", "..", "include")):
            if os.path.exists(os.path.join(cand, "kylix.h")):
                inc = cand
                break
    if not inc:
        raise SystemExit("kylix.h not found: set KYLIX_INCLUDE")
    cc = os.environ.get("CC", "gcc")
    if not shutil.which(cc):
        raise SystemExit(f"no C compiler ({cc}) to build the C loop")
    so = os.path.join(tmp, "libkylixbench.so")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-I", inc, "-o", so,
                    os.path.join(HERE, "c_loop.c")], check=True)
    lib = ctypes.CDLL(so)
    lib.kylix_bench_c_loop.restype = ctypes.c_double
    lib.kylix_bench_c_loop.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                       ctypes.c_int32, ctypes.c_int]
    return lib


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--values", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=100)
    args = ap.parse_args()

    with kylix.init() as comm, tempfile.TemporaryDirectory() as tmp:
        rank, size = comm.rank, comm.size
        clib = build_c_loop(tmp)
        rng = np.random.default_rng([7, rank])
        universe = 4 * args.values
        out_idx = rng.choice(universe, args.values, replace=False).astype(np.int64)
        in_idx = rng.choice(universe, args.values, replace=False).astype(np.int64)
        vals = rng.standard_normal(args.values).astype(np.float32)
        buf = np.empty(args.values, dtype=np.float32)
        t0 = time.perf_counter()
        plan = comm.config(out_idx, in_idx)
        t_config = time.perf_counter() - t0

        reduce_ptr = ctypes.cast(_raw.lib.kylix_reduce, ctypes.c_void_p).value
        pp, vp, bp = plan._ptr("bench"), ptr(vals), ptr(buf)
        F32, SUM = NP_TO_CODE[vals.dtype], _raw.KYLIX_SUM

        def c_call():
            s = clib.kylix_bench_c_loop(reduce_ptr, pp, vp, bp, F32, SUM, 1, 1)
            if s < 0:
                raise kylix.KylixError(comm.last_error, status=int(-s), call="kylix_reduce")
            return s

        def raw_call():
            f = _raw.kylix_reduce
            t = time.perf_counter()
            if f(pp, vp, bp, F32, SUM, 1):
                raise kylix.KylixError(comm.last_error, call="kylix_reduce")
            return time.perf_counter() - t

        def out_call():
            t = time.perf_counter()
            plan.reduce(vals, out=buf)
            return time.perf_counter() - t

        def alloc_call():
            t = time.perf_counter()
            plan.reduce(vals)
            return time.perf_counter() - t

        variants = {"c": c_call, "raw": raw_call, "out=": out_call, "alloc": alloc_call}
        order = list(variants)
        # warm up, and check that both paths compute the same thing
        ref = plan.reduce(vals)
        c_call()
        same = np.array_equal(ref, buf)
        # One call of each variant per round, the order rotating from round to round, so that
        # drift and other load hit every variant alike; differences are paired within a round.
        times = {k: [] for k in variants}
        for r in range(args.rounds):
            rot = order[r % len(order):] + order[:r % len(order)]
            for k in rot:
                times[k].append(variants[k]())
        per_call = {k: statistics.median(v) for k, v in times.items()}
        diff = {k: statistics.median([a - b for a, b in zip(times[k], times["c"])])
                for k in variants}

        # The Python-side work alone: the same calls with kylix_reduce swapped for a C no-op of
        # the same signature (everything but the collective: checks, pointers, ctypes).
        noop = clib.kylix_bench_noop
        noop.restype, noop.argtypes = _raw.kylix_reduce.restype, _raw.kylix_reduce.argtypes
        n = 20000
        real = _raw.kylix_reduce
        try:
            _raw.kylix_reduce = noop
            t = time.perf_counter()
            for _ in range(n):
                plan.reduce(vals, out=buf)
            py_args = (time.perf_counter() - t) / n
            t = time.perf_counter()
            for _ in range(n):
                plan.reduce(vals)
            py_alloc = (time.perf_counter() - t) / n
            t = time.perf_counter()
            for _ in range(n):
                noop(pp, vp, bp, F32, SUM, 1)
            ctypes_call = (time.perf_counter() - t) / n
        finally:
            _raw.kylix_reduce = real

        # every rank's medians, so rank 0 can print the slowest rank too
        mine = np.array([per_call[k] for k in order] + [py_args, py_alloc, ctypes_call])
        worst = comm.allreduce(mine, op="max")
        all_same = comm.allreduce(np.array([int(same)], dtype=np.int64), op="min")[0]
        if rank == 0:
            c = per_call["c"]
            print(f"bench_reduce: {size} ranks, {args.values} float32 values out and in per rank "
                  f"(of {universe} features), SUM, {args.rounds} calls per variant; "
                  f"config {t_config * 1e3:.1f} ms; C and Python results identical: "
                  f"{bool(all_same)}")
            print(f"{'variant':<8} {'median per call':>16} {'paired diff to C':>18} "
                  f"{'slowest rank':>14}")
            for j, k in enumerate(order):
                print(f"{k:<8} {per_call[k] * 1e3:13.3f} ms {diff[k] * 1e6:+15.1f} us "
                      f"{worst[j] * 1e3:11.3f} ms")
            print(f"binding cost per call (kylix_reduce swapped for a C no-op): plan.reduce(out=) "
                  f"{py_args * 1e6:.1f} us, plan.reduce() allocating {py_alloc * 1e6:.1f} us; the "
                  f"bare ctypes call alone {ctypes_call * 1e6:.2f} us")
            print(f"overhead of plan.reduce(out=) over C: {diff['out='] * 1e6:+.1f} us per call "
                  f"(paired median) = {diff['out='] / c * 100:+.2f}% of a {c * 1e3:.2f} ms reduce; "
                  f"deterministic binding cost {py_args * 1e6:.1f} us = "
                  f"{py_args / c * 100:.3f}%")
        plan.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
