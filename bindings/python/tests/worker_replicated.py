"""A replicated job (kylixrun --replication S) that loses replicas and keeps computing, through
the Python binding: every survivor checks every result of every iteration, bit for bit,
against a brute-force reduction over the node data (each node counted once), then checks
failed_ranks() and the "replication" section of stats().

Usage: worker_replicated.py ITERS [RANK:CALL:ITER ...]
  Rank r is replica r // (size/S) of node r % (size/S); its data depend on the node only, so
  the replicas of a node make the same calls with the same bytes (include/kylix.h,
  replication). Each iteration: config + reduce (sparse, f64 SUM, width 8), allreduce
  (dense, f64 SUM), config_reduce (sparse, i64 MAX, one-shot).
  RANK:CALL:ITER (CALL one of config, reduce, dense, cfgred): rank RANK sends itself SIGKILL
  from a thread 300 us after that call of iteration ITER starts, so it dies in the middle of it
  (no finalize, no exception handler: the sockets just drop).
"""

import os
import signal
import sys
import threading
import time

import numpy as np

import kylix
from _kyutil import Checker

NFEAT = 1 << 21          # index space
NOUT, NIN = 60000, 40000  # per node and iteration: big enough that a call lasts milliseconds
NDENSE = 1 << 17
WIDTH = 8                 # reduce width: enough bytes that a reduce lasts milliseconds
KILL_AFTER_S = 300e-6

iters = int(sys.argv[1])
events = {}
for ev in sys.argv[2:]:
    r, call, it = ev.split(":")
    events[(int(r), call, int(it))] = True

comm = kylix.init()
rank, size = comm.rank, comm.size
s = int(os.environ.get("KYLIX_REPLICATION", "1"))
m = size // s
node = rank % m
dead = sorted({r for (r, _, _) in events})
chk = Checker("replicated", rank)
chk.info(f"rank {rank} of {size}: replica {rank // m} of node {node}, {m} nodes")


def node_data(nd: int, it: int):
    """Out indices (with repeats), f64 values, in indices of node nd in iteration it."""
    rng = np.random.default_rng([42, it, nd])
    # A hot head shared by every node plus a uniform tail, like power-law features.
    out = np.where(rng.integers(0, 4, NOUT) == 0, rng.integers(0, 500, NOUT),
                   rng.integers(0, NFEAT, NOUT)).astype(np.int64)
    vals = rng.integers(-3, 4, NOUT).astype(np.float64)     # small integers: exact sums
    inn = np.where(rng.integers(0, 3, NIN) == 0, rng.integers(0, 500, NIN),
                   rng.integers(0, NFEAT, NIN)).astype(np.int64)
    return out, vals, inn


def dense_data(nd: int, it: int) -> np.ndarray:
    return ((nd + 1) * ((np.arange(NDENSE) + it) % 5)).astype(np.float64)


def maybe_die(call: str, it: int) -> None:
    """When an event names this rank, call and iteration: SIGKILL from a thread, mid-call."""
    if (rank, call, it) not in events:
        return
    chk.info(f"victim: dies {KILL_AFTER_S * 1e6:.0f} us into {call} of iteration {it}")
    t = threading.Timer(KILL_AFTER_S, os.kill, (os.getpid(), signal.SIGKILL))
    t.daemon = True
    t.start()


def after_call(call: str, it: int) -> None:
    """A victim whose call returned before the kill landed waits for it here."""
    if (rank, call, it) in events:
        chk.info(f"victim: {call} returned before the kill landed")
        time.sleep(10)
        chk.ok(False, "victim: still alive 10 s after its SIGKILL")


for it in range(iters):
    # The reference: every node's data, each node once, summed without the library.
    datas = [node_data(nd, it) for nd in range(m)]
    acc = np.zeros(NFEAT)
    imax = np.full(NFEAT, np.iinfo(np.int64).min, dtype=np.int64)
    for nd, (o, v, _) in enumerate(datas):
        np.add.at(acc, o, v)
        np.maximum.at(imax, o, v.astype(np.int64) * 1000 + nd)
    out, vals, inn = datas[node]
    ivals = vals.astype(np.int64) * 1000 + node

    maybe_die("config", it)
    plan = comm.config(out, inn)
    after_call("config", it)
    cols = np.arange(1, WIDTH + 1, dtype=np.float64)   # column c holds value * (c+1): exact
    maybe_die("reduce", it)
    got = plan.reduce(vals[:, None] * cols)
    after_call("reduce", it)
    chk.equal(got, acc[inn][:, None] * cols, f"reduce of iteration {it}")
    plan.close()

    maybe_die("dense", it)
    got = comm.allreduce(dense_data(node, it))
    after_call("dense", it)
    chk.equal(got, sum(dense_data(nd, it) for nd in range(m)), f"allreduce of iteration {it}")

    maybe_die("cfgred", it)
    got = comm.config_reduce(out, ivals, inn, op="max")
    after_call("cfgred", it)
    chk.equal(got, imax[inn], f"config_reduce of iteration {it}")

# Every survivor's transport has seen every victim go (their connections closed); the list
# only grows, so wait for it a bounded while rather than assume the timing.
deadline = time.monotonic() + 10
fr = comm.failed_ranks()
while fr != dead and time.monotonic() < deadline:
    time.sleep(0.05)
    fr = comm.failed_ranks()
chk.ok(fr == dead, f"failed_ranks() = {fr}, want {dead}")

rep = comm.stats()["replication"]
chk.ok(rep is not None and (rep["replicas"], rep["nodes"], rep["node"]) == (s, m, node),
       f"stats replication: replicas {rep and rep['replicas']} nodes {rep and rep['nodes']} "
       f"node {rep and rep['node']}")
chk.ok(sorted(rep["failed_ranks"]) == dead, f"stats failed_ranks {rep['failed_ranks']}")

# No rank finalizes before every survivor is done. A finalized rank counts as failed for the
# others (the exact checks above would see it), and a replica that lags behind (the others
# never wait for its copies, only for room in its socket buffers; on 2 cores one often lags)
# may still be reading the finished ranks' last messages when they close, which the library
# does not yet survive (the lagging rank's call can fail with PeerError). Collectives cannot
# be this barrier: with replication they wait for one replica of each node, not for every
# replica. So the survivors meet on files in the job's working directory.
survivors = [r for r in range(size) if r not in dead]
open(f"done.{rank}", "w").close()
deadline = time.monotonic() + 60
while not all(os.path.exists(f"done.{r}") for r in survivors) and time.monotonic() < deadline:
    time.sleep(0.02)
chk.ok(all(os.path.exists(f"done.{r}") for r in survivors), "every survivor reached the end")

# Before the kills every message came twice, once from each replica of its node: one copy won,
# the other was dropped and its bytes counted. A lagging replica's copies may all come after
# this rank's calls, so they are counted once every survivor is done (bounded wait).
deadline = time.monotonic() + 10
rep = comm.stats()["replication"]
while rep["copies_lost"] == 0 and time.monotonic() < deadline:
    time.sleep(0.05)
    rep = comm.stats()["replication"]
chk.ok(rep["copies_won"] > 0 and rep["copies_lost"] > 0 and rep["duplicate_bytes"] > 0,
       f"copies won {rep['copies_won']}, lost {rep['copies_lost']}, "
       f"duplicate bytes {rep['duplicate_bytes']}")
peers = {p["rank"]: p for p in rep["peers"]}
chk.ok(all(r % m != node for r in peers) and
       sum(p["copies_won"] for p in peers.values()) == rep["copies_won"] and
       sum(p["copies_lost"] for p in peers.values()) == rep["copies_lost"],
       f"per-peer copies come from the other nodes' replicas and add up: {sorted(peers)}")
comm.close()
chk.finish()
