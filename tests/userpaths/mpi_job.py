"""Run under mpirun: kylix.from_mpi over COMM_WORLD, then the kyjob checks.

Rank 0 gathers every rank's results through MPI and checks them against the single-process
answer; the dense sum is also checked against MPI's own Allreduce. Prints one PASS/FAIL line.
"""

import os
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kyjob  # noqa: E402

import kylix  # noqa: E402

world = MPI.COMM_WORLD
with kylix.from_mpi(world, timeout_ms=60000) as comm:
    res = kyjob.run(comm)
    assert (comm.rank, comm.size) == (world.Get_rank(), world.Get_size())
mine = np.array(kyjob.data(world.Get_rank())["dense"])
mpi_sum = np.empty_like(mine)
world.Allreduce(mine, mpi_sum, op=MPI.SUM)
errs = []
if mpi_sum.tolist() != res["allreduce"]:
    errs.append(f"rank {world.Get_rank()}: Kylix's allreduce differs from MPI's Allreduce")
gathered = world.gather((res, errs), root=0)
if world.Get_rank() == 0:
    errs = kyjob.check([g[0] for g in gathered], world.Get_size())
    errs += sum((g[1] for g in gathered), [])
    for e in errs:
        print("FAIL", e)
    print(f"mpi4py: {'PASS' if not errs else 'FAIL'} {world.Get_size()} ranks, "
          f"library {kylix.library_path}", flush=True)
    sys.exit(1 if errs else 0)
