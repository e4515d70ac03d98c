"""The head (opt-in ``--delta``): DP-SGD on the frozen embeddings, an (epsilon, delta) release.

What must hold whatever the records: a record's integer gradient is a function of that record
alone (bit for bit, in any batch), its exact integer L2 norm is at most the stated sensitivity
(for any embedding), the noise multiplier fits the head's share by the accountant and by the
contract, OpenDP's map of one step is the accountant's model of it, a delta outside the range
or not below 1/N is refused, and every option a head would ignore is refused. A neighbour audit
of one step sees the real release within its privacy profile and catches a missing clip and
halved noise. The end-to-end build goes through the CLI on the project's assistant data.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from conftest import DATA, ROOT, build_options
from exporter import accountant
from exporter.build import build
from exporter.head import (CLIP_L2, EPOCHS, EXPECTED_BATCH, GRID, MAX_STEPS, RULE_MAX_STEPS, InMemory, bound_l2,
                           check_delta_below, head_rule, integer_gradients, poisson_sample, rule_sampling,
                           release_head, sampling_threshold, sensitivity_l2)
from exporter.options import BuildError, BuildOptions, check_options
from exporter.privacy import TEST_HOOK, BudgetError, PrivacyBudget, head_shares
from noise_hooks import ConstantGaussian, MisstatedGaussian
from runtime.bundle.accounting import head_epsilon

pytestmark = pytest.mark.exporter

DELTA_L2 = sensitivity_l2(GRID, CLIP_L2)


def _random_case(n: int, classes: int = 5, dim: int = 24, seed: int = 0):
    rng = np.random.default_rng(seed)  # test data, not noise
    x = rng.standard_normal((n, dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, rng.integers(0, classes, n), rng.standard_normal((classes, dim)) * 3, rng.standard_normal(classes)


# --------------------------------------------------------------------------- one record, alone or in a batch


def test_a_records_integer_gradient_is_the_same_alone_and_in_a_batch_of_300():
    x, y, w, b = _random_case(300)
    together = integer_gradients(x, y, w, b)
    assert together.dtype == np.int64 and together.shape == (300, 5, 25)
    for i in range(300):
        assert np.array_equal(integer_gradients(x[i:i + 1], y[i:i + 1], w, b)[0], together[i]), i
    # and in any other batch: reversed, and a block of the product's own size with the others
    order = np.arange(300)[::-1]
    assert np.array_equal(integer_gradients(x[order], y[order], w, b), together[order])
    big_x = np.concatenate([x, _random_case(1700, seed=1)[0]])
    big_y = np.concatenate([y, _random_case(1700, seed=1)[1]])
    assert np.array_equal(integer_gradients(big_x, big_y, w, b)[:300], together)


def test_the_integer_bound_is_tight_and_the_grid_exact():
    assert DELTA_L2 == GRID * CLIP_L2 == 2**19
    with pytest.raises(ValueError, match="positive integer"):
        sensitivity_l2(2**20, 0.3)
    x, y, w, b = _random_case(200, seed=3)
    g = integer_gradients(x * 40, y, w * 0, b * 0)  # every record is clipped (and none is fitted: W = 0)
    norms = np.sqrt((g.reshape(200, -1).astype(float) ** 2).sum(axis=1))
    assert norms.max() <= DELTA_L2 and norms.min() > 0.999 * DELTA_L2  # clipped to the bound, not far below


# --------------------------------------------------------------------------- the exact L2 bound, adversarially

_FLOATS = st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64),
                    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1e-300, 1e300, -1e300, 1.7976931348623157e308]),
                    st.floats(-3, 3))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 9)), elements=_FLOATS),
       wscale=st.sampled_from([0.0, 1.0, 1e3, 1e300]), classes=st.integers(2, 4), data=st.data())
def test_every_integer_gradient_is_within_the_exact_l2_bound(x, wscale, classes, data):
    n, dim = x.shape
    labels = np.array(data.draw(st.lists(st.integers(0, classes - 1), min_size=n, max_size=n)))
    w = data.draw(arrays(np.float64, (classes, dim), elements=st.floats(-1, 1))) * wscale
    b = data.draw(arrays(np.float64, (classes,), elements=_FLOATS))
    g = integer_gradients(x, labels, w, b)
    flat = g.reshape(n, -1)
    assert all(sum(int(v) * int(v) for v in row) <= DELTA_L2 ** 2 for row in flat)  # exact, in Python integers
    for i in range(n):  # and still a function of the record alone
        assert np.array_equal(integer_gradients(x[i:i + 1], labels[i:i + 1], w, b)[0], g[i])


@settings(max_examples=200, deadline=None)
@given(rows=arrays(np.int64, st.tuples(st.integers(1, 4), st.integers(1, 12)), elements=st.integers(-1000, 1000)),
       bound=st.integers(1, 1000))
def test_bound_l2_shrinks_any_integer_row_within_the_bound(rows, bound):
    """Any rows whose cells are within the bound (integer_gradients clamps them there first)."""
    rows = np.clip(rows, -bound, bound)
    out = bound_l2(rows, bound)
    for before, after in zip(rows, out):
        assert sum(int(v) ** 2 for v in after) <= bound ** 2
        assert np.all(np.abs(after) <= np.abs(before)) and np.all(after * before >= 0)  # only shrinks
        if sum(int(v) ** 2 for v in before) <= bound ** 2:
            assert np.array_equal(after, before)


# --------------------------------------------------------------------------- calibration and the map


@pytest.mark.parametrize("epsilon,q,steps,delta", [(0.95, 0.2, 500, 1e-5), (4.75, 0.4, 250, 1e-6),
                                                    (2.0, 1.0, 100, 1e-5)])
def test_the_noise_multiplier_fits_the_share_by_both_accounts_and_no_less_would(epsilon, q, steps, delta):
    z = accountant.calibrate_noise_multiplier(epsilon, sample_rate=q, steps=steps, delta=delta)
    assert accountant.accountant_epsilon(z, q, steps, delta) <= epsilon
    assert head_epsilon(z, q, steps, delta) <= epsilon
    assert accountant.accountant_epsilon(0.9 * z, q, steps, delta) > epsilon
    assert head_epsilon(0.9 * z, q, steps, delta) > epsilon
    # the contract is the accountant's arithmetic: they agree closely
    assert math.isclose(accountant.accountant_epsilon(z, q, steps, delta), head_epsilon(z, q, steps, delta),
                        rel_tol=1e-6)


def test_opendps_map_of_one_step_is_the_accountants_model():
    from exporter.noise import OpenDPDiscreteGaussian

    for z in (0.5, 1.0, 6.23):
        sigma = z * DELTA_L2
        rho = OpenDPDiscreteGaussian().rho(sigma, DELTA_L2)
        assert abs(rho - DELTA_L2 ** 2 / (2 * sigma ** 2)) <= 1e-9 * rho
        assert abs(rho - 1 / (2 * z * z)) <= 1e-9 * rho
    budget = PrivacyBudget(10.0, shares={"head": 1.0}, delta=1e-5, gaussian_for_tests=MisstatedGaussian())
    with pytest.raises(BudgetError, match="the noise library states rho"):
        budget.noisy_steps("head", sensitivity_l2=DELTA_L2, noise_multiplier=1.0, sample_rate=1.0, steps=1,
                           mechanism="m")


def test_the_budget_issues_no_step_beyond_its_accounting():
    budget = PrivacyBudget(10.0, shares={"head": 1.0}, delta=1e-5, gaussian_for_tests=ConstantGaussian())
    with pytest.raises(BudgetError, match="costs epsilon .* more than its share"):
        budget.noisy_steps("head", sensitivity_l2=DELTA_L2, noise_multiplier=0.3, sample_rate=1.0, steps=1,
                           mechanism="m")
    steps = budget.noisy_steps("head", sensitivity_l2=DELTA_L2, noise_multiplier=1.0, sample_rate=1.0, steps=2,
                               mechanism="m")
    steps(np.zeros(3, np.int64)), steps(np.zeros(3, np.int64))
    with pytest.raises(BudgetError, match="all 2 accounted noisy steps were used"):
        steps(np.zeros(3, np.int64))
    facts = budget.privacy_facts()
    assert facts["delta"] == 1e-5 and TEST_HOOK in facts["noise_source"]  # the hook says so
    assert budget.head.noise_scale == 1.0 * DELTA_L2
    person = __import__("exporter.privacy").privacy.NeighbourRelation.person("u", 2)
    with pytest.raises(BudgetError, match="goes with the noisy number of persons"):
        PrivacyBudget(10.0, person, shares={"head": 1.0}, delta=1e-5)
    with pytest.raises(BudgetError, match="goes with the noisy number of persons"):
        PrivacyBudget(10.0, shares=head_shares(person=True), delta=1e-5)
    with pytest.raises(BudgetError, match="delta above 0 goes with a planned head"):
        PrivacyBudget(1.0, shares={"class_counts": 1.0}, delta=1e-5)


def test_poisson_sampling_never_exceeds_the_rate_it_accounts_for():
    for q in (0.5, 0.3761939750183688, 2048 / 8000, 1e-6):
        t = sampling_threshold(q)
        assert Fraction(t, 2**64) <= Fraction(q) < Fraction(t + 1, 2**64)  # floor(q 2^64), exactly
    assert sampling_threshold(1.0) is None and len(poisson_sample(10, 1.0)) == 10
    sizes = [len(poisson_sample(4000, 0.25)) for _ in range(50)]
    assert 900 < np.mean(sizes) < 1100 and len(set(sizes)) > 5  # random, about q n


# --------------------------------------------------------------------------- delta and the rule


@pytest.mark.parametrize("delta", [0.0, -1e-5, 2e-3, float("nan"), float("inf")])
def test_a_delta_outside_the_range_is_refused_before_any_record(tmp_path, delta):
    opts = build_options(tmp_path / "h.dpedge", seed=None, delta=delta)
    with pytest.raises(BuildError, match="--delta: delta must be above 0 and at most 0.001"):
        check_options(opts, classes=7)


def test_a_delta_below_the_formats_least_and_a_rule_beyond_its_steps_are_refused(tmp_path):
    with pytest.raises(BuildError, match="at least 1e-12"):
        check_options(build_options(tmp_path / "h.dpedge", seed=None, delta=1e-13), classes=7)
    with pytest.raises(BuildError, match="more than the format's 1,000,000"):  # a study's cap past the format's
        head_rule(3e7, epsilon=1.0, head_epsilon=0.95, delta=1e-9, max_steps=MAX_STEPS + 1)


def test_a_delta_not_below_one_over_n_is_refused_after_the_counts():
    check_delta_below(1e-4, 9999.0)
    with pytest.raises(BuildError, match=r"not below 1 / N"):
        check_delta_below(1e-4, 10000.0)
    check_delta_below(0.5, -40.0)  # N is clamped to 1: a noisy total below 1 counts as 1 (never 1/N < 0)
    x, y, _, _ = _random_case(50, classes=2)
    budget = PrivacyBudget(2.0, shares=head_shares(), delta=1e-3, gaussian_for_tests=ConstantGaussian())
    budget.release("class_counts", np.array([25, 25]), sensitivity=1, mechanism="m")
    with pytest.raises(BuildError, match=r"--delta 0.001 is not below 1 / N = 0.000625 \(N = 1600"):
        origin = np.zeros(24, np.float32)
        release_head(InMemory(x, y, origin), origin, np.array([800, 800]), budget)
    assert budget.head is None  # no step was issued


def test_the_rule_is_public():
    """A function of N, epsilon and delta: the same inputs give the same rule."""
    r = head_rule(8000.0, epsilon=1.0, head_epsilon=0.95, delta=1e-5)
    assert r == head_rule(8000.0, epsilon=1.0, head_epsilon=0.95, delta=1e-5)
    assert (r.sample_rate, r.steps, r.learning_rate) == (0.256, 391, 3.2)
    assert head_rule(500.0, epsilon=1.0, head_epsilon=0.95, delta=1e-5).sample_rate == 1.0  # the batch capped at N
    assert head_rule(-3.0, epsilon=1.0, head_epsilon=0.95, delta=1e-5).steps == 100


def test_the_rules_steps_stop_growing_at_its_cap():
    """Past RULE_MAX_STEPS x EXPECTED_BATCH / EPOCHS records (81,920), T is the cap and the batch
    stays EXPECTED_BATCH (q = EXPECTED_BATCH / N); below it, T is the 100 epochs it always was."""
    big = head_rule(1e6, epsilon=1.0, head_epsilon=0.95, delta=1e-9)
    assert (big.sample_rate, big.steps) == rule_sampling(1e6) == (EXPECTED_BATCH / 1e6, RULE_MAX_STEPS)
    assert rule_sampling(81_899.0)[1] == math.ceil(EPOCHS * 81_899.0 / EXPECTED_BATCH) == RULE_MAX_STEPS - 1
    assert rule_sampling(81_920.0)[1] == rule_sampling(3e7)[1] == RULE_MAX_STEPS
    assert rule_sampling(3e7, max_steps=50) == (EXPECTED_BATCH / 3e7, 50)  # a study's cap
    assert rule_sampling(500.0) == (1.0, EPOCHS)


def test_the_laptop_tier_trains_at_twice_the_learning_rate_and_nothing_else_changes():
    """The encoder's public factor (exporter.encoders, chosen on the shared data: docs/head.md)
    scales the learning rate alone; an encoder the registry does not know keeps the factor 1."""
    from dataclasses import replace

    from exporter import encoders
    from runtime import bundle as fmt

    mpnet = fmt.load(ROOT / "format" / "1" / "corpus" / "accept" / "mpnet.dpedge").encoder
    assert encoders.head_lr_scale(mpnet) == 1.0  # the corpus's tiny MPNet is a folder, not the registered one
    registered = replace(mpnet, facts={"name": encoders.REGISTRY["all-mpnet-base-v2"].model_id})
    assert encoders.head_lr_scale(registered) == 2.0
    assert encoders.head_lr_scale(replace(mpnet, facts={"name": "sentence-transformers/all-MiniLM-L6-v2"})) == 1.0
    one = head_rule(8000.0, epsilon=5.0, head_epsilon=4.75, delta=1e-5)
    two = head_rule(8000.0, epsilon=5.0, head_epsilon=4.75, delta=1e-5, lr_scale=2.0)
    assert two.learning_rate == 2 * one.learning_rate == 25.6
    assert (two.sample_rate, two.steps, two.noise_multiplier) == (one.sample_rate, one.steps, one.noise_multiplier)


# --------------------------------------------------------------------------- options the head would ignore


@pytest.mark.parametrize("overrides,flag", [
    (dict(hashing="random"), "--hashing random"), (dict(votes_share=0.1), "--votes-share"),
    (dict(basis_dim=16), "--basis-dim"), (dict(clip_l1=2.0), "--clip-l1"), (dict(tables=8), "--tables"),
    (dict(bits=4), "--bits"), (dict(seed=5), "--seed"), (dict(public_directions=2), "--public-directions"),
    (dict(max_table_mib=8.0), "--max-table-mib"), (dict(extend=DATA / "x.dpedge"), "--extend"),
    (dict(planned_records=1000), "--planned-records"),
])
def test_a_head_refuses_the_options_it_would_ignore(tmp_path, overrides, flag):
    opts = build_options(tmp_path / "h.dpedge", **{"seed": None, "delta": 1e-5, **overrides})
    with pytest.raises(BuildError, match=f"would ignore {flag}"):
        check_options(opts, classes=7)
    with pytest.raises(BuildError, match=f"would ignore {flag}"):  # the build refuses before reading anything
        build(opts)
    assert not (tmp_path / "h.dpedge").exists()


@pytest.mark.parametrize("overrides,message", [
    (dict(unit_field="user"), "--unit-column needs --max-records-per-unit"),
    (dict(max_records_per_unit=2), "--max-records-per-unit needs --unit-column"),
    (dict(ray_address="auto"), "--ray-address needs --engine ray"),
    (dict(engine="spark"), "unknown engine 'spark'"),
])
def test_a_head_refuses_person_level_and_engine_mistakes(tmp_path, overrides, message):
    with pytest.raises(BuildError, match=message):
        check_options(build_options(tmp_path / "h.dpedge", seed=None, delta=1e-5, **overrides), classes=7)


def test_the_default_stays_pure(tmp_path):
    opts = build_options(tmp_path / "d.dpedge")
    assert opts.delta is None and not opts.has_head and "head" not in opts.shares()


# --------------------------------------------------------------------------- a neighbour audit of one step
# One step of the head with every record in the batch (q = 1), through the budget's own noisy
# steps (real OpenDP discrete Gaussian) and the product's integer gradients. D: six records, two
# classes, 2-d embeddings, W = 0, b = 0; D' = D + x, x far out (its gradient is clipped to the
# bound, the worst case). Statistic: the noisy sum minus its exact value under D', projected on
# the direction x moves it, in standard deviations. A correct step is the Gaussian mechanism of
# multiplier Z, so every event obeys its exact profile at (EPS_TEST, gaussian_delta(EPS_TEST, 1/Z)).

Z, EPS_TEST, RUNS, ALPHA = 1.0, 1.0, 3000, 1e-3
AUDIT_THRESHOLDS = np.arange(-2.0, 4.01, 0.25)


def _audit_data():
    rng = np.random.default_rng(5)  # test data, not noise
    d = (rng.standard_normal((6, 2)) * 0.1, np.array([0, 0, 0, 1, 1, 1]))
    x = np.array([[10.0, 0.0]])
    return d, (np.vstack([d[0], x]), np.append(d[1], 1))


def step_audit(gradients=integer_gradients, noise=None):
    from dp_audit import epsilon_lower_bound, gaussian_delta, run_releases

    w, b = np.zeros((2, 2)), np.zeros(2)
    budget = PrivacyBudget(1e4, shares={"head": 1.0}, delta=1e-5, gaussian_for_tests=noise)
    steps = budget.noisy_steps("head", sensitivity_l2=DELTA_L2, noise_multiplier=Z, sample_rate=1.0,
                               steps=2 * RUNS, mechanism="one step, audited")
    d, dp = _audit_data()
    exact = {k: gradients(v[0], v[1], w, b, clip_l2=CLIP_L2, grid=GRID).sum(axis=0).reshape(-1)
             for k, v in (("d", d), ("dp", dp))}
    move = (exact["dp"] - exact["d"]).astype(float)
    direction = move / np.linalg.norm(move)
    sigma = budget.head.noise_scale

    def stat(data):
        return run_releases(lambda: steps(gradients(data[0], data[1], w, b, clip_l2=CLIP_L2, grid=GRID)
                                          .sum(axis=0).reshape(-1)),
                            lambda out: float((out - exact["dp"]) @ direction) / sigma, RUNS)
    result = epsilon_lower_bound(stat(d), stat(dp), AUDIT_THRESHOLDS, ALPHA, delta=gaussian_delta(EPS_TEST, 1 / Z))
    print(f"\nhead step, {gradients.__name__}, {type(noise).__name__ if noise else 'OpenDP'}: epsilon lower bound "
          f"{result.epsilon_lower:.3f} at delta {gaussian_delta(EPS_TEST, 1 / Z):.4f} from '{result.event}'")
    return result


@pytest.mark.dev
def test_the_real_step_stays_within_its_gaussian_profile():
    assert 0.2 < step_audit().epsilon_lower <= EPS_TEST


@pytest.mark.dev
def test_the_step_audit_catches_a_missing_clip():
    from noise_hooks import unclipped_integer_gradients

    assert step_audit(gradients=unclipped_integer_gradients).epsilon_lower > EPS_TEST


@pytest.mark.dev
def test_the_step_audit_catches_halved_noise():
    from noise_hooks import HalvedGaussianNoise

    assert step_audit(noise=HalvedGaussianNoise()).epsilon_lower > EPS_TEST


# --------------------------------------------------------------------------- end to end, through the CLI


def test_cli_build_with_delta_writes_a_head_bundle(tmp_path, exported_encoder, capsys):
    from exporter.__main__ import main
    from runtime import Classifier
    from runtime.bundle import load

    out = tmp_path / "head.dpedge"
    argv = ["build", "--train", str(DATA / "train.jsonl"), "--labels", str(DATA / "labels.txt"), "--epsilon", "8",
            "--delta", "1e-5", "--out", str(out), "--models-dir", str(ROOT / "models"), "--quiet"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "--delta 1e-05 is opt-in" in captured.err and "not pure epsilon-DP" in captured.err
    assert "opted in with --delta 1e-05: not pure epsilon-DP" in captured.out
    b = load(out)
    assert b.version == (1, 1) and "releases.head" in b.requires
    assert set(b.releases) == {"class_counts"} and b.class_sums is None and b.votes is None and b.prior is None
    h = b.head
    assert b.delta == h.delta == 1e-5 and math.isclose(b.epsilon, b.releases["class_counts"].epsilon + h.epsilon)
    assert math.isclose(b.releases["class_counts"].epsilon, 0.4) and math.isclose(h.epsilon, 7.6)
    assert h.sensitivity_l2 == DELTA_L2 and h.noise_scale == h.noise_multiplier * h.sensitivity_l2
    assert h.sample_rate == 1.0 and h.steps == 100 and h.grid == GRID and h.clip_l2 == CLIP_L2  # 560 records: q = 1
    assert head_epsilon(h.noise_multiplier, h.sample_rate, h.steps, h.delta) <= h.epsilon
    assert accountant.accountant_epsilon(h.noise_multiplier, h.sample_rate, h.steps, h.delta) <= h.epsilon
    assert h.accountant.startswith("dp-accounting 0.6.0 RdpAccountant")
    assert "basic composition" in b.privacy["composition"] and "make_gaussian" in b.privacy["noise_source"]
    assert TEST_HOOK not in b.privacy["noise_source"]
    clf = Classifier.load(out, threads=1)
    assert clf.classify(["wake me up at seven tomorrow"])[0].label == "alarm_timer"
    # refusals through the CLI: exit status 2, a clear message, nothing written
    assert main(argv[:-1] + ["--seed", "4", "--quiet"]) == 2
    assert main([*argv[:argv.index("--delta") + 1], "0.01", *argv[argv.index("--delta") + 2:]]) == 2
    err = capsys.readouterr().err
    assert "would ignore --seed" in err and "delta must be above 0 and at most 0.001" in err


def test_a_build_whose_delta_is_not_below_one_over_n_writes_nothing(tmp_path, exported_encoder):
    """560 records and delta 1e-3 (allowed by the range): 1/N is about 1.8e-3, so it passes; 1200
    records (the assistant data written twice) make 1/N about 8e-4: refused after the counts."""
    train = tmp_path / "t.jsonl"
    train.write_text((DATA / "train.jsonl").read_text(encoding="utf-8") * 2 + "\n".join(
        (DATA / "train.jsonl").read_text(encoding="utf-8").splitlines()[:80]) + "\n", encoding="utf-8")
    opts = replace(build_options(tmp_path / "h.dpedge", seed=None, delta=1e-3), train=train)
    with pytest.raises(BuildError, match="not below 1 / N"):
        build(opts, gaussian_for_tests=ConstantGaussian())
    assert not (tmp_path / "h.dpedge").exists()
