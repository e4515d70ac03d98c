"""A head bundle (format 1.1) as the Python reader sees it: scored by the head alone, stated as an
approximate guarantee, written back as 1.1 with the head listed in requires.

The bundles are the conformance corpus's (format/1/corpus/accept/scoring/head*.dpedge): real
msgpack files whose facts hold; the exporter's own head builds are tested in tests/test_head.py.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from runtime import bundle as fmt
from runtime.bundle.accounting import head_epsilon
from runtime.describe import bundle_info, format_info, privacy_summary
from runtime.errors import BundleError
from runtime.scoring import MODES, Scorer

pytestmark = pytest.mark.check

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "format" / "1" / "corpus" / "accept" / "scoring"


@pytest.fixture(scope="module")
def head() -> fmt.Bundle:
    return fmt.load(CORPUS / "head.dpedge")


def test_the_head_scores_alone_as_the_spec_says(head):
    x = np.random.default_rng(3).standard_normal((5, head.encoder.dim))
    h = head.head
    logits = np.array([[sum((float(row[d]) - float(h.origin[d])) * float(h.weights[c, d]) for d in range(len(row)))
                        + float(h.bias[c]) for c in range(len(head.labels))] for row in x])
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    assert np.allclose(Scorer(head).scores(x), expected, rtol=0, atol=1e-12)
    assert np.array_equal(Scorer(head, "head").scores(x), Scorer(head).scores(x))
    for mode in set(MODES) - {"blend", "head"}:
        with pytest.raises(ValueError, match="to score with"):
            Scorer(head, mode)


def test_extreme_logits_stay_a_distribution():
    b = fmt.load(CORPUS / "head-logits-at-float32-bounds.dpedge")
    s = Scorer(b).scores(np.eye(b.encoder.dim))
    assert np.isfinite(s).all() and np.allclose(s.sum(axis=1), 1.0)


def test_a_head_bundle_is_never_called_pure(head):
    summary = privacy_summary(head)
    assert "pure DP)" not in summary and "not pure" in summary
    assert f"delta = {head.delta:.10g}" in summary and head.delta > 0
    text = format_info(bundle_info(head, CORPUS / "head.dpedge"), summary)
    assert "release 2             head: epsilon 4.0, delta 1e-05" in text
    assert "accountant: dp-accounting" in text


def test_delta_is_worded_as_the_contract_words_it_and_never_as_a_failure_probability(head):
    """Delta is the additive slack in the definition; every statement of it is the contract's
    text (schema.json wording.delta), in the summary, --info and the build's notice, and no
    source, doc or reader says "may fail with probability" of it."""
    import re
    import subprocess

    from exporter.stages import HEAD_NOTICE
    from runtime.bundle import wording
    from runtime.contract import schema

    words = schema()["wording"]["delta"]
    assert (wording.DELTA_SUMMARY, wording.DELTA_STATEMENT) == (words["summary"], words["statement"])
    assert "additive slack" in words["summary"] and "not a probability that it fails" in words["summary"]
    summary = privacy_summary(head)
    assert f"({words['summary']})" in summary
    assert words["statement"] in format_info(bundle_info(head, CORPUS / "head.dpedge"), summary)
    assert words["summary"] in HEAD_NOTICE.format(delta=1e-5)
    tracked = subprocess.run(["git", "ls-files", "--", "*.py", "*.ts", "*.java", "*.md", "*.js", "*.json", "*.html"],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    wrong = re.compile(r"(may fail|may not hold)[^.]{0,40}probability|probability[^.]{0,40}(may fail|fails outright)|"
                       r"except with probability at most")
    offenders = [f for f in tracked if "node_modules" not in f and not f.startswith("tests/")
                 and (ROOT / f).is_file() and wrong.search((ROOT / f).read_text(encoding="utf-8", errors="replace"))]
    assert offenders == []


def test_the_stated_epsilon_covers_the_contract_bound(head):
    h = head.head
    assert head_epsilon(h.noise_multiplier, h.sample_rate, h.steps, h.delta) <= h.epsilon
    assert math.isclose(head.epsilon, head.releases["class_counts"].epsilon + h.epsilon, rel_tol=1e-12)


def test_written_back_it_is_1_1_with_the_head_listed(head):
    again = fmt.unpack(fmt.pack(dataclasses.replace(head, requires=None)))
    assert again.version == (1, 1) and again.requires == ("releases.head",)
    assert again.head.steps == head.head.steps and np.array_equal(again.head.weights, head.head.weights)


def test_a_head_that_claims_less_than_its_noise_allows_is_refused(head):
    h = dataclasses.replace(head.head, epsilon=head.head.epsilon / 2)
    cheaper = dataclasses.replace(head, head=h, privacy={**head.privacy, "epsilon": head.epsilon - h.epsilon})
    with pytest.raises(BundleError) as info:
        fmt.unpack(fmt.pack(cheaper))
    assert (info.value.code, info.value.path) == ("relation.accountant", "releases.head.epsilon")
