"""Elastic membership through the binding: MEMBERS ranks started by `kylixrun --elastic
--job-file F` wait in comm.resize(min_size=MEMBERS+JOINERS) for the JOINERS processes that a
second `kylixrun --join F` starts (their kylix.init() returns once admitted). Every rank of the
new comm checks members(), its rank and size, a bcast of the members' state to the joiners,
and an allreduce and a sparse reduce on the new comm.
Usage: worker_elastic.py MEMBERS JOINERS"""

import os
import sys

import numpy as np

import kylix
from _kyutil import Checker

n_members, n_join = int(sys.argv[1]), int(sys.argv[2])
joining = "KYLIX_JOIN" in os.environ

if joining:
    # The options string's join and secret (kylixrun --join set the same in the environment):
    # init returns once a resize admitted this process.
    comm = kylix.init(join=os.environ["KYLIX_JOIN"], secret=os.environ["KYLIX_SECRET"])
    chk = Checker("elastic", comm.rank)
    chk.ok(n_members <= comm.rank < n_members + n_join, f"joiner is rank {comm.rank}")
else:
    first = kylix.init()
    chk = Checker("elastic", first.rank)
    chk.ok(first.members() == list(range(n_members)), f"members() of init: {first.members()}")
    addr = first.join_address()
    chk.ok(addr == os.environ["KYLIX_RENDEZVOUS"], f"join_address() {addr} is kylixrun's")
    comm = first.resize(min_size=n_members + n_join)
    chk.ok(comm.rank == first.rank, f"a survivor keeps its rank {first.rank}")
    chk.raises(kylix.StateError, first.barrier, text="the resized comm is spent")
    first.close()

size = n_members + n_join
chk.ok(comm.size == size, f"size {comm.size} after the resize")
want = list(range(n_members)) + [-1] * n_join
chk.ok(comm.members() == want, f"members() = {comm.members()}")

# The survivors hold the state; the joiners get it from rank 0.
state = np.arange(5, dtype=np.float64) * 1.5 if comm.rank == 0 else np.zeros(5)
comm.bcast(state, root=0)
chk.equal(state, np.arange(5, dtype=np.float64) * 1.5, "the joiners got the state")
got = comm.allreduce(np.array([comm.rank + 1], dtype=np.int64))
chk.ok(int(got[0]) == size * (size + 1) // 2, f"allreduce on the new comm: {got}")
with comm.config([comm.rank], list(range(size))) as plan:
    got = plan.reduce(np.array([float(comm.rank)]))
    chk.equal(got, np.arange(size, dtype=np.float64), "sparse reduce on the new comm")
comm.close()
chk.finish()
