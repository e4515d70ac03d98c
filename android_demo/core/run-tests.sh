#!/usr/bin/env bash
# Compiles the Java core and its JUnit 4 tests with javac --release 11 and runs them against a
# golden folder written by android_demo/golden.py. Exits non-zero on any failure.
#
#   bash android_demo/core/run-tests.sh GOLDEN_DIR
#
# Needs JDK 11+ and the Debian jars of msgpack-core, JUnit 4 and Hamcrest (override their
# paths with MSGPACK_JAR, JUNIT_JAR, HAMCREST_JAR). Classes are compiled into a temporary
# folder under android_demo/core/build/ (gitignored), removed when the run ends.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 GOLDEN_DIR   (write it with: python android_demo/golden.py --out GOLDEN_DIR)" >&2
    exit 2
fi
GOLDEN=$(cd "$1" 2>/dev/null && pwd) || { echo "$0: no such folder: $1" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
MSGPACK_JAR=${MSGPACK_JAR:-/usr/share/java/msgpack-core.jar}
JUNIT_JAR=${JUNIT_JAR:-/usr/share/java/junit4.jar}
HAMCREST_JAR=${HAMCREST_JAR:-/usr/share/java/hamcrest-core.jar}
for jar in "$MSGPACK_JAR" "$JUNIT_JAR" "$HAMCREST_JAR"; do
    [ -f "$jar" ] || { echo "$0: missing $jar" >&2; exit 2; }
done
LIBS="$MSGPACK_JAR:$JUNIT_JAR:$HAMCREST_JAR"

# A fresh folder per run under build/ (gitignored), so concurrent runs cannot collide.
mkdir -p "$HERE/build"
BUILD=$(mktemp -d "$HERE/build/run-tests.XXXXXX")
trap 'rm -rf "$BUILD"' EXIT
mkdir -p "$BUILD/main" "$BUILD/test"

find "$HERE/src/main/java" -name '*.java' > "$BUILD/main-sources.txt"
find "$HERE/src/test/java" -name '*.java' > "$BUILD/test-sources.txt"
javac --release 11 -encoding UTF-8 -Xlint:all -Werror -cp "$LIBS" -d "$BUILD/main" @"$BUILD/main-sources.txt"
javac --release 11 -encoding UTF-8 -cp "$LIBS:$BUILD/main" -d "$BUILD/test" @"$BUILD/test-sources.txt"

# Every *Test class under src/test/java, as a class name.
CLASSES=$(cd "$HERE/src/test/java" && find . -name '*Test.java' | sed 's|^\./||; s|\.java$||; s|/|.|g' | sort)

java -Ddpedge.golden="$GOLDEN" -cp "$LIBS:$BUILD/main:$BUILD/test" org.junit.runner.JUnitCore $CLASSES
