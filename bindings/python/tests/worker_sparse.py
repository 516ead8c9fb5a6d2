"""Sparse allreduce correctness: every dtype, width 1 and 3 (2-D), every op, config once and
reduce many times, config_reduce (keep and not), repeated and missing indices, empty sets,
the out= buffer, conversions. Usage: worker_sparse.py SEED"""

import sys

import numpy as np

import kylix
from _kyutil import (DTYPES, Checker, cast, raw_values, reference_sparse, sparse_indices)

SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 1

with kylix.init() as comm:
    rank, size = comm.rank, comm.size
    chk = Checker("sparse", rank)
    chk.info(f"size={size} seed={SEED} degrees={comm.stats()['degrees_option']}")

    idx = [sparse_indices(SEED, r, size) for r in range(size)]
    outs = [o for o, _ in idx]
    out_idx, in_idx = idx[rank]

    def every_dtype_op_width():
        plan = comm.config(out_idx, in_idx)
        chk.ok(plan.n_out == out_idx.size and plan.n_in == in_idx.size, f"plan {plan!r}")
        for width in (1, 3):
            for dt in DTYPES:
                ops = ["sum", "max", "min", "prod"]
                if np.dtype(dt).kind in "iu":
                    ops += ["band", "bor", "bxor"]
                for op in ops:
                    vals = [cast(raw_values(SEED, r, outs[r].size, width, op), dt, op)
                            for r in range(size)]
                    mine = vals[rank] if width > 1 else vals[rank].reshape(-1)
                    got = plan.reduce(mine, op=op)
                    want = reference_sparse(outs, vals, in_idx, op, dt, width)
                    if width == 1:
                        want = want.reshape(-1)
                    chk.equal(got, want, f"reduce {np.dtype(dt).name} width={width} op={op}")
        plan.close()
        chk.ok(plan.closed, "plan closed")

    def reduce_many_times_and_out_buffer():
        with comm.config(out_idx, in_idx) as plan:
            buf = np.empty((in_idx.size, 2), dtype=np.float64)
            for it in range(5):
                vals = [cast(raw_values(SEED + it, r, outs[r].size, 2, "sum"), np.float64, "sum")
                        for r in range(size)]
                res = plan.reduce(vals[rank], out=buf)
                want = reference_sparse(outs, vals, in_idx, "sum", np.float64, 2)
                chk.equal(res, want, f"iteration {it} into out=")
                chk.ok(res is buf, "out= is returned")

    def conversions():
        # Non-contiguous float64 view, int16 (widened to int32), a Python list: converted once.
        with comm.config(out_idx, in_idx) as plan:
            raw = [raw_values(SEED, r, outs[r].size, 1, "sum") for r in range(size)]
            big = np.zeros((out_idx.size, 2))
            big[:, 1] = raw[rank][:, 0] / 4
            got = plan.reduce(big[:, 1])
            want = reference_sparse(outs, [v / 4 for v in raw], in_idx, "sum", np.float64, 1)
            chk.equal(got, want.reshape(-1), "strided float64 column is converted")
            got = plan.reduce(raw[rank][:, 0].astype(np.int16))
            want = reference_sparse(outs, [v.astype(np.int32) for v in raw], in_idx, "sum",
                                    np.int32, 1)
            chk.equal(got, want.reshape(-1), "int16 widened to int32")
            got = plan.reduce(raw[rank][:, 0].tolist(), dtype=np.float32)
            want = reference_sparse(outs, [v.astype(np.float32) for v in raw], in_idx, "sum",
                                    np.float32, 1)
            chk.equal(got, want.reshape(-1), "list with dtype=float32")
        # Index arrays of other integer types, and non-contiguous ones.
        o32 = np.repeat(out_idx.astype(np.uint64), 2)[::2]
        with comm.config(o32, in_idx.astype(np.int64)) as plan:
            vals = [cast(raw_values(SEED, r, outs[r].size, 1, "sum"), np.int64, "sum")
                    for r in range(size)]
            got = plan.reduce(vals[rank].reshape(-1))
            want = reference_sparse(outs, vals, in_idx, "sum", np.int64, 1).reshape(-1)
            chk.equal(got, want, "uint64 strided out_idx")

    def config_reduce():
        for step in range(3):
            seed = SEED * 100 + step
            idx2 = [sparse_indices(seed, r, size) for r in range(size)]
            outs2 = [o for o, _ in idx2]
            o, i = idx2[rank]
            vals = [cast(raw_values(seed, r, outs2[r].size, 4, "max"), np.float32, "max")
                    for r in range(size)]
            keep = step == 1
            res = comm.config_reduce(o, vals[rank], i, op="max", keep=keep)
            if keep:
                res, plan = res
            want = reference_sparse(outs2, vals, i, "max", np.float32, 4)
            chk.equal(res, want, f"config_reduce step {step} (keep={keep})")
            if keep:
                vals2 = [cast(raw_values(seed + 1, r, outs2[r].size, 1, "sum"), np.int32, "sum")
                         for r in range(size)]
                got = plan.reduce(vals2[rank].reshape(-1))
                want = reference_sparse(outs2, vals2, i, "sum", np.int32, 1).reshape(-1)
                chk.equal(got, want, "reduce over a kept config_reduce plan")
                plan.close()

    def several_plans_live():
        plans = [comm.config(out_idx, in_idx), comm.config(in_idx, out_idx)]
        vals_a = [cast(raw_values(SEED, r, outs[r].size, 1, "sum"), np.float64, "sum")
                  for r in range(size)]
        ins = [i for _, i in idx]
        vals_b = [cast(raw_values(SEED, r, ins[r].size, 1, "sum"), np.float64, "sum")
                  for r in range(size)]
        a = plans[0].reduce(vals_a[rank].reshape(-1))
        b = plans[1].reduce(vals_b[rank].reshape(-1))
        chk.equal(a, reference_sparse(outs, vals_a, in_idx, "sum", np.float64, 1).reshape(-1),
                  "plan A of two")
        chk.equal(b, reference_sparse(ins, vals_b, out_idx, "sum", np.float64, 1).reshape(-1),
                  "plan B of two (sets swapped)")
        del plans  # collected: freed through the comm, on this thread, at its next call

    for case in (every_dtype_op_width, reduce_many_times_and_out_buffer, conversions,
                 config_reduce, several_plans_live):
        chk.guard(case)
    comm.barrier()
    st = comm.stats()
    chk.ok(st["collectives"]["reduce"]["calls"] > 0 and st["rank"] == rank and st["size"] == size,
           f"stats: {st['collectives']['reduce']['calls']} reduces, "
           f"{st['collectives']['config']['calls']} configs")
chk.finish()
