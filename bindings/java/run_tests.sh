#!/bin/sh
# Builds the Java bindings and runs their tests: `mvn package` runs the JUnit tests (in-process
# ones on a one-rank comm, and multi-process jobs under kylixrun), then the jar is checked to load
# the library it bundles and one placed next to it. Exits non-zero on any failure.
#
#   KYLIX_BUILD=/path/to/build bindings/java/run_tests.sh    (default: the repository's build/)
#
# Needs `make` to have built libkylix.so and kylixrun, a JDK 17+ and Maven 3.8+ with access to
# Maven Central (or a ~/.m2 that already holds JNA, JUnit and the plugins).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${KYLIX_BUILD:-$here/../../build}
if [ ! -f "$build/libkylix.so" ] || [ ! -x "$build/kylixrun" ]; then
  echo "run_tests.sh: $build has no libkylix.so or kylixrun: run \`make\` first" >&2
  exit 1
fi
build=$(cd "$build" && pwd)
for tool in java mvn; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "run_tests.sh: $tool is not on PATH (needs a JDK 17+ and Maven 3.8+)" >&2
    exit 1
  }
done

. "$here/../../tests/progress/progress.sh"   # progress, fetching: what make test relays as it runs
cd "$here"
start=$(date +%s)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# mvn package runs the JUnit tests; src/test/java/org/kylix/ProgressExtension.java reports each
# test on $TESTSUM_PROGRESS as it starts and ends (Maven's own output comes through a pipe in blocks).
package() { mvn -q -B -Dstyle.color=never -Dkylix.build="$build" package; }
if [ -d "$HOME/.m2/repository/net/java/dev/jna/jna" ]; then
  progress step "mvn package (compiling, then the JUnit tests)"
  package
else
  fetching "mvn package" "Maven downloads JNA, JUnit and its plugins from Maven Central into ~/.m2 (about 40 MB, once)" \
    "$HOME/.m2/repository" package
fi
mvn -q -B -Dstyle.color=never dependency:build-classpath -Dmdep.includeScope=runtime \
  -Dmdep.outputFile=target/runtime-classpath.txt >/dev/null
jar=$(ls target/kylix-*.jar | head -n 1)
deps=$(cat target/runtime-classpath.txt)

# The jar alone: no -Dkylix.library.path, no LD_LIBRARY_PATH: JNA extracts the bundled copy.
out=$(env -u LD_LIBRARY_PATH java -cp "$jar:$deps" org.kylix.Kylix)
case "$out" in
  "libkylix "*) ;;
  *) echo "run_tests.sh: the jar did not load its bundled library: $out" >&2; exit 1 ;;
esac
case "$out" in
  *"$build"*) echo "run_tests.sh: want the bundled copy, got $out" >&2; exit 1 ;;
esac
echo "jar, bundled library: $out"

# A libkylix.so next to the jar wins over the bundled copy.
cp "$jar" "$build/libkylix.so" "$tmp/"
out=$(env -u LD_LIBRARY_PATH java -cp "$tmp/$(basename "$jar"):$deps" org.kylix.Kylix)
case "$out" in
  *"$tmp/libkylix.so") echo "jar, library next to it: $out" ;;
  *) echo "run_tests.sh: want $tmp/libkylix.so, got $out" >&2; exit 1 ;;
esac

# Surefire's per-class reports hold "Tests run: N, Failures: F, Errors: E, Skipped: S".
counts=$(cat target/surefire-reports/*.txt | awk -F'[:,]' '/^Tests run:/ {n+=$2; f+=$4+$6; s+=$8}
  END {printf "%d %d %d", n, f, s}')
set -- $counts
echo "Java bindings: all tests passed in $(( $(date +%s) - start )) s"
echo "java: $(( $1 - $2 - $3 )) passed, $2 failed, $3 skipped"
