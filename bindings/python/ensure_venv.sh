#!/usr/bin/env bash
# ensure_venv.sh VENV REQUIREMENTS [WHAT]: make VENV a working virtualenv (again, if it is broken)
# and install REQUIREMENTS into it when they are newer than its last install, saying what it
# downloads (WHAT: the packages and their size), how long that took and how much came over the
# network. Shared by make wheel (build_wheel.sh) and tests/userpaths/run.sh.
set -euo pipefail
venv="$1" reqs="$2" what="${3:-$(basename "$2")}"
. "$(dirname "${BASH_SOURCE[0]}")/../../tests/progress/progress.sh"
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  rm -rf "$venv"
  progress step "python3 -m venv $venv"
  python3 -m venv "$venv"
fi
if [ ! -e "$venv/.reqs" ] || [ "$reqs" -nt "$venv/.reqs" ]; then
  fetching "pip install -r $(basename "$reqs") into $(basename "$venv")" "installing $what with pip into $venv" \
    "$(pip_cache "$venv/bin/python")" \
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$reqs"
  touch "$venv/.reqs"
fi
