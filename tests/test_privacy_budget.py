"""The privacy budget: one epsilon, spent in planned shares, every release's noise drawn
through it, and the bundle's privacy facts written from what was actually spent."""

from __future__ import annotations

import numpy as np
import pytest

from exporter.privacy import BudgetError, NeighbourRelation, PrivacyBudget, default_shares
from noise_hooks import ConstantNoise, OverspendingNoise

ZEROS = np.zeros(6, np.int32)


def three_releases(epsilon=1.0, relation=None, noise=None, votes_share=0.1):
    budget = PrivacyBudget(epsilon, relation, shares=default_shares("aligned", votes_share), noise_for_tests=noise)
    budget.release("class_counts", ZEROS, sensitivity=1, mechanism="counts")
    budget.release("class_sums", ZEROS, sensitivity=388, mechanism="sums")
    budget.release("votes", ZEROS, sensitivity=32, mechanism="tables")
    return budget


def test_shares_add_up_to_epsilon_and_nothing_is_left():
    b = three_releases(3.0)
    facts = b.privacy_facts()
    shares = [r["epsilon"] for r in facts["releases"]]
    assert shares[:2] == pytest.approx([0.15, 2.55]) and sum(shares) <= 3.0
    assert sum(shares) == pytest.approx(3.0, rel=1e-12) and b.remaining == pytest.approx(0.0, abs=1e-12)
    assert [r["statistic"] for r in facts["releases"]] == facts["released_statistics"] == [
        "class_counts", "class_sums", "votes"]
    # the top level states the vote tables' release (what format-1 readers check)
    assert facts["sensitivity_l1"] == 32 and facts["noise_scale"] == facts["releases"][2]["noise_scale"]


def test_without_tables_the_top_level_states_the_last_release():
    b = PrivacyBudget(2.0, shares=default_shares("aligned"))
    b.release("class_counts", ZEROS, sensitivity=1, mechanism="counts")
    b.release("class_sums", ZEROS, sensitivity=388, mechanism="sums")
    facts = b.privacy_facts()
    assert facts["released_statistics"] == ["class_counts", "class_sums"] and facts["sensitivity_l1"] == 388
    assert facts["noise_scale"] == pytest.approx(388 / 1.9)


def test_every_release_states_scale_sensitivity_and_its_noise_source():
    facts = three_releases(2.0).privacy_facts()
    for r in facts["releases"]:
        assert r["noise_scale"] == pytest.approx(r["sensitivity_l1"] / r["epsilon"])
        assert r["noise_source"].startswith("OpenDP make_laplace") and r["max_records_per_unit"] == 1


def test_a_person_multiplies_every_sensitivity_by_k():
    facts = three_releases(1.0, NeighbourRelation.person("user_id", 4)).privacy_facts()
    assert [r["sensitivity_l1"] for r in facts["releases"]] == [4, 4 * 388, 4 * 32]
    assert facts["privacy_unit"] == "one person, up to 4 records" and facts["max_records_per_unit"] == 4


@pytest.mark.parametrize("k", [0, -1, 1.5])
def test_a_person_bound_below_one_is_refused_before_any_noise(k):
    """Defect 3 of issue 16: K = 0 used to release exact statistics at scale 0."""
    with pytest.raises(BudgetError, match="max records per unit"):
        NeighbourRelation.person("user_id", k)


def test_a_statistic_cannot_be_released_twice_or_outside_the_plan():
    b = PrivacyBudget(1.0, shares={"votes": 1.0})
    with pytest.raises(BudgetError, match="no share of the budget is planned for 'class_stats'"):
        b.release("class_stats", ZEROS, sensitivity=1, mechanism="m")
    b.release("votes", ZEROS, sensitivity=1, mechanism="m")
    with pytest.raises(BudgetError, match="already released"):
        b.release("votes", ZEROS, sensitivity=1, mechanism="m")


@pytest.mark.parametrize("shares", [{"votes": 0.5}, {"votes": 0.7, "class_stats": 0.7}, {"votes": 0.0, "x": 1.0},
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


def test_values_must_be_integers_that_fit_the_noise_domain():
    b = PrivacyBudget(1.0)
    with pytest.raises(BudgetError, match="integers only"):
        b.release("votes", np.zeros(3), sensitivity=1, mechanism="m")
    with pytest.raises(BudgetError, match="do not fit"):
        b.release("votes", np.array([2**31 - 1], np.int64), sensitivity=1, mechanism="m")


def test_facts_are_refused_while_a_planned_release_is_missing():
    b = PrivacyBudget(1.0, shares=default_shares("aligned"))
    b.release("class_counts", ZEROS, sensitivity=1, mechanism="m")
    with pytest.raises(BudgetError, match="planned releases not made: class_sums"):
        b.privacy_facts()


def test_the_test_hook_marks_every_release_as_not_private():
    facts = three_releases(noise=ConstantNoise(0)).privacy_facts()
    assert "NOT differentially private" in facts["noise_source"]
    assert all("NOT differentially private" in r["noise_source"] for r in facts["releases"])


def test_real_noise_is_drawn_at_the_stated_scale():
    b = PrivacyBudget(2.0)
    noisy = b.release("votes", np.zeros(200_000, np.int32), sensitivity=4, mechanism="m")
    # discrete Laplace of scale 2: variance 2 e^{-1/2} / (1 - e^{-1/2})^2 = 7.83...
    assert noisy.var() == pytest.approx(2 * np.exp(-0.5) / (1 - np.exp(-0.5)) ** 2, rel=0.05)
    assert b.privacy_facts()["noise_scale"] == 2.0
