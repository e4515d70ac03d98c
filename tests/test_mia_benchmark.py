"""The membership-inference benchmark (benchmarks/mia.py).

A smoke run on the project's own data, so the script cannot rot, and checks that its
touched-cells simulation of large releases reads exactly what the product's dense path
(VoteCounter, release_votes, vote_sums) would give for the same queries.
"""

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import DATA, ROOT
from exporter.class_stats import ClassStatsRelease
from exporter.hyperplanes import draw_hyperplanes
from exporter.privacy import PrivacyBudget
from exporter.public_basis import PublicBasis
from exporter.votes import INT16_MAX, VoteCounter, release_votes
from noise_hooks import ConstantNoise
from runtime import bundle as fmt
from runtime.scoring import Scorer, vote_sums
from runtime.simhash import SimHasher

sys.path.insert(0, str(ROOT / "benchmarks"))
import mia  # noqa: E402

#: The releases need OpenDP; the attack (scikit-learn) and the plot the dev extra.
pytestmark = [pytest.mark.exporter, pytest.mark.dev]

TABLES, BITS, DIM, CLASSES = 5, 6, 24, 4
EXACT = [mia.Setting("inf", np.inf, sparse=False), mia.Setting("inf-sparse", np.inf, sparse=True)]


@pytest.fixture(scope="module")
def hashed():
    """Synthetic unit embeddings (test data, not noise): 200 training records, and queries that
    mix 60 of them with 100 fresh points, so some buckets are shared and some are empty."""
    rng = np.random.default_rng(0)
    points = rng.standard_normal((300, DIM))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    labels = rng.integers(0, CLASSES, size=300)
    hasher = SimHasher(draw_hyperplanes(11, TABLES, BITS, DIM))
    train_codes = hasher.buckets(points[:200])
    query_codes = hasher.buckets(np.vstack([points[:60], points[200:]]))
    counter = VoteCounter(TABLES, BITS, CLASSES)
    counter.add(train_codes, labels[:200])
    touched = mia.touched_cells(train_codes, labels[:200], query_codes, BITS, CLASSES)
    return counter.counts, query_codes, touched


def test_touched_cells_are_the_dense_exact_counts(hashed):
    counts, codes, touched = hashed
    dense = counts[np.arange(TABLES)[None, :], codes]  # (queries, tables, classes)
    assert np.array_equal(touched.counts[touched.index], dense)
    assert len(touched.counts) == len(np.unique(codes + (np.arange(TABLES) << BITS)))  # one cell per pair
    empty = (dense.sum(axis=2) == 0).any()
    assert empty, "the fixture should have queries in empty buckets, or inf-sparse is not exercised"


@pytest.mark.parametrize("setting", EXACT, ids=lambda s: s.name)
def test_exact_settings_observe_the_same_through_both_paths(hashed, setting):
    counts, codes, touched = hashed
    sim, dense = mia.observe_touched(touched, TABLES, setting), mia.observe_dense(counts, codes, setting)
    assert np.array_equal(sim.votes, dense.votes)
    assert np.array_equal(sim.votes, vote_sums(codes, counts))
    assert np.array_equal(sim.hit_rate, dense.hit_rate)
    if setting.sparse:
        assert sim.hit_rate.min() < 1 and sim.hit_rate[:60].min() == 1  # members always hit their own bucket
    else:
        assert (sim.hit_rate == 1).all()


def test_simulated_release_with_noise_removed_equals_the_dense_release(hashed):
    counts, codes, touched = hashed
    dp = mia.Setting("1", 1.0, sparse=False)
    sim = mia.observe_touched(touched, TABLES, dp, source=ConstantNoise(0))
    released = release_votes(counts, PrivacyBudget(1.0, noise_for_tests=ConstantNoise(0))).votes
    assert np.array_equal(sim.votes, vote_sums(codes, released))
    assert (sim.hit_rate == 1).all()
    # Same int16 clipping as release_votes.
    assert (mia.noisy_touched_cells(touched.counts, TABLES, 1.0, ConstantNoise(40_000)) == INT16_MAX).all()


def test_simulated_noise_is_drawn_once_per_cell(hashed):
    """Real OpenDP noise: a query repeated reads the same noisy cells, so gets the same votes."""
    _, codes, touched = hashed
    dp = mia.Setting("1", 1.0, sparse=False)
    doubled = mia.TouchedCells(touched.counts, np.vstack([touched.index, touched.index]))
    obs = mia.observe_touched(doubled, TABLES, dp)
    n = len(codes)
    assert np.array_equal(obs.votes[:n], obs.votes[n:])
    exact = mia.observe_touched(touched, TABLES, EXACT[0]).votes
    assert (obs.votes[:n] != exact).any()  # noise of scale 5 on 160 x 4 sums: all zero is out of reach


def test_pairs_match_class_counts_and_split_half_of_each_group():
    rng = np.random.default_rng(3)
    train_labels, test_labels = rng.integers(0, 3, 400), rng.integers(0, 3, 90)
    pairs = mia.draw_pairs(train_labels, test_labels, max_pairs=60, rng=np.random.default_rng(1))
    assert len(pairs.members) == len(pairs.nonmembers) == 60
    assert len(np.unique(pairs.members)) == 60 and len(np.unique(pairs.nonmembers)) == 60
    assert np.array_equal(np.bincount(train_labels[pairs.members], minlength=3),
                          np.bincount(test_labels[pairs.nonmembers], minlength=3))
    member = pairs.is_member
    assert pairs.attack_train[member].sum() == pairs.attack_train[~member].sum() == 30


def test_benchmark_runs_and_writes_json_and_plot(exported_encoder, tmp_path):
    out, png = tmp_path / "mia.json", tmp_path / "mia.png"
    r = subprocess.run([sys.executable, "benchmarks/mia.py", "--data", str(DATA), "--grid", "4x8,16x2,default",
                        "--epsilons", "inf,inf-sparse,1", "--seeds", "1", "--max-dense-cells", "100000",
                        "--shift-control", "--out", str(out), "--plot", str(png)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "exact kNN (non-private)" in r.stdout and "| assistant | 16x2* | 1 |" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    result = json.loads(out.read_text())
    assert result["config"]["settings"] == ["inf", "inf-sparse", "1"]
    assert result["pairs"]["assistant"] == {"members": 175, "nonmembers": 175, "attack_test": 176}
    rows = result["rows"]
    knn = [row for row in rows if "setting" not in row]
    hashed_rows = {(row["hashing"], row["setting"]): row for row in rows if "setting" in row}
    assert len(knn) == 1 and set(hashed_rows) == {(h, s) for h in ("4x8", "16x2", "default")
                                                  for s in ("inf", "inf-sparse", "1")}
    for row in rows:
        for attack in ("standard", "label_aware"):
            a = row["attacks"][attack]
            assert len(a["runs"]) == 1 and 0 <= a["mean"] <= 1 and a["advantage"] == pytest.approx(a["mean"] - 0.5)
    assert knn[0]["attacks"]["standard"]["mean"] > 0.9  # a member finds itself at similarity 1

    for (hashing, setting), row in hashed_rows.items():
        assert row["release"] == ("touched cells only (simulation)" if hashing == "16x2" else "dense")
        if hashing == "default":
            assert row["hit_rate"] is None  # the default bundle has no tables
        elif setting != "inf-sparse":  # DP and dense exact tables: every bucket present
            assert row["hit_rate"]["constant"] and row["hit_rate"]["value"] == 1.0
    dp = hashed_rows[("16x2", "1")]
    assert (dp["epsilon"], dp["noise_scale"]) == (1.0, 2.0)
    assert dp["dp_accuracy_bound"] == pytest.approx(np.e / (1 + np.e))
    default = hashed_rows[("default", "1")]  # class counts and class sums within one epsilon
    assert (default["tables"], default["bits"], default["noise_scale"]) == (None, None, None)
    assert default["dp_accuracy_bound"] == pytest.approx(np.e / (1 + np.e))
    sparse = hashed_rows[("16x2", "inf-sparse")]["hit_rate"]
    assert sparse["members_mean"] == 1.0 and sparse["nonmembers_mean"] < 0.5  # absent buckets give members away

    controls = {row["hashing"]: row for row in result["shift_controls"]}
    assert set(controls) == {"4x8", "16x2", "default"} and "Shift control" in r.stdout
    assert all(0 <= c["attacks"][a]["mean"] <= 1 for c in controls.values() for a in ("standard", "label_aware"))
    # Without the members in the table, the fine 16x2 hashing no longer tells them apart.
    assert controls["16x2"]["attacks"]["standard"]["mean"] < hashed_rows[("16x2", "inf")]["attacks"]["standard"]["mean"]


def test_centroid_features_read_the_released_statistics():
    """The default bundle's attack features: the cosine to each noisy class sum, Gaussian-rule
    logits and distances to the centred means, the top-1 margin, |z|, and (label-aware) the
    own class's cosine, logit, distance and rank."""
    basis = PublicBasis(np.zeros(2, np.float32), np.eye(2, dtype=np.float32))
    stats = ClassStatsRelease(np.array([[400, 0], [0, 400]], np.int32), np.array([4, 4], np.int32), basis)  # grid units
    q = np.array([[0.9, 0.1], [0.2, 0.7]])
    plain = mia.centroid_features(stats, 1.0, q, None)
    aware = mia.centroid_features(stats, 1.0, q, np.array([0, 0]))
    assert plain.shape == (2, 2 + 2 + 2 + 1 + 1) and aware.shape == (2, 12)
    assert np.allclose(plain[:, :2], [[0.9 / np.hypot(0.9, 0.1), 0.1 / np.hypot(0.9, 0.1)],
                                      [0.2 / np.hypot(0.2, 0.7), 0.7 / np.hypot(0.2, 0.7)]])
    centred = np.array([[0.5, -0.5], [-0.5, 0.5]])  # means (1, 0) and (0, 1) less their mean (0.5, 0.5)
    z = q - 0.5                                     # |q|_1 <= 1: the clip leaves q as it is
    assert np.allclose(plain[:, 2:4], z @ centred.T - 0.25)
    assert aware[:, -1].tolist() == [0, 1]          # own-class rank


def test_centroid_cosines_are_the_runtimes_centroid_rule_without_the_pull(dp_bundle):
    """On a real default bundle: the features' cosines, over the temperature, give the runtime's
    centroid probabilities when the bundle's pull is 0 (the pull is public post-processing the
    attacker can add or leave out)."""
    b = fmt.load(dp_bundle)
    stats = ClassStatsRelease(b.class_sums, b.class_counts, PublicBasis(b.origin, b.projection))
    q = np.random.default_rng(2).standard_normal((50, b.encoder.dim))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    cosine = mia.centroid_features(stats, b.releases["class_sums"].clip_l1, q, None)[:, :len(b.labels)]
    unpulled = dataclasses.replace(b, scoring=dataclasses.replace(b.scoring, description_pull=0.0))
    logits = cosine / b.scoring.centroid_temperature
    softmax = np.exp(logits - logits.max(axis=1, keepdims=True))
    softmax /= softmax.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(softmax, Scorer(unpulled, "centroids").scores(q), rtol=1e-9)
