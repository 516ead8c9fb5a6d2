"""The job the engine tests run on every rank (tests/engines): data, the Kylix calls, and the
single-process answer they are checked against.

Each rank's data is a function of (rank, size) only, so the checker regenerates every rank's
contribution and computes the answer with plain numpy, without the library. Values are small
integers in float64, so any order of summation gives the same bits and the comparison is exact.
"""

from __future__ import annotations

from typing import Dict, List

import numpy as np

FEATURES = 50_000
DENSE = 10_000


def data(rank: int) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(1000 + rank)
    out_idx = rng.integers(0, FEATURES, 3000)                    # repeats included
    out_idx[:3] = [rank, FEATURES + rank, 7]                     # this rank's own, and a shared one
    return {
        "out_idx": out_idx,
        "out_vals": rng.integers(-50, 50, out_idx.size).astype(np.float64),
        "in_idx": np.concatenate([rng.integers(0, FEATURES, 2000), [7, 2 * FEATURES]]),
        "dense": rng.integers(-1000, 1000, DENSE).astype(np.float64),
    }


def run(comm) -> Dict[str, List[float]]:
    """What every rank computes with Kylix: config + reduce (twice, one plan), dense allreduce."""
    d = data(comm.rank)
    plan = comm.config(out_idx=d["out_idx"], in_idx=d["in_idx"])
    first = plan.reduce(d["out_vals"], op="sum")
    again = plan.reduce(d["out_vals"] * 2, op="sum")
    plan.close()
    dense = comm.allreduce(d["dense"], op="sum")
    return {"rank": comm.rank, "size": comm.size, "reduce": first.tolist(),
            "reduce2": again.tolist(), "allreduce": dense.tolist()}


def expected(rank: int, size: int) -> Dict[str, List[float]]:
    """The single-process answer for rank, from every rank's regenerated data."""
    total = np.zeros(2 * FEATURES + 1)
    dense = np.zeros(DENSE)
    for r in range(size):
        d = data(r)
        np.add.at(total, d["out_idx"], d["out_vals"])
        dense += d["dense"]
    want = total[data(rank)["in_idx"]]
    return {"rank": rank, "size": size, "reduce": want.tolist(), "reduce2": (want * 2).tolist(),
            "allreduce": dense.tolist()}


def check(results: List[Dict[str, List[float]]], size: int) -> List[str]:
    """Differences between what the ranks got and the single-process answer; [] when none."""
    errs = []
    got = sorted(results, key=lambda r: r["rank"])
    if [r["rank"] for r in got] != list(range(size)):
        return [f"ranks reported: {[r['rank'] for r in got]}, want 0..{size - 1}"]
    for g in got:
        want = expected(g["rank"], size)
        for k in ("size", "reduce", "reduce2", "allreduce"):
            if g[k] != want[k]:
                errs.append(f"rank {g['rank']}: {k} differs from the single-process answer")
    return errs
