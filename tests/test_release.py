"""The vote tables' release: exact discrete Laplace noise of scale T/epsilon on every cell,
int16 clipping, and the privacy facts the budget writes for it."""

import math

import numpy as np
import pytest

from exporter.privacy import BudgetError, NeighbourRelation, PrivacyBudget
from exporter.votes import INT16_MAX, INT16_MIN, release_votes
from noise_hooks import ConstantNoise, OverspendingNoise

stats = pytest.importorskip("scipy.stats", reason="the dev extra's scipy")
pytestmark = pytest.mark.dev


def release(counts, epsilon, *, unit=None, k=1, noise=None):
    """The vote tables released alone with the whole ``epsilon`` (a --hashing random build)."""
    relation = NeighbourRelation.person(unit, k) if unit else NeighbourRelation(None, k)
    budget = PrivacyBudget(epsilon, relation, noise_for_tests=noise)
    r = release_votes(counts, budget)
    return r, {**budget.privacy_facts(), **vars(budget.releases["votes"])}

ALPHA = 1e-4  # significance of the goodness-of-fit tests (false alarm rate per test)


def discrete_laplace_pmf(k: np.ndarray, scale: float) -> np.ndarray:
    """P(K = k) = tanh(1 / (2 scale)) * exp(-|k| / scale)."""
    return math.tanh(1 / (2 * scale)) * np.exp(-np.abs(k) / scale)


def chi_square_p(samples: np.ndarray, scale: float) -> float:
    """Chi-square goodness of fit against the exact pmf; bins with expected count < 5 pooled into two tails."""
    n = samples.size
    kmax = 0
    while n * discrete_laplace_pmf(np.array([kmax + 1]), scale)[0] >= 5:
        kmax += 1
    ks = np.arange(-kmax, kmax + 1)
    expected_mid = n * discrete_laplace_pmf(ks, scale)
    tail = (n - expected_mid.sum()) / 2
    observed = np.concatenate([[np.sum(samples < -kmax)], [np.sum(samples == k) for k in ks], [np.sum(samples > kmax)]])
    expected = np.concatenate([[tail], expected_mid, [tail]])
    return float(stats.chisquare(observed, expected).pvalue)


def release_zero_tables(tables: int, epsilon: float, cells: int = 120_000) -> np.ndarray:
    buckets = max(1, cells // (tables * 4))
    return release(np.zeros((tables, buckets, 4), np.int32), epsilon)[0].votes.astype(np.int64)


@pytest.mark.parametrize("tables,epsilon", [(1, 1.0), (4, 1.0), (32, 8.0), (32, 1.0), (1, 4.0)])
def test_noise_matches_exact_discrete_laplace_of_scale_t_over_epsilon(tables, epsilon):
    scale = tables / epsilon
    noise = release_zero_tables(tables, epsilon)
    assert chi_square_p(noise.ravel(), scale) > ALPHA
    assert abs(noise.mean()) < 6 * math.sqrt(2 * scale**2 / noise.size) + 0.01


@pytest.mark.parametrize("wrong_factor", [0.5, 2.0, 1.25])
def test_the_goodness_of_fit_test_catches_a_wrong_scale(wrong_factor):
    """Power check: noise released at a wrong scale (e.g. T/(2 epsilon)) fails the same test."""
    tables, epsilon = 4, 1.0
    noise = release_zero_tables(tables, epsilon / wrong_factor)  # actual scale = wrong_factor * T/eps
    assert chi_square_p(noise.ravel(), tables / epsilon) < ALPHA


def test_every_cell_is_noised_including_empty_buckets():
    counts = np.zeros((8, 64, 3), np.int32)
    counts[:, 0, 0] = 50  # records only in bucket 0; buckets 1..63 are empty
    a = release(counts, 2.0)[0].votes
    b = release(counts, 2.0)[0].votes
    empty_a, empty_b = a[:, 1:, :], b[:, 1:, :]
    p_zero = math.tanh(1 / (2 * 4.0))  # scale 8/2
    assert abs(np.mean(empty_a != 0) - (1 - p_zero)) < 0.05
    assert np.mean(empty_a != empty_b) > 0.5  # a fresh draw each release, not a fixed pattern
    assert abs(float(a[:, 0, 0].mean()) - 50) < 6


def test_clipping_to_int16_after_noise():
    counts = np.zeros((2, 4, 2), np.int32)
    counts[0, 1, 1] = 40_000
    pinned, _ = release(counts, 1.0, noise=ConstantNoise(0))
    assert pinned.votes.dtype == np.int16 and pinned.votes[0, 1, 1] == INT16_MAX and pinned.clipped_cells == 1
    low, _ = release(np.zeros((1, 2, 2), np.int32), 1.0, noise=ConstantNoise(-40_000))
    assert (low.votes == INT16_MIN).all() and low.clipped_cells == 4
    real, _ = release(counts, 1.0)  # with real noise of scale 2, 40000 stays far above int16
    assert real.votes[0, 1, 1] == INT16_MAX and real.clipped_cells >= 1


def test_privacy_facts_state_the_guarantee():
    _, p = release(np.zeros((16, 8, 2), np.int32), 4.0)
    assert p["epsilon"] == 4.0 and p["delta"] == 0.0
    assert p["sensitivity_l1"] == 16 and p["noise_scale"] == 4.0
    assert p["neighbour_relation"] == "add or remove one record" and p["privacy_unit"] == "one record"
    assert "discrete Laplace" in p["mechanism"] and "every cell" in p["mechanism"]
    assert p["noise_library"] == "opendp" and p["noise_library_version"].startswith("0.")
    assert "NOT" not in p["noise_source"]
    assert p["statistic"] == "votes" and p["composition"].startswith("sequential: votes;")
    assert p["post_processing"] == "noisy votes clipped to int16 [-32768, 32767]"


def test_test_hook_marks_the_release_as_not_private():
    _, p = release(np.zeros((2, 2, 2), np.int32), 1.0, noise=ConstantNoise(0))
    assert "NOT differentially private" in p["noise_source"]


def test_refuses_noise_that_costs_more_than_the_budget():
    with pytest.raises(BudgetError, match="more than its share"):
        release(np.zeros((2, 2, 2), np.int32), 1.0, noise=OverspendingNoise())


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan")])
def test_rejects_invalid_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon must be a positive finite number"):
        release(np.zeros((1, 2, 2), np.int32), bad)


def test_per_person_release_scales_noise_by_records_per_person():
    _, p = release(np.zeros((16, 8, 2), np.int32), 4.0, unit="user_id", k=5)
    assert p["sensitivity_l1"] == 80 and p["noise_scale"] == 20.0 and p["max_records_per_unit"] == 5
    assert p["privacy_unit"] == "one person, up to 5 records" and "'user_id'" in p["neighbour_relation"]
    noise = release(np.zeros((4, 30_000, 1), np.int32), 1.0, unit="u", k=3)[0].votes
    assert chi_square_p(noise.ravel().astype(np.int64), 12.0) > ALPHA  # scale K*T/eps = 3*4/1


@pytest.mark.parametrize("unit,k", [(None, 2), ("user_id", 0)])
def test_records_per_person_needs_a_unit_and_a_positive_bound(unit, k):
    with pytest.raises(BudgetError, match="max records per unit"):
        release(np.zeros((1, 2, 2), np.int32), 1.0, unit=unit, k=k)
