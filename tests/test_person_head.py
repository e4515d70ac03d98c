"""The person-level head (``--delta`` with ``--unit-column``): user-level DP-SGD.

What must hold whatever the records: a person's contribution to a step is the exact integer sum
of their records' clipped gradients, bounded as a whole to the stated sensitivity, and a
function of their records alone (bit for bit, in any order and any batch); a person with one
record is exactly the record-level head's record; the rule reads the noisy number of persons.
A neighbour audit that adds or removes one whole person sees the real step within its privacy
profile and catches a person not clipped as a whole. The build goes through the CLI.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DATA, ROOT, build_options
from exporter.head import CLIP_L2, EXPECTED_BATCH, GRID, InMemory, PerUnit, release_head, sensitivity_l2, unit_bound
from exporter.options import BuildError, check_options
from exporter.privacy import NeighbourRelation, PrivacyBudget, head_shares
from noise_hooks import ConstantGaussian

pytestmark = pytest.mark.exporter

DELTA_L2 = sensitivity_l2(GRID, CLIP_L2)
STEP = dict(sample_rate=1.0, clip_l2=CLIP_L2, grid=GRID)


def _case(n: int, classes: int = 4, dim: int = 16, seed: int = 0):
    rng = np.random.default_rng(seed)  # test data, not noise
    x = rng.standard_normal((n, dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32), rng.integers(0, classes, n), rng.standard_normal((classes, dim)), \
        rng.standard_normal(classes), np.zeros(dim, np.float32)


def _exact_norm2(row: np.ndarray) -> int:
    return sum(int(v) * int(v) for v in np.asarray(row).reshape(-1))


def test_a_person_with_one_record_is_the_record_level_heads_record():
    x, y, w, b, o = _case(50)
    assert np.array_equal(PerUnit(x, y, np.arange(50) * 3 + 1, o)(w, b, **STEP), InMemory(x, y, o)(w, b, **STEP))


def test_a_persons_contribution_depends_on_their_records_alone_in_any_order_and_batch():
    x, y, w, b, o = _case(60, seed=1)
    units = np.arange(60) % 15  # 15 persons of 4 records, interleaved
    whole = PerUnit(x, y, units, o)(w, b, **STEP)
    alone = sum(PerUnit(x[units == u], y[units == u], units[units == u], o)(w, b, **STEP) for u in range(15))
    assert np.array_equal(whole, alone)
    perm = np.random.default_rng(2).permutation(60)  # another order, other ids for the same persons
    assert np.array_equal(PerUnit(x[perm], y[perm], units[perm] * 7 + 3, o)(w, b, **STEP), whole)
    # and the sum is not that of the records: their persons were bounded as a whole
    assert not np.array_equal(whole, InMemory(x, y, o)(w, b, **STEP))


def test_a_whole_person_moves_a_step_by_at_most_the_sensitivity(monkeypatch):
    x, y, w, b, o = _case(40, classes=2, dim=4, seed=3)
    units = np.arange(40) % 10
    outlier = np.tile(np.array([[10.0, 0, 0, 0]], np.float32), (8, 1))  # K = 8 records pulling one way
    with_person = (np.vstack([x, outlier]), np.append(y, [1] * 8), np.append(units, [99] * 8))

    def move() -> int:
        return _exact_norm2(PerUnit(*with_person, o)(w, b, **STEP) - PerUnit(x, y, units, o)(w, b, **STEP))

    assert DELTA_L2 ** 2 // 2 < move() <= DELTA_L2 ** 2
    monkeypatch.setattr("exporter.head.unit_bound", lambda sums, bound: sums)  # the bug: records clipped alone
    assert move() > 16 * DELTA_L2 ** 2


_ROWS = st.integers(2, 6).flatmap(lambda n: st.lists(st.lists(st.integers(-2**40, 2**40), min_size=n, max_size=n),
                                                      min_size=1, max_size=5))


@settings(max_examples=300, deadline=None)
@given(rows=_ROWS, bound=st.integers(1, 2**20), edge=st.sampled_from([-1, 0, 1, None]))
def test_unit_bound_puts_every_row_under_the_bound_and_keeps_rows_within_it(rows, bound, edge):
    a = np.array(rows, np.int64)
    if edge is not None:  # aim at the edge: a Pythagorean row at exactly the bound, one step in or out
        a[0, :2] = [3 * bound, 4 * bound + edge]
        bound = 5 * bound
    out = unit_bound(a, bound)
    for before, after in zip(a, out):
        assert _exact_norm2(after) <= bound * bound
        if _exact_norm2(before) <= bound * bound:
            assert np.array_equal(before, after)
        else:
            assert np.all(np.abs(after) <= np.abs(before)) and np.all(np.sign(after) * np.sign(before) >= 0)
        assert np.array_equal(unit_bound(before[None], bound)[0], after)  # a function of the row alone


def test_the_person_level_rule_reads_the_noisy_number_of_persons():
    x, y, w, b, o = _case(40, classes=2, seed=4)
    person = NeighbourRelation.person("user", 4)
    budget = PrivacyBudget(5.0, person, shares=head_shares(person=True), delta=1e-6,
                           gaussian_for_tests=ConstantGaussian())
    counts = np.array([20_000, 20_000])  # N of the records; the rule must read the 5,000 persons instead
    head = release_head(PerUnit(x, y, np.arange(40) % 10, o), o, counts, budget, persons=5000, max_steps=3)
    assert head.sample_rate == EXPECTED_BATCH / 5000 and head.steps == 3
    assert "every person joins the batch" in head.mechanism
    with pytest.raises(BuildError, match="released noisy person count"):
        release_head(PerUnit(x, y, np.arange(40) % 10, o), o, counts, PrivacyBudget(
            5.0, person, shares=head_shares(person=True), delta=1e-3, gaussian_for_tests=ConstantGaussian()),
            persons=5000)


def test_a_person_level_head_on_ray_is_refused_by_name(tmp_path):
    opts = build_options(tmp_path / "h.dpedge", seed=None, delta=1e-5, unit_field="user", max_records_per_unit=4,
                         engine="ray")
    with pytest.raises(BuildError, match="--engine ray does not support --unit-column"):
        check_options(opts, classes=7)
    with pytest.raises(BuildError, match="needs --max-records-per-unit"):
        check_options(build_options(tmp_path / "h.dpedge", seed=None, delta=1e-5, unit_field="user"), classes=7)


# --------------------------------------------------------------------------- one whole person, audited


Z, EPS_TEST, RUNS, ALPHA = 1.0, 1.0, 3000, 1e-3


def unit_step_audit():
    """Adds or removes one whole person of four records (all pulling one way) and audits one
    real step at a point of the Gaussian's exact profile (tests/dp_audit.py)."""
    from dp_audit import epsilon_lower_bound, gaussian_delta, run_releases

    w, b, o = np.zeros((2, 2)), np.zeros(2), np.zeros(2, np.float32)
    budget = PrivacyBudget(1e4, shares={"head": 1.0}, delta=1e-5)
    steps = budget.noisy_steps("head", sensitivity_l2=DELTA_L2, noise_multiplier=Z, sample_rate=1.0,
                               steps=2 * RUNS, mechanism="one step, audited")
    rng = np.random.default_rng(5)  # test data, not noise
    d = (np.float32(rng.standard_normal((6, 2)) * 0.1), np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 1, 2, 2]))
    person = np.float32([[10.0, 0.0]] * 4)
    dp = (np.vstack([d[0], person]), np.append(d[1], [1] * 4), np.append(d[2], [9] * 4))
    exact = {k: PerUnit(*v, o)(w, b, **STEP).reshape(-1) for k, v in (("d", d), ("dp", dp))}
    move = (exact["dp"] - exact["d"]).astype(float)
    direction = move / np.linalg.norm(move)
    sigma = budget.head.noise_scale

    def stat(data):
        return run_releases(lambda: steps(PerUnit(*data, o)(w, b, **STEP).reshape(-1)),
                            lambda out: float((out - exact["dp"]) @ direction) / sigma, RUNS)
    return epsilon_lower_bound(stat(d), stat(dp), np.arange(-2.0, 4.01, 0.25), ALPHA,
                               delta=gaussian_delta(EPS_TEST, 1 / Z))


@pytest.mark.dev
def test_the_unit_level_step_stays_within_its_gaussian_profile():
    assert 0.2 < unit_step_audit().epsilon_lower <= EPS_TEST


@pytest.mark.dev
def test_the_unit_level_audit_catches_a_person_not_clipped_as_a_whole(monkeypatch):
    monkeypatch.setattr("exporter.head.unit_bound", lambda sums, bound: sums)  # each record clipped, not the person
    assert unit_step_audit().epsilon_lower > EPS_TEST


# --------------------------------------------------------------------------- end to end, through the CLI


def test_cli_builds_a_person_level_head(tmp_path, exported_encoder, capsys):
    from exporter.__main__ import main
    from runtime import Classifier
    from runtime.bundle import load
    from runtime.bundle.accounting import head_epsilon

    rows = [json.loads(line) for line in (DATA / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    train = tmp_path / "people.jsonl"  # 140 persons of 4 records each (a public round-robin)
    train.write_text("".join(json.dumps({**r, "user": f"u{i % 140}"}) + "\n" for i, r in enumerate(rows)),
                     encoding="utf-8")
    out = tmp_path / "person-head.dpedge"
    argv = ["build", "--train", str(train), "--labels", str(DATA / "labels.txt"), "--epsilon", "8", "--delta", "1e-5",
            "--unit-column", "user", "--max-records-per-unit", "4", "--out", str(out), "--models-dir",
            str(ROOT / "models"), "--quiet"]
    assert main(argv) == 0
    assert "per one person, up to 4 records" in capsys.readouterr().out
    b = load(out)
    assert b.version == (1, 3) and b.records_per_unit == 4 and b.privacy["privacy_unit"] == "one person, up to 4 records"
    assert list(b.releases) == ["class_counts", "unit_count"] and abs(b.unit_count - 140) < 200
    uc, cc, h = b.releases["unit_count"], b.releases["class_counts"], b.head
    assert uc.sensitivity_l1 == 1 and cc.sensitivity_l1 == 4 and h.sensitivity_l2 == DELTA_L2
    assert math.isclose(uc.epsilon, 0.16) and math.isclose(cc.epsilon, 0.4) and math.isclose(h.epsilon, 7.44)
    assert "every person joins the batch" in h.mechanism and "noisy person count" in b.privacy["public_inputs"][1]
    assert head_epsilon(h.noise_multiplier, h.sample_rate, h.steps, h.delta) <= h.epsilon
    assert "class_counts, then unit_count" in b.privacy["composition"]
    clf = Classifier.load(out, threads=1)
    assert clf.classify(["wake me up at seven tomorrow"])[0].label == "alarm_timer"
    # a record without the unit column stops the build at its line, and nothing is written
    train.write_text(train.read_text(encoding="utf-8") + json.dumps(rows[0]) + "\n", encoding="utf-8")
    out.unlink()
    assert main(argv) == 2
    assert f"people.jsonl:{len(rows) + 1}" in capsys.readouterr().err and not out.exists()


def test_a_person_of_one_record_is_a_record_and_counts_no_persons(tmp_path):
    one = build_options(tmp_path / "h.dpedge", seed=None, delta=1e-5, unit_field="user", max_records_per_unit=1)
    many = build_options(tmp_path / "h.dpedge", seed=None, delta=1e-5, unit_field="user", max_records_per_unit=2)
    assert one.shares() == head_shares() and many.shares() == head_shares(person=True)
