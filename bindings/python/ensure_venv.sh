#!/usr/bin/env bash
# ensure_venv.sh VENV REQUIREMENTS: make VENV a working virtualenv (again, if it is broken) and
# install REQUIREMENTS into it when they are newer than its last install. Shared by make wheel
# (build_wheel.sh) and tests/userpaths/run.sh.
set -euo pipefail
venv="$1" reqs="$2"
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  rm -rf "$venv"
  python3 -m venv "$venv"
fi
if [ ! -e "$venv/.reqs" ] || [ "$reqs" -nt "$venv/.reqs" ]; then
  t=$(date +%s)
  echo "$(basename "$venv"): installing $reqs with pip" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$reqs"
  touch "$venv/.reqs"
  echo "$(basename "$venv"): $(basename "$reqs") installed in $(( $(date +%s) - t )) s" >&2
fi
