"""The head (opt-in, ``--delta``): a linear softmax layer trained by DP-SGD on the frozen
embeddings, an (epsilon, delta)-DP release.

A head bundle releases two statistics from one budget (exporter.privacy.head_shares):

1. ``class_counts`` (pure epsilon-DP, its usual share), released first: its noisy total N is the
   public input of the head's rule, and the log of its noisy class shares is the bias the head
   starts from (post-processing).
2. ``head``, the rest of epsilon, with delta: T steps of DP-SGD on scores softmax(W (x - o) + b),
   o the public origin (the mean embedding of the encoder's vocabulary words and the label
   descriptions: public text only). In each step every record joins the batch independently
   with probability q (Poisson sampling from os.urandom: a 64-bit uniform integer below
   floor(q 2^64), so the rate is at most the q accounted for); each sampled record's gradient
   of the cross-entropy with respect to (W, b) is computed from that record alone (logits by
   runtime.rowwise.row_products, norms by column loops), scaled to L2 norm at most CLIP_L2,
   and put on an integer grid: G = trunc(GRID s g), s = min(1, CLIP_L2 / ||g||). The exact
   integer squared norm of G is checked against Delta^2, Delta = GRID x CLIP_L2 (an exact
   integer), and a record over it (float rounding) is scaled down in integers by
   Delta / (isqrt(||G||^2) + 1), which puts it under the bound by construction (`bound_l2`), so
   one record moves a step's sum by at most Delta in L2, whatever its embedding. The batch's
   integer sum gets OpenDP's discrete Gaussian of standard deviation z Delta on every coordinate
   (through the budget, which accounts for it: exporter.accountant), and the update is W, b -= lr x noisy sum / (GRID q N): post-processing of the noisy sums.

The rule (`head_rule`) is public: a function of N, epsilon and delta only, chosen on the public
benchmark datasets (docs/head.md): expected batch EXPECTED_BATCH (q = min(1, EXPECTED_BATCH /
N)), EPOCHS passes up to RULE_MAX_STEPS steps (T = min(ceil(EPOCHS / q), RULE_MAX_STEPS)), clip
CLIP_L2, learning rate `learning_rate`(epsilon),
and the least noise multiplier z whose epsilon at delta, by the accountant and by the contract,
fits the head's share. Delta must be below 1 / N (a larger delta could release a record outright).

With a person as the unit (``--unit-column``, K records per person at most), the bundle also
releases the noisy number of persons U (``unit_count``, pure epsilon-DP, sensitivity 1), and the
head is user-level DP-SGD (McMahan et al. 2018, "Learning Differentially Private Recurrent
Language Models"): the rule reads U for N, each step Poisson-samples persons at q, and a sampled
person's contribution is the exact integer sum of their records' clipped grid gradients, scaled
down in integers to exact L2 norm at most Delta (`unit_bound`), so one person moves a step's sum
by at most Delta, as one record does in the record-level head (`PerUnit`). Integers add exactly,
so a person's contribution depends on their records alone, bit for bit, in any order and batch;
with one record a person is exactly the record-level head's record.

DP-SGD reads every embedding in every step, so the head trains on all of them in memory (1.5 KB
per record of a 384-d encoder).

Example:
    >>> rule = head_rule(5000.0, epsilon=5.0, head_epsilon=4.75, delta=1e-5)
    >>> round(rule.sample_rate, 4), rule.steps, round(rule.learning_rate, 2), rule.sensitivity_l2
    (0.4096, 245, 12.8, 524288)
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

import numpy as np

from exporter.accountant import AccountingError, calibrate_noise_multiplier
from exporter.options import BuildError
from exporter.privacy import NoisySteps, PrivacyBudget
from runtime.bundle.schema import FIELDS_BY_PATH, HeadRelease, Key
from runtime.rowwise import row_products

#: Grid steps per unit of gradient: GRID x CLIP_L2 is an exact integer (Delta = 2^19).
GRID = 2**20
#: Each record's gradient (weights and bias together) is clipped to this L2 norm.
CLIP_L2 = 0.5
#: The rule's expected batch size q N, and its passes over the data (T = ceil(EPOCHS / q)).
EXPECTED_BATCH = 2048
EPOCHS = 100
#: The learning rate at epsilon 1 and 5 (docs/head.md); between and beyond, a power of epsilon.
LR_AT_1, LR_AT_5 = 3.2, 12.8
#: The bias's input: the head's gradient is r (f, BIAS_FEATURE), so the bias is trained on the
#: same clipped, noisy steps as the weights (0: the bias stays where the noisy counts put it).
BIAS_FEATURE = 1.0
#: The most steps a head may state (the format's bound on releases.head.steps).
MAX_STEPS = int(FIELDS_BY_PATH["releases.head.steps"].high)
#: The most steps the rule takes, whatever N (docs/head.md, "The rule at scale"): ten times the
#: most the rule takes on the benchmark datasets (391), where accuracy still rises up to the
#: rule's own T; from N = RULE_MAX_STEPS x EXPECTED_BATCH / EPOCHS (81,920 records) on, T stays
#: here and a step's batch stays EXPECTED_BATCH, so a head's cost stops growing with N but for
#: the sampling (a million records: about 12 minutes on 2 cores, docs/export-scale.md).
RULE_MAX_STEPS = 4000
#: At most this many gradient cells (rows x C x (D + 1)) are formed at once.
CHUNK_CELLS = 1 << 22

MECHANISM = ("DP-SGD on a linear softmax head over the frozen embeddings centred on the public origin: in each step "
             "every record joins the batch independently with probability at most sample_rate (64-bit uniform "
             "integers from os.urandom), each sampled record's cross-entropy gradient of the weights and bias, "
             "computed from that record alone, is clipped to L2 norm clip_l2 and truncated toward zero onto an "
             "integer grid of 1/grid with exact integer L2 norm at most sensitivity_l2, the batch is summed, and "
             "OpenDP's discrete Gaussian of standard deviation noise_scale is added to every coordinate of the sum; "
             "the weights are post-processing of the noisy sums")
#: The person-level head's mechanism (a person is the unit: `PerUnit`).
MECHANISM_PERSON = ("DP-SGD on a linear softmax head over the frozen embeddings centred on the public origin: in each "
                    "step every person joins the batch independently with probability at most sample_rate (64-bit "
                    "uniform integers from os.urandom), each of a sampled person's records' cross-entropy gradient of "
                    "the weights and bias, computed from that record alone, is clipped to L2 norm clip_l2 and "
                    "truncated toward zero onto an integer grid of 1/grid, the person's integer gradients are summed "
                    "exactly and the sum scaled down in integers to exact L2 norm at most sensitivity_l2, the "
                    "persons' sums are summed, and OpenDP's discrete Gaussian of standard deviation noise_scale is "
                    "added to every coordinate of the sum; the weights are post-processing of the noisy sums")
#: A unit sum's float squared norm within this relative margin of Delta^2 is judged in exact
#: integers (`unit_bound`): float64 sums of up to 2^24 squares err by less than 2^-29.
NORM_MARGIN = 1e-6


def learning_rate(epsilon: float) -> float:
    """The rule's learning rate: LR_AT_1 x epsilon^a through (1, LR_AT_1) and (5, LR_AT_5).

    Example:
        >>> round(learning_rate(1), 6), round(learning_rate(5), 6), round(learning_rate(0.1), 3)
        (3.2, 12.8, 0.44)
    """
    return LR_AT_1 * float(epsilon) ** (math.log(LR_AT_5 / LR_AT_1) / math.log(5.0))


def sensitivity_l2(grid: int = GRID, clip_l2: float = CLIP_L2) -> int:
    """Delta = grid x clip_l2, which must be an exact integer (at least 1).

    Example:
        >>> sensitivity_l2(2**20, 0.5)
        524288
    """
    exact = Fraction(grid) * Fraction(clip_l2)
    if exact.denominator != 1 or exact < 1:
        raise ValueError(f"grid x clip must be a positive integer, got {grid} x {clip_l2}")
    return int(exact)


#: What a refusal after the counts must say: they were drawn, so a rerun releases them again.
RERUN_SPENDS = ("Nothing was written, but this run drew the noisy class counts to find N (within its guarantee): a "
                "rerun on the same records draws them again, a second release of those records to count against your "
                "budget")


@dataclass(frozen=True)
class HeadRule:
    """The head's hyper-parameters: all public (from N, epsilon and delta)."""

    sample_rate: float
    steps: int
    learning_rate: float
    noise_multiplier: float
    clip_l2: float = CLIP_L2
    grid: int = GRID

    @property
    def sensitivity_l2(self) -> int:
        return sensitivity_l2(self.grid, self.clip_l2)


def rule_sampling(noisy_records: float, max_steps: int = RULE_MAX_STEPS) -> tuple[float, int]:
    """The rule's sample rate q and steps T for N records (at least 1): q = min(1, EXPECTED_BATCH /
    N), T = min(ceil(EPOCHS / q), max_steps).

    Example:
        >>> rule_sampling(8000.0), rule_sampling(1e6)
        ((0.256, 391), (0.002048, 4000))
    """
    q = min(1.0, EXPECTED_BATCH / max(float(noisy_records), 1.0))
    return q, min(math.ceil(EPOCHS / q), max_steps)


def head_rule(noisy_records: float, *, epsilon: float, head_epsilon: float, delta: float,
              lr_scale: float = 1.0, max_steps: int = RULE_MAX_STEPS) -> HeadRule:
    """The rule of the module doc from the released noisy record count N (at least 1), the
    bundle's epsilon, the head's share of it and delta; ``lr_scale`` is the encoder's public
    factor on the learning rate (exporter.encoders, derived on ../shared/data). ``max_steps``
    (the rule's own cap unless a study of the rule sets another) bounds T."""
    n = max(float(noisy_records), 1.0)
    q, steps = rule_sampling(n, max_steps)
    if steps > MAX_STEPS:
        most = MAX_STEPS * EXPECTED_BATCH // EPOCHS
        raise BuildError(f"--delta: the head's rule would take {steps:,} steps for N = {n:,.0f} records, more than the "
                         f"format's {MAX_STEPS:,}; a head is built for up to about {most:,} records. {RERUN_SPENDS}")
    try:
        z = calibrate_noise_multiplier(head_epsilon, sample_rate=q, steps=steps, delta=delta)
    except AccountingError as exc:
        raise BuildError(f"--delta: {exc}. {RERUN_SPENDS}") from None
    return HeadRule(q, steps, lr_scale * learning_rate(epsilon), z)


def check_delta_below(delta: float, noisy_records: float, unit: str = "record") -> None:
    """Refuse a delta that is not below 1 / N, N the released noisy record count (at least 1),
    or with ``unit`` "person" the released noisy number of persons.

    Example:
        >>> check_delta_below(1e-5, 5000.0)
        >>> check_delta_below(1e-3, 5000.0)
        Traceback (most recent call last):
        ...
        exporter.options.BuildError: --delta 0.001 is not below 1 / N = 0.0002 (N = 5000, the released noisy record count): a delta that large lets the release show a record outright; choose a smaller delta. Nothing was written, but this run drew the noisy class counts to find N (within its guarantee): a rerun on the same records draws them again, a second release of those records to count against your budget
    """
    n = max(float(noisy_records), 1.0)
    if not delta < 1.0 / n:
        raise BuildError(f"--delta {delta:g} is not below 1 / N = {1.0 / n:g} (N = {n:g}, the released noisy {unit} "
                         f"count): a delta that large lets the release show a {unit} outright; choose a smaller "
                         f"delta. {RERUN_SPENDS}")


def sampling_threshold(sample_rate: float) -> int | None:
    """floor(q x 2^64), exactly: a record joins when its 64-bit uniform integer is below it
    (rate floor(q 2^64) / 2^64 <= q); None for q >= 1 (every record joins).

    Example:
        >>> sampling_threshold(0.5) == 2**63, sampling_threshold(1.0)
        (True, None)
    """
    if sample_rate >= 1:
        return None
    return int(Fraction(sample_rate) * 2**64)  # int() of a positive Fraction is its floor


def poisson_sample(records: int, sample_rate: float) -> np.ndarray:
    """Indices of one step's batch: each of ``records`` joins independently with probability
    floor(q 2^64) / 2^64 <= q, from os.urandom (the operating system's CSPRNG)."""
    threshold = sampling_threshold(sample_rate)
    if threshold is None:
        return np.arange(records)
    draws = np.frombuffer(os.urandom(8 * records), dtype="<u8")
    return np.flatnonzero(draws < np.uint64(threshold))


def _softmax_rows(logits: np.ndarray) -> np.ndarray:
    """Softmax of each row, by column loops (each row's bits depend on that row alone)."""
    top = logits[:, :1].copy()
    for c in range(1, logits.shape[1]):
        np.maximum(top, logits[:, c:c + 1], out=top)
    e = np.exp(logits - top)
    total = np.zeros_like(top)
    for c in range(e.shape[1]):
        total += e[:, c:c + 1]
    return e / total


def _row_sum_squares(z: np.ndarray) -> np.ndarray:
    """Each row's sum of squares, over columns in ascending order (shape (n,))."""
    out = np.zeros(z.shape[0], np.float64)
    for j in range(z.shape[1]):
        out += z[:, j] * z[:, j]
    return out


def bound_l2(g: np.ndarray, bound: int) -> np.ndarray:
    """Integer rows (n, ...) with exact integer L2 norm at most ``bound``, each row a function
    of itself: a row over the bound (float rounding upstream) is scaled in integers by
    bound / m, m = isqrt(||G||^2) + 1 > ||G||, with truncation toward zero, which makes its norm
    at most bound x ||G|| / m < bound. Cells must be at most ``bound`` in absolute value (the
    exact squared norms then fit in int64 for up to 2^63 / bound^2 cells a row).

    Example:
        >>> bound_l2(np.array([[3, 4], [4, 4]]), 5).tolist()
        [[3, 4], [3, 3]]
    """
    g = np.array(g, np.int64)  # a copy: the caller's array is not changed
    flat = g.reshape(len(g), -1)
    if flat.size and int(np.abs(flat).max()) > bound:
        raise ValueError("bound_l2 takes cells of at most the bound in absolute value")
    norms = np.einsum("ij,ij->i", flat, flat)  # exact integers
    for i in np.flatnonzero(norms > bound * bound):
        m = math.isqrt(int(norms[i])) + 1
        flat[i] = np.sign(flat[i]) * ((np.abs(flat[i]) * bound) // m)
        if int(np.dot(flat[i], flat[i])) > bound * bound:  # the invariant (the proof above), checked
            raise RuntimeError("a record's integer gradient exceeds the head's sensitivity; nothing was released")
    return g


def integer_gradients(features: np.ndarray, labels: np.ndarray, weights: np.ndarray, bias: np.ndarray, *,
                      clip_l2: float = CLIP_L2, grid: int = GRID) -> np.ndarray:
    """Each record's clipped gradient of the cross-entropy of softmax(W f + b) with respect to
    (W, b), on the integer grid: shape (n, C, D + 1), the last column the bias's; exact integer
    L2 norm at most round(grid x clip_l2) per record, and each record's integers a function of
    that record alone, bit for bit (``features`` are the records' x - origin).

    The gradient is r a^T, r = softmax - onehot(label), a = (f, 1); its norm ||r|| ||a|| is
    computed by column loops, the row scaled by s = min(1, clip / norm) and truncated toward
    zero. A row with anything non-finite (an overflowing embedding) contributes zero; every
    cell is clamped to +-Delta, and `bound_l2` makes the exact integer norm at most Delta.
    """
    delta = sensitivity_l2(grid, clip_l2)
    f = np.asarray(features, np.float64)
    n, classes = f.shape[0], weights.shape[0]
    with np.errstate(all="ignore"):  # non-finite rows are zeroed below
        logits = row_products(f, np.asarray(weights, np.float64).T) + np.asarray(bias, np.float64)
        r = _softmax_rows(logits)
        r[np.arange(n), np.asarray(labels, np.int64)] -= 1.0
        a = np.concatenate([f, np.full((n, 1), BIAS_FEATURE)], axis=1)   # (n, D + 1)
        norm = np.sqrt(_row_sum_squares(r)) * np.sqrt(_row_sum_squares(a))
        s = np.where(norm > clip_l2, clip_l2 / norm, 1.0)
        u = (float(grid) * s)[:, None] * r                               # (n, C)
        bad = ~(np.isfinite(u).all(axis=1) & np.isfinite(a).all(axis=1))
        u[bad], a[bad] = 0.0, 0.0
        g = u[:, :, None] * a[:, None, :]
        np.trunc(g, out=g)
        np.clip(g, -delta, delta, out=g)
    return bound_l2(g.astype(np.int64), delta).reshape(n, classes, f.shape[1] + 1)


def initial_bias(noisy_counts: np.ndarray) -> np.ndarray:
    """log of the noisy class shares (counts below 1 taken as 1): post-processing of the counts.

    Example:
        >>> initial_bias(np.array([30, 10, -2])).round(3).tolist()
        [-0.312, -1.411, -3.714]
    """
    c = np.maximum(np.asarray(noisy_counts, np.float64), 1.0)
    return np.log(c / c.sum())


class StepSums(Protocol):
    """Where the records' embeddings are, for DP-SGD: one call is one step's exact integer sum
    (C, D + 1), int64, of the clipped gradients (`integer_gradients`) of a Poisson sample of the
    records at ``sample_rate``, at ``weights`` and ``bias``. Integer sums add exactly, so the
    records may be spread over any number of places (exporter.ray_engine) and the sum of their
    sums is the one sum, bit for bit."""

    dim: int

    def __call__(self, weights: np.ndarray, bias: np.ndarray, *, sample_rate: float, clip_l2: float,
                 grid: int) -> np.ndarray: ...


class InMemory:
    """`StepSums` over embeddings in this process: the local engine's, a worker's share, a test's."""

    def __init__(self, embeddings: np.ndarray, labels: np.ndarray, origin: np.ndarray):
        self.embeddings = np.asarray(embeddings, np.float32)
        self.labels = np.asarray(labels, np.int64)
        self.origin = np.asarray(origin, np.float32).astype(np.float64)
        self.dim = int(self.embeddings.shape[1])

    def __call__(self, weights: np.ndarray, bias: np.ndarray, *, sample_rate: float, clip_l2: float,
                 grid: int) -> np.ndarray:
        batch = poisson_sample(len(self.labels), sample_rate)
        classes = weights.shape[0]
        total = np.zeros((classes, self.dim + 1), np.int64)
        rows = max(1, CHUNK_CELLS // (classes * (self.dim + 1)))
        for start in range(0, len(batch), rows):
            idx = batch[start:start + rows]
            features = self.embeddings[idx].astype(np.float64) - self.origin
            total += integer_gradients(features, self.labels[idx], weights, bias, clip_l2=clip_l2,
                                       grid=grid).sum(axis=0)
        return total


def unit_bound(sums: np.ndarray, bound: int) -> np.ndarray:
    """Integer rows (n, cells) scaled down to exact integer L2 norm at most ``bound``, each row a
    function of itself: a row whose exact norm is within the bound is kept as it is (so a
    person with one record gives exactly that record's row); one over it is scaled by
    bound / ||row|| in float64, truncated toward zero, clamped to +-bound and put under the
    bound exactly by `bound_l2`. Over or not is decided on the float64 squared norm (column
    order), and in exact integers when that is within NORM_MARGIN of bound^2.

    Example:
        >>> unit_bound(np.array([[3, 4], [6, 8], [0, 9]]), 5).tolist()
        [[3, 4], [3, 4], [0, 5]]
    """
    s = np.array(sums, np.int64).reshape(len(sums), -1)
    f = s.astype(np.float64)
    squares = _row_sum_squares(f)
    limit = float(bound) * float(bound)
    over = squares > limit * (1.0 + NORM_MARGIN)
    close = np.flatnonzero(~over & (squares > limit * (1.0 - NORM_MARGIN)))  # too close for floats: exactly,
    if close.size:  # in int64: squares of at most about bound^2 each, a total of about bound^2, none negative
        over[close] = np.einsum("ij,ij->i", s[close], s[close]) > bound * bound
    if over.any():
        scale = float(bound) / np.sqrt(squares[over])
        s[over] = np.clip(np.trunc(f[over] * scale[:, None]), -bound, bound).astype(np.int64)
    return bound_l2(s, bound)


class PerUnit:
    """`StepSums` with a person as the unit (the module doc): each step Poisson-samples persons,
    and a sampled person adds `unit_bound` of their records' exact integer gradient sum.
    ``units`` are the records' person ids (any integers: only equality is used)."""

    def __init__(self, embeddings: np.ndarray, labels: np.ndarray, units: np.ndarray, origin: np.ndarray):
        self.records = InMemory(embeddings, labels, origin)
        self.dim = self.records.dim
        units = np.asarray(units, np.int64)
        if len(units) != len(self.records.labels):
            raise ValueError(f"{len(units)} person ids for {len(self.records.labels)} records")
        self.order = np.argsort(units, kind="stable")  # the records grouped by person
        grouped = units[self.order]
        self.starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]]) if len(units) else np.zeros(0, np.int64)
        self.sizes = np.diff(np.r_[self.starts, len(units)])

    @property
    def persons(self) -> int:
        return len(self.starts)

    def rows(self, persons: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The record indices of ``persons`` (indices into the persons), grouped by person, and
        where each person's rows begin in them."""
        sizes = self.sizes[persons]
        begins = np.cumsum(sizes) - sizes
        at = np.arange(int(sizes.sum())) - np.repeat(begins, sizes) + np.repeat(self.starts[persons], sizes)
        return self.order[at], begins

    def __call__(self, weights: np.ndarray, bias: np.ndarray, *, sample_rate: float, clip_l2: float,
                 grid: int) -> np.ndarray:
        chosen = poisson_sample(self.persons, sample_rate)
        classes, r = weights.shape[0], self.records
        delta = sensitivity_l2(grid, clip_l2)
        total = np.zeros((classes, self.dim + 1), np.int64)
        most = max(1, CHUNK_CELLS // (classes * (self.dim + 1)))  # records per chunk, at least one person
        ends = np.cumsum(self.sizes[chosen])
        start = 0
        while start < len(chosen):
            stop = max(start + 1, int(np.searchsorted(ends, (ends[start - 1] if start else 0) + most, "right")))
            idx, begins = self.rows(chosen[start:stop])
            features = r.embeddings[idx].astype(np.float64) - r.origin
            g = integer_gradients(features, r.labels[idx], weights, bias, clip_l2=clip_l2, grid=grid)
            sums = np.add.reduceat(g.reshape(len(idx), -1), begins, axis=0)  # exact: int64
            total += unit_bound(sums, delta).sum(axis=0).reshape(classes, self.dim + 1)
            start = stop
        return total


def train(records: StepSums, noisy_counts: np.ndarray, rule: HeadRule, noisy_sum: NoisySteps, population: float,
          progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(W (C, D), b (C,)) after the rule's T noisy steps from W = 0, b = `initial_bias`, each
    step's exact sum from ``records``; the step is the noisy sum over q N, N = ``population``
    the rule's noisy number of units (records or persons). ``progress`` shows a bar of the steps
    (T is public; nothing about the batches is shown)."""
    from tqdm import tqdm

    classes, dim = len(noisy_counts), records.dim
    weights = np.zeros((classes, dim), np.float64)
    bias = initial_bias(noisy_counts)
    n_noisy = max(float(population), 1.0)
    step_size = rule.learning_rate / (rule.grid * rule.sample_rate * n_noisy)
    for _ in tqdm(range(rule.steps), desc="head (DP-SGD)", unit="step", disable=not progress, dynamic_ncols=True):
        total = records(weights, bias, sample_rate=rule.sample_rate, clip_l2=rule.clip_l2, grid=rule.grid)
        noisy = noisy_sum(np.asarray(total, np.int64).reshape(-1)).reshape(classes, dim + 1).astype(np.float64)
        weights -= step_size * noisy[:, :dim]
        bias -= step_size * BIAS_FEATURE * noisy[:, dim]
    return weights, bias


def release_head(records: StepSums, origin: np.ndarray, noisy_counts: np.ndarray, budget: PrivacyBudget,
                 progress: bool = False, lr_scale: float = 1.0, max_steps: int = RULE_MAX_STEPS,
                 persons: int | None = None) -> HeadRelease:
    """The head release: the rule from the released counts (and the encoder's public
    ``lr_scale``), the budget's accounted noisy steps, the training; refuses (BuildError) a
    delta not below 1 / N before any step. ``records`` are the embeddings, centred on the public
    ``origin``, wherever they are (`InMemory`, `PerUnit`, or a build engine's `StepSums`).
    ``persons`` is the released noisy number of persons of a person-level head (``records`` a
    `PerUnit`): N is then the persons, not the records."""
    person = persons is not None
    n_noisy = max(float(persons if person else np.sum(noisy_counts)), 1.0)
    check_delta_below(budget.delta, n_noisy, "person" if person else "record")
    rule = head_rule(n_noisy, epsilon=budget.epsilon, head_epsilon=budget.share(Key.HEAD), delta=budget.delta,
                     lr_scale=lr_scale, max_steps=max_steps)
    steps = budget.noisy_steps(Key.HEAD, sensitivity_l2=rule.sensitivity_l2, noise_multiplier=rule.noise_multiplier,
                               sample_rate=rule.sample_rate, steps=rule.steps,
                               mechanism=MECHANISM_PERSON if person else MECHANISM)
    budget.declare_public("head origin: the mean embedding of the encoder's own vocabulary words and the label "
                          "descriptions (no private record)")
    budget.declare_public(f"head rule (from the released noisy {'person' if person else 'record'} count, epsilon "
                          f"and delta): expected batch "
                          f"{EXPECTED_BATCH}, {EPOCHS} epochs up to {max_steps} steps, clip {rule.clip_l2:g}, grid "
                          f"{rule.grid}, learning rate {rule.learning_rate:.6g}, noise multiplier calibrated to the "
                          f"head's share")
    budget.declare_post_processing("the head's bias starts at the log of the noisy class shares; its weights and bias "
                                   "are the noisy gradient sums' updates")
    weights, bias = train(records, noisy_counts, rule, steps, n_noisy, progress)
    facts = budget.head
    assert facts is not None and steps.used == facts.steps
    return HeadRelease(epsilon=facts.epsilon, delta=facts.delta, sensitivity_l2=facts.sensitivity_l2,
                       noise_scale=facts.noise_scale, noise_multiplier=facts.noise_multiplier,
                       sample_rate=facts.sample_rate, steps=facts.steps, grid=rule.grid, clip_l2=rule.clip_l2,
                       accountant=facts.accountant, mechanism=facts.mechanism,
                       origin=np.asarray(origin, np.float32), weights=weights.astype(np.float32),
                       bias=bias.astype(np.float32))
