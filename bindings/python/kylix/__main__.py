"""``python -m kylix``: what this installation is, and what a comm would run with.

Prints the package and library versions, where libkylix.so was loaded from (and why), the
bundled launcher, the reduction kernels the library dispatched, and the options in effect:
the ``KYLIX_*`` variables of this environment (the secret masked) and what a one-rank comm
made from them reports. Exits 0 when the library loads and a one-rank comm works, else 1.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Tuple


def _env_options() -> List[Tuple[str, str]]:
    out = []
    for k in sorted(os.environ):
        if k.startswith("KYLIX_"):
            v = os.environ[k]
            out.append((k, "(set, hidden)" if k == "KYLIX_SECRET" and v else v))
    return out


def _cpu_simd() -> str:
    """The SIMD levels the library's kernels use that this CPU has (Linux /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return "unknown"
    have = [x for x in ("avx2", "avx512f", "avx512dq") if x in flags]
    return " ".join(have) or "none of avx2, avx512f"


def _comm_report(kylix: Any) -> Tuple[Dict[str, Any], str]:
    """Stats of a one-rank comm (no peers needed), or ({}, why it failed)."""
    try:
        # rank/size given, so no launcher is needed; every other key still comes from KYLIX_*.
        with kylix.init(rank=0, size=1) as comm:
            return comm.stats(), ""
    except kylix.KylixError as e:
        return {}, str(e)


def main() -> int:
    try:
        import kylix
        from kylix import _launch, _raw
    except ImportError as e:
        print(f"kylix: cannot load the library: {e}", file=sys.stderr)
        return 1
    major, minor, patch = kylix.version()
    print(f"kylix {kylix.__version__} (Python package at {os.path.dirname(kylix.__file__)})")
    print(f"libkylix {major}.{minor}.{patch}")
    print(f"library: {_raw.library_path} ({_raw.library_source})")
    run = _launch.binary("kylixrun")
    print(f"kylixrun: {run or 'not bundled (use build/kylixrun from a make build)'}")
    stats, err = _comm_report(kylix)
    kernels = stats.get("kernels")
    if isinstance(kernels, dict):
        kernels = ", ".join(f"{k}={v}" for k, v in sorted(kernels.items()))
    print(f"kernels: {kernels or 'not reported by this libkylix (no kernels field in its stats)'}"
          f"; this CPU has {_cpu_simd()}")
    print("options in effect:")
    for k, v in _env_options():
        print(f"  {k}={v}")
    if not _env_options():
        print("  no KYLIX_* variables: the library's defaults (kylixrun sets rank, size, "
              "rendezvous and secret for each rank)")
    if err:
        print(f"  a one-rank comm with these options fails: {err}")
        return 1
    comp = stats.get("compression") or {}
    print(f"  degrees={stats.get('degrees_option')} (fixed: {stats.get('degrees')}), "
          f"compress={comp.get('option')} (active: {comp.get('active')})")
    for key in ("timeout_ms", "liveness_ms", "threads", "log", "min_packet", "replication"):
        if key in stats.get("options", {}):
            print(f"  {key}={stats['options'][key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
