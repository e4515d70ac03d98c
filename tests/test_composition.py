"""The composition in a bundle's own words (privacy.composition, relation "composition", 1.2).

Every statement of the guarantee derives from one text in the contract (format/1/schema.json
"wording" "composition"): the exporter formats it for its releases, its head and its batches,
and a reader refuses any other words, so a bundle never states a guarantee its own numbers
contradict (a head bundle, delta > 0, that calls itself "pure, delta = 0"). The refusals are
format/tools/cases.py's (the corpus's), run here on the corpus's base bundle.
"""

from __future__ import annotations

import copy
import sys

import numpy as np
import pytest

from conftest import ROOT
from runtime import bundle as fmt
from runtime.bundle import wording
from runtime.contract import schema
from runtime.describe import bundle_info, format_info, privacy_summary
from runtime.errors import BundleError

sys.path.insert(0, str(ROOT / "format" / "tools"))
import cases  # noqa: E402

pytestmark = pytest.mark.check

#: The corpus bundle with no edit: format/tools/cases.py small_base (class_counts, class_sums, votes).
BASE = ROOT / "format" / "1" / "corpus" / "accept" / "scoring" / "blend-with-votes.dpedge"

PURE = "sequential: class_counts, then class_sums, then votes; their epsilons add up to epsilon"
HEAD = ("sequential, by basic composition: class_counts (pure epsilon-DP), then head ((epsilon, delta)-DP, DP-SGD); "
        "their epsilons add up to epsilon, and delta is the head's (the only release with a delta)")
BATCHES = ("parallel over 3 disjoint batches whose noisy releases are summed (each record, or each person, is in one "
           "batch: the builder's promise); within a batch, ")


@pytest.fixture(scope="module")
def base() -> dict:
    return cases.composed(cases.document(BASE.read_bytes()))


@pytest.fixture(scope="module")
def head(base) -> dict:
    """The base as a head bundle (class_counts and a head at the contract's bound): cases.head_base."""
    return cases.head_base(base)


def test_the_contracts_words_are_the_exporters_three_forms():
    """The exporter's words before 1.2 (exporter/privacy.py, exporter/extend.py), now the contract's."""
    words = schema()["wording"]["composition"]
    assert wording.composition(["class_counts", "class_sums", "votes"], head=False) == PURE
    assert wording.composition(["class_counts"], head=True) == HEAD
    assert wording.composition(["class_counts"], head=True, batches=3) == BATCHES + HEAD
    assert wording.composition(["votes"], head=False, batches=1) == words["pure"].replace("{releases}", "votes")
    assert "delta" not in wording.composition(["class_counts", "class_sums"], head=False)
    assert "pure epsilon-DP), then head ((epsilon, delta)-DP" in wording.composition(["class_counts"], head=True)


@pytest.mark.exporter
def test_the_exporters_budget_writes_the_contracts_words():
    pytest.importorskip("opendp")
    pytest.importorskip("dp_accounting")  # the exporter extra: skipped in the bare runtime's check tier
    from exporter.privacy import PrivacyBudget, default_shares, head_shares
    from noise_hooks import ConstantGaussian, ConstantNoise

    zeros = np.zeros(6, np.int32)
    pure = PrivacyBudget(1.0, shares=default_shares("aligned", 0.1), noise_for_tests=ConstantNoise())
    for name, sensitivity in (("class_counts", 1), ("class_sums", 388), ("votes", 32)):
        pure.release(name, zeros, sensitivity=sensitivity, mechanism="m")
    assert pure.privacy_facts()["composition"] == PURE
    head = PrivacyBudget(10.0, shares=head_shares(), delta=1e-5, noise_for_tests=ConstantNoise(),
                         gaussian_for_tests=ConstantGaussian())
    head.release("class_counts", zeros, sensitivity=1, mechanism="m")
    head.noisy_steps("head", sensitivity_l2=1024, noise_multiplier=2.0, sample_rate=1.0, steps=2, mechanism="m")
    assert head.privacy_facts()["composition"] == HEAD


def test_every_form_is_read_and_shown_as_written(base, head):
    three = copy.deepcopy(base)
    cases.put(three, "version", [1, 1])
    cases.put(three, "requires", ["privacy.batches"])
    cases.put(three, "privacy.batches", 3)
    cases.composed(three)
    without = copy.deepcopy(base)
    cases.drop(without, "privacy.composition")
    for doc, words in ((base, PURE), (head, HEAD), (three, BATCHES + PURE), (without, None)):
        b = fmt.unpack(cases.seal(doc))
        assert b.privacy.get("composition") == words
        if words is not None:  # python -m runtime.classify --info repeats them
            assert words in format_info(bundle_info(b, BASE), privacy_summary(b))


def test_words_the_numbers_contradict_are_refused(base, head):
    """The corpus's cases on a pure bundle (a head's words; another order; one batch's words on
    three; free text), then a head bundle worded pure or "pure, delta = 0" (as cases.head_cases
    words them) or as three batches, and pure words with a space more."""
    made = [(c.name, c.data) for c in cases.relation_cases(base) if c.code == "relation.composition"]
    assert {name for name, _ in made} == {"composition-of-a-head-on-a-pure-bundle", "composition-free-text",
                                          "composition-releases-in-another-order", "composition-of-one-batch-on-three"}
    for name, words in (("head-composition-says-pure", wording.composition(["class_counts"], head=False)),
                        ("head-composition-says-delta-zero", "pure, delta = 0"), ("head-on-three", BATCHES + HEAD)):
        made.append((name, cases._edit(head, ("privacy.composition", words))))
    made.append(("a-space-more", cases._edit(base, ("privacy.composition", PURE + " "))))
    for name, data in made:
        with pytest.raises(BundleError) as info:
            fmt.unpack(data)
        assert (info.value.code, info.value.path) == ("relation.composition", "privacy.composition"), name
        assert "must be" in str(info.value) and "\n" not in str(info.value)
