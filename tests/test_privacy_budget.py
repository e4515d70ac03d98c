"""The privacy budget: one epsilon, spent in planned shares, every release's noise drawn
through it, and the bundle's privacy facts written from what was actually spent."""

from __future__ import annotations

import numpy as np
import pytest

from exporter.privacy import MAX_EXACT_VALUE, BudgetError, NeighbourRelation, PrivacyBudget, default_shares
from noise_hooks import ConstantNoise, OverspendingNoise

pytestmark = pytest.mark.exporter

ZEROS = np.zeros(6, np.int32)


def three_releases(epsilon=1.0, relation=None, noise=None, votes_share=0.1):
    budget = PrivacyBudget(epsilon, relation, shares=default_shares("aligned", votes_share), noise_for_tests=noise)
    budget.release("class_counts", ZEROS, sensitivity=1, mechanism="counts")
    budget.release("class_sums", ZEROS, sensitivity=388, mechanism="sums")
    budget.release("votes", ZEROS, sensitivity=32, mechanism="tables")
    return budget


def test_shares_add_up_to_epsilon_and_nothing_is_left():
    b = three_releases(3.0)
    shares = [r.epsilon for r in b.releases.values()]
    assert shares[:2] == pytest.approx([0.15, 2.55]) and sum(shares) <= 3.0
    assert sum(shares) == pytest.approx(3.0, rel=1e-12) and b.remaining == pytest.approx(0.0, abs=1e-12)
    assert list(b.releases) == ["class_counts", "class_sums", "votes"]
    assert "class_counts, then class_sums, then votes" in b.privacy_facts()["composition"]


def test_every_release_states_its_scale_and_sensitivity():
    for r in three_releases(2.0).releases.values():
        assert r.noise_scale == pytest.approx(r.sensitivity_l1 / r.epsilon)
    facts = three_releases(2.0).privacy_facts()
    assert facts["noise_source"].startswith("OpenDP make_laplace") and facts["max_records_per_unit"] == 1
    assert facts["delta"] == 0.0 and facts["epsilon"] == 2.0


def test_a_person_multiplies_every_sensitivity_by_k():
    b = three_releases(1.0, NeighbourRelation.person("user_id", 4))
    assert [r.sensitivity_l1 for r in b.releases.values()] == [4, 4 * 388, 4 * 32]
    facts = b.privacy_facts()
    assert facts["privacy_unit"] == "one person, up to 4 records" and facts["max_records_per_unit"] == 4


@pytest.mark.parametrize("k", [0, -1, 1.5])
def test_a_person_bound_below_one_is_refused_before_any_noise(k):
    """K = 0 would release exact statistics at scale 0."""
    with pytest.raises(BudgetError, match="max records per unit"):
        NeighbourRelation.person("user_id", k)


def test_a_statistic_cannot_be_released_twice_or_outside_the_plan():
    b = PrivacyBudget(1.0, shares={"votes": 1.0})
    with pytest.raises(BudgetError, match="no share of the budget is planned for 'class_sums'"):
        b.release("class_sums", ZEROS, sensitivity=1, mechanism="m")
    b.release("votes", ZEROS, sensitivity=1, mechanism="m")
    with pytest.raises(BudgetError, match="already released"):
        b.release("votes", ZEROS, sensitivity=1, mechanism="m")


@pytest.mark.parametrize("shares", [{"votes": 0.5}, {"votes": 0.7, "class_sums": 0.7}, {"votes": 0.0, "x": 1.0},
                                    {"votes": float("nan")}])
def test_a_plan_that_does_not_split_exactly_epsilon_is_refused(shares):
    with pytest.raises(BudgetError):
        PrivacyBudget(1.0, shares=shares)


def test_noise_that_costs_more_than_its_share_is_refused():
    b = PrivacyBudget(1.0, noise_for_tests=OverspendingNoise())
    with pytest.raises(BudgetError, match="more than its share"):
        b.release("votes", ZEROS, sensitivity=2, mechanism="m")
    assert b.spent == 0.0


@pytest.mark.parametrize("sensitivity", [0, -3, 2.5, True])
def test_the_sensitivity_must_be_a_positive_integer(sensitivity):
    with pytest.raises(BudgetError, match="sensitivity must be a positive integer"):
        PrivacyBudget(1.0).release("votes", ZEROS, sensitivity=sensitivity, mechanism="m")


def test_values_must_be_integers():
    with pytest.raises(BudgetError, match="integers only"):
        PrivacyBudget(1.0).release("votes", np.zeros(3), sensitivity=1, mechanism="m")


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_values_beyond_the_noise_domain_are_clamped_not_refused(dtype):
    """A refusal would be an abort that depends on the records; clamping keeps the sensitivity."""
    exact = np.array([2**31 - 1, MAX_EXACT_VALUE, 5, 2**62], dtype)
    if dtype is np.int64:
        exact = np.append(exact, [-(2**63), -MAX_EXACT_VALUE - 1])
    b = PrivacyBudget(1.0, noise_for_tests=ConstantNoise(0))
    noisy = b.release("votes", exact, sensitivity=1, mechanism="m")
    want = np.clip(exact.astype(object), -MAX_EXACT_VALUE, MAX_EXACT_VALUE).astype(np.int64)
    assert noisy.tolist() == want.tolist()
    assert b.clamped == {"votes": 2 if dtype is np.uint64 else 4}
    assert "clamp" not in repr(b.privacy_facts()) + repr(b.releases)  # the count is the console's only


def test_values_inside_the_noise_domain_are_not_counted_as_clamped():
    b = PrivacyBudget(1.0, noise_for_tests=ConstantNoise(0))
    b.release("votes", np.array([-MAX_EXACT_VALUE, MAX_EXACT_VALUE]), sensitivity=1, mechanism="m")
    assert b.clamped == {}


def test_facts_are_refused_while_a_planned_release_is_missing():
    b = PrivacyBudget(1.0, shares=default_shares("aligned"))
    b.release("class_counts", ZEROS, sensitivity=1, mechanism="m")
    with pytest.raises(BudgetError, match="planned releases not made: class_sums"):
        b.releases


def test_the_test_hook_marks_every_release_as_not_private():
    facts = three_releases(noise=ConstantNoise(0)).privacy_facts()
    assert "NOT differentially private" in facts["noise_source"]


def test_real_noise_is_drawn_at_the_stated_scale():
    b = PrivacyBudget(2.0)
    noisy = b.release("votes", np.zeros(200_000, np.int32), sensitivity=4, mechanism="m")
    # discrete Laplace of scale 2: variance 2 e^{-1/2} / (1 - e^{-1/2})^2 = 7.83...
    assert noisy.var() == pytest.approx(2 * np.exp(-0.5) / (1 - np.exp(-0.5)) ** 2, rel=0.05)
    assert b.releases["votes"].noise_scale == 2.0
