"""User-defined reduction ops from Python callables (kylix.op_create): abs-max, dense and
sparse, blocking and not, several dtypes and widths; a Python op that raises.
Usage: worker_userop.py SEED"""

import sys
import threading

import numpy as np

import kylix
from _kyutil import Checker, absmax, raw_values, reference_userop_sparse, sparse_indices

SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 1

calls = {"n": 0, "threads": set(), "max_count": 0, "views": True}


def absmax_op(inout, in_):
    calls["n"] += 1
    calls["threads"].add(threading.get_ident())
    calls["max_count"] = max(calls["max_count"], inout.size)
    calls["views"] &= (not inout.flags.owndata) and (not in_.flags.writeable)
    absmax(inout, in_)


def returns_result(inout, in_):       # the other style: return the combined array
    return np.where(np.abs(in_) > np.abs(inout), in_, inout)


def fails_on_rank_1(inout, in_):
    if int(__import__("os").environ["KYLIX_RANK"]) == 1:
        raise RuntimeError("boom from a user op")
    inout += in_


# The same ops in the same order on every rank (ids are compared across ranks).
op = kylix.op_create(absmax_op)
op2 = kylix.op_create(returns_result)
op3 = kylix.op_create(fails_on_rank_1)

with kylix.init() as comm:
    rank, size = comm.rank, comm.size
    chk = Checker("userop", rank)
    chk.ok(op.id >= 64 and op2.id == op.id + 1, f"op ids {op.id}, {op2.id}")

    def signed(seed, r, rows, width, dt):
        raw = raw_values(seed, r, rows, width, "absmax")
        return (raw / 4).astype(dt) if np.dtype(dt).kind == "f" else raw.astype(dt)

    def dense():
        for count in (7, 70000):        # 70000: past the direct exchange, chunked calls
            for dt in (np.float64, np.int64, np.float32):
                allv = [signed(SEED + count, r, count, 1, dt).reshape(-1) for r in range(size)]
                want = allv[0].copy()
                for v in allv[1:]:
                    absmax(want, v)
                got = comm.allreduce(allv[rank], op=op)
                chk.equal(got, want, f"allreduce abs-max {np.dtype(dt).name} n={count}")
        allv = [signed(SEED, r, 500, 1, np.float64).reshape(-1) for r in range(size)]
        want = allv[0].copy()
        for v in allv[1:]:
            absmax(want, v)
        chk.equal(comm.allreduce(allv[rank], op=op2), want, "an op that returns its result")
        req = comm.iallreduce(allv[rank], op=op)
        chk.equal(req.wait(), want, "iallreduce abs-max")

    def sparse():
        idx = [sparse_indices(SEED, r, size) for r in range(size)]
        outs = [o for o, _ in idx]
        out_idx, in_idx = idx[rank]
        with comm.config(out_idx, in_idx) as plan:
            for width in (1, 3):
                for dt in (np.float64, np.int32):
                    vals = [signed(SEED, r, outs[r].size, width, dt) for r in range(size)]
                    want = reference_userop_sparse(outs, vals, in_idx, width)
                    mine = vals[rank] if width > 1 else vals[rank].reshape(-1)
                    got = plan.reduce(mine, op=op)
                    chk.equal(got, want if width > 1 else want.reshape(-1),
                              f"sparse abs-max {np.dtype(dt).name} width={width}")
            vals = [signed(SEED + 1, r, outs[r].size, 2, np.float32) for r in range(size)]
            req = plan.ireduce(vals[rank], op=op)
            chk.equal(req.wait(), reference_userop_sparse(outs, vals, in_idx, 2),
                      "sparse ireduce abs-max float32 width=2")
        vals = [signed(SEED + 2, r, outs[r].size, 1, np.float64) for r in range(size)]
        got = comm.config_reduce(out_idx, vals[rank].reshape(-1), in_idx, op=op)
        chk.equal(got, reference_userop_sparse(outs, vals, in_idx, 1).reshape(-1),
                  "config_reduce abs-max")

    def raising_op():
        data = np.ones(70000)
        if rank == 1:
            e = chk.raises(kylix.UserOpError, comm.allreduce, data, op=op3,
                           match=["boom from a user op"], text="an op that raises")
            chk.ok(isinstance(getattr(e, "__cause__", None), RuntimeError), "cause is kept")
        else:
            try:
                comm.allreduce(data, op=op3)
                chk.ok(True, "the other ranks complete the collective")
            except kylix.UserOpError:
                chk.ok(False, "UserOpError on a rank whose op did not raise")
        got = comm.allreduce(np.ones(3))
        chk.equal(got, np.full(3, float(size)), "in step after a raising op")

    for case in (dense, sparse, raising_op):
        chk.guard(case)
    chk.ok(calls["n"] > 0 and calls["views"],
           f"the op ran {calls['n']} times on {len(calls['threads'])} threads, at most "
           f"{calls['max_count']} elements a call, on views of the library's buffers")
chk.finish()
