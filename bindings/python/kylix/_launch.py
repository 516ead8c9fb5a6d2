"""The ``kylixrun`` and ``kylix`` console scripts: exec the Go binaries bundled in the wheel.

The launcher is a Go program; these entry points only put this environment's ``bin/`` first on
``PATH`` (so ``kylixrun -n 4 -- python3 prog.py`` runs this environment's Python, with this
package, whether or not the venv is activated) and then replace themselves with the binary.
"""

from __future__ import annotations

import os
import sys
from typing import List, NoReturn, Optional

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")


def binary(name: str) -> Optional[str]:
    """Path of a bundled binary, or None (a package installed without the wheel's natives)."""
    p = os.path.join(BIN, name)
    return p if os.access(p, os.X_OK) else None


def _exec(name: str, argv: List[str]) -> NoReturn:
    exe = binary(name)
    if exe is None:
        sys.stderr.write(
            f"{name}: this kylix package has no bundled {name} ({BIN}/{name}): it was not "
            "installed from a wheel built by bindings/python/hatch_build.py. Reinstall with "
            "`pip install ./bindings/python`, or run build/" + name + " from a `make` build.\n")
        raise SystemExit(127)
    env = dict(os.environ)
    scripts = os.path.dirname(sys.executable)     # the environment's bin/, not resolved
    path = env.get("PATH", "")
    if scripts and path.split(os.pathsep)[:1] != [scripts]:
        env["PATH"] = scripts + (os.pathsep + path if path else "")
    os.execve(exe, [name] + argv, env)


def kylixrun() -> NoReturn:
    _exec("kylixrun", sys.argv[1:])


def kylix_tool() -> NoReturn:
    _exec("kylix", sys.argv[1:])
