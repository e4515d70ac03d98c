"""The Java core (android_demo/core) against golden vectors from the Python runtime.

android_demo/golden.py records, for four real bundles built in this test run (the exporter's
default without vote tables, with the ONNX and the TFLite encoder; one with vote tables too,
--votes-share 0.1; one of vote tables alone, --hashing random), what the Python runtime
answers for a varied sample of texts: token ids, the encoder's embedding, the bucket per table,
scores and label. It adds bundles derived from the one with vote tables, one per branch of the
scoring rule; the malformed bundles generated from the format's table (tests/schema_cases.py),
each with the phrases its error must contain, which the Python reader is checked against first;
valid variants; and the format's and the text rules' tables. The Java tests (JDK, JUnit 4 and
msgpack-java from Debian) must reproduce every token, bucket, score and label, refuse every
malformed bundle with Python's phrases, load every variant and hold the same tables.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

import schema_cases
from conftest import ROOT

pytestmark = [pytest.mark.java, pytest.mark.tflite]

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
def golden(dp_bundle, tables_bundle, tflite_bundle, random_bundle, tmp_path_factory) -> Path:
    import golden as golden_script

    out = tmp_path_factory.mktemp("golden")
    args = ["--out", str(out)]
    for b in (dp_bundle, tables_bundle, tflite_bundle, random_bundle):
        args += ["--bundle", str(b)]
    assert golden_script.main(args) == 0
    return out


def test_golden_data_covers_every_kind_of_bundle_and_case(golden, tables_bundle):
    import golden as golden_script

    data = msgpack.unpackb((golden / "golden.msgpack").read_bytes(), raw=False)
    docs = [schema_cases.document((golden / b["file"]).read_bytes()) for b in data["bundles"]]
    kinds = sorted((d["encoder"]["format"], "class_sums" in d["releases"], "votes" in d["releases"]) for d in docs)
    assert kinds == [("onnx", False, True), ("onnx", True, False), ("onnx", True, True), ("tflite", True, False)]
    assert all(len(b["cases"]) == len(golden_script.SAMPLE) + 175 for b in data["bundles"])
    scored = {Path(s["file"]).stem: s for s in data["scored"]}
    assert list(scored) == list(golden_script.SCORED)
    assert scored["boost-capped"]["prior_boost"] == 1e6 and scored["without-prior"]["prior_boost"] == 0.0
    assert [s["plain_votes"] for s in scored.values()].count(True) == 2  # the votes alone, with and without offsets
    expected = schema_cases.malformed(schema_cases.small_base(tables_bundle.read_bytes()))
    expected += schema_cases.real_encoder_cases(tables_bundle.read_bytes())
    assert [(m["file"], m["phrases"]) for m in data["malformed"]] == [
        (f"malformed/{c.name}.dpedge", list(c.phrases)) for c in expected]
    assert len(data["variants"]) == len(schema_cases.valid(schema_cases.small_base(tables_bundle.read_bytes())))
    assert len(data["schema"]["fields"]) > 60 and data["text"]["unprintable"][0] == [0, 31]


def test_java_core_reproduces_the_python_runtime(golden):
    _java_toolchain_or_skip()
    import golden as golden_script

    r = subprocess.run(["bash", str(ROOT / "android_demo" / "core" / "run-tests.sh"), str(golden)],
                       capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    print(out[-3000:])
    assert r.returncode == 0, out[-5000:]
    m = re.search(r"golden: (\d+) token cases, (\d+) bucket cases, (\d+) label cases passed; "
                  r"(\d+) malformed bundles refused; (\d+) valid variants loaded; "
                  r"(\d+) scored cases passed; (\d+) of (\d+) bundles have class statistics, "
                  r"(\d+) no vote tables", out)
    assert m, out[-3000:]
    data = msgpack.unpackb((golden / "golden.msgpack").read_bytes(), raw=False)
    per_bundle = len(golden_script.SAMPLE) + 175  # the sample and the assistant test set
    assert [int(g) for g in m.groups()] == [
        4 * per_bundle,          # tokens: four bundles
        2 * per_bundle,          # buckets: the two with vote tables
        4 * per_bundle,          # scores and labels
        len(data["malformed"]), len(data["variants"]),
        len(golden_script.SCORED) * (len(golden_script.SAMPLE) + 4),
        3, 4, 2]
