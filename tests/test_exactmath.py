"""The contract's exp and log (section 7.1) and section 7's order of operations in the Python reader.

The corpus's `arithmetic` cases fix the bits every reader must compute; these tests show the
functions are also accurate (a few units in the last place of the platform's libm), and that
the Scorer is exactly a line-by-line transliteration of section 7 (plain Python floats, every
sum in index order), so it cannot hide a folded product or a BLAS call.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.bundle import exactmath as em
from runtime.bundle.accounting import head_epsilon
from runtime.bundle.schema import NEAR_ZERO, UNIT_MIN_NORM
from runtime.scoring import Scorer, prior_boost, sums_noise_norm

pytestmark = pytest.mark.check


def _ulps(got: float, want: float) -> float:
    return 0.0 if got == want else abs(got - want) / math.ulp(want)


@settings(max_examples=3000, deadline=None)
@given(st.floats(-708.0, 709.0))
def test_exp_is_within_two_ulps_of_libm(x):
    assert _ulps(em.exp(x), math.exp(x)) <= 2


@settings(max_examples=3000, deadline=None)
@given(st.floats(5e-324, 1.7e308))
def test_log_is_within_three_ulps_of_libm(x):
    want = math.log(x)
    assert want == 0.0 and em.log(x) == 0.0 or _ulps(em.log(x), want) <= 3


@settings(max_examples=2000, deadline=None)
@given(st.floats(-0.999999, 1e6))
def test_log1p_and_expm1_keep_their_accuracy_near_zero(y):
    assert _ulps(em.log1p(y), math.log1p(y)) <= 4 or abs(math.log1p(y)) < 1e-300
    if abs(y) < 700:
        assert _ulps(em.expm1(y), math.expm1(y)) <= 4 or abs(math.expm1(y)) < 1e-300


def test_the_clamps_and_special_values():
    assert em.exp(709.0) < math.inf and em.exp(709.0000000000001) == math.inf
    assert em.exp(-708.0) > 0.0 and em.exp(-708.0000000000001) == 0.0
    assert em.log(0.0) == -math.inf and math.isnan(em.log(-1.0)) and em.log(math.inf) == math.inf
    assert em.log(5e-324) == math.log(5e-324) and em.log1p(-1.0) == -math.inf
    assert math.isnan(em.exp(math.nan)) and math.isnan(em.expm1(math.nan))


def test_the_accountant_agrees_with_its_libm_form_to_1e_12():
    """The bound moved by last bits only: heads calibrated before (within the 1e-6 tolerance) still pass."""
    def libm_bound(z, q, steps, delta):
        best = math.inf
        for a in range(2, 257):
            inv = 1.0 / (2.0 * z * z)
            terms, lb = [], 0.0
            for j in range(a + 1):
                if j:
                    lb += math.log(a - j + 1) - math.log(j)
                terms.append(lb + j * math.log(q) + (a - j) * math.log1p(-q) + (j * j - j) * inv)
            top = max(terms)
            rdp = steps * ((top + math.log(sum(math.exp(t - top) for t in terms))) / (a - 1))
            eps = 0.0 if delta * delta + math.expm1(-rdp) > 0 else rdp + math.log1p(-1 / a) - math.log(delta * a) / (a - 1)
            best = min(best, eps)
        return max(0.0, best)

    for args in ((1.1, 0.1, 1000, 1e-5), (3.0, 0.02, 5000, 1e-6), (0.9, 0.5, 20, 1e-8)):
        assert math.isclose(head_epsilon(*args), libm_bound(*args), rel_tol=1e-12)


# ---------------------------------------------------------------- section 7, transliterated


def _dot(u, v):
    s = 0.0
    for a, b in zip(u, v):
        s = s + a * b
    return s


def _unit(v):
    n = max(math.sqrt(_dot(v, v)), UNIT_MIN_NORM)
    return [a / n for a in v]


def _softmax(logits):
    m = logits[0]
    for v in logits[1:]:
        m = max(m, v)
    e = [em.exp(v - m) for v in logits]
    t = 0.0
    for v in e:
        t = t + v
    return [v / t for v in e]


def _section7(b, x) -> list[float]:
    """The blend of docs/bundle-format.md section 7 without vote tables, step by step, in plain floats."""
    x = [float(v) for v in x]
    P = [[float(v) for v in row] for row in b.projection]
    o = [float(v) for v in b.origin]
    z0 = [_dot(x, row) for row in P]
    po = [_dot(o, row) for row in P]
    z = [a - c for a, c in zip(z0, po)]
    grid = b.releases["class_sums"].grid
    sums = [[int(v) / grid for v in row] for row in b.class_sums]
    s = b.scoring.description_pull * sums_noise_norm(b)
    if b.prior is not None and s > 0:
        m = max(1.0, s)
        for c, e in enumerate(b.prior):
            toward = _unit([a - c2 for a, c2 in zip([_dot([float(v) for v in e], row) for row in P], po)])
            sums[c] = [a / m + (s / m) * t for a, t in zip(sums[c], toward)]
    d = [[v / b.scoring.centroid_temperature for v in _unit(row)] for row in sums]
    zn = math.sqrt(_dot(z, z))
    out = _softmax([_dot(z, dc) / zn if zn > NEAR_ZERO else 0.0 for dc in d])
    boost = 0.0
    if b.prior is not None:
        boost = prior_boost(b)
        p = [[v / b.scoring.prior_temperature for v in _unit([float(w) for w in e])] for e in b.prior]
        xn = math.sqrt(_dot(x, x))
        pr = _softmax([_dot(x, pc) / xn if xn > NEAR_ZERO else 0.0 for pc in p])
        out = [a + boost * q for a, q in zip(out, pr)]
    return [a / (1.0 + boost) for a in out]


@pytest.mark.parametrize("name", ["blend-without-votes", "without-prior", "tie-broken-by-rounding",
                                  "tie-broken-by-rounding-without-pull"])
def test_the_scorer_is_section_7_bit_for_bit(name):
    from conftest import ROOT
    from runtime import bundle as fmt

    b = fmt.load(ROOT / "format" / "1" / "corpus" / "accept" / "scoring" / f"{name}.dpedge")
    rng = np.random.default_rng(3)
    dim = b.encoder.dim
    queries = [np.full(dim, 0.5, np.float32), *rng.standard_normal((20, dim)).astype(np.float32)]
    got = Scorer(b).scores(np.stack(queries))
    for row, x in zip(got, queries):
        assert row.tolist() == _section7(b, x)
