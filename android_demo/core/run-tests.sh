#!/usr/bin/env bash
# Compiles the Java core and its JUnit 4 tests with javac --release 11 and runs them against the
# conformance corpus of format 1 (cases.json and the bundles beside it). Exits non-zero on any
# failure.
#
#   bash android_demo/core/run-tests.sh [CORPUS_DIR [SECOND_CORPUS_DIR]]
#   bash android_demo/core/run-tests.sh --answers DIR
#
# CORPUS_DIR defaults to format/1/corpus; a second corpus (one of the real encoder:
# python format/tools/make_corpus.py --real --out build/real-corpus) is run by the same tests.
# The contract's files, format/1/schema.json and unicode.json, are put on the classpath as
# org/dpedge/format/1/ (core/build.gradle does the same for Gradle). Needs JDK 11+ and the
# Debian jars of JUnit 4 and Hamcrest (override with JUNIT_JAR, HAMCREST_JAR). The compiled
# classes are kept under android_demo/core/build/classes-KEY (gitignored), KEY a hash of every
# input of javac: the Java sources, this script (its flags), the two jars and the javac binary; a
# run whose inputs are unchanged skips javac (a lint warning fails the compile, so a kept folder
# passed it). Classes of other keys unused for a day are removed. Compilation goes to a temporary
# folder, renamed into place when complete, so concurrent runs cannot collide. javac and JUnit
# run with C1 only (-XX:TieredStopAtLevel=1): both are short, and C2 about doubles their CPU time.
# --answers DIR compiles the same way, then runs org.dpedge.core.Answers on the questions of
# tests/fuzz/reader_agreement.py in DIR instead of the tests.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ANSWERS=""
if [ "${1:-}" = "--answers" ]; then
    ANSWERS=$(cd "${2:?--answers needs a folder}" && pwd -P)
    set --
fi
FIRST=${1:-$ROOT/format/1/corpus}
CORPUS=$(cd "$FIRST" 2>/dev/null && pwd -P) || { echo "$0: no such corpus folder: $FIRST" >&2; exit 2; }
SECOND=""
if [ $# -ge 2 ]; then
    SECOND=$(cd "$2" 2>/dev/null && pwd -P) || { echo "$0: no such corpus folder: $2" >&2; exit 2; }
fi
for dir in "$CORPUS" $SECOND; do
    [ -f "$dir/cases.json" ] || { echo "$0: $dir has no cases.json" >&2; exit 2; }
done
JUNIT_JAR=${JUNIT_JAR:-/usr/share/java/junit4.jar}
HAMCREST_JAR=${HAMCREST_JAR:-/usr/share/java/hamcrest-core.jar}
for jar in "$JUNIT_JAR" "$HAMCREST_JAR"; do
    [ -f "$jar" ] || { echo "$0: missing $jar" >&2; exit 2; }
done
LIBS="$JUNIT_JAR:$HAMCREST_JAR"

JAVAC=$(command -v javac) || { echo "$0: no javac (apt-get install default-jdk-headless junit4)" >&2; exit 2; }
JVM_FAST=-XX:TieredStopAtLevel=1

# A fresh folder per run under build/ (gitignored), so concurrent runs cannot collide.
mkdir -p "$HERE/build"
BUILD=$(mktemp -d "$HERE/build/run-tests.XXXXXX")
trap 'rm -rf "$BUILD"' EXIT
mkdir -p "$BUILD/resources/org/dpedge/format/1"
cp "$ROOT/format/1/schema.json" "$ROOT/format/1/unicode.json" "$BUILD/resources/org/dpedge/format/1/"

find "$HERE/src/main/java" -name '*.java' | LC_ALL=C sort > "$BUILD/main-sources.txt"
find "$HERE/src/test/java" -name '*.java' | LC_ALL=C sort > "$BUILD/test-sources.txt"
JAVAC_REAL=$(readlink -f "$JAVAC")
KEY=$( {
    echo "$JAVAC_REAL $(stat -c '%s %Y' "$JAVAC_REAL")"
    (cd "$HERE" && find src/main/java src/test/java -name '*.java' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
    sha256sum "$HERE/run-tests.sh" "$JUNIT_JAR" "$HAMCREST_JAR" | cut -d' ' -f1
} | sha256sum | cut -c1-20)
CLASSES="$HERE/build/classes-$KEY"
if [ ! -f "$CLASSES/complete" ]; then
    mkdir -p "$BUILD/classes/main" "$BUILD/classes/test"
    javac -J$JVM_FAST --release 11 -encoding UTF-8 -Xlint:all -Werror -d "$BUILD/classes/main" @"$BUILD/main-sources.txt"
    javac -J$JVM_FAST --release 11 -encoding UTF-8 -cp "$LIBS:$BUILD/classes/main" -d "$BUILD/classes/test" \
        @"$BUILD/test-sources.txt"
    touch "$BUILD/classes/complete"
    # Into place in one rename; if a concurrent run got there first, its (identical) classes are used.
    mv -T "$BUILD/classes" "$CLASSES" 2>/dev/null || [ -f "$CLASSES/complete" ] || CLASSES="$BUILD/classes"
fi
touch "$CLASSES"
find "$HERE/build" -maxdepth 1 -name 'classes-*' ! -name "classes-$KEY" -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
CP="$LIBS:$CLASSES/main:$BUILD/resources:$CLASSES/test"

if [ -n "$ANSWERS" ]; then
    java -cp "$CP" org.dpedge.core.Answers "$ANSWERS"
    exit
fi

# Every *Test class under src/test/java, as a class name.
TESTS=$(cd "$HERE/src/test/java" && find . -name '*Test.java' | sed 's|^\./||; s|\.java$||; s|/|.|g' | sort)

java $JVM_FAST -Ddpedge.corpus="$CORPUS" -Ddpedge.corpus.real="$SECOND" \
    -cp "$CP" org.junit.runner.JUnitCore $TESTS
