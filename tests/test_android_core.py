"""The Java core (android_demo/core) against golden vectors from the Python runtime.

android_demo/golden.py records, for three real bundles built in this test run (format 2 with
the ONNX and the TFLite encoder, format 1.2 with random hashing), what the Python runtime
answers for a varied sample of texts: token ids, the encoder's embedding, the bucket id per
table, scores and label. It adds format-2 bundles derived from a real one, each exercising
one part of the blended scorer, with the Python scorer's buckets, scores and label for a set
of embeddings; and it writes malformed bundles (format 1 and format 2), each with the phrase
its error must contain (the Python reader is checked against the same phrases). The Java
tests (JDK 17, JUnit 4 and msgpack-java from Debian) must reproduce every token, bucket,
score and label and reject every malformed bundle.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

from conftest import ROOT, build_options

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
def random_bundle(exported_encoder, tmp_path_factory) -> Path:
    """The assistant data with the paper's random hashing: a format-1.2 bundle (plain vote sums)."""
    from exporter.build import build

    out = tmp_path_factory.mktemp("bundles") / "assistant-random.dpedge"
    build(build_options(out, hashing="random"))
    return out


@pytest.fixture(scope="module")
def golden(dp_bundle, tflite_bundle, random_bundle, tmp_path_factory):
    import golden as golden_script

    out = tmp_path_factory.mktemp("golden")
    args = ["--out", str(out)]
    for b in (dp_bundle, tflite_bundle, random_bundle):
        args += ["--bundle", str(b)]
    assert golden_script.main(args) == 0
    return out


def test_golden_data_covers_both_formats(golden):
    import golden as golden_script

    data = msgpack.unpackb((golden / "golden.msgpack").read_bytes(), raw=False)
    majors = [msgpack.unpackb((golden / b["file"]).read_bytes(), raw=False)["version"][0] for b in data["bundles"]]
    assert sorted(majors) == [1, 2, 2]
    assert [s["file"] for s in data["scored"]] == [f"scored/{n}.dpedge" for n in golden_script.SCORED]
    assert all(len(s["cases"]) == len(golden_script.SAMPLE) + 4 for s in data["scored"])
    assert {Path(m["file"]).stem for m in data["malformed"]} == {*golden_script.MALFORMED, *golden_script.MALFORMED_2,
                                                                 *golden_script.MALFORMED_HOSTILE,
                                                                 *golden_script.MALFORMED_PLAIN,
                                                                 *golden_script.MALFORMED_TFLITE}


def test_java_core_reproduces_the_python_runtime(golden):
    _java_toolchain_or_skip()
    import golden as golden_script

    r = subprocess.run(["bash", str(ROOT / "android_demo" / "core" / "run-tests.sh"), str(golden)],
                       capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    print(out[-3000:])
    assert r.returncode == 0, out[-5000:]
    m = re.search(r"golden: (\d+) token cases, (\d+) bucket cases, (\d+) label cases passed; "
                  r"(\d+) malformed bundles rejected; (\d+) valid variants loaded; "
                  r"(\d+) scored format-2 cases passed; (\d+) of (\d+) bundles use format 2", out)
    assert m, out[-3000:]
    cases = 3 * (len(golden_script.SAMPLE) + 175)  # three bundles x (sample + assistant test set)
    scored = len(golden_script.SCORED) * (len(golden_script.SAMPLE) + 4)
    assert [int(g) for g in m.groups()] == [
        cases, cases, cases, sum(len(m) for m in (golden_script.MALFORMED, golden_script.MALFORMED_2,
                                                  golden_script.MALFORMED_HOSTILE, golden_script.MALFORMED_PLAIN,
                                                  golden_script.MALFORMED_TFLITE)),
        len(golden_script.VARIANTS) + len(golden_script.VARIANTS_2), scored, 2, 3]
