"""The README examples, run exactly as printed.

For each example below, the test takes the program block of the document (C, Python or Java),
saves it under the name its commands use, and runs every `sh` block of the section, in order,
as one shell session, in a mirror of the repository (symlinks to every top-level entry) with a
newcomer's environment: no KYLIX_* variables, no virtualenv. The 4-rank job's --tag-output lines
must carry the example's answer on every rank, and every line of the `text` block the document
shows as the example's output must be a line of what it printed (the ranks' lines in any
order). The sections without a program (PRINTED) run the same way and must print their `text`
block's lines in order. Documentation that drifts from the code fails.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Tuple

import pytest

from conftest import REPO, example_errors, newcomer_env, run, untangled


@dataclass
class Example:
    doc: str                     # the document, relative to the repository
    heading: str                 # the section whose sh blocks are the commands
    lang: str                    # the program block's language
    filename: str                # the name the commands give the program
    program_from: str = ""       # the section holding the program, when not this one
    allreduce: bool = False      # the example also prints its dense allreduce
    home: bool = False           # the commands write under $HOME: give them a fresh one
    tagged: bool = True          # the ranks' lines come through a launcher: --tag-output
    expect: List[str] = field(default_factory=list)


EXAMPLES = [
    Example("README.md", "Install", "c", "prog.c", program_from="A C example", home=True),
    Example("README.md", "A C example", "c", "prog.c"),
    Example("README.md", "A Python example", "python", "prog.py", allreduce=True),
    Example("README.md", "A Java example", "java", "Prog.java"),
    Example("bindings/python/README.md", "Install and run", "python", "prog.py",
            expect=["(bundled with the package)"]),
    Example("bindings/java/README.md", "Quick start", "java", "Prog.java"),
    Example("README.md", "mpi4py", "python", "mpi_prog.py"),
    Example("README.md", "Spark barrier mode", "python", "spark_prog.py", tagged=False),
]

# Sections whose commands need no program of the reader's, and the output they show.
PRINTED = ["Reproducible sums (KYLIX_RSUM)", "The kylix tool"]

# The machine's side, as its administrator would set it; the commands stay as printed. pip gets
# the versions that tests/userpaths/requirements.txt pins (and pip's cache holds); Open MPI may
# run as root (CI) and, like Spark, stays on loopback.
MACHINE = {
    "PIP_CONSTRAINT": str(REPO / "tests/userpaths/requirements.txt"),
    "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo",
    "SPARK_LOCAL_IP": "127.0.0.1",
}


def section(doc: Path, heading: str) -> str:
    """The text under `heading`, up to the next heading of the same or a higher level
    (lines in code blocks are never headings)."""
    out: List[str] = []
    level = 0
    fenced = False
    for line in doc.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^(#+) (.*)$", line)
        if level and m and len(m.group(1)) <= level:
            break
        if level:
            out.append(line)
        elif m and m.group(2).strip() == heading:
            level = len(m.group(1))
    if not level:
        raise AssertionError(f"{doc}: no section '{heading}'")
    return "\n".join(out) + "\n"


def blocks(text: str) -> List[Tuple[str, str]]:
    fences = re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)
    return [(m.group(1), m.group(2)) for m in fences]


def shown_output(doc: Path, *headings: str) -> List[str]:
    """The lines of the first `text` block (what the document says the commands print) in the
    first of headings that has one."""
    for h in headings:
        for lang, code in blocks(section(doc, h)):
            if lang == "text":
                return code.rstrip("\n").split("\n")
    return []


def mirror(tmp_path: Path) -> Path:
    """A checkout as the reader has it: symlinks to every top-level entry of the repository."""
    box = tmp_path / "repo"
    box.mkdir()
    for entry in REPO.iterdir():
        if entry.name != ".git":
            (box / entry.name).symlink_to(entry)
    return box


def go_caches() -> dict:
    """Go's caches stay where they are when $HOME moves (a cold build cache takes minutes)."""
    out = subprocess.run(["go", "env", "GOCACHE", "GOMODCACHE", "GOPATH"], capture_output=True,
                         text=True, check=True).stdout.split("\n")
    return {"GOCACHE": out[0], "GOMODCACHE": out[1], "GOPATH": out[2]}


@pytest.mark.parametrize("ex", EXAMPLES, ids=lambda e: f"{e.doc}:{e.heading}")
def test_readme_example(ex: Example, tmp_path: Path) -> None:
    doc = REPO / ex.doc
    progs = [code for lang, code in blocks(section(doc, ex.program_from or ex.heading))
             if lang == ex.lang]
    assert progs, f"{ex.doc}: no {ex.lang} block in '{ex.program_from or ex.heading}'"
    script = "\n".join(code for lang, code in blocks(section(doc, ex.heading)) if lang == "sh")
    assert ex.filename in script, f"the commands of '{ex.heading}' do not use {ex.filename}"
    if ex.tagged:
        assert "--tag-output" in script, f"'{ex.heading}' runs 4 ranks without --tag-output"

    box = mirror(tmp_path)
    (box / ex.filename).write_text(progs[0])
    env = newcomer_env(**MACHINE)
    if ex.home:
        (tmp_path / "home").mkdir()
        env.update(go_caches(), HOME=str(tmp_path / "home"))
    r = run(script, timeout=420, cwd=box, env=env)
    assert r.returncode == 0, f"exit {r.returncode}:\n{script}\n---\n{r.stdout[-8000:]}"
    errs = example_errors(r.stdout, 4, allreduce=ex.allreduce)
    assert not errs, "\n".join(errs) + "\n---\n" + r.stdout[-4000:]
    for s in ex.expect:
        assert s in r.stdout, f"want {s!r} in the output:\n{r.stdout[-4000:]}"
    shown = shown_output(doc, *([ex.heading, ex.program_from] if ex.program_from else [ex.heading]))
    if ex.doc == "README.md":
        assert shown, f"README.md '{ex.heading}' does not show what the example prints"
    printed = [line.rstrip() for line in untangled(r.stdout).split("\n")]
    missing = [line for line in shown if line not in printed]
    assert not missing, (f"'{ex.heading}' shows lines it did not print: {missing}\n---\n"
                         + r.stdout[-4000:])


def test_make_demo_prints_what_the_readme_shows(tmp_path: Path) -> None:
    # "Two commands": make demo in a checkout; every shown line without an elision (…, where
    # times go) comes out, in order.
    shown = [line for line in shown_output(REPO / "README.md", "Two commands") if "…" not in line]
    assert len(shown) >= 3, shown
    r = run("make demo", timeout=420, cwd=mirror(tmp_path), env=newcomer_env())
    assert r.returncode == 0, f"exit {r.returncode}:\n{r.stdout[-8000:]}"
    printed = iter(line.rstrip() for line in r.stdout.split("\n"))
    missing = [line for line in shown if not any(p == line for p in printed)]
    assert not missing, f"make demo did not print {missing}\n---\n{r.stdout[-4000:]}"


@pytest.mark.parametrize("heading", PRINTED)
def test_readme_prints_what_it_shows(heading: str, tmp_path: Path) -> None:
    # As a reader copies them, in a checkout: the commands of the section, then its text block
    # compared line by line with what they printed (other lines, make's, may come between).
    doc = REPO / "README.md"
    script = "\n".join(code for lang, code in blocks(section(doc, heading)) if lang == "sh")
    shown = shown_output(doc, heading)
    assert script and shown, f"'{heading}' has no commands or no output block"
    r = run(script, timeout=420, cwd=mirror(tmp_path), env=newcomer_env(**MACHINE))
    assert r.returncode == 0, f"exit {r.returncode}:\n{script}\n---\n{r.stdout[-8000:]}"
    printed = iter(line.rstrip() for line in r.stdout.split("\n"))
    missing = [line for line in shown if not any(p == line for p in printed)]
    assert not missing, (f"'{heading}' shows lines it did not print, in this order: {missing}"
                         f"\n---\n{r.stdout[-4000:]}")
