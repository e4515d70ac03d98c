"""The class statistics: the counts release, the subspace rule, the sums release with its exact
grid sensitivity, the public task basis, the aligned hyperplanes and the bundles a build writes."""

from __future__ import annotations


import numpy as np
import pytest

from conftest import DATA, build_options
from exporter.build import build
from exporter.class_stats import (QUANTUM, ClassSumCounter, choose_subspace, clip_and_quantize, clip_steps,
                                  release_class_counts, release_class_sums)
from exporter.dataset import read_labels, read_records
from exporter.hyperplanes import aligned_hyperplanes, bits_for
from exporter.privacy import BudgetError, NeighbourRelation, PrivacyBudget
from exporter.public_basis import PublicBasis, public_texts, task_basis
from noise_hooks import ConstantNoise, OverspendingNoise
from exporter.hyperplanes import centred_means
from runtime import Classifier
from runtime import bundle as fmt
from runtime.scoring import Scorer

pytestmark = pytest.mark.exporter

RNG = np.random.default_rng(5)  # test data only; never noise


def one_release(statistic: str, epsilon: float = 1.0, relation=None, noise=None) -> PrivacyBudget:
    """A budget that makes one release with the whole epsilon."""
    return PrivacyBudget(epsilon, relation, shares={statistic: 1.0}, noise_for_tests=noise)


def _basis(dim: int = 12, k: int = 5) -> PublicBasis:
    q, _ = np.linalg.qr(RNG.standard_normal((dim, k)))
    return PublicBasis(RNG.standard_normal(dim).astype(np.float32) * 0.1, q.T.astype(np.float32))


# --------------------------------------------------------------------------- clipping and sensitivity


def test_clip_bounds_every_row_and_keeps_small_rows():
    z = RNG.standard_normal((500, 7)) * RNG.choice([0.01, 1, 1e6], size=(500, 1))
    q = clip_and_quantize(z, 250)
    assert (np.abs(q).sum(axis=1) <= 250).all()
    small = np.abs(z).sum(axis=1) < 2.5
    assert np.array_equal(q[small], np.trunc(z[small] * QUANTUM).astype(np.int64))


def test_one_record_moves_the_sums_by_at_most_their_sensitivity():
    """The L1 distance between the exact sums of neighbouring datasets (one record added,
    however extreme) never exceeds the sensitivity the noise is scaled to."""
    basis = _basis()
    x, y = RNG.standard_normal((40, 12)), RNG.integers(0, 3, 40)
    a = ClassSumCounter(basis, 3, clip_l1=1.5)
    a.add(x, y)
    budget = one_release("class_sums", noise=ConstantNoise(0))
    base = release_class_sums(a, budget)
    sensitivity = budget.releases["class_sums"].sensitivity_l1
    assert sensitivity == 150
    for extreme in (np.full(12, 1e9), -np.full(12, 1e9), np.zeros(12), RNG.standard_normal(12)):
        b = ClassSumCounter(basis, 3, clip_l1=1.5)
        b.add(np.vstack([x, extreme]), np.append(y, 2))
        after = release_class_sums(b, one_release("class_sums", noise=ConstantNoise(0)))
        assert np.abs(after.astype(np.int64) - base).sum() <= sensitivity


def worst_records(steps: int, dim: int = 6) -> np.ndarray:
    """Records that push the clip hardest: the whole clip (and a hair more) in one coordinate,
    spread evenly, and in odd proportions, at the float values just around the clip."""
    b = steps / QUANTUM
    rows = []
    for total in (b, np.nextafter(b, np.inf), np.nextafter(b, 0), b * (1 + 1e-12), 3 * b, 1e9):
        rows += [np.eye(dim)[0] * total, np.full(dim, total / dim), -np.full(dim, total / dim),
                 np.array([0.7, 0.2, 0.1, 0, 0, 0]) * total, np.array([1 / 3, 1 / 3, 1 / 3, 0, 0, 0]) * total]
    return np.array(rows)


def test_the_recorded_sensitivity_is_exact_for_every_clip_on_the_grid():
    """Sweep the clip over 0.01 .. 10.00 (every grid step): the worst record's grid L1 never
    exceeds the sensitivity the release states, and reaches it (the bound is tight). The former
    bound, floor(100 * B) in floats, was one step short for some clips."""
    basis = PublicBasis(np.zeros(6, np.float32), np.eye(6, dtype=np.float32))
    for hundredths in range(1, 1001):
        counter = ClassSumCounter(basis, 2, clip_l1=hundredths / 100)
        records = worst_records(counter.steps)
        counter.add(records, np.zeros(len(records), np.int64))
        grid_l1 = np.abs(clip_and_quantize(records, counter.steps)).sum(axis=1)
        budget = one_release("class_sums", noise=ConstantNoise(0))
        release_class_sums(counter, budget)
        stated = budget.releases["class_sums"].sensitivity_l1
        assert counter.steps == hundredths == stated
        assert grid_l1.max() == stated, hundredths  # never above, and the whole clip in one coordinate reaches it


def test_a_clip_below_one_grid_step_is_refused():
    with pytest.raises(ValueError, match="at least one grid step"):
        clip_steps(0.004)
    assert clip_steps(0.006) == 1 and clip_steps(1.13) == 113
    with pytest.raises(ValueError, match="at least one grid step"):
        clip_steps(float("nan"))


def test_counts_move_by_one_per_record_and_k_per_person():
    budget = one_release("class_counts", 0.5, NeighbourRelation.person("user_id", 4), ConstantNoise(0))
    counts = release_class_counts(np.array([3, 0, 7]), budget)
    r = budget.releases["class_counts"]
    assert counts.tolist() == [3, 0, 7] and counts.dtype == np.int32 and r.sensitivity_l1 == 4 and r.noise_scale == 8.0
    with pytest.raises(BudgetError, match="more than its share"):
        release_class_counts(np.array([1, 1]), one_release("class_counts", noise=OverspendingNoise(0)))


def test_real_counts_are_noisy_and_centred_on_the_exact_values():
    draws = np.array([release_class_counts(np.array([25, 25]), one_release("class_counts", 1.0))
                      for _ in range(400)])
    assert draws.std() > 0
    # scale 1: each mean over 400 draws has sd sqrt(2 e^-1) / (1 - e^-1) / 20 = 0.068: 5 sd
    assert abs(draws.mean(axis=0) - 25).max() < 0.35


# --------------------------------------------------------------------------- the rule and the basis


def test_the_dimension_follows_epsilon_and_the_noisy_count_only():
    basis = task_basis(RNG.standard_normal((600, 384)), None)
    ks = [choose_subspace(eps, np.array([1000.0, 1000.0]), 1, basis)[0] for eps in (0.001, 0.1, 1, 3, 8, 100)]
    assert ks == sorted(ks) and ks[0] == 16 and ks[-1] == 384 and all(k % 16 == 0 for k in ks)
    assert choose_subspace(0.95, np.array([1000.0, 1000.0]), 4, basis)[0] < choose_subspace(
        0.95, np.array([1000.0, 1000.0]), 1, basis)[0]  # a person's K records are K times the noise
    k, clip = choose_subspace(0.95, np.array([-50.0, 10.0]), 1, basis)  # noisy counts below 0: N at least 1
    assert k == 16 and clip == basis.clip_for(16) > 0


def test_the_task_basis_puts_the_description_contrasts_first():
    vocab, desc = RNG.standard_normal((400, 10)), RNG.standard_normal((3, 10))
    b = task_basis(vocab, desc)
    p = b.projection.astype(np.float64)
    assert np.allclose(p @ p.T, np.eye(10), atol=1e-5)
    contrasts = desc - desc.mean(axis=0)
    q, _ = np.linalg.qr(contrasts.T)
    q = q[:, :2]
    assert np.allclose(p[:2] - (p[:2] @ q) @ q.T, 0, atol=1e-5)          # rows 0..C-2 span the contrasts
    assert np.allclose(b.origin, np.concatenate([vocab, desc]).mean(axis=0), atol=1e-6)
    assert np.all(np.diff(b.l1_median) > 0) and b.first(4).projection.shape == (4, 10)


def test_public_texts_are_vocabulary_and_descriptions_only(exported_encoder):
    tok = (exported_encoder.directory / "tokenizer.json").read_text(encoding="utf-8")
    texts = public_texts(tok, ["a public description"], words=50)
    assert texts[-1] == "a public description" and len(texts) == 51
    assert all(t.isalpha() and t.islower() for t in texts[:-1])


def test_aligned_hyperplanes_lie_in_the_class_span_and_pass_through_the_mean():
    basis = _basis()
    sums, counts = RNG.standard_normal((3, 5)) * 10, np.array([10.0, 20.0, 5.0])
    planes, offsets = aligned_hyperplanes(9, 4, 3, basis, sums, counts)
    centred, mu = centred_means(sums, counts)
    span = centred @ basis.projection.astype(np.float64)
    q, _ = np.linalg.qr(span.T)
    flat = planes.reshape(-1, 12).astype(np.float64)
    assert np.allclose(np.linalg.norm(flat, axis=1), 1, atol=1e-6)
    assert np.allclose(flat - (flat @ q) @ q.T, 0, atol=1e-5)
    assert np.allclose(offsets.reshape(-1), flat @ (basis.origin + mu @ basis.projection), atol=1e-5)


def test_bits_follow_the_noisy_count_only():
    assert [bits_for(n) for n in (-5.0, 900, 3200, 25600, 1e9)] == [4, 4, 5, 8, 8]


# --------------------------------------------------------------------------- the built bundle


def test_default_build_holds_the_exact_statistics_under_the_hook(exported_encoder, tmp_path):
    exact_bundle = tmp_path / "exact.dpedge"
    build(build_options(exact_bundle), noise_for_tests=ConstantNoise(0))
    b = fmt.load(exact_bundle)
    assert b.version == (1, 0) and b.votes is None and b.hyperplanes is None   # class statistics alone
    labels = read_labels(DATA / "labels.txt")
    records = list(read_records(DATA / "train.jsonl", labels))
    y = np.array([r.label for r in records])
    assert np.array_equal(b.class_counts, np.bincount(y, minlength=len(labels)))
    assert list(b.releases) == ["class_counts", "class_sums"]
    counts, sums = b.releases["class_counts"], b.releases["class_sums"]
    assert counts.epsilon == pytest.approx(0.05 * 8) and counts.epsilon + sums.epsilon == pytest.approx(8)
    k = b.projection.shape[0]
    assert b.class_sums.shape == (7, k) and k == choose_subspace(0.95 * 8, b.class_counts, 1, _fitted(b))[0]
    # the exact sums of the records in that subspace, as the exporter's counter computes them
    clf = Classifier.load(exact_bundle, threads=1)
    counter = ClassSumCounter(PublicBasis(b.origin, b.projection), len(labels), sums.clip_l1)
    counter.add(clf.embed([r.text for r in records]), y)
    assert np.array_equal(b.class_sums, counter.sums) and sums.grid == QUANTUM
    assert sums.sensitivity_l1 == round(QUANTUM * sums.clip_l1)


def _fitted(b: fmt.Bundle) -> PublicBasis:
    """A basis with the right dimension for the rule (the clip table does not enter k)."""
    return PublicBasis(b.origin, np.eye(384, dtype=np.float32), np.ones(384))


def test_vote_tables_come_back_with_a_share(exported_encoder, tmp_path):
    out = tmp_path / "v.dpedge"
    build(build_options(out, votes_share=0.1), noise_for_tests=ConstantNoise(0))
    b = fmt.load(out)
    assert list(b.releases) == ["class_counts", "class_sums", "votes"] and b.offsets is not None
    assert b.releases["votes"].sensitivity_l1 == b.tables
    assert b.votes.sum() == 560 * b.tables
    scorer = Scorer(b)
    assert not scorer.plain_votes and scorer.votes is not None


def test_random_hashing_releases_vote_tables_alone(exported_encoder, tmp_path):
    out = tmp_path / "r.dpedge"
    build(build_options(out, hashing="random", bits=5), noise_for_tests=ConstantNoise(0))
    b = fmt.load(out)
    assert b.version == (1, 0) and list(b.releases) == ["votes"] and b.releases["votes"].epsilon == 8.0
    assert b.offsets is None and b.class_sums is None and b.prior is None and b.scoring is None
    assert Scorer(b).plain_votes
