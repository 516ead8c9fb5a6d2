"""Helpers for the newcomer-path tests: bounded subprocesses, a newcomer's environment, and the
README example's answer.

Every command runs in its own process group with a deadline; past it the whole group (which
this harness started) is killed and the test fails with the output so far.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Union

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD = Path(os.environ.get("KYLIX_BUILD") or REPO / "build").resolve()
VENV_BIN = str(Path(sys.executable).parent)


def run(cmd: Union[str, Sequence[str]], *, timeout: float, cwd: Optional[Path] = None,
        env: Optional[Mapping[str, str]] = None) -> subprocess.CompletedProcess:
    """Run cmd (a list, or a bash script as a string), stdout and stderr together, bounded."""
    args = ["bash", "-eo", "pipefail", "-c", cmd] if isinstance(cmd, str) else list(cmd)
    p = subprocess.Popen(args, cwd=cwd, env=dict(env) if env is not None else None,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        raise AssertionError(f"timed out after {timeout:.0f} s: {cmd}\n{out[-6000:]}") from None
    return subprocess.CompletedProcess(args, p.returncode, out, None)


def newcomer_env(**extra: str) -> Dict[str, str]:
    """This environment as a user's shell would have it: no KYLIX_* variables, no virtualenv of
    the test harness on PATH, no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KYLIX_") and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and p != VENV_BIN)
    env.update(extra)
    return env


def example_answer(ranks: int) -> Dict[int, float]:
    """The README example: rank r contributes 1 at index r, 2 at 100 and 0.5 at 7, and asks for
    100, 0, 7 and 12345 (which nobody contributes)."""
    total: Dict[int, float] = defaultdict(float)
    for r in range(ranks):
        for idx, val in ((r, 1.0), (100, 2.0), (7, 0.5)):
            total[idx] += val
    return {i: total[i] for i in (100, 0, 7, 12345)}


# "rank r: [i]=v ..." lines, tagged by kylixrun ("[r] ") or Open MPI ("[1,r]<stdout>:"), or not.
LINE = re.compile(r"^(?:\[(?:\d+,)?(\d+)\](?:<stdout>:)? ?)?rank (\d+): (.*)$", re.M)
PAIR = re.compile(r"\[(\d+)\]=([-+0-9.eE]+)")


def untangled(out: str) -> str:
    """out without Maven's colour codes, and with Open MPI's tagged writes put back on lines of
    their own: Open MPI tags every write of a rank, so a line may hold its tag again after the
    first, and a rank's write may land before another rank's newline. A tag followed by another
    "rank r:" starts a line of its own, any other tag inside a line goes."""
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)
    out = re.sub(r"(?<=.)(\[\d+,\d+\]<stdout>:)(?=rank \d+:)", r"\n\1", out)
    return re.sub(r"(?<=.)\[\d+,\d+\]<stdout>:", "", out)


def example_errors(out: str, ranks: int = 4, allreduce: bool = False) -> List[str]:
    """What is wrong with the --tag-output lines of the README example; [] when nothing."""
    want = example_answer(ranks)
    lines = LINE.findall(untangled(out))
    errs = []
    if sorted(int(r) for _, r, _ in lines) != list(range(ranks)):
        return [f"want one 'rank r:' line from each of {ranks} ranks, got {len(lines)}"]
    for tag, rank, rest in lines:
        if tag and tag != rank:
            errs.append(f"line tagged [{tag}] says rank {rank}")
        got = {int(i): float(v) for i, v in PAIR.findall(rest)}
        if got != want:
            errs.append(f"rank {rank}: got {got}, want {want}")
        if allreduce:
            m = re.search(r"allreduce=([-0-9.,e]+)", rest)
            sums = [float(v) for v in m.group(1).split(",")] if m else None
            if sums != [float(ranks * i) for i in range(4)]:
                errs.append(f"rank {rank}: allreduce {sums}, want {[ranks * i for i in range(4)]}")
    return errs
