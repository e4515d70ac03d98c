"""The bounded CI runs of both fuzzers, marked `fuzz` (``pytest -m fuzz`` runs just these):

- the Hypothesis properties of tests/test_bundle_properties.py, each at a fixed small
  max_examples, derandomized (the same examples every run);
- the atheris target tests/fuzz/atheris_reader.py for 2,000 runs from seeds made of the test
  bundles, in a subprocess that must exit cleanly (skipped, saying why, without atheris);
- tests/fuzz/engine_mutations.py on the corpus's TFLite and ONNX bundles: structured mutations
  of the model loaded by the real engine through the CLI, none of which may crash, hang or
  print a traceback.

The long runs: ``DPEDGE_FUZZ=long pytest tests/test_bundle_properties.py`` and
``python tests/fuzz/atheris_reader.py --seeds-from B.dpedge CORPUS -max_total_time=1200``.
"""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bundle_strategies as bs
import test_bundle_properties as props
from test_bundle_properties import encoders, tiny_docs  # noqa: F401 - the properties' fixtures

pytestmark = pytest.mark.fuzz

SMOKE_EXAMPLES = 15
ATHERIS_RUNS = 2000
TARGET = Path(__file__).with_name("atheris_reader.py")
PROPERTIES = ["test_documents_within_every_bound_are_accepted_and_score_finitely",
              "test_mutated_inputs_raise_only_bundle_error", "test_flipped_bytes_without_a_new_digest_are_corrupted",
              "test_round_trip"]


@pytest.mark.parametrize("name", PROPERTIES)
def test_hypothesis_properties_smoke(name, request):
    """One property's own test body (Hypothesis keeps it as ``inner_test``), with a fixed small
    max_examples."""
    inner = getattr(props, name).hypothesis.inner_test
    fixtures = {arg: request.getfixturevalue(arg) for arg in inspect.signature(inner).parameters if arg != "data"}
    smoke = settings(props.BASE, max_examples=SMOKE_EXAMPLES, derandomize=True, database=None)(
        given(data=st.data())(inner))
    smoke(**fixtures)


@pytest.mark.parametrize("bundle, runs, engine", [("tflite", 120, "ai_edge_litert"), ("default", 60, "onnxruntime")])
def test_engine_mutations_smoke(bundle, runs, engine, tmp_path):
    """Mutated models through the real engine, each in a CLI process: only answers, one-line
    refusals and skipped texts (the long run: ``python tests/fuzz/engine_mutations.py BUNDLE --runs 2000``)."""
    pytest.importorskip(engine)
    from fuzz import engine_mutations

    corpus = engine_mutations.ROOT / "format" / "1" / "corpus"
    findings = engine_mutations.run(corpus / "accept" / f"{bundle}.dpedge", runs, seed=7, keep=tmp_path)
    assert not findings, "\n".join(f"{p.name}: {outcome}: {detail}" for p, outcome, detail in findings)


def test_atheris_reader_smoke(dp_bundle, tables_bundle, random_bundle, tmp_path):
    """2,000 coverage-guided runs of runtime.bundle.unpack: libFuzzer exits 0 with no crash,
    timeout or out-of-memory artifact (each known finding of bundle_strategies.KNOWN_FINDINGS
    is counted, not fatal: it has its own xfail case)."""
    if importlib.util.find_spec("atheris") is None:
        pytest.skip("atheris is not installed (pip install atheris: the dev extra has it on Linux x86_64, the "
                    "only platform with wheels), so the coverage-guided reader target cannot run")
    known = [arg for k in sorted(bs.KNOWN_FINDINGS) for arg in ("--known", ":".join(k))]
    seeds = [arg for b in (dp_bundle, tables_bundle, random_bundle) for arg in ("--seeds-from", str(b))]
    corpus = tmp_path / "corpus"
    r = subprocess.run([sys.executable, str(TARGET), *seeds, *known, str(corpus), f"-runs={ATHERIS_RUNS}", "-seed=1",
                        "-timeout=60", "-rss_limit_mb=2048", f"-artifact_prefix={tmp_path}/"],
                       capture_output=True, text=True, timeout=900)
    tail = "\n".join(r.stderr.splitlines()[-40:])
    assert r.returncode == 0, tail
    assert f"Done {ATHERIS_RUNS} runs" in r.stderr, tail
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-"))]
    assert len(list(corpus.iterdir())) > 7  # the seeds, and inputs that found new coverage
