#!/usr/bin/env bash
# What a newcomer does, tested from the outside (`make test` runs this last):
#   test_readme.py   the README examples (C, Python, Java, and bindings/*/README.md's), verbatim,
#                    4 ranks under kylixrun, in a fresh virtualenv where they make one;
#   test_install.py  make install/uninstall + pkg-config, the wheel's tag and contents,
#                    python -m kylix, KYLIX_LIBRARY as a directory, first-run messages;
#   test_engines.py  kylix.from_mpi under Debian's Open MPI, a PySpark barrier stage
#                    (kylix.from_spark), the Java SparkBarrier recipe through spark-submit, and
#                    both on a Spark standalone cluster across network namespaces (as root).
#
#   tests/userpaths/run.sh [pytest args...]        (KYLIX_BUILD: the build directory)
#
# Installs what it needs when missing: pkg-config and Open MPI with apt-get (as root), and a
# virtualenv in $KYLIX_BUILD/userpaths-venv with requirements.txt (PySpark, mpi4py, ...) and this
# build's kylix wheel. pip's cache (~/.cache/pip) and Maven's (~/.m2) keep the downloads, so only
# the first run on a machine fetches them (about 450 MB, most of it PySpark's jars). Each download
# and each test is reported on $TESTSUM_PROGRESS as it goes (tests/progress), for make test.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="${KYLIX_BUILD:-$ROOT/build}"
log() { echo "userpaths: $*" >&2; }
. "$ROOT/tests/progress/progress.sh"   # progress, fetching: what make test relays as it runs
for f in libkylix.so kylixrun; do
  [ -e "$BUILD/$f" ] || { log "$BUILD/$f not found: run 'make' first"; exit 1; }
done
BUILD="$(cd "$BUILD" && pwd)"
start=$(date +%s)

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  sh "$ROOT/tests/netns/deps.sh" mpi
  sh "$ROOT/tests/netns/deps.sh" pkg
fi
for tool in pkg-config mpirun java javac jar mvn readelf; do
  command -v "$tool" >/dev/null 2>&1 || { log "$tool is not on PATH"; exit 1; }
done

VENV="$BUILD/userpaths-venv"
PIPQ=(--quiet --disable-pip-version-check --no-input)
bash "$ROOT/bindings/python/ensure_venv.sh" "$VENV" "$HERE/requirements.txt" \
  "PySpark, mpi4py, numpy, pytest and hatchling (about 450 MB the first time, most of it PySpark's jars)"
progress step "pip install ./bindings/python into $VENV"
KYLIX_BUILD="$BUILD" "$VENV/bin/python" -m pip install "${PIPQ[@]}" --no-build-isolation \
  --force-reinstall --no-deps "$ROOT/bindings/python"

# The Java tests need the jar (bundling this build's library) and target/lib/jna-*.jar.
JAR="$ROOT/bindings/java/target/kylix-0.1.0.jar"
if [ ! -f "$JAR" ] || [ "$BUILD/libkylix.so" -nt "$JAR" ] || ! ls "$ROOT"/bindings/java/target/lib/jna-*.jar >/dev/null 2>&1; then
  package_jar() { (cd "$ROOT/bindings/java" && KYLIX_BUILD="$BUILD" mvn -q -B -Dstyle.color=never package -DskipTests); }
  if [ -d "$HOME/.m2/repository/net/java/dev/jna/jna" ]; then
    progress step "mvn package (the Java jar)"
    package_jar
  else
    fetching "mvn package" "Maven downloads JNA, JUnit and its plugins from Maven Central into ~/.m2 (about 40 MB, once)" \
      "$HOME/.m2/repository" package_jar
  fi
fi

export KYLIX_BUILD="$BUILD" PYTHONDONTWRITEBYTECODE=1
unset KYLIX_LIBRARY
cd "$HERE"
set +e
# pytest_progress tells make test which test runs (tests/progress/pytest_progress.py).
PYTHONPATH="$ROOT/tests/progress" "$VENV/bin/python" -m pytest -p no:cacheprovider -p pytest_progress \
  -q -ra --durations=12 "$HERE" "$@"
rc=$?
set -e
log "done in $(( $(date +%s) - start )) s"
if [ "$rc" -eq 5 ]; then
  log "pytest collected no tests: counting that as a failure"
  exit 1
fi
exit "$rc"
