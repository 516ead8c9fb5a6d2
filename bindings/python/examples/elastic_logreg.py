#!/usr/bin/env python3
"""Batch gradient descent (logistic regression) with elastic membership, from Python: seed 004's
ramp-up and failure-ignorance modes (Zhang and Qiu, "Efficient, Fault-tolerant and Elastic
Allreduce Framework For Iterative Algorithms" §5-6). The Python twin of
examples/c/elastic_logreg.c: the same data, options and membership log, so either one's
--check can recompute the other's log.

    kylixrun -n 2 --elastic --job-file job.json -- python3 elastic_logreg.py --log m.log
    kylixrun --join job.json -n 2 -- python3 elastic_logreg.py         (ramp-up: 2 more)
    kylixrun -n 3 --elastic --restarts 1 -- python3 elastic_logreg.py --die-at 5:1 --ramp 12:3
    python3 elastic_logreg.py --check m.log                              (the reference)

Partition p holds --examples examples of --features dense features in [-1, 1), a function of
(seed, p) only (splitmix64, as in the C examples); labels come from sigmoid(w_true . x). Rank r
of a comm of k ranks owns partitions r*Q .. r*Q+Q-1 (Q = --parts): the data grows with the
job, and a dead rank's data is left out. Each iteration one allreduce (op "rsum": the same bits
whatever the membership) sums the ranks' gradients, losses and counts, and every rank takes
the same step. A PeerError is followed by comm.resize() and the iteration is done again; after
a resize that admitted joiners (comm.members() has -1), rank 0 bcasts the iteration and w.

The log has one line per membership and per iteration:
    H features=16 parts=2 examples=200 seed=1 lr=0.5
    M <iter> <size> <prev rank of each rank, -1 for a joiner>
    I <iter> <size> <train loss> <loss on the first 8*Q partitions> <gradient...>
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import numpy as np

GOLD = np.uint64(0x9E3779B97F4A7C15)
WEIGHT_SALT = 0xE1A5
EVAL_RANKS = 8


def mix64(x):
    """splitmix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    x = np.asarray(x, dtype=np.uint64)
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def unif(v):
    return (v >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def partition(o, p):
    """The examples of partition p: x (E, F) and labels y (E,)."""
    with np.errstate(over="ignore"):
        s0 = mix64(np.uint64(o.seed) * GOLD + mix64(np.uint64(p + 77)))
        k = np.arange(1, o.examples * (o.features + 1) + 1, dtype=np.uint64)
        u = unif(mix64(s0 + k * GOLD)).reshape(o.examples, o.features + 1)
        wt = (unif(mix64(np.arange(o.features, dtype=np.uint64) ^ np.uint64(WEIGHT_SALT))) - 0.5) * 6.0
    x = 2 * u[:, :-1] - 1
    zt = np.zeros(o.examples)
    for j in range(o.features):          # in the C example's order
        zt += wt[j] * x[:, j]
    y = (u[:, -1] < 1 / (1 + np.exp(-zt))).astype(np.float64)
    return x, y


def sums(o, first, last, w):
    """[gradient sums (F), loss sum, count] over partitions first..last-1."""
    acc = np.zeros(o.features + 2)
    for p in range(first, last):
        x, y = partition(o, p)
        z = x @ w
        acc[:-2] += x.T @ (1 / (1 + np.exp(-z)) - y)
        acc[-2] += np.logaddexp(0, np.where(y > 0, -z, z)).sum()
        acc[-1] += len(y)
    return acc


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in [("iters", 40), ("features", 16), ("parts", 2), ("examples", 200),
                          ("seed", 1), ("resize-every", 5), ("sleep-ms", 0)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--ramp", default="", help="I:N,...: at iteration I resize with min_size N")
    ap.add_argument("--die-at", default="", help="I:R: rank R of the first comm dies at I")
    ap.add_argument("--log")
    ap.add_argument("--check")
    o = ap.parse_args(argv)
    o.ramp = dict(tuple(map(int, t.split(":"))) for t in o.ramp.split(",") if t)
    o.die = tuple(map(int, o.die_at.split(":"))) if o.die_at else (-1, -1)
    return o


def check(o):
    """The reference: every iteration of the log recomputed in this process."""
    lines = open(o.check).read().split("\n")
    head = dict(kv.split("=") for kv in lines[0].split()[1:])
    o.features, o.parts, o.examples, o.seed = (int(head[k]) for k in
                                               ("features", "parts", "examples", "seed"))
    o.lr = float(head["lr"])
    w, n, worst = np.zeros(o.features), 0, 0.0
    for line in lines[1:]:
        f = line.split()
        if not f or f[0] != "I":
            continue
        it, size, loss = int(f[1]), int(f[2]), float(f[3])
        grad = np.array(f[5:], dtype=np.float64)
        if it != n:
            sys.exit(f"check: iteration {it} where {n} was due")
        acc = sums(o, 0, size * o.parts, w)
        ref = acc[:-2] / acc[-1]
        err = np.max(np.abs(ref - grad)) / max(1.0, np.max(np.abs(ref)))
        worst = max(worst, err)
        if err > 1e-9 or abs(acc[-2] / acc[-1] - loss) > 1e-9 * max(1.0, loss):
            sys.exit(f"check: iteration {it} (size {size}): gradient off by {err:.3g}")
        w -= o.lr * ref
        n += 1
    print(f"check: ok: {n} iterations, gradients within {worst:.3g} of the reference")
    return 0 if n else 1


class Member:
    """This process's current comm, and the log it writes while it is rank 0."""

    def __init__(self, o):
        self.o, self.comm, self.log, self.gen, self.changed_at = o, None, None, 0, -1

    def adopt(self, new, it, w):
        """Switch to new; joiners (members() has -1) get the iteration and w from rank 0."""
        old, self.comm = self.comm, new
        prev = new.members()
        if -1 in prev:
            state = np.concatenate(([float(it)], w))
            new.bcast(state, root=0)
            it, w[:] = int(state[0]), state[1:]
        if old is not None:
            old.close()
        self.gen, self.changed_at = self.gen + 1, it
        if new.rank == 0 and self.o.log:
            if self.log is None:
                self.log = open(self.o.log, "a")
                if self.log.tell() == 0:
                    o = self.o
                    self.log.write(f"H features={o.features} parts={o.parts} examples={o.examples} "
                                   f"seed={o.seed} lr={o.lr!r}\n")
            self.log.write(f"M {it} {new.size} " + " ".join(map(str, prev)) + "\n")
            self.log.flush()
        return it

    def resize(self, min_size, it, w):
        import kylix
        for attempt in range(5):
            try:
                return self.adopt(self.comm.resize(min_size), it, w)
            except kylix.PeerError as e:     # the comm stays resizable by the live members
                if attempt == 4:
                    raise
                print(f"elastic_logreg[{self.comm.rank}]: resize: {e}", file=sys.stderr)

    def log_iteration(self, it, acc, w):
        if self.comm.rank != 0 or self.log is None:
            return
        ev = sums(self.o, 0, EVAL_RANKS * self.o.parts, w)
        g = " ".join(repr(float(v)) for v in acc[:-2] / acc[-1])
        loss, evl = float(acc[-2] / acc[-1]), float(ev[-2] / ev[-1])
        self.log.write(f"I {it} {self.comm.size} {loss!r} {evl!r} {g}\n")
        self.log.flush()


def train(o):
    import kylix
    joined = "KYLIX_JOIN" in os.environ
    m, w = Member(o), np.zeros(o.features)
    it = m.adopt(kylix.init(), 0, w)     # a joiner's init returns once a resize admitted it
    if m.comm.rank == 0:
        print(f"elastic_logreg: {'joined' if joined else 'started'} at iteration {it} "
              f"on {m.comm.size} ranks", flush=True)
    while it < o.iters:
        due = o.ramp.get(it, 0 if o.resize_every and it and it % o.resize_every == 0 else -1)
        if due >= 0 and m.changed_at != it:
            it = m.resize(due, it, w)
        c = m.comm
        if not joined and m.gen == 1 and (it, c.rank) == o.die:
            os.kill(os.getpid(), signal.SIGKILL)
        acc = sums(o, c.rank * o.parts, (c.rank + 1) * o.parts, w)
        try:
            acc = c.allreduce(acc, op="rsum")
        except (kylix.PeerError, kylix.TimeoutError) as e:
            print(f"elastic_logreg[{c.rank}]: iteration {it}: {e}; resizing", file=sys.stderr)
            it = m.resize(0, it, w)
            continue                     # the same iteration again, on the survivors' data
        m.log_iteration(it, acc, w)
        w -= o.lr * acc[:-2] / acc[-1]
        if c.rank == 0 and (it % 10 == 0 or it + 1 == o.iters):
            print(f"iteration {it}: {c.size} ranks, loss {acc[-2] / acc[-1]:.6f}", flush=True)
        it += 1
        time.sleep(o.sleep_ms / 1000)
    m.comm.close()
    return 0


if __name__ == "__main__":
    opts = parse(sys.argv[1:])
    sys.exit(check(opts) if opts.check else train(opts))
