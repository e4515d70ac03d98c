"""The Java core (android_demo/core) against golden vectors from the Python runtime.

android_demo/golden.py records, for two real bundles (ONNX and TFLite encoder) built in this
test run, what the Python runtime answers for a varied sample of texts: token ids, the
encoder's embedding, the bucket id per table, scores and label; and it writes malformed
bundles, each with the phrase its error must contain (the Python reader is checked against
the same phrases). The Java tests (JDK 17, JUnit 4 and msgpack-java from Debian) must
reproduce every token, bucket, score and label and reject every malformed bundle.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

JARS = [Path("/usr/share/java") / j for j in ("msgpack-core.jar", "junit4.jar", "hamcrest-core.jar")]
sys.path.insert(0, str(ROOT / "android_demo"))


def _java_toolchain_or_skip() -> None:
    missing = [str(j) for j in JARS if not j.is_file()] + [t for t in ("javac", "java") if not shutil.which(t)]
    if missing:
        why = f"Java toolchain missing: {', '.join(missing)} (apt-get install default-jdk-headless junit4 libmsgpack-java)"
        if os.environ.get("DPEDGE_REQUIRE_JAVA"):
            pytest.fail(why)  # CI installs it; there, a missing toolchain is an error, not a skip
        pytest.skip(why)


@pytest.fixture(scope="module")
def golden(dp_bundle, tflite_bundle, tmp_path_factory):
    import golden as golden_script

    out = tmp_path_factory.mktemp("golden")
    assert golden_script.main(["--out", str(out), "--bundle", str(dp_bundle), "--bundle", str(tflite_bundle)]) == 0
    return out


def test_java_core_reproduces_the_python_runtime(golden):
    _java_toolchain_or_skip()
    import golden as golden_script

    r = subprocess.run(["bash", str(ROOT / "android_demo" / "core" / "run-tests.sh"), str(golden)],
                       capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    print(out[-3000:])
    assert r.returncode == 0, out[-5000:]
    m = re.search(r"golden: (\d+) token cases, (\d+) bucket cases, (\d+) label cases passed; "
                  r"(\d+) malformed bundles rejected; (\d+) valid variants loaded", out)
    assert m, out[-3000:]
    cases = 2 * (len(golden_script.SAMPLE) + 175)  # two bundles x (sample + assistant test set)
    assert [int(g) for g in m.groups()] == [cases, cases, cases, len(golden_script.MALFORMED),
                                            len(golden_script.VARIANTS)]
