"""fork() guard: a child fork()ed from a process that used the library gets StateError telling
it to use spawn/forkserver (never a hang); a spawn child works. Runs as one process (size=1).
Usage: worker_fork.py"""

import multiprocessing as mp
import os
import sys

import numpy as np

import kylix
from _kyutil import Checker


def forked_child(q, parent_comm):
    out = []
    try:
        kylix.init(rank=0, size=1)
        out.append(("init", "no error"))
    except kylix.KylixError as e:
        out.append(("init", f"{type(e).__name__}|{e}"))
    try:
        parent_comm.barrier()
        out.append(("parent comm", "no error"))
    except kylix.KylixError as e:
        out.append(("parent comm", f"{type(e).__name__}|{e}"))
    q.put(out)


def spawned_child(q):
    try:
        with kylix.init(rank=0, size=1) as c:
            q.put(("ok", float(c.allreduce(np.array([2.5]))[0]), c.size))
    except BaseException as e:  # noqa: BLE001
        q.put(("error", repr(e), 0))


def main():
    chk = Checker("fork", 0)
    comm = kylix.init(rank=0, size=1)
    plan = comm.config([1, 2, 3], [3])
    chk.equal(plan.reduce(np.array([1.0, 2.0, 3.0])), np.array([3.0]), "parent works before fork")

    for method in ("fork", "spawn", "forkserver"):
        ctx = mp.get_context(method)
        q = ctx.Queue()
        if method == "fork":
            p = ctx.Process(target=forked_child, args=(q, comm))
        else:
            p = ctx.Process(target=spawned_child, args=(q,))
        p.start()
        try:
            res = q.get(timeout=60)
        except Exception as e:  # noqa: BLE001
            res = None
            chk.ok(False, f"{method} child did not answer within 60 s: {e!r}")
        p.join(30)
        if p.is_alive():
            p.kill()
            chk.ok(False, f"{method} child hangs")
        if res is None:
            continue
        if method == "fork":
            for what, text in res:
                cls, _, msg = text.partition("|")
                chk.ok(cls == "StateError" and "spawn" in msg and "forkserver" in msg,
                       f"fork child, {what}: {text}")
        else:
            chk.ok(res[0] == "ok" and res[1] == 2.5 and res[2] == 1,
                   f"{method} child: {res}")
        chk.ok(p.exitcode == 0, f"{method} child exit code {p.exitcode}")

    chk.equal(plan.reduce(np.array([1.0, 2.0, 3.0])), np.array([3.0]), "parent works after")
    comm.close()
    chk.finish()


if __name__ == "__main__":
    main()
