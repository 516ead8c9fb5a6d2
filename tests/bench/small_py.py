#!/usr/bin/env python3
"""The 8-float allreduce from Python, Kylix's binding against mpi4py, one rank's loop each.

    build/kylixrun -n 2 -- python3 tests/bench/small_py.py kylix [iters]
    mpirun -n 2 python3 tests/bench/small_py.py mpi [iters]   # add --mca btl tcp,self for TCP
    build/kylixrun -n 2 -- python3 tests/bench/small_py.py ctypes [iters]

`ctypes` is the floor under the binding: the bare ctypes call of kylix_allreduce with its
arguments prepared once (no checks at all), as CArgObjects (each type's from_param of its
value, which ctypes passes on by copying their values: the cheapest arguments it takes), what
any ctypes binding pays per call.

Times `iters` back-to-back allreduces of 8 float32 (out= a kept array, no allocation per call)
after a warm-up, and prints the slowest rank's mean per call in microseconds.  With a third
argument `pct` it times each call on its own instead (about 0.1 us of timer per call added)
and prints rank 0's 10th, 25th and 50th percentiles too: on a machine that other work shares,
the mean mostly measures how often the ranks were descheduled, the low percentiles still the
call.
"""
import sys
import time

import numpy as np


def main():
    impl = sys.argv[1]
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    x = np.arange(8, dtype=np.float32)
    out = np.empty_like(x)
    if impl in ("kylix", "ctypes"):
        import kylix
        comm = kylix.init()
        call = lambda: comm.allreduce(x, out=out)
        if impl == "ctypes":
            import ctypes
            from kylix import _raw
            P, I = ctypes.c_void_p.from_param, ctypes.c_int.from_param
            args = (P(comm._handle.value), P(x.ctypes.data), P(out.ctypes.data),
                    ctypes.c_int64.from_param(x.size), I(_raw.KYLIX_F32), I(_raw.KYLIX_SUM))
            f = _raw.kylix_allreduce_untyped
            call = lambda: f(*args)
        slowest = lambda t: comm.allreduce(np.array([t], dtype=np.float64), op="max")[0]
        rank = comm.rank
    else:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        call = lambda: comm.Allreduce(x, out, op=MPI.SUM)
        slowest = lambda t: comm.allreduce(t, op=MPI.MAX)
        rank = comm.Get_rank()
    pct = len(sys.argv) > 3 and sys.argv[3] == "pct"
    for _ in range(200):
        call()
    ts = [0] * iters if pct else []
    t0 = time.perf_counter()
    if pct:
        clock = time.perf_counter_ns
        t = clock()
        for i in range(iters):
            call()
            t1 = clock()
            ts[i] = t1 - t
            t = t1
    else:
        for _ in range(iters):
            call()
    mean = (time.perf_counter() - t0) / iters * 1e6
    worst = slowest(mean)
    if rank == 0:
        extra = ""
        if pct:
            ts.sort()
            extra = "".join(f" p{q}_us={ts[iters * q // 100] / 1e3:.2f}" for q in (10, 25, 50))
        print(f"PYLAT impl={impl} op=dense8 iters={iters} mean_us={worst:.2f}{extra}")
    if impl != "mpi":
        comm.close()


if __name__ == "__main__":
    main()
