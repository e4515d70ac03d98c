"""The Python reader against the committed conformance corpus (format/1/corpus/cases.json).

The same files and expectations hold the Java core (android_demo) and the web runtime (web/): a
reader that disagrees with another fails its own run of this corpus. Nothing here needs torch,
OpenDP or an exported encoder: the corpus's tiny encoders run on onnxruntime (and LiteRT, when
installed), so this is the check tier (`make check`).
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from runtime import BundleError, Classifier, InputError
from runtime import bundle as fmt
from runtime.bundle.tokenizer_family import check_tokenizer_json
from runtime.encoder import installed
from runtime.scoring import Scorer
from runtime.text import escape, escape_json, label_key, shows_something, unassigned, unprintable
from runtime.tokenizer import TextTokenizer

pytestmark = pytest.mark.check

CORPUS = ROOT / "format" / "1" / "corpus"
INDEX = json.loads((CORPUS / "cases.json").read_text(encoding="utf-8"))
TOL = INDEX["tolerance"]
ENGINES = {"onnx": "onnxruntime", "tflite": "litert"}


def _file(case: dict) -> Path:
    return CORPUS / case["file"]


def _pack(case: dict) -> fmt.EncoderPack | None:
    """The encoder pack a case gives the reader with its bundle (format 1.1), or None."""
    return fmt.load_pack(CORPUS / case["pack"]) if "pack" in case else None


@pytest.mark.parametrize("case", INDEX["refuse"], ids=lambda c: Path(c["file"]).stem)
def test_refused_with_its_code_and_path(case):
    with pytest.raises(BundleError) as info:
        fmt.load(_file(case), pack=_pack(case))
    assert (info.value.code, info.value.path) == (case["code"], case["path"]), str(info.value)
    assert "\x1b" not in str(info.value) and "\u202e" not in str(info.value)  # shown escaped


@pytest.mark.parametrize("case", INDEX["refuse_pack"], ids=lambda c: Path(c["file"]).name)
def test_packs_refused_with_their_code_and_path(case):
    with pytest.raises(BundleError) as info:
        fmt.load_pack(_file(case), expect=case.get("expect"))
    assert (info.value.code, info.value.path) == (case["code"], case["path"]), str(info.value)


def test_the_corpus_covers_every_refusal_code_of_a_file():
    """Every error code a file can earn (all but the engine's and the query's) has a case."""
    codes = {c["code"] for c in INDEX["refuse"] + INDEX["refuse_pack"]} | {
        c["load"]["code"] for c in INDEX["accept"] if "load" in c}
    wanted = {code for code in json.loads((ROOT / "format" / "1" / "schema.json").read_text())["errors"]
              if not code.startswith(("query.", "engine.")) and code not in ("container.size", "relation.work")}
    assert wanted <= codes, sorted(wanted - codes)


@pytest.mark.parametrize("case", INDEX["accept"], ids=lambda c: c["file"].removeprefix("accept/").removesuffix(".dpedge"))
def test_accepted_read_tokenized_and_scored_alike(case):
    b = fmt.load(_file(case), pack=_pack(case))
    assert list(b.labels) == case["labels"]
    tok = TextTokenizer(check_tokenizer_json(b.encoder.tokenizer_json), b.encoder.max_length, b.encoder.text_prefix)
    scorer = Scorer(b)
    for q in case.get("queries", []):
        if "code" in q:
            assert not tok.has_token(q["text"])
            continue
        assert tok.encode_one(q["text"]) == q["token_ids"], q["text"]
        if "embedding" in q:
            _scores_close(scorer, b.labels, q)
    for v in case.get("vectors", []):
        _scores_close(scorer, b.labels, v)


def _scores_close(scorer: Scorer, labels: tuple[str, ...], row: dict) -> None:
    scores = scorer.scores(np.asarray(row["embedding"], np.float32)[None, :])[0]
    assert np.allclose(scores, row["scores"], rtol=0, atol=TOL["scores"])
    assert labels[int(np.argmax(scores))] == row["label"]
    assert math.isclose(float(np.sum(scores)), 1.0, abs_tol=1e-9)


@pytest.mark.parametrize("case", [c for c in INDEX["accept"] if c.get("engine")],
                         ids=lambda c: c["file"].removeprefix("accept/").removesuffix(".dpedge"))
def test_accepted_end_to_end_on_the_engine(case):
    engine = ENGINES[case["engine"]]
    if not installed(engine):
        pytest.skip(f"{engine} is not installed")
    if "load" in case:
        with pytest.raises(BundleError) as info:
            Classifier.load(_file(case), encoder=_pack(case), threads=1)
        assert (info.value.code, info.value.path) == (case["load"]["code"], case["load"]["path"])
        return
    clf = Classifier.load(_file(case), encoder=_pack(case), threads=1)
    for q in case["queries"]:
        if "code" in q:
            with pytest.raises(InputError) as info:
                clf.classify([q["text"]])
            assert info.value.code == q["code"]
            continue
        emb = clf.embed([q["text"]])[0]
        assert np.abs(emb - np.asarray(q["embedding"], np.float32)).max() <= TOL["embedding"], q["text"]
        if q["margin"] > TOL["label_margin"]:
            assert clf.classify([q["text"]])[0].label == q["label"]


@pytest.mark.parametrize("row", INDEX["text"], ids=lambda r: escape(r["text"])[:30])
def test_text_rules(row):
    t = row["text"]
    assert escape(t) == row["escaped"]
    assert escape_json(json.dumps(t, ensure_ascii=False)) == row["escaped_json"]
    assert label_key(t) == row["key"]
    bad, gap = unprintable(t), unassigned(t)
    assert (None if bad is None else ord(bad)) == row["unprintable"]
    assert (None if gap is None else ord(gap)) == row["unassigned"]
    assert shows_something(t) == row["shows_something"]


def test_the_corpus_has_arithmetic_cases_on_every_function():
    assert {r["function"] for r in INDEX["arithmetic"]} == {"exp", "log", "log1p", "expm1", "head_epsilon"}


@pytest.mark.parametrize("row", INDEX["arithmetic"], ids=lambda r: f"{r['function']}{r['args']}")
def test_arithmetic_is_the_contracts_bit_for_bit(row):
    """Section 7.1's exp, log, log1p, expm1 and the accountant's bound: the same IEEE bits as the
    corpus (which the Java and web readers check too)."""
    from runtime.bundle import exactmath
    from runtime.bundle.accounting import head_epsilon

    fn = head_epsilon if row["function"] == "head_epsilon" else getattr(exactmath, row["function"])
    assert struct.pack(">d", fn(*row["args"])).hex() == row["bits"]


@pytest.mark.parametrize("row", INDEX["numbers"], ids=lambda r: repr(r["value"]))
def test_numbers_are_written_by_the_contracts_rule(row):
    """Section 5: 10 significant digits of the exact value, ties to even (the privacy summary's `.10g`)."""
    assert f"{row['value']:.10g}" == row["text"]
