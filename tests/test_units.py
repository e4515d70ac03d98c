"""Per-person contribution bounding: at most K records per unit, chosen without looking at
labels or texts, uniformly among the unit's records."""

from collections import Counter

import numpy as np
import pytest

from exporter.units import UnitBound


def test_keeps_at_most_k_per_unit_and_everything_of_small_units():
    units = ["a"] * 10 + ["b"] * 3 + ["c"]
    bound = UnitBound(k=3)
    bound.plan(units)
    kept = list(bound.keep(list(enumerate(units)), unit_of=lambda r: r[1]))
    per_unit = Counter(u for _, u in kept)
    assert per_unit == {"a": 3, "b": 3, "c": 1}
    assert [i for i, u in kept if u != "a"] == list(range(10, 14))  # small units untouched, order kept
    assert (bound.stats.units, bound.stats.units_over_bound, bound.stats.records_dropped) == (3, 1, 7)


def test_the_choice_is_uniform_over_a_units_records():
    """Each of a unit's 6 records is kept with probability K/6 = 1/3, whatever its position:
    not the first K in file order. 3000 plans; each count is binomial(3000, 1/3): mean 1000,
    sd about 26, so the bound is 5 sd."""
    hits = np.zeros(6)
    for _ in range(3000):
        bound = UnitBound(k=2)
        bound.plan(["u"] * 6)
        for i, _ in bound.keep(list(enumerate(["u"] * 6)), unit_of=lambda r: r[1]):
            hits[i] += 1
    assert np.all(np.abs(hits - 1000) < 130), hits


def test_selection_ignores_labels_and_texts():
    """The keep decision is a function of unit and position only: the same plan applied to
    records with different labels and texts keeps the same positions."""
    units = ["a"] * 8 + ["b"] * 5
    bound = UnitBound(k=2)
    bound.plan(units)
    first = [i for i, _, _ in bound.keep([(i, u, "label-x") for i, u in enumerate(units)], unit_of=lambda r: r[1])]
    second = [i for i, _, _ in bound.keep([(i, u, f"other text {i}") for i, u in enumerate(units)],
                                          unit_of=lambda r: r[1])]
    assert first == second and len(first) == 4


def test_k_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        UnitBound(k=0)
