"""Non-blocking forms: several ireduce/iallreduce in flight on one comm, waited for in any
order, polled with test(); the request keeps the arrays alive (temporaries, collected garbage);
a dropped request; an error reported by wait() on every rank. Usage: worker_nonblocking.py SEED"""

import gc
import sys
import time
import warnings

import numpy as np

import kylix
from _kyutil import Checker, cast, raw_values, reference_sparse, sparse_indices

SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 1

with kylix.init() as comm:
    rank, size = comm.rank, comm.size
    chk = Checker("nonblocking", rank)
    idx = [sparse_indices(SEED, r, size) for r in range(size)]
    outs = [o for o, _ in idx]
    out_idx, in_idx = idx[rank]
    plan_a = comm.config(out_idx, in_idx)
    plan_b = comm.config(out_idx, in_idx[::-1].copy())

    def several_in_flight():
        reqs, wants = [], []
        for k in range(6):
            dt = (np.float64, np.float32, np.int64, np.uint64, np.int32, np.float64)[k]
            width = 1 + k % 3
            vals = [cast(raw_values(SEED + k, r, outs[r].size, width, "sum"), dt, "sum")
                    for r in range(size)]
            plan = plan_a if k % 2 == 0 else plan_b
            ins = in_idx if k % 2 == 0 else in_idx[::-1]
            # A temporary copy: only the request references it while the library reads it.
            reqs.append(plan.ireduce(vals[rank].copy() if width > 1 else vals[rank].reshape(-1).copy()))
            want = reference_sparse(outs, vals, ins, "sum", dt, width)
            wants.append(want if width > 1 else want.reshape(-1))
        dense = [np.arange(50000, dtype=np.float64) * (r + 1) for r in range(size)]
        reqs.append(comm.iallreduce(dense[rank].copy()))
        wants.append(sum(dense))
        del dense
        gc.collect()
        _ = [np.full(100000, -1.0) for _ in range(20)]  # reuse freed memory, if any was freed
        for k in reversed(range(len(reqs))):            # any order
            chk.equal(reqs[k].wait(), wants[k], f"request {k} of {len(reqs)} waited in reverse")
            chk.equal(reqs[k].wait(), wants[k], f"request {k}: wait() again returns the result")

    def polling():
        vals = [cast(raw_values(SEED, r, outs[r].size, 2, "max"), np.float64, "max")
                for r in range(size)]
        req = plan_a.ireduce(vals[rank], op="max")
        polls = 0
        while not req.test():
            polls += 1
            time.sleep(0.001)
        chk.ok(req.done, f"test() reports done after {polls} polls")
        chk.equal(req.wait(), reference_sparse(outs, vals, in_idx, "max", np.float64, 2),
                  "polled request result")
        with comm.iallreduce(np.ones(10), op="sum") as r2:
            pass
        chk.ok(r2.done, "a request used as a context manager is complete on exit")
        chk.equal(r2.wait(), np.full(10, float(size)), "its result")

    def out_buffer_and_blocking_meanwhile():
        buf = np.empty(in_idx.size, dtype=np.int64)
        vals = [cast(raw_values(SEED, r, outs[r].size, 1, "sum"), np.int64, "sum").reshape(-1)
                for r in range(size)]
        req = plan_a.ireduce(vals[rank], out=buf)
        total = comm.allreduce(np.array([rank]))    # a blocking collective queues behind it
        chk.ok(int(total[0]) == sum(range(size)), "blocking allreduce while a request is in flight")
        res = req.wait()
        chk.ok(res is buf, "ireduce(out=buf) returns buf")
        chk.equal(buf, reference_sparse(outs, [v.reshape(-1, 1) for v in vals], in_idx, "sum",
                                        np.int64, 1).reshape(-1), "ireduce into out=")

    def dropped_request():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            comm.iallreduce(np.arange(1000.0))           # never waited for
            gc.collect()
        chk.ok(any(issubclass(x.category, ResourceWarning) for x in w),
               "dropping a request in flight warns (ResourceWarning)")
        got = comm.allreduce(np.ones(3))
        chk.equal(got, np.full(3, float(size)), "the comm keeps working after a dropped request")

    def error_in_flight():
        odd = 1 % size
        vals = np.ones((out_idx.size, 2 if rank == odd else 1))
        if vals.shape[1] == 1:
            vals = vals.reshape(-1)
        req = plan_a.ireduce(vals)
        chk.raises(kylix.MismatchError, req.wait, text="ireduce width mismatch reported by wait()")
        chk.raises(kylix.MismatchError, req.wait, text="and again by a second wait()")
        got = comm.allreduce(np.ones(2))
        chk.equal(got, np.full(2, float(size)), "in step after a failed request")
        bad = plan_a.ireduce if rank == odd else None
        if rank == odd:
            chk.raises(kylix.ArgumentError, plan_a.ireduce, np.ones(out_idx.size + 1),
                       match=["out_vals"], text="ireduce with a bad length raises at the start")
        else:
            req = plan_a.ireduce(np.ones(out_idx.size))
            chk.raises(kylix.MismatchError, req.wait, text="its peers' requests fail in wait()")
        got = comm.allreduce(np.ones(2))
        chk.equal(got, np.full(2, float(size)), "in step after a rejected ireduce")

    for case in (several_in_flight, polling, out_buffer_and_blocking_meanwhile, dropped_request,
                 error_in_flight):
        chk.guard(case)
    # Requests still in flight when the comm closes are finished by kylix_finalize.
    comm.barrier()
    late = comm.iallreduce(np.ones(4))
chk.raises(kylix.StateError, late.wait, match=["closed"], text="a request the close finished")
chk.finish()
