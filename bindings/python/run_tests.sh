#!/usr/bin/env bash
# Python binding tests (`make test` calls this after building).
#
#   bindings/python/run_tests.sh [pytest args...]
#
# 1. makes a virtualenv in $KYLIX_BUILD/pyenv (default build/pyenv), reused when present;
#    where `python3 -m venv` cannot work (Debian without python3-venv) it installs python3-venv
#    with apt-get when root, else falls back to `pip install --target build/pysite`;
# 2. installs the pinned test requirements (requirements-test.txt) and this package
#    (`pip install ./bindings/python`), quietly; later runs need no network;
# 3. runs pytest on bindings/python/tests against build/libkylix.so and build/kylixrun.
# Exits non-zero when a test fails or when pytest collected no test at all (pytest exit 5).
#
# Environment: KYLIX_BUILD (build directory), PYTHON (interpreter, default python3),
# KYLIX_PYENV (venv directory).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="${KYLIX_BUILD:-$ROOT/build}"
PY="${PYTHON:-python3}"

log() { echo "run_tests.sh: $*" >&2; }
. "$ROOT/tests/progress/progress.sh"   # progress, fetching: what make test relays as it runs

for f in libkylix.so kylixrun; do
  if [ ! -e "$BUILD/$f" ]; then
    log "$BUILD/$f not found: run 'make' in $ROOT first (or set KYLIX_BUILD)"
    exit 1
  fi
done
BUILD="$(cd "$BUILD" && pwd)"
VENV="${KYLIX_PYENV:-$BUILD/pyenv}"
command -v "$PY" >/dev/null 2>&1 || { log "no Python interpreter '$PY' on PATH"; exit 1; }

PIPQ=(--quiet --disable-pip-version-check --no-input)
as_root_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
apt_install() {
  progress say "installing $* with apt-get"
  apt-get update -qq >/dev/null 2>&1 || true
  for p in "$@"; do
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null 2>&1 || true
  done
}

# Remove $VENV only if it is (a broken attempt at) a virtualenv, never some other directory.
drop_venv() {
  [ -e "$VENV" ] || return 0
  if [ -f "$VENV/pyvenv.cfg" ] || [ -z "$(ls -A "$VENV" 2>/dev/null)" ]; then
    rm -rf "$VENV"
  else
    log "$VENV exists and is not a virtualenv: not touching it (set KYLIX_PYENV elsewhere)"
    exit 1
  fi
}
venv_ok() { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -m pip --version >/dev/null 2>&1; }
make_venv() {
  drop_venv
  progress step "python3 -m venv $VENV"
  "$PY" -m venv "$VENV" >/dev/null 2>&1 && venv_ok
}

MODE=venv
if ! venv_ok; then
  if ! make_venv; then
    if [ -e "$BUILD/pysite/.kylix-reqs" ]; then
      MODE=target                       # chose the fallback on an earlier run already
    elif as_root_apt; then
      ver="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
      apt_install python3-venv "python$ver-venv"
      make_venv || MODE=target
    else
      MODE=target
    fi
  fi
fi

if [ "$MODE" = venv ]; then
  RUNPY="$VENV/bin/python"
  INSTALL=("$RUNPY" -m pip install "${PIPQ[@]}")
  TARGET=()
  MARK="$VENV/.kylix-reqs"
else
  drop_venv
  SITE="$BUILD/pysite"
  log "python3 -m venv is not available: installing into $SITE (pip --target) instead"
  if ! "$PY" -m pip --version >/dev/null 2>&1; then
    as_root_apt && apt_install python3-pip
    "$PY" -m pip --version >/dev/null 2>&1 || { log "no pip for $PY: install python3-pip or python3-venv"; exit 1; }
  fi
  RUNPY="$PY"
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  INSTALL=("$PY" -m pip install "${PIPQ[@]}")
  TARGET=(--target "$SITE" --upgrade)
  MARK="$SITE/.kylix-reqs"
fi

# Pinned requirements: pip skips what is already installed, so reruns are offline.
if [ ! -e "$MARK" ] || [ "$HERE/requirements-test.txt" -nt "$MARK" ] ||
   ! "$RUNPY" -c 'import numpy, scipy, pytest, hatchling' >/dev/null 2>&1; then
  fetching "pip install -r requirements-test.txt" \
    "installing numpy, scipy, pytest and hatchling with pip into ${MARK%/*} (about 60 MB the first time)" \
    "$(pip_cache "$RUNPY")" "${INSTALL[@]}" "${TARGET[@]}" -r "$HERE/requirements-test.txt"
  touch "$MARK"
fi
# The package itself, rebuilt every run from this build (hatch_build.py bundles $BUILD's
# libkylix.so and kylixrun; the backend is already installed: no network).
progress step "pip install ./bindings/python (this build's library bundled)"
KYLIX_BUILD="$BUILD" "${INSTALL[@]}" "${TARGET[@]}" --no-build-isolation --force-reinstall --no-deps "$HERE"

export KYLIX_BUILD="$BUILD" KYLIX_LIBRARY="$BUILD/libkylix.so"
export PYTHONDONTWRITEBYTECODE=1
cd "$BUILD"   # a neutral working directory: the tests import the installed package
set +e
# pytest_progress tells make test which test runs (tests/progress/pytest_progress.py).
PYTHONPATH="$ROOT/tests/progress${PYTHONPATH:+:$PYTHONPATH}" \
  "$RUNPY" -m pytest -p no:cacheprovider -p pytest_progress -q -ra --durations=8 "$HERE/tests" "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  log "pytest collected no tests: counting that as a failure"
  exit 1
fi
exit "$rc"
