"""A rank that dies mid-job: the survivors' next collective raises PeerError (or TimeoutError)
naming it, within the timeout, never a hang; failed_ranks() lists it; the comm is broken
afterwards (StateError); comm.shrink() gives the survivors a working comm, renumbered.
Usage: worker_kill.py VICTIM TIMEOUT_MS"""

import os
import sys
import time

import numpy as np

import kylix
from _kyutil import Checker

victim = int(sys.argv[1])
timeout_ms = int(sys.argv[2])

comm = kylix.init(timeout_ms=timeout_ms)
rank, size = comm.rank, comm.size
chk = Checker("kill", rank)
got = comm.allreduce(np.ones(4))
chk.ok(np.array_equal(got, np.full(4, float(size))), "allreduce before the failure")
plan = comm.config([rank], [0])
comm.barrier()
if rank == victim:
    chk.ok(True, "victim exits abruptly")
    print(f"r{rank} DONE fails=0 (victim)", flush=True)
    os._exit(0)                       # no finalize: the sockets just close

t0 = time.monotonic()
try:
    plan.reduce(np.ones(1))
    chk.ok(False, "reduce with a dead peer succeeded")
except (kylix.PeerError, kylix.TimeoutError) as e:
    dt = time.monotonic() - t0
    chk.ok(dt < timeout_ms / 1000 + 3, f"{type(e).__name__} after {dt:.2f}s: {e}")
    chk.ok(f"rank {victim}" in str(e) or "rank" in str(e), "the message names a rank")
# The error may have been relayed by another rank before this rank's own transport saw the
# death; the list only grows and must show the victim soon.
deadline = time.monotonic() + 5
fr = comm.failed_ranks()
while victim not in fr and time.monotonic() < deadline:
    time.sleep(0.05)
    fr = comm.failed_ranks()
chk.ok(fr == [victim], f"failed_ranks() = {fr} after {time.monotonic() - deadline + 5:.2f}s")
chk.raises(kylix.StateError, comm.barrier, text="the comm is broken afterwards")
survivors = [r for r in range(size) if r != victim]
try:
    sub = comm.shrink()
except kylix.KylixError as e:
    chk.ok(False, f"shrink: {type(e).__name__}: {e}")
else:
    with sub:
        chk.ok(sub.size == size - 1 and sub.rank == survivors.index(rank),
               f"shrink: rank {rank} of {size} is rank {sub.rank} of {sub.size}")
        got = sub.allreduce(np.array([rank], dtype=np.int64))
        chk.ok(int(got[0]) == sum(survivors), "allreduce on the shrunk comm")
        with sub.config([sub.rank], [0, 1]) as p2:
            chk.ok(np.array_equal(p2.reduce(np.array([5.0])), [5.0, 5.0]),
                   "config/reduce on the shrunk comm")
        comm.close()                      # closing the old comm does not disturb the new one
        fr = sub.failed_ranks()           # before the barrier: nobody has closed sub yet
        sub.barrier()
        chk.ok(fr == [], f"no failed ranks in the shrunk comm: {fr}")
comm.close()
chk.finish()
