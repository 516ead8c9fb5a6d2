"""Wheel build hook: bundle libkylix.so, kylixrun and the kylix tool into the package.

Like pyzmq's wheels (which carry a matching libzmq) the wheel is self-contained: ``import
kylix`` needs no ``KYLIX_LIBRARY``, and the ``kylixrun`` console script runs the bundled
launcher. Where the native files come from, first match wins:

1. ``$KYLIX_BUILD``: a build directory that already holds them (what ``make test`` tests);
2. the repository this package sits in (``bindings/python`` of a Kylix checkout): ``make``
   builds them into ``build/`` with the Go toolchain (Go's build cache makes a rebuild quick);
3. without Go, a ``build/`` that an earlier ``make`` left there is used as it is.

Otherwise the build stops with one plain message, no traceback: install Go, or install the
prebuilt wheel that ``make wheel`` builds where Go is. The copies in the wheel are stripped;
the wheel is tagged ``py3-none-<platform>`` (ctypes works with any Python 3, not with any
platform).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

NATIVE = ("libkylix.so", "kylixrun", "kylix")   # file in the build dir -> kylix/ or kylix/bin/
NO_GO = (
    "Two ways forward:\n"
    "  1. install Go 1.26 or newer (https://go.dev/dl/, or Debian's golang package when it is\n"
    "     new enough), gcc and make, and run pip again: the build runs `make` in the checkout;\n"
    "  2. or install the prebuilt wheel, which needs no Go: run `make wheel` in a checkout on a\n"
    "     machine that has Go, then here `pip install kylix-*-manylinux_*.whl` (from its\n"
    "     build/dist/).\n"
    "(Or run `make` where Go is and set KYLIX_BUILD=/path/to/kylix/build before pip.)"
)


class CannotBuild(Exception):
    """The natives cannot be built or found: its text is all the user needs."""


def _stop(why: str) -> "CannotBuild":
    return CannotBuild(f"kylix cannot be built here: {why}.\n{NO_GO}")


def _say(msg: str) -> None:
    print(f"kylix build hook: {msg}", file=sys.stderr, flush=True)


def _complete(d: Path) -> bool:
    return all((d / f).is_file() for f in NATIVE[:2])


def _native_dir(root: Path) -> Path:
    env = os.environ.get("KYLIX_BUILD")
    if env:
        d = Path(env).resolve()
        if not _complete(d):
            raise CannotBuild(f"kylix cannot be built here: KYLIX_BUILD={env} holds no libkylix.so "
                              "and kylixrun: run `make` in that checkout first")
        _say(f"native files from KYLIX_BUILD={d}")
        return d
    repo = root.parent.parent
    build = repo / "build"
    if not (repo / "go.mod").is_file() or not (repo / "capi").is_dir():
        raise _stop("this is not bindings/python of a Kylix checkout, and KYLIX_BUILD is not set")
    if shutil.which(os.environ.get("GO", "go")) and shutil.which("make"):
        _say(f"building libkylix.so and kylixrun with `make -C {repo}`")
        r = subprocess.run(["make", "-C", str(repo), "all"], stdout=sys.stderr)
        if r.returncode != 0:
            raise CannotBuild(f"kylix cannot be built here: `make -C {repo} all` failed "
                              f"(exit {r.returncode}): its output is above")
        return build
    if _complete(build):
        _say(f"no Go toolchain or make on PATH: bundling {build} as an earlier make left it")
        return build
    go = os.environ.get("GO", "go")
    missing = f"no Go toolchain (`{go}`)" if not shutil.which(go) else "no make"
    raise _stop(f"{missing} on PATH, and no earlier build in {build}")


def _stripped_copy(src: Path, dst: Path) -> None:
    shutil.copy2(src, dst)
    strip = shutil.which("strip")
    if strip:
        # Go binaries and c-shared libraries keep working without their symbol tables.
        subprocess.run([strip, "--strip-unneeded", str(dst)], check=True)


def _platform_tag() -> str:
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


class KylixBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        try:
            src = _native_dir(Path(self.root).resolve())
        except CannotBuild as e:
            # The message alone, first in pip's box: a traceback would bury it.
            print(e, file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        self._stage = tempfile.mkdtemp(prefix="kylix-wheel-")
        inc = build_data.setdefault("force_include", {})
        for name in NATIVE:
            if not (src / name).is_file():
                continue  # the kylix tool is optional
            dst = Path(self._stage) / name
            _stripped_copy(src / name, dst)
            inc[str(dst)] = f"kylix/{name}" if name.endswith(".so") else f"kylix/bin/{name}"
        build_data["pure_python"] = False
        build_data["tag"] = f"py3-none-{_platform_tag()}"

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        stage = getattr(self, "_stage", None)
        if stage:
            shutil.rmtree(stage, ignore_errors=True)
