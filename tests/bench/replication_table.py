"""replication_table.py LOG - the markdown tables of run_replication.sh from its log.

The log holds the lines of tests/bench/replication.c, tagged by run_replication.sh:
  TS case=C density=D rep=R rank=K node=J phase=config|reduce t=T0,T1,...,TK
  CHECK case=C density=D rep=R rank=K bad=B checked=0|1 keys=N
  LOAD <when> <1, 5, 15 min load averages>
  PARAM <key>=<value>...
An iteration of a job is done when every node has one replica done: the min over a node's
replicas, the max over nodes, of the time its call i returned (replication.c says why).
"""

import statistics as st
import sys
from collections import defaultdict

COST_CASES = ["s1-8", "s1-4", "s2-dead0", "s2-dead1", "s2-dead2", "s2-dead3"]


def parse(path):
    ts = defaultdict(dict)   # (case, density, rep, phase) -> {rank: (node, [t0..tK])}
    bad, checked = defaultdict(int), defaultdict(int)
    loads, params = [], {}
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == "LOAD":
            loads.append(f"{f[1]}: {' '.join(f[2:])}")
            continue
        kv = dict(x.split("=", 1) for x in f[1:])
        if f[0] == "PARAM":
            params.update(kv)
            continue
        key = (kv["case"], kv["density"], int(kv["rep"]))
        if f[0] == "TS":
            ts[key + (kv["phase"],)][int(kv["rank"])] = (
                int(kv["node"]), [float(x) for x in kv["t"].split(",")])
        elif f[0] == "CHECK":
            bad[key[:2]] += int(kv["bad"])
            checked[key[:2]] += int(kv["checked"])
    return ts, bad, checked, loads, params


def job_times(ranks):
    """One job's ms per iteration: the median over its iterations (robust to noise: the cost
    table), the mean over the whole loop (a stopped or slow rank loses time in stalls now and
    then: the racing tables), the longest iteration (a stall), and the mean until every
    replica, the slowest too, is done."""
    nodes = defaultdict(list)
    for node, t in ranks.values():
        nodes[node].append(t)
    k = min(len(t) for _, t in ranks.values())
    done = [max(min(t[i] for t in rs) for rs in nodes.values()) for i in range(k)]
    last = [max(t[i] for _, t in ranks.values()) for i in range(k)]
    steps = [done[i] - done[i - 1] for i in range(1, k)]
    return {"median": st.median(steps) * 1e3, "max": max(steps) * 1e3,
            "mean": (done[k - 1] - done[0]) / (k - 1) * 1e3,
            "all": (last[k - 1] - done[0]) / (k - 1) * 1e3}


def fmt(v):
    return "-" if v is None else (f"{v:.0f}" if v >= 100 else f"{v:.1f}")


class Cells:
    def __init__(self, ts):
        self.v = defaultdict(list)   # (case, density, phase, stat) -> per-job values
        for (case, d, _, phase), ranks in ts.items():
            for stat, x in job_times(ranks).items():
                self.v[(case, d, phase, stat)].append(x)

    def med(self, case, d, phase, stat):
        v = self.v.get((case, d, phase, stat))
        return st.median(v) if v else None

    def show(self, case, d, phase, stat):
        """median over reps (min–max over reps)"""
        v = self.v.get((case, d, phase, stat))
        if not v:
            return "-"
        if len(v) == 1:
            return fmt(v[0])
        return f"{fmt(st.median(v))} ({fmt(min(v))}–{fmt(max(v))})"

    def ratio(self, a, b, d, phase, stat):
        x, y = self.med(a, d, phase, stat), self.med(b, d, phase, stat)
        return "-" if x is None or not y else f"{x / y:.2f}"

    def lost(self, fast, slow, d, phase):
        u, s = self.med(fast, d, phase, "mean"), self.med(slow, d, phase, "mean")
        return "-" if u is None or s is None else f"{fmt(s - u)} ({(s - u) / u:+.0%})"


def racing_table(c, densities, fast1, slow1, fast2, slow2, title):
    print(title + "\n")
    print("| density | phase | s=1 | s=1 slowed | s=1 lost | s=2 | s=2 slowed | s=2 lost | "
          "s=2 slowed, until every replica is done | longest iteration: s=1, slowed; "
          "s=2, slowed |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d in densities:
        for ph in ("config", "reduce"):
            if c.med(slow1, d, ph, "mean") is None and c.med(slow2, d, ph, "mean") is None:
                continue
            print(f"| {d} | {ph} | {c.show(fast1, d, ph, 'mean')} | "
                  f"{c.show(slow1, d, ph, 'mean')} | {c.lost(fast1, slow1, d, ph)} | "
                  f"{c.show(fast2, d, ph, 'mean')} | {c.show(slow2, d, ph, 'mean')} | "
                  f"{c.lost(fast2, slow2, d, ph)} | {c.show(slow2, d, ph, 'all')} | "
                  + ", ".join(fmt(c.med(k, d, ph, "max")) for k in (fast1, slow1)) + "; "
                  + ", ".join(fmt(c.med(k, d, ph, "max")) for k in (fast2, slow2)) + " |")
    print()


def main():
    ts, bad, checked, loads, p = parse(sys.argv[1])
    c = Cells(ts)
    reps = p.get("reps", "?")
    densities = sorted({d for (_, d, _, _) in c.v}, key=float)
    print(f"Cost of replication (ms per iteration: median over the iterations of a job; median "
          f"over {reps} reps, range over reps in parentheses):\n")
    print("| density | phase | s=1, 8 ranks (8 nodes) | s=1, 4 ranks (4 nodes) | "
          "s=2, 4 nodes × 2, 0 dead | 1 dead | 2 dead | 3 dead | s=2 / s=1 on 4 nodes | "
          "s=2 / s=1 on 8 ranks | check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for d in densities:
        ok = all(bad[(k, d)] == 0 and checked[(k, d)] for k in COST_CASES)
        for ph in ("config", "reduce"):
            print(f"| {d} | {ph} | " + " | ".join(c.show(k, d, ph, "median") for k in COST_CASES)
                  + f" | {c.ratio('s2-dead0', 's1-4', d, ph, 'median')}"
                  f" | {c.ratio('s2-dead0', 's1-8', d, ph, 'median')} | {'OK' if ok else 'FAIL'} |")
    print()
    racing_table(c, densities, "s1-4", "s1-stop", "s2-dead0", "s2-stop",
                 f"Packet racing, a stopped rank: rank 1 stopped (SIGSTOP) for {p.get('stop_ms')} "
                 f"ms of every {p.get('period_ms')} ms (ms per iteration: mean over a loop of "
                 "many; lost = stopped − not, and its share; median over reps, range in "
                 "parentheses):")
    racing_table(c, densities, "s1-4", "s1-stall", "s2-dead0", "s2-stall",
                 f"Packet racing, a stalled rank: rank 1 stopped for {p.get('stall_ms')} ms of "
                 f"every {p.get('stall_period_ms')} ms (as above):")
    racing_table(c, densities, "link-s1", "link-s1-slow", "link-s2", "link-s2-slow",
                 f"Packet racing, a slow link: rank 1 in a network namespace behind a veth pair; "
                 f"the columns without 'slowed' run it unshaped, the others with a token bucket "
                 f"of {p.get('link_rate')} each way (ms per iteration: mean over a loop of many; "
                 "median over reps, range in parentheses):")
    bads = {k: v for k, v in bad.items() if v}
    print("Result checks (first rep, brute force over the node data): "
          + ("all OK" if not bads else f"MISMATCHES {bads}"))
    print("Load average (1, 5, 15 min): " + "; ".join(loads))


if __name__ == "__main__":
    main()
