"""Installing: `make install`/`uninstall` with pkg-config, the Python wheel (tag, contents,
stripped natives), `make wheel`'s manylinux wheel installed where there is no Go and running 4
ranks, `python -m kylix`, KYLIX_LIBRARY as a directory, and the messages a
newcomer gets when Go is missing (one plain message, no traceback) or no launcher started the
program.

The README's own commands (make install + pkg-config + the installed kylixrun; a fresh venv,
pip install, the venv's kylixrun) run verbatim in test_readme.py.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import BUILD, REPO, newcomer_env, run

INSTALLED = ["lib/libkylix.so", "lib/pkgconfig/kylix.pc", "include/kylix.h", "bin/kylixrun",
             "bin/kylix"]


def stripped(path: Path) -> bool:
    sections = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True,
                              check=True).stdout
    return ".symtab" not in sections


def header_version() -> str:
    h = (REPO / "include/kylix.h").read_text()
    parts = [re.search(rf"#define KYLIX_VERSION_{k} (\d+)", h).group(1)
             for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def test_make_install_and_uninstall(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    r = run(["make", "-s", "-C", str(REPO), "install", f"PREFIX={prefix}"], timeout=300)
    assert r.returncode == 0, r.stdout
    for f in INSTALLED:
        assert (prefix / f).is_file(), f"make install did not install {f}"
    assert stripped(prefix / "lib/libkylix.so"), "the installed libkylix.so is not stripped"
    assert not stripped(BUILD / "libkylix.so"), "build/ should keep the symbols for debugging"
    env = newcomer_env(PKG_CONFIG_PATH=str(prefix / "lib/pkgconfig"))
    ver = run(["pkg-config", "--modversion", "kylix"], timeout=30, env=env)
    assert ver.returncode == 0 and ver.stdout.strip() == header_version(), ver.stdout
    flags = run(["pkg-config", "--cflags", "--libs", "kylix"], timeout=30, env=env).stdout
    assert f"-I{prefix}/include" in flags and f"-Wl,-rpath,{prefix}/lib" in flags, flags
    r = run(["make", "-s", "-C", str(REPO), "uninstall", f"PREFIX={prefix}"], timeout=60)
    assert r.returncode == 0, r.stdout
    left = [f for f in INSTALLED if (prefix / f).exists()]
    assert not left, f"make uninstall left {left}"


def test_wheel_is_platform_tagged_and_bundles_the_natives(tmp_path: Path) -> None:
    r = run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
             "-w", str(tmp_path), str(REPO / "bindings/python")], timeout=300,
            env=newcomer_env(KYLIX_BUILD=str(BUILD)))
    assert r.returncode == 0, r.stdout
    wheels = list(tmp_path.glob("*.whl"))
    assert len(wheels) == 1, wheels
    assert wheels[0].name.endswith("-py3-none-linux_x86_64.whl"), wheels[0].name
    with zipfile.ZipFile(wheels[0]) as z:
        info = {i.filename: i for i in z.infolist()}
        for name in ("kylix/libkylix.so", "kylix/bin/kylixrun", "kylix/bin/kylix"):
            assert name in info, f"{name} not in the wheel: {sorted(info)}"
        for name in ("kylix/bin/kylixrun", "kylix/bin/kylix"):
            assert (info[name].external_attr >> 16) & stat.S_IXUSR, f"{name} is not executable"
        z.extract("kylix/libkylix.so", tmp_path / "x")
        entry = z.read("kylix-0.1.0.dist-info/entry_points.txt").decode()
    assert stripped(tmp_path / "x/kylix/libkylix.so"), "the wheel's libkylix.so is not stripped"
    assert "kylixrun = kylix._launch:kylixrun" in entry, entry


def test_wheel_build_without_go_says_what_to_do(tmp_path: Path) -> None:
    # A copy of the package outside any checkout, no KYLIX_BUILD: nothing to build or bundle.
    src = tmp_path / "python"
    shutil.copytree(REPO / "bindings/python", src, ignore=shutil.ignore_patterns("build", "*.so"))
    r = run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w",
             str(tmp_path), str(src)], timeout=120, env=newcomer_env())
    assert r.returncode != 0
    assert "install Go 1.26 or newer" in r.stdout and "KYLIX_BUILD" in r.stdout, r.stdout[-3000:]


def test_pip_install_without_go_leads_with_both_ways_forward(tmp_path: Path) -> None:
    # A checkout with no build/ and no Go on PATH, as a user who cloned and ran pip: pip's box
    # opens on one plain message naming Go and the prebuilt wheel, and holds no traceback.
    repo = tmp_path / "kylix"
    shutil.copytree(REPO / "bindings/python", repo / "bindings/python",
                    ignore=shutil.ignore_patterns("build", "*.so", "bin", "__pycache__"))
    (repo / "go.mod").write_text("module kylix\n")
    (repo / "capi").mkdir()
    go = shutil.which("go")
    assert go, "go is not on PATH"
    env = newcomer_env()
    env["PATH"] = os.pathsep.join(d for d in env["PATH"].split(os.pathsep)
                                  if not os.path.exists(os.path.join(d, "go")))
    r = run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
             "--target", str(tmp_path / "site"), str(repo / "bindings/python")],
            timeout=120, env=env)
    assert r.returncode != 0
    assert "Traceback" not in r.stdout, r.stdout[-3000:]
    box = r.stdout[r.stdout.index("lines of output]"):].split("\n")[1:]
    assert box[0].strip().startswith("kylix cannot be built here: no Go toolchain (`go`) on PATH"), r.stdout
    for way in ("install Go 1.26 or newer", "make wheel", "pip install kylix-*-manylinux_*.whl"):
        assert way in r.stdout, f"{way!r} not in:\n{r.stdout[-3000:]}"


def test_wheel_build_without_go_bundles_an_earlier_build(tmp_path: Path) -> None:
    # In the checkout, with build/ made earlier, but no Go on PATH: the hook says so and packs it.
    go = shutil.which("go")
    assert go, "go is not on PATH"
    env = newcomer_env()
    env["PATH"] = os.pathsep.join(d for d in env["PATH"].split(os.pathsep)
                                  if d != os.path.dirname(go))
    r = run([sys.executable, "-m", "pip", "wheel", "-v", "--no-build-isolation", "--no-deps",
             "-w", str(tmp_path), str(REPO / "bindings/python")], timeout=120, env=env)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "no Go toolchain or make on PATH: bundling" in r.stdout, r.stdout[-3000:]
    assert len(list(tmp_path.glob("*-py3-none-linux_x86_64.whl"))) == 1


def test_python_m_kylix_reports_the_bundled_library() -> None:
    r = run([sys.executable, "-m", "kylix"], timeout=60, env=newcomer_env())
    assert r.returncode == 0, r.stdout
    lib = re.search(r"^library: (\S+) \((.*)\)$", r.stdout, re.M)
    assert lib and lib.group(2) == "bundled with the package", r.stdout
    assert "site-packages/kylix/libkylix.so" in lib.group(1), r.stdout
    assert re.search(r"^kylixrun: \S+/kylix/bin/kylixrun$", r.stdout, re.M), r.stdout
    assert re.search(r"^libkylix \d+\.\d+\.\d+$", r.stdout, re.M), r.stdout
    assert "degrees=auto" in r.stdout and "kernels:" in r.stdout, r.stdout


def test_kylix_library_may_name_a_directory(tmp_path: Path) -> None:
    code = "import kylix; print(kylix.library_path)"
    r = run([sys.executable, "-c", code], timeout=60, env=newcomer_env(KYLIX_LIBRARY=str(BUILD)))
    assert r.returncode == 0 and r.stdout.strip() == str(BUILD / "libkylix.so"), r.stdout
    r = run([sys.executable, "-c", code], timeout=60,
            env=newcomer_env(KYLIX_LIBRARY=str(tmp_path)))      # a directory without the library
    assert r.returncode != 0 and f"{tmp_path}/libkylix.so" in r.stdout, r.stdout


def test_no_launcher_says_what_to_do() -> None:
    r = run([sys.executable, "-c", "import kylix; kylix.init()"], timeout=60, env=newcomer_env())
    assert r.returncode != 0
    assert ("run under kylixrun -n N, or set KYLIX_RANK/KYLIX_SIZE and peers or a rendezvous"
            in r.stdout), r.stdout


def test_kylix_tool_help_exits_0() -> None:
    # The wheel's `kylix` console script, next to this interpreter.
    tool = str(Path(sys.executable).parent / "kylix")
    for sub in ("plan", "simulate", "bench"):
        r = run([tool, sub, "-h"], timeout=30, env=newcomer_env())
        assert r.returncode == 0 and "--features" in r.stdout and "example:" in r.stdout, r.stdout
        assert "help requested" not in r.stdout, r.stdout
    r = run([tool, "plan", "--no-such-flag"], timeout=30, env=newcomer_env())
    assert r.returncode == 2 and "unknown flag --no-such-flag" in r.stdout, r.stdout
    r = run([tool, "--version"], timeout=30, env=newcomer_env())
    assert r.returncode == 0 and r.stdout.strip() == "kylix " + header_version(), r.stdout


def test_manylinux_wheel_installs_and_runs_without_go(tmp_path: Path) -> None:
    # `make wheel` as a maintainer with Go runs it; a user without Go installs the result.
    r = run(["make", "-s", "-C", str(REPO), "wheel"], timeout=600)
    assert r.returncode == 0, r.stdout[-3000:]
    wheels = list((REPO / "build/dist").glob("kylix-*.whl"))
    assert len(wheels) == 1 and re.search(r"-py3-none-manylinux_2_\d+_x86_64\.whl$", wheels[0].name), wheels
    audit = run([str(REPO / "build/wheel-venv/bin/auditwheel"), "show", str(wheels[0])], timeout=60)
    assert audit.returncode == 0 and "is consistent with" in audit.stdout, audit.stdout

    env = newcomer_env()
    go = shutil.which("go")
    path = [d for d in env["PATH"].split(os.pathsep) if not go or d != os.path.dirname(go)]
    env["PATH"] = os.pathsep.join(path)
    assert run(["bash", "-c", "command -v go"], timeout=30, env=env).returncode != 0, "go still on PATH"
    venv = tmp_path / "venv"
    r = run([sys.executable, "-m", "venv", str(venv)], timeout=120, env=env)
    assert r.returncode == 0, r.stdout
    r = run([str(venv / "bin/pip"), "install", "-q", "--disable-pip-version-check", str(wheels[0])],
            timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:]
    # The venv's kylixrun, the bundled launcher, starts 4 ranks of the venv's Python.
    r = run([str(venv / "bin/kylixrun"), "-n", "4", "--tag-output", "--job-timeout", "120", "--",
             str(venv / "bin/python"), str(Path(__file__).parent / "wheel_job.py")],
            timeout=180, env=env, cwd=tmp_path)
    passed = re.findall(r"^\[\d\] rank (\d): PASS of 4, library (\S+)$", r.stdout, re.M)
    assert r.returncode == 0 and sorted(int(p[0]) for p in passed) == [0, 1, 2, 3], r.stdout[-6000:]
    assert all(p[1].startswith(str(venv)) for p in passed), passed
