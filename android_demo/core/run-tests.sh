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
# Debian jars of JUnit 4 and Hamcrest (override with JUNIT_JAR, HAMCREST_JAR). Classes are
# compiled into a temporary folder under android_demo/core/build/ (gitignored), removed at the end.
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

# A fresh folder per run under build/ (gitignored), so concurrent runs cannot collide.
mkdir -p "$HERE/build"
BUILD=$(mktemp -d "$HERE/build/run-tests.XXXXXX")
trap 'rm -rf "$BUILD"' EXIT
mkdir -p "$BUILD/main" "$BUILD/test" "$BUILD/resources/org/dpedge/format/1"
cp "$ROOT/format/1/schema.json" "$ROOT/format/1/unicode.json" "$BUILD/resources/org/dpedge/format/1/"

find "$HERE/src/main/java" -name '*.java' > "$BUILD/main-sources.txt"
find "$HERE/src/test/java" -name '*.java' > "$BUILD/test-sources.txt"
javac --release 11 -encoding UTF-8 -Xlint:all -Werror -d "$BUILD/main" @"$BUILD/main-sources.txt"
javac --release 11 -encoding UTF-8 -cp "$LIBS:$BUILD/main" -d "$BUILD/test" @"$BUILD/test-sources.txt"

if [ -n "$ANSWERS" ]; then
    java -cp "$LIBS:$BUILD/main:$BUILD/resources:$BUILD/test" org.dpedge.core.Answers "$ANSWERS"
    exit
fi

# Every *Test class under src/test/java, as a class name.
CLASSES=$(cd "$HERE/src/test/java" && find . -name '*Test.java' | sed 's|^\./||; s|\.java$||; s|/|.|g' | sort)

java -Ddpedge.corpus="$CORPUS" -Ddpedge.corpus.real="$SECOND" \
    -cp "$LIBS:$BUILD/main:$BUILD/resources:$BUILD/test" org.junit.runner.JUnitCore $CLASSES
