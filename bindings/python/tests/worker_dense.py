"""Dense collectives: allreduce (every dtype and op, small and large counts, 2-D, in place,
out=), bcast, barrier, mix, stats, plan_degrees, failed_ranks, shrink of a healthy comm, and
the GIL released during calls.
Usage: worker_dense.py SEED"""

import sys
import threading
import time

import numpy as np

import kylix
from _kyutil import DTYPES, UFUNC, Checker, cast, raw_values

SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 1

with kylix.init() as comm:
    rank, size = comm.rank, comm.size
    chk = Checker("dense", rank)

    def data(r, count, dt, op, width=1):
        return cast(raw_values(SEED + count, r, count, width, op), dt, op).reshape(count, width)

    def allreduce_every_dtype():
        for count in (1, 1000, 20000):          # 20000 x 8 bytes: past the direct-exchange size
            for dt in DTYPES:
                ops = ["sum", "min", "max", "prod"]
                if np.dtype(dt).kind in "iu":
                    ops += ["band", "bor", "bxor"]
                for op in ops:
                    if count == 20000 and op not in ("sum", "bxor", "max"):
                        continue
                    allv = [data(r, count, dt, op) for r in range(size)]
                    want = allv[0].copy()
                    for v in allv[1:]:
                        want = UFUNC[op](want, v)
                    got = comm.allreduce(allv[rank], op=op)
                    chk.equal(got, want, f"allreduce {np.dtype(dt).name} n={count} {op}")

    def allreduce_shapes_and_buffers():
        allv = [data(r, 300, np.float32, "sum", width=4) for r in range(size)]
        want = sum(allv[1:], allv[0].copy())
        got = comm.allreduce(allv[rank])
        chk.equal(got, want, "2-D (300, 4) keeps its shape")
        a = allv[rank].copy()
        res = comm.allreduce(a, out=a)
        chk.ok(res is a, "out=arr is in place and returns arr")
        chk.equal(a, want, "in place result")
        out = np.empty(1200, dtype=np.float32)
        res = comm.allreduce(allv[rank], out=out)
        chk.ok(res is out, "out= returned")
        chk.equal(out, want.reshape(-1), "out= flat buffer for a 2-D array")
        got = comm.allreduce(allv[rank][:, ::2])     # strided: converted once
        chk.equal(got, want[:, ::2], "strided input is converted")
        got = comm.allreduce(np.full(3, rank, dtype=np.uint8))     # widened to int32
        chk.equal(got, np.full(3, sum(range(size)), dtype=np.int32), "uint8 widened to int32")
        got = comm.allreduce(np.empty(0))
        chk.ok(got.shape == (0,), "empty allreduce")

    def bcast_barrier():
        for root in (0, size - 1):
            buf = np.arange(1000, dtype=np.int64) * (root + 1) if rank == root else \
                np.zeros(1000, dtype=np.int64)
            res = comm.bcast(buf, root=root)
            chk.equal(res, np.arange(1000, dtype=np.int64) * (root + 1), f"bcast root={root}")
            chk.ok(res is buf, "bcast is in place")
        rec = np.zeros(4, dtype=[("a", "<i4"), ("b", "<f8")])
        if rank == 0:
            rec["a"] = [1, 2, 3, 4]
            rec["b"] = 0.5
        comm.bcast(rec)
        chk.ok(list(rec["a"]) == [1, 2, 3, 4] and float(rec["b"][3]) == 0.5,
               "bcast of a structured array (bytes)")
        for _ in range(3):
            comm.barrier()
        chk.ok(True, "3 barriers")

    def mix():
        rng = np.random.default_rng([SEED, 9])
        allv = rng.standard_normal((size, 257))
        mean = allv.mean(axis=0)
        buf = allv[rank].copy()
        layers = len(comm.stats()["degrees"] or []) or None
        steps = 0
        for step in range(8):        # more steps than layers: stays the mean
            comm.mix(buf, step)
            steps += 1
        ok = np.allclose(buf, mean, rtol=1e-12, atol=1e-12)
        chk.ok(ok, f"mix: {steps} steps give the global mean (max err "
               f"{np.abs(buf - mean).max():.2e}, layers={layers})")
        lo = comm.allreduce(buf, op="min")
        hi = comm.allreduce(buf, op="max")
        chk.equal(lo, hi, "mix: the same bits on every rank")
        f32 = np.full(10, float(rank), dtype=np.float32)
        for step in range(8):
            comm.mix(f32, step)
        chk.ok(np.allclose(f32, (size - 1) / 2), f"mix float32: {f32[0]}")

    def stats_and_planning():
        comm.reset_stats()
        for _ in range(3):
            comm.allreduce(np.ones(10))
        st = comm.stats()
        chk.ok(isinstance(st, dict) and st["version"] == 1, "stats() is a dict, version 1")
        chk.ok(st["collectives"]["allreduce"]["calls"] == 3,
               f"stats counts 3 allreduces after reset: {st['collectives']['allreduce']}")
        chk.ok(st["totals"]["bytes_sent"] >= 0 and "phase_seconds" in st, "stats totals")
        comm.reset_stats()
        chk.ok(comm.stats()["collectives"]["allreduce"]["calls"] == 0, "reset_stats")
        d = kylix.plan_degrees(int(6e7), 0.21, 64, 1.0, int(5e6), 4)
        chk.ok(d == (8, 4, 2), f"plan_degrees twitter example: {d}")
        d = kylix.plan_degrees(1000, 0.5, 1)
        chk.ok(int(np.prod(d or (1,))) == 1, f"plan_degrees one rank: {d}")
        chk.raises(kylix.ArgumentError, kylix.plan_degrees, 1000, 2.0, 4, match=["density"],
                   text="plan_degrees density 2.0")
        # Before a barrier: a peer that already called kylix_finalize is listed as failed.
        fr = comm.failed_ranks()
        chk.ok(fr == [], f"failed_ranks() on a healthy job: {fr}")
        comm.barrier()

    def gil_released():
        """ctypes drops the GIL during a call: another thread runs while this rank waits.
        A first barrier lines the ranks up after the thread has started, so a rank slowed by a
        loaded machine still waits its ~0.3 s for rank 0 in the second."""
        if rank == 0:
            comm.barrier()
            time.sleep(0.3)
            comm.barrier()
            return
        stop, count = threading.Event(), [0]

        def spin():
            while not stop.is_set():
                count[0] += 1
        t = threading.Thread(target=spin)
        t.start()
        comm.barrier()
        c0 = count[0]
        comm.barrier()                  # waits ~0.3 s for rank 0
        c1 = count[0]
        stop.set()
        t.join()
        chk.ok(c1 - c0 > 10000, f"a Python thread ran {c1 - c0} loops while this rank waited "
               "in kylix_barrier")

    for case in (gil_released, allreduce_every_dtype, allreduce_shapes_and_buffers, bcast_barrier, mix,
                 stats_and_planning):
        chk.guard(case)

    # Shrinking a healthy comm gives a comm of every rank; the old one is broken afterwards.
    try:
        sub = comm.shrink()
    except kylix.KylixError as e:
        chk.ok(False, f"shrink of a healthy job: {type(e).__name__}: {e}")
    else:
        with sub:
            chk.ok(sub.size == size and sub.rank == rank, f"shrink of a healthy job: {sub}")
            chk.equal(sub.allreduce(np.ones(3)), np.full(3, float(size)), "allreduce on it")
            chk.raises(kylix.StateError, comm.barrier, match=["shrunk"],
                       text="the shrunk comm is broken")
            chk.raises(kylix.StateError, comm.shrink, match=["already shrunk"],
                       text="a comm can be shrunk once")
chk.finish()
