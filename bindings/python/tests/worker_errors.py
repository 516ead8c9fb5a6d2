"""Statuses become exceptions: bad arguments (found in Python or in C) -> ArgumentError naming
the argument on the bad rank and MismatchError on the others; disagreements -> MismatchError
on every rank; closed handles -> StateError. After every failure the comm must still work.
Usage: worker_errors.py"""

import numpy as np

import kylix
from _kyutil import Checker

with kylix.init(timeout_ms=20000) as comm:
    rank, size = comm.rank, comm.size
    chk = Checker("errors", rank)
    odd = 1 % size
    n = 0

    def in_step(label):
        """A good collective right after a failure: the comm is usable and the ranks in step."""
        global n
        n += 1
        got = comm.allreduce(np.array([rank + n], dtype=np.int64))
        chk.ok(int(got[0]) == sum(range(size)) + n * size, f"in step after {label}")

    plan = comm.config(np.arange(10) + rank, np.arange(12))

    # 1. found in Python on one rank: out_vals has the wrong number of rows
    vals = np.ones(9 if rank == odd else 10)
    if rank == odd:
        e = chk.raises(kylix.ArgumentError, plan.reduce, vals, match=["out_vals", "9 rows", "10"],
                       text="python-side length check")
        chk.ok(isinstance(e, ValueError) and e.status == 1, "ArgumentError is a ValueError, status 1")
    else:
        # kylix_reject: the peers see the real reason and the rank that gave it
        chk.raises(kylix.MismatchError, plan.reduce, vals, match=[f"rank {odd}", "out_vals", "9 rows"],
                   text="peer of a rank with bad args")
    in_step("python-side ArgumentError")

    # 1b. found in Python on one rank, for every call that checks its arguments in Python: the
    # rank gives up its turn with kylix_reject, so each peer's MismatchError names the rank and
    # carries the reason ("<call>: <what is wrong>")
    one_rank = [
        ("kylix_config", "float indices", ["in_idx", "integers"],
         lambda: comm.config([1, 2], np.array([0.5])), lambda: comm.config([1, 2], [1])),
        ("kylix_config_reduce", "3-D values", ["out_vals"],
         lambda: comm.config_reduce([1], np.ones((1, 1, 1)), [1]),
         lambda: comm.config_reduce([1], np.ones(1), [1])),
        ("kylix_allreduce", "a strided out", ["out", "C-contiguous"],
         lambda: comm.allreduce(np.ones(20)[::2], out=np.ones(20)[::2]),
         lambda: comm.allreduce(np.ones(10))),
        ("kylix_iallreduce", "unknown op", ["op", "median"],
         lambda: comm.iallreduce(np.ones(4), op="median"),
         lambda: comm.iallreduce(np.ones(4)).wait()),
        ("kylix_bcast", "a list as the root's array", ["arr", "numpy array"],
         lambda: comm.bcast([1.0, 2.0, 3.0], root=odd),
         lambda: comm.bcast(np.ones(3), root=odd)),
        ("kylix_mix", "mix of integers", ["arr", "float"],
         lambda: comm.mix(np.ones(3, np.int64), 0), lambda: comm.mix(np.ones(3), 0)),
        ("kylix_ireduce", "unknown op", ["op", "median"],
         lambda: plan.ireduce(np.ones(10), op="median"), lambda: plan.ireduce(np.ones(10)).wait()),
    ]
    for call, what, match, bad, good in one_rank:
        if rank == odd:
            chk.raises(kylix.ArgumentError, bad, match=match, text=f"{call}: {what}")
        else:
            chk.raises(kylix.MismatchError, good, match=[f"rank {odd}", f"{call}: "] + match,
                       text=f"peer of rank {odd}'s {call}: {what}")
        in_step(f"rank {odd}'s {call}: {what}")

    # 2. found in C on one rank: a negative index
    out_idx = np.array([1, -5, 3]) if rank == odd else np.array([1, 2, 3])
    if rank == odd:
        chk.raises(kylix.ArgumentError, comm.config, out_idx, [1], match=["out_idx", "negative"],
                   text="C-side negative index")
    else:
        chk.raises(kylix.MismatchError, comm.config, out_idx, [1],
                   match=[f"rank {odd}", "out_idx", "negative"], text="peer of negative index")
    in_step("C-side ArgumentError")

    # 3-6. disagreements: every rank fails with MismatchError, naming what differs
    cases = [
        ("dtype", lambda: plan.reduce(np.ones(10, np.float32 if rank == odd else np.float64))),
        ("op", lambda: plan.reduce(np.ones(10), op="max" if rank == odd else "sum")),
        ("width", lambda: plan.reduce(np.ones((10, 2 if rank == odd else 1)))),
        ("collective", lambda: comm.barrier() if rank == odd else comm.allreduce(np.ones(3))),
        ("count", lambda: comm.allreduce(np.ones(5 if rank == odd else 6))),
        ("config_reduce width", lambda: comm.config_reduce(
            [rank], np.ones((1, 3 if rank == odd else 1)), [0])),
    ]
    for what, fn in cases:
        chk.raises(kylix.MismatchError, fn, text=f"ranks disagree on {what}")
        in_step(f"mismatch on {what}")

    # 7. bad arguments on every rank, found in Python
    strided = np.ones(20)[::2]
    every = [
        ("copy=False with a strided array", lambda: plan.reduce(strided, copy=False),
         ["out_vals", "copy=False", "C-contiguous"]),
        ("copy=False with another dtype", lambda: plan.reduce(np.ones(10, np.int16), copy=False),
         ["out_vals", "int16"]),
        ("complex values", lambda: plan.reduce(np.ones(10, np.complex128)), ["dtype", "complex"]),
        ("unknown op", lambda: plan.reduce(np.ones(10), op="median"), ["op", "median"]),
        ("out of the wrong shape", lambda: plan.reduce(np.ones(10), out=np.empty(11)),
         ["out", "(11,)", "(12,)"]),
        ("out of the wrong dtype", lambda: plan.reduce(np.ones(10), out=np.empty(12, np.float32)),
         ["out", "float32"]),
        ("float indices", lambda: comm.config([1, 2], np.array([0.5])), ["in_idx", "integers"]),
        ("2-D indices", lambda: comm.config(np.ones((2, 2), np.int64), [1]), ["out_idx", "1-D"]),
        ("3-D values", lambda: comm.config_reduce([1], np.ones((1, 1, 1)), [1]), ["out_vals"]),
        ("bcast root", lambda: comm.bcast(np.ones(3), root=size), ["root"]),
        ("mix of integers", lambda: comm.mix(np.ones(3, np.int64), 0), ["arr", "float"]),
        ("mix step", lambda: comm.mix(np.ones(3), -1), ["step"]),
        ("in place on a strided array", lambda: comm.allreduce(strided, out=strided),
         ["arr", "C-contiguous"]),
        ("bitwise op on floats", lambda: comm.allreduce(np.ones(4), op="bxor"), ["op"]),
    ]
    for what, fn, match in every:
        chk.raises(kylix.ArgumentError, fn, match=match, text=what)
        in_step(what)

    # 8. closed handles
    plan.close()
    plan.close()   # idempotent
    chk.raises(kylix.StateError, plan.reduce, np.ones(10), match=["closed"], text="closed plan")
    req = comm.iallreduce(np.ones(4))
    chk.ok(np.array_equal(req.wait(), np.full(4, float(size))), "iallreduce before close")
    in_step("closed plan")

plan2 = None
chk.ok(comm.closed, "comm closed by the with block")
chk.raises(kylix.StateError, comm.barrier, match=["closed"], text="barrier on a closed comm")
chk.raises(kylix.StateError, lambda: comm.rank, text="rank of a closed comm")
comm.close()   # idempotent
chk.finish()
