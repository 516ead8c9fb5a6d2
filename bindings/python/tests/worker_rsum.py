"""op="rsum": one multiset of (index, value) contributions, dealt among the job's ranks by a
hash of the job size (so jobs of different sizes split it differently), gives the exact sum
correctly rounded (math.fsum; the values all fit rsum's exact window) through reduce,
config_reduce, ireduce and allreduce, and prints a digest of the wide-range results that
test_jobs.py compares across job sizes. Usage: worker_rsum.py SEED"""

import hashlib
import math
import sys

import numpy as np

import kylix
from _kyutil import Checker

SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 1
N, KEYS = 6000, 500


def multiset(narrow: bool):
    rng = np.random.default_rng([SEED, int(narrow)])
    idx = rng.integers(0, KEYS, N)
    if narrow:  # 20-bit significands, exponents over +-5: within 32 bits of the largest
        vals = np.ldexp(np.floor(rng.random(N) * 2**20), rng.integers(-25, -14, N))
    else:       # 53-bit significands, exponents over +-60
        vals = np.ldexp(rng.random(N), rng.integers(-60, 61, N))
    vals *= rng.choice([-1.0, 1.0], N)
    cancel = rng.random(N) < 0.25  # a quarter cancel an earlier value of theirs exactly
    src = rng.integers(0, N, N)
    idx[cancel], vals[cancel] = idx[src[cancel]], -vals[src[cancel]]
    return idx.astype(np.int64), vals


with kylix.init() as comm:
    rank, size = comm.rank, comm.size
    chk = Checker("rsum", rank)
    owner = (np.arange(N) * 2654435761 + 17) % (size * 7919) % size  # depends on the job size
    for narrow in (True, False):
        idx, vals = multiset(narrow)
        mine = owner == rank
        in_idx = np.arange(KEYS + 1, dtype=np.int64)  # KEYS: nobody sends it
        for dt in (np.float64, np.float32):
            v = vals.astype(dt)
            plan = comm.config(idx[mine], in_idx)
            got = plan.reduce(v[mine], op="rsum")
            chk.equal(plan.ireduce(v[mine], op="rsum").wait(), got, f"ireduce = reduce {dt.__name__}")
            chk.equal(comm.config_reduce(idx[mine], v[mine], in_idx, op="rsum"), got,
                      f"config_reduce = reduce {dt.__name__}")
            plan.close()
            if narrow:
                want = np.zeros(KEYS + 1, dt)
                for k in range(KEYS):
                    want[k] = dt(math.fsum(v[idx == k].astype(np.float64)))
                chk.equal(got, want, f"rsum {dt.__name__}: the exact sums correctly rounded")
            else:
                h = hashlib.sha256(got.tobytes()).hexdigest()[:16]
                chk.info(f"digest rsum-{dt.__name__} {h}")
    # dense: element k gets one value from every rank; the reference is fsum over the ranks
    rng = np.random.default_rng([SEED, 9])
    allv = np.ldexp(np.floor(rng.random((size, 3000)) * 2**20), rng.integers(-25, -14, (size, 3000)))
    got = comm.allreduce(allv[rank], op="rsum")
    want = np.array([math.fsum(allv[:, k]) for k in range(3000)])
    chk.equal(got, want, "allreduce rsum: the exact sums correctly rounded")
    chk.raises(kylix.ArgumentError, lambda: comm.allreduce(np.ones(4, np.int64), op="rsum"),
               match=["rsum", "i64"], text="rsum on int64 is an argument error naming op and dtype")
    chk.finish()
