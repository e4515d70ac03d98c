"""The Java core (android_demo/core) against golden vectors from the Python runtime.

android_demo/golden.py records, for four real bundles built in this test run (format 4.0 as
the exporter writes it by default, without vote tables, with the ONNX and the TFLite encoder;
format 4.0 with vote tables, --votes-share 0.1; format 1.2 with random hashing), what the
Python runtime answers for a varied sample of texts: token ids, the encoder's embedding, the
bucket id per table (none without vote tables), scores and label. It adds bundles derived from
the default one and from the one with vote tables, each exercising one part of the scorer
(among them bundles rewritten as formats 2.1 and 2.0 wrote them), with the Python scorer's
prior boost, buckets, scores and label for a set of embeddings; malformed bundles, each with
the phrase its error must contain (the Python reader is checked against the same phrases);
and valid variants both readers must load. The Java tests (JDK 17, JUnit 4 and msgpack-java
from Debian) must reproduce every token, bucket, score and label, reject every malformed
bundle and load every variant.
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
def golden(dp_bundle, tables_bundle, tflite_bundle, random_bundle, tmp_path_factory):
    import golden as golden_script

    out = tmp_path_factory.mktemp("golden")
    args = ["--out", str(out)]
    for b in (dp_bundle, tables_bundle, tflite_bundle, random_bundle):
        args += ["--bundle", str(b)]
    assert golden_script.main(args) == 0
    return out


MALFORMED_SETS = ("MALFORMED", "MALFORMED_TABLES", "MALFORMED_HOSTILE", "MALFORMED_3", "MALFORMED_PLAIN",
                  "MALFORMED_TFLITE")
VARIANT_SETS = ("VARIANTS", "VARIANTS_TABLES", "VARIANTS_3")


def _names(module, sets: tuple[str, ...]) -> list[str]:
    return [name for s in sets for name in getattr(module, s)]


def test_golden_data_covers_formats_1_and_3_with_and_without_tables(golden):
    import golden as golden_script

    data = msgpack.unpackb((golden / "golden.msgpack").read_bytes(), raw=False)
    payloads = [msgpack.unpackb((golden / b["file"]).read_bytes(), raw=False) for b in data["bundles"]]
    assert sorted(p["version"][0] for p in payloads) == [1, 4, 4, 4]
    without_tables = [b for b in data["bundles"] if not any(c["buckets"] for c in b["cases"])]
    assert len(without_tables) == 2  # the default bundle, with the ONNX and with the TFLite encoder
    assert [s["file"] for s in data["scored"]] == [f"scored/{n}.dpedge"
                                                   for n in (*golden_script.SCORED, *golden_script.SCORED_TABLES)]
    assert all(len(s["cases"]) == len(golden_script.SAMPLE) + 4 for s in data["scored"])
    # the derived bundles cover both boost rules and the formats 2.x wrote
    boosts = {Path(s["file"]).stem: s["prior_boost"] for s in data["scored"]}
    assert boosts[golden_script.BOOST_CAPPED] == 1e6 and boosts["linear-without-records-per-class"] == 0.0
    assert {"format-2.1", "format-2.0"} <= boosts.keys()
    assert [Path(m["file"]).stem for m in data["malformed"]] == _names(golden_script, MALFORMED_SETS)
    assert [Path(v["file"]).stem for v in data["variants"]] == _names(golden_script, VARIANT_SETS)


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
                  r"(\d+) scored cases passed; (\d+) of (\d+) bundles have class statistics, "
                  r"(\d+) no vote tables", out)
    assert m, out[-3000:]
    per_bundle = len(golden_script.SAMPLE) + 175  # sample + assistant test set
    scored = len([*golden_script.SCORED, *golden_script.SCORED_TABLES]) * (len(golden_script.SAMPLE) + 4)
    assert [int(g) for g in m.groups()] == [
        4 * per_bundle,          # tokens: four bundles
        2 * per_bundle,          # buckets: the two with vote tables (format 3 with tables, format 1.2)
        4 * per_bundle,          # scores and labels
        len(_names(golden_script, MALFORMED_SETS)), len(_names(golden_script, VARIANT_SETS)), scored,
        3, 4, 2]
