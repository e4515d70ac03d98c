"""The one scoring rule of format 1.0 (docs/bundle-format.md section 7), by hand on small
bundles, and through the CLI on a real one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import DATA
from runtime import Classifier
from runtime.bundle.schema import BOOST_MAX, Bundle, EncoderSpec, ReleaseFacts, Scoring
from runtime.errors import InputError
from runtime.scoring import Scorer, prior_boost, sums_noise_norm

#: The scorer reads no encoder: a stand-in for the encoder field of these hand-made bundles.
NO_ENCODER = EncoderSpec("onnx", b"", "", 2, 2, "", ("input_ids",), "out", "check", np.array([1.0, 0.0], np.float32))


def hand_bundle(sums, counts, *, prior=True, epsilon=2.0, k_per_unit=1, sums_scale=1.0, pull=0.5, votes=None,
                planes=None) -> Bundle:
    """A 2-d bundle with class sums on a grid of 100 (and optionally vote tables)."""
    releases = {"class_counts": ReleaseFacts("class_counts", epsilon / 2, 1, 2 / epsilon, "m"),
                "class_sums": ReleaseFacts("class_sums", epsilon / 2, 100, sums_scale, "m", grid=100, clip_l1=1.0)}
    return Bundle(labels=("a", "b"), label_descriptions=("da", "db") if prior else None,
                  privacy={"epsilon": epsilon, "max_records_per_unit": k_per_unit, "privacy_unit": "one record"},
                  releases=releases, encoder=NO_ENCODER,
                  class_counts=np.asarray(counts, np.int32), class_sums=np.asarray(sums, np.int32),
                  origin=np.array([0.1, 0.0], np.float32), projection=np.eye(2, dtype=np.float32),
                  prior=np.eye(2, dtype=np.float32) if prior else None, votes=votes, hyperplanes=planes,
                  scoring=Scoring(0.04, 0.05, 100.0, pull))


def soft(v: np.ndarray, t: float) -> np.ndarray:
    e = np.exp(v / t - (v / t).max())
    return e / e.sum()


def test_the_blend_on_a_hand_example_without_the_pull():
    """cos(z, S_c) at tau_c, plus the prior's softmax at tau_p times R C K / (epsilon N), over
    1 + boost: a distribution."""
    b = hand_bundle([[300, 100], [-100, 200]], [40, 60], pull=0.0)
    x = np.array([[0.6, 0.8]])
    z = np.array([0.5, 0.8])
    sums = np.array([[3.0, 1.0], [-1.0, 2.0]])
    cos = (sums / np.linalg.norm(sums, axis=1, keepdims=True)) @ (z / np.linalg.norm(z))
    boost = 100 * 2 * 1 / (2.0 * 100)
    s = Scorer(b)
    assert s.boost == pytest.approx(boost)
    assert np.allclose(s.scores(x)[0], (soft(cos, 0.04) + boost * soft(np.array([0.6, 0.8]), 0.05)) / (1 + boost))


def test_the_pull_moves_each_sum_toward_its_description_by_the_stated_noise():
    """S_c / m + (a nu / m) unit(P (e_c - origin)), nu = sqrt(2 k) noise_scale / grid: a large
    class's sum barely turns, a small noisy one's leans on its description."""
    b = hand_bundle([[3000, 1000], [-100, 50]], [400, 6], sums_scale=300.0)
    nu = sums_noise_norm(b)
    assert nu == pytest.approx(2 * 3.0)
    toward = np.array([[0.9, 0.0], [-0.1, 1.0]])
    pulled = np.array([[30.0, 10.0], [-1.0, 0.5]]) + 0.5 * nu * toward / np.linalg.norm(toward, axis=1, keepdims=True)
    z = np.array([0.3, 0.8])                                   # x = (0.4, 0.8), origin (0.1, 0)
    cos = (pulled / np.linalg.norm(pulled, axis=1, keepdims=True)) @ (z / np.linalg.norm(z))
    x = np.array([[0.4, 0.8]])
    assert np.allclose(Scorer(b, "centroids").scores(x)[0], soft(cos, 0.04))
    assert Scorer(hand_bundle([[3000, 1000], [-100, 50]], [400, 6], sums_scale=300.0, pull=0.0),
                  "centroids").scores(x).argmax() == 0      # the noisy small class loses...
    assert Scorer(b, "centroids").scores(x).argmax() == 1   # ...until it leans on its description


def test_a_pull_stronger_than_one_is_rescaled_not_overflowed():
    """m = max(1, a nu): only directions are read, so a huge stated noise cannot overflow."""
    b = hand_bundle([[300, 100], [-100, 200]], [40, 60], sums_scale=1e15, pull=1000.0)
    scores = Scorer(b).scores(np.array([[0.6, 0.8], [0.0, 0.0]]))
    assert np.isfinite(scores).all()
    # the pull dominates: each class direction is its description's
    assert np.allclose(Scorer(b, "centroids").scores(np.array([[1.0, 0.0]]))[0][0], 1.0, atol=1e-6)


def test_without_descriptions_there_is_no_prior_and_no_pull():
    b = hand_bundle([[300, 100], [-100, 200]], [40, 60], prior=False)
    x = np.array([[0.6, 0.8]])
    assert np.allclose(Scorer(b).scores(x), Scorer(b, "centroids").scores(x))
    with pytest.raises(ValueError, match="no label descriptions"):
        Scorer(b, "prior")


def test_the_prior_boost_is_linear_in_k_and_capped():
    assert prior_boost(hand_bundle([[1, 1], [1, 1]], [5000, 5000], epsilon=1.0)) == pytest.approx(0.02)
    assert prior_boost(hand_bundle([[1, 1], [1, 1]], [500, 500], epsilon=1.0, k_per_unit=3)) == pytest.approx(0.6)
    assert prior_boost(hand_bundle([[1, 1], [1, 1]], [-30, 10], epsilon=1e-6)) == BOOST_MAX  # N at least 1


def test_vote_tables_add_their_normalised_positive_votes():
    planes = np.array([[[1.0, 0.0], [0.0, 1.0]]], np.float32)             # 1 table, 2 bits
    votes = np.array([[[1, -5], [2, 0], [0, 4], [8, 8]]], np.int16)       # buckets 0..3
    b = hand_bundle([[300, 100], [-100, 200]], [40, 60], votes=votes, planes=planes)
    x = np.array([[0.6, 0.8], [-0.6, -0.8]])                              # buckets 3 and 0
    plain = Scorer(hand_bundle([[300, 100], [-100, 200]], [40, 60]))
    no_votes = plain.scores(x) * (1 + plain.boost)
    assert np.allclose(Scorer(b).scores(x) * (2 + plain.boost) - no_votes, [[0.5, 0.5], [1.0, 0.0]])
    # votes alone: Algorithm 2's sums (negative cells included), negative sums read as 0, over
    # their total; a query whose every sum is at most 0 is uniform
    assert Scorer(b, "votes").scores(x).tolist() == [[0.5, 0.5], [1.0, 0.0]]
    none = hand_bundle([[300, 100], [-100, 200]], [40, 60], votes=np.array([[[-1, -5], [2, 0], [0, 4], [-8, 0]]],
                                                                          np.int16), planes=planes)
    assert Scorer(none, "votes").scores(x[:1]).tolist() == [[0.5, 0.5]]


@pytest.mark.parametrize("mode", ["blend", "centroids", "prior", "votes"])
def test_scores_are_a_distribution_over_the_labels(mode):
    planes = np.array([[[1.0, 0.0], [0.0, 1.0]]], np.float32)
    votes = np.array([[[1, -5], [2, 0], [0, 4], [8, 8]]], np.int16)
    b = hand_bundle([[300, 100], [-100, 200]], [40, 60], votes=votes, planes=planes)
    x = np.random.default_rng(3).standard_normal((50, 2))
    scores = Scorer(b, mode).scores(np.vstack([x, np.zeros((1, 2))]))
    assert (scores >= 0).all() and np.allclose(scores.sum(axis=1), 1.0)


def test_classify_cli_shows_releases_and_scores_components(dp_bundle, capsys):
    from runtime.classify import main

    assert main(["--bundle", str(dp_bundle), "--info"]) == 0
    out = capsys.readouterr().out
    assert "release 1             class_counts: epsilon 0.4" in out and "release 2             class_sums" in out
    assert "hashing     none" in out and "format      1.0" in out
    for mode in ("blend", "centroids", "prior"):
        assert main(["--bundle", str(dp_bundle), "--json", "--score", mode, "wake me up at seven"]) == 0
        row = json.loads(capsys.readouterr().out)
        assert row["label"] == max(row["scores"], key=row["scores"].get)
    assert main(["--bundle", str(dp_bundle), "--score", "votes", "hello"]) == 2
    assert "no vote tables" in capsys.readouterr().err


def test_blend_is_better_than_chance_and_is_the_sum_of_its_parts(dp_bundle):
    clf = Classifier.load(dp_bundle, threads=1)
    rows = [json.loads(line) for line in (DATA / "test.jsonl").read_text().splitlines()]
    acc = np.mean([p.label == r["label"] for p, r in zip(clf.classify([r["text"] for r in rows]), rows)])
    assert acc > 0.6, acc
    x = clf.embed([r["text"] for r in rows[:20]])
    s = Scorer(clf.bundle)
    n, c = float(clf.bundle.class_counts.sum()), len(clf.labels)
    assert s.boost == pytest.approx(100 * c / (8 * n))      # R C K / (epsilon N)
    parts = {m: Scorer(clf.bundle, m).scores(x) for m in ("centroids", "prior")}
    assert np.allclose(s.scores(x), (parts["centroids"] + s.boost * parts["prior"]) / (1 + s.boost))
    assert np.allclose(s.scores(x).sum(axis=1), 1.0)


def test_component_without_its_statistics_is_a_clear_error(random_bundle):
    with pytest.raises(InputError, match="no class statistics"):
        Classifier.load(random_bundle, score="centroids")
