#!/usr/bin/env python3
"""PageRank with Kylix sparse allreduce, from Python (the paper's §I-A; examples/c/pagerank.c).

    kylixrun -n 4 -- python3 pagerank.py [GRAPH] [--iters 20] [--out FILE]

GRAPH is a text edge list ("src dst" per line, ids 0..n-1, '#' comments, n=NUM in a comment
declares n; a name ending in .gz is decompressed); default: the bundled power-law graph.

Same partitioning and formula as pagerank.c: edge number e goes to rank
mix64(e + EDGE_SEED) % size; rank i holds X_i (X[dst, src] = 1/outdeg(src), out-degrees over
all edges), in_i = distinct src of its edges, out_i = distinct dst; one config, then per
iteration u_i = X_i v_i (scipy.sparse SpMV) and a SUM reduce gives (X v) over in_i.

    v_0[j]     = 1/n
    D_t        = sum of v_t[j] over dangling j (outdeg(j) = 0)
    v_{t+1}[j] = (1-d)/n + d * ((X v_t)[j] + D_t/n),      d = 0.85

D_t is a scalar every rank updates identically, from S_t (the sum of X v_t over the dangling
rows), which travels in the same reduce as index n, a virtual slot every rank contributes to
and asks for. The last iteration uses a second plan in which rank 0 asks for every vertex, so
rank 0 ends with all scores: it prints the top 10 and, with --out, writes "vertex score" lines.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

import kylix

DAMPING = 0.85
EDGE_SEED = np.uint64(0x9E3779B97F4A7C15)
DEFAULT_GRAPH = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples", "data",
    "powerlaw_graph.el.gz"))


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, on uint64 arrays (wrapping arithmetic, as in C)."""
    x = x.copy()
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def read_edges(path: str):
    """(src, dst, n) of a text edge list; every rank reads the whole file."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    declared = -1
    if b"#" in data:
        keep = []
        for line in data.split(b"\n"):
            s = line.lstrip()
            if s.startswith(b"#"):
                m = re.search(rb"\sn=(\d+)", s)
                if m and declared < 0:
                    declared = int(m.group(1))
            else:
                keep.append(line)
        data = b"\n".join(keep)
    try:
        with warnings.catch_warnings():
            # numpy warns (DeprecationWarning) when it stops before the end of the text
            warnings.simplefilter("error", DeprecationWarning)
            flat = np.fromstring(data, dtype=np.int64, sep=" ")   # text mode: fast
    except (DeprecationWarning, ValueError):
        try:
            flat = np.array(data.split(), dtype=np.int64)       # slow, strict
        except ValueError as e:
            raise SystemExit(f"{path}: not a list of integer 'src dst' pairs: {e}")
    if flat.size % 2:
        raise SystemExit(f"{path}: odd number of ids")
    src, dst = flat[0::2].copy(), flat[1::2].copy()
    if src.size == 0:
        raise SystemExit(f"{path}: no edges")
    if min(src.min(), dst.min()) < 0:
        raise SystemExit(f"{path}: negative vertex id")
    n = max(declared, int(max(src.max(), dst.max())) + 1)
    return src, dst, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("graph", nargs="?", default=DEFAULT_GRAPH)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", help="write 'vertex score' lines for every vertex (rank 0)")
    args = ap.parse_args()
    if args.iters < 1:
        ap.error("--iters must be >= 1")

    with kylix.init() as comm:
        rank, size = comm.rank, comm.size
        t0 = time.perf_counter()
        src, dst, n = read_edges(args.graph)
        m = src.size
        outdeg = np.bincount(src, minlength=n)
        owner = mix64(np.arange(m, dtype=np.uint64) + EDGE_SEED) % np.uint64(size)
        mine = owner == np.uint64(rank)
        src_l, dst_l = src[mine], dst[mine]
        del src, dst, owner, mine
        t_read = time.perf_counter() - t0

        dangling = outdeg == 0
        k = int(dangling.sum())
        cols = np.unique(src_l)                     # in set: non-zero columns of X_i
        rows = np.unique(dst_l)                     # out set: non-zero rows of X_i
        nsrc, ndst = cols.size, rows.size
        in_idx = np.append(cols, n)                 # + the slot n (sum over dangling rows)
        out_idx = np.append(rows, n)
        X = sp.csr_matrix((1.0 / outdeg[src_l],
                           (np.searchsorted(rows, dst_l), np.searchsorted(cols, src_l))),
                          shape=(ndst, nsrc))
        row_dangling = dangling[rows]

        sizes = np.array([src_l.size, in_idx.size, out_idx.size], dtype=np.int64)
        mx = comm.allreduce(sizes, op="max")
        tot = comm.allreduce(sizes, op="sum")
        if tot[0] != m:
            raise SystemExit(f"edge shares add up to {tot[0]}, the file has {m}")
        if rank == 0:
            print(f"pagerank.py: {args.graph} n={n} edges={m} dangling={k} ranks={size} "
                  f"iters={args.iters} damping={DAMPING:.2f} (read {t_read * 1e3:.0f} ms)")
            print(f"per rank: edges max {mx[0]} avg {tot[0] / size:.0f}; in (columns) max "
                  f"{mx[1]} avg {tot[1] / size:.0f}; out (rows) max {mx[2]} avg "
                  f"{tot[2] / size:.0f}")

        tc = time.perf_counter()
        plan = comm.config(out_idx, in_idx)
        t_config = time.perf_counter() - tc
        tc = time.perf_counter()
        gather = comm.config(out_idx, np.arange(n + 1) if rank == 0 else np.empty(0, np.int64))
        t_config2 = time.perf_counter() - tc
        if rank == 0:
            print(f"config: iteration plan {t_config * 1e3:.3f} ms, final gather plan "
                  f"{t_config2 * 1e3:.3f} ms")

        inv_n = 1.0 / n
        v = np.full(nsrc, inv_n)
        D = k * inv_n
        u = np.empty(ndst + 1)
        y = np.empty(nsrc + 1)
        reduce_times = []
        for it in range(1, args.iters + 1):
            last = it == args.iters
            ts = time.perf_counter()
            u[:ndst] = X @ v
            u[ndst] = u[:ndst][row_dangling].sum()
            tr = time.perf_counter()
            y = gather.reduce(u) if last else plan.reduce(u, out=y)
            te = time.perf_counter()
            base = (1 - DAMPING) * inv_n + DAMPING * D * inv_n
            if not last:
                reduce_times.append(te - tr)
                v = base + DAMPING * y[:nsrc]
                S = y[nsrc]
                D = k * (1 - DAMPING) * inv_n + DAMPING * S + DAMPING * k * D * inv_n
            elif rank == 0:
                scores = base + DAMPING * y[:n]
            if rank == 0:
                print(f"iter {it:2d}: spmv {(tr - ts) * 1e3:.3f} ms, reduce {(te - tr) * 1e3:.3f} ms"
                      + (" (final gather plan)" if last else ""))
        if rank == 0 and reduce_times:
            print(f"reduce (iteration plan, rank 0): mean {np.mean(reduce_times) * 1e3:.3f} ms, "
                  f"max {np.max(reduce_times) * 1e3:.3f} ms over {len(reduce_times)} iterations")

        if rank == 0:
            top = np.lexsort((np.arange(n), -scores))[:10]   # highest first, ties: smaller id
            print("top10: " + " ".join(str(j) for j in top))
            for i, j in enumerate(top):
                print(f"{i + 1:3d}. vertex {j} score {scores[j]:.12g}")
            print(f"sum of scores: {scores.sum():.15f}")
            if args.out:
                with open(args.out, "w") as f:
                    f.write(f"# pagerank n={n} iters={args.iters} damping={DAMPING:g}\n")
                    f.write("".join(f"{j} {s!r}\n" for j, s in enumerate(scores.tolist())))
                print(f"scores written to {args.out}")
            sys.stdout.flush()
        plan.close()
        gather.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
