"""The Java core (android_demo/core) against the conformance corpus of format 1.

android_demo/core/run-tests.sh compiles the core and its JUnit 4 tests (a JDK, JUnit 4 and
Hamcrest from Debian) and runs them on a corpus folder: every `refuse` bundle refused with its
code and path, every `accept` bundle read, tokenized, scored and (with a stand-in engine that
answers from the corpus) run end to end, and the text rules. The core interprets
format/1/schema.json and unicode.json; nothing here computes an expected value. The committed
corpus is run on every test run; a corpus of the real 384-d encoder (format/tools/make_corpus.py
--real), given as $DPEDGE_REAL_CORPUS or written here from the exported encoders, is run too.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.java

CORPUS = ROOT / "format" / "1" / "corpus"
RUN_TESTS = ROOT / "android_demo" / "core" / "run-tests.sh"
CORE = ROOT / "android_demo" / "core" / "src" / "main" / "java" / "org" / "dpedge" / "core"
JARS = [Path("/usr/share/java") / j for j in ("junit4.jar", "hamcrest-core.jar")]
#: Platform Unicode the core must not consult: the contract's tables decide (format/1/unicode.json).
PLATFORM_UNICODE = re.compile(r"java\.text\.Normalizer|Character\.(?:to(?:Lower|Upper|Title)Case|is(?:Whitespace|"
                              r"SpaceChar|Letter\w*|Digit|Alphabetic|Ideographic|ISOControl|Defined)|getType|digit)\b"
                              r"|\.toLowerCase\(|\.toUpperCase\(|\\p\{")


def _java_toolchain_or_skip() -> None:
    missing = [str(j) for j in JARS if not j.is_file()] + [t for t in ("javac", "java") if not shutil.which(t)]
    if missing:
        why = f"Java toolchain missing: {', '.join(missing)} (apt-get install default-jdk-headless junit4)"
        if os.environ.get("DPEDGE_REQUIRE_JAVA"):
            pytest.fail(why)  # CI installs it; there, a missing toolchain is an error, not a skip
        pytest.skip(why)


def _run(*corpora: Path) -> str:
    r = subprocess.run(["bash", str(RUN_TESTS), *map(str, corpora)], capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    print(out[-3000:])
    assert r.returncode == 0, out[-5000:]
    assert re.search(r"^OK \(\d+ tests\)", out, re.M), out[-3000:]
    return out


def _summary(out: str, corpus: Path) -> dict[str, int]:
    """What the Java run says it did for one corpus."""
    where = re.escape(str(corpus.resolve()))
    found = {}
    for key, pattern in (("refuse", r"(\d+) refused bundles"), ("text", r"(\d+) text cases"),
                         ("accept", r"(\d+) accepted bundles \((\d+) refused at load\), (\d+) queries tokenized, "
                                    r"(\d+) end to end, (\d+) vectors scored")):
        m = re.search(rf"conformance {where}: {pattern}", out)
        assert m, f"no {key} summary for {corpus} in:\n{out[-3000:]}"
        found[key] = [int(g) for g in m.groups()]
    return found


def _expected(corpus: Path) -> dict[str, list[int]]:
    index = json.loads((corpus / "cases.json").read_text(encoding="utf-8"))
    accept = index["accept"]
    loads = [c for c in accept if "load" in c]
    engine = [c for c in accept if c.get("engine") and "check" in c and "load" not in c]
    return {"refuse": [len(index["refuse"])], "text": [len(index["text"])],
            "accept": [len(accept), len(loads), sum(len(c.get("queries", [])) for c in accept),
                       sum(len(c["queries"]) for c in engine), sum(len(c.get("vectors", [])) for c in accept)]}


def test_the_core_reads_no_platform_unicode_and_no_copy_of_the_contract():
    sources = {p.name: p.read_text(encoding="utf-8") for p in CORE.glob("*.java")}
    assert not {"Fields.java", "RustUnicode.java"} & set(sources)
    used = {name: PLATFORM_UNICODE.findall(text) for name, text in sources.items()}
    assert not {name: found for name, found in used.items() if found}
    assert not (ROOT / "android_demo" / "golden.py").exists()


def test_java_core_passes_the_committed_corpus():
    _java_toolchain_or_skip()
    out = _run(CORPUS)
    assert _summary(out, CORPUS) == _expected(CORPUS)


@pytest.fixture(scope="module")
def real_corpus(tmp_path_factory) -> Path:
    """A corpus of the real encoder: $DPEDGE_REAL_CORPUS, else written by make_corpus.py --real
    from the encoders exported into models/ (skipped where they cannot be)."""
    given = os.environ.get("DPEDGE_REAL_CORPUS")
    if given:
        return Path(given)
    if importlib.util.find_spec("ai_edge_litert") is None:  # make_corpus runs the TFLite bundle on LiteRT
        pytest.skip("a real corpus needs LiteRT (pip install -e '.[litert]'), or $DPEDGE_REAL_CORPUS")
    _exported_encoders()
    out = tmp_path_factory.mktemp("real-corpus")
    r = subprocess.run([sys.executable, str(ROOT / "format" / "tools" / "make_corpus.py"), "--real", "--out", str(out)],
                       capture_output=True, text=True, timeout=1800, cwd=ROOT)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    return out


def _exported_encoders() -> None:
    """Skip unless both real encoders are exported into models/ already or can be (the export extra)."""
    from exporter.encoder_export import EncoderExportError, export_encoder

    for name in ("onnx", "tflite"):
        try:
            export_encoder(None, ROOT / "models", encoder_format=name)
        except EncoderExportError as exc:
            pytest.skip(f"no exported {name} encoder under models/ ({exc}): export it with the export extra, or set "
                        f"$DPEDGE_REAL_CORPUS")


def test_java_core_passes_a_corpus_of_the_real_encoder(real_corpus):
    _java_toolchain_or_skip()
    out = _run(CORPUS, real_corpus)
    assert _summary(out, real_corpus) == _expected(real_corpus)
    assert _expected(real_corpus)["accept"][3] > 0  # the real encoder's queries ran end to end
