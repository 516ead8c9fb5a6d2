#!/usr/bin/env python3
"""The tables and the chart of results-elastic.md (run_resize.sh calls it; stdlib only).

    elastic_report.py table LINES          markdown table of kylix_resize.c's case= lines
    elastic_report.py svg RAMP_LOG NORMAL_LOG > rampup-loss.svg
        seed 004's Fig. 15 for elastic_logreg: the loss on the first 8*Q partitions after each
        iteration, ramp-up (ranks joining) against the normal execution (all ranks from the
        start), with the ramp-up job's size as a step line. Hand-written SVG 1.1, like
        `kylix plan --svg` (cmd/kylix/svg.go).
"""

import math
import re
import sys
from collections import defaultdict


def table(path):
    cases = defaultdict(dict)
    for line in open(path):
        m = dict(re.findall(r"(\w+)=(\S+)", line))
        if "case" in m:
            cases[int(m["ranks"])][m["case"]] = (float(m["median_ms"]), float(m["min_ms"]), float(m["max_ms"]))
    print("| ranks | fresh init | shrink | resize, 0 joiners | resize, 2 joiners | "
          "resize 0 / shrink | resize 0 / init | resize 2 / init |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sorted(cases):
        c = cases[n]
        cell = lambda k: f"{c[k][0]:.2f} ({c[k][1]:.2f}–{c[k][2]:.2f})" if k in c else "—"
        ratio = lambda a, b: f"{c[a][0] / c[b][0]:.2f}" if a in c and b in c else "—"
        print(f"| {n} | {cell('init')} | {cell('shrink')} | {cell('resize0')} | {cell('resize_join')} | "
              f"{ratio('resize0', 'shrink')} | {ratio('resize0', 'init')} | {ratio('resize_join', 'init')} |")


def read_log(path):
    """[(iteration, size, eval loss)] from an elastic_logreg membership log."""
    out = []
    for line in open(path):
        f = line.split()
        if f and f[0] == "I":
            out.append((int(f[1]), int(f[2]), float(f[4])))
    return out


def svg(ramp_path, normal_path):
    ramp, normal = read_log(ramp_path), read_log(normal_path)
    W, H, left, right, top, bot = 760, 440, 70, 70, 70, 56
    pw, ph = W - left - right, H - top - bot
    iters = max(p[0] for p in ramp + normal) + 1
    lo = min(p[2] for p in ramp + normal)
    hi = max(p[2] for p in ramp + normal)
    lo, hi = math.floor(lo * 20) / 20, math.ceil(hi * 20) / 20
    smax = max(p[1] for p in ramp + normal)
    x = lambda i: left + pw * i / max(1, iters - 1)
    y = lambda v: top + ph * (1 - (v - lo) / (hi - lo))
    ys = lambda s: top + ph * (1 - s / smax)
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         'font-family="Helvetica, Arial, sans-serif">', f'<rect width="{W}" height="{H}" fill="#ffffff"/>',
         f'<text x="{left}" y="26" font-size="17" font-weight="bold">Ramp-up mode: loss per iteration while ranks join</text>',
         f'<text x="{left}" y="45" font-size="12" fill="#444">elastic_logreg (batch gradient descent), loss on the '
         f'partitions of {8} ranks; seed 004, Fig. 15</text>']
    for k in range(6):
        v = lo + (hi - lo) * k / 5
        o.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{W - right}" y2="{y(v):.1f}" stroke="#e3e3e3"/>')
        o.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end" fill="#333">{v:.3f}</text>')
    for s in range(0, smax + 1, 2):
        o.append(f'<text x="{W - right + 6}" y="{ys(s) + 4:.1f}" font-size="11" fill="#b35806">{s}</text>')
    step = max(1, round(iters / 10 / 5) * 5)
    for i in range(0, iters, step):
        o.append(f'<text x="{x(i):.1f}" y="{top + ph + 16}" font-size="11" text-anchor="middle" fill="#333">{i}</text>')
    o.append(f'<text x="{left + pw / 2}" y="{H - 14}" font-size="12" text-anchor="middle" fill="#333">iteration</text>')
    o.append(f'<text transform="translate({left - 48} {top + ph / 2}) rotate(-90)" font-size="12" '
             'text-anchor="middle" fill="#333">loss</text>')
    o.append(f'<text transform="translate({W - right + 40} {top + ph / 2}) rotate(-90)" font-size="12" '
             'text-anchor="middle" fill="#b35806">ranks (ramp-up)</text>')
    o.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    steps = " ".join(f"{x(i):.1f},{ys(s):.1f} {x(i + 1) if i + 1 < iters else x(i):.1f},{ys(s):.1f}" for i, s, _ in ramp)
    o.append(f'<polyline points="{steps}" fill="none" stroke="#fdb863" stroke-width="1.5"/>')
    for pts, color, name, dy in ((normal, "#5b8fb3", f"normal execution ({normal[0][1]} ranks)", 0),
                                 (ramp, "#b2182b", "ramp-up (2, then +2 twice)", 16)):
        line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, _, v in pts)
        o.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2"/>')
        o.append(f'<line x1="{left + 320}" y1="{58 + dy - 4}" x2="{left + 344}" y2="{58 + dy - 4}" stroke="{color}" stroke-width="2"/>'
                 f'<text x="{left + 350}" y="{58 + dy}" font-size="12">{name}</text>')
    o.append("</svg>")
    print("\n".join(o))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "table":
        table(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "svg":
        svg(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
