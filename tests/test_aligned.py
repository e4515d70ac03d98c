"""Aligned hashing and blended scoring (bundle format 2): the class-statistics release, its
clipping and sensitivity, the aligned hyperplanes, the format's new fields, and the scorer."""

from __future__ import annotations

import json

import msgpack
import numpy as np
import pytest

from conftest import DATA, build_options
from exporter.build import build
from exporter.class_stats import (COUNT_STEPS, QUANTUM, ClassStatsCounter, clip_and_quantize, clip_steps,
                                  release_class_stats)
from exporter.dataset import read_labels, read_records
from exporter.hyperplanes import aligned_hyperplanes, bits_for
from exporter.privacy import BudgetError, NeighbourRelation, PrivacyBudget
from exporter.public_basis import PublicBasis, public_texts
from noise_hooks import ConstantNoise, OverspendingNoise
from runtime import BundleError, Classifier
from runtime import bundle as fmt
from runtime.centroids import centred_means
from runtime.errors import InputError
from runtime.bundle.schema import ClassStats
from runtime.scoring import Scorer, Weights
from test_bundle_format import load_bytes, rewrite

RNG = np.random.default_rng(5)  # test data only; never noise


def stats_budget(epsilon: float = 1.0, relation=None, noise=None) -> PrivacyBudget:
    """A budget that releases the class statistics alone, with the whole epsilon."""
    return PrivacyBudget(epsilon, relation, shares={"class_stats": 1.0}, headline="class_stats", noise_for_tests=noise)


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


def test_one_record_moves_the_release_by_at_most_its_sensitivity():
    """The L1 distance between the exact statistics of neighbouring datasets (one record added,
    however extreme) never exceeds the sensitivity the noise is scaled to."""
    basis = _basis()
    x = RNG.standard_normal((40, 12))
    y = RNG.integers(0, 3, 40)
    a = ClassStatsCounter(basis, 3, clip_l1=1.5)
    a.add(x, y)
    hook = ConstantNoise(0)
    budget = stats_budget(noise=hook)
    base = release_class_stats(a, budget)
    sensitivity = budget.privacy_facts()["sensitivity_l1"]
    assert sensitivity == QUANTUM * 1.5 + COUNT_STEPS
    for extreme in (np.full(12, 1e9), -np.full(12, 1e9), np.zeros(12), RNG.standard_normal(12)):
        b = ClassStatsCounter(basis, 3, clip_l1=1.5)
        b.add(np.vstack([x, extreme]), np.append(y, 2))
        after = release_class_stats(b, stats_budget(noise=hook))
        moved = (QUANTUM * np.abs(after.sums - base.sums).sum()
                 + COUNT_STEPS * np.abs(after.counts - base.counts).sum())
        assert moved <= sensitivity + 1e-6


def test_release_scale_counts_the_person_bound_and_refuses_overspending():
    c = ClassStatsCounter(_basis(), 2, clip_l1=3.0)
    c.add(RNG.standard_normal((10, 12)), RNG.integers(0, 2, 10))
    budget = stats_budget(0.5, NeighbourRelation.person("user_id", 4), ConstantNoise(0))
    r = release_class_stats(c, budget)
    facts = budget.privacy_facts()
    assert facts["sensitivity_l1"] == 4 * (300 + COUNT_STEPS)
    assert facts["noise_scale"] == pytest.approx(4 * 325 / 0.5)
    assert np.allclose(r.sums, c.sums / QUANTUM) and np.allclose(r.counts, c.counts)
    with pytest.raises(BudgetError, match="more than its share"):
        release_class_stats(c, stats_budget(0.5, noise=OverspendingNoise(0)))


def test_real_release_is_noisy_and_centred_on_the_exact_values():
    c = ClassStatsCounter(_basis(), 2, clip_l1=1.0)
    c.add(RNG.standard_normal((50, 12)), RNG.integers(0, 2, 50))
    draws = np.array([release_class_stats(c, stats_budget(4.0)).counts for _ in range(200)])
    assert draws.std() > 0  # real OpenDP noise, scale 125/4 grid steps = 1.25 records
    # each count's mean over 200 draws has sd sqrt(2) * 1.25 / sqrt(200) = 0.125 records: 5 sd
    assert abs(draws.mean(axis=0) - c.counts).max() < 0.65


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
    exceeds the sensitivity the release states, and reaches it (the bound is tight). Defect 2
    of issue 16: the bound was floor(100 * B) in floats, one step short for 69 of these clips
    (B = 1.13: bound 112, record 113)."""
    basis = PublicBasis(np.zeros(6, np.float32), np.eye(6, dtype=np.float32))
    short = []
    for hundredths in range(1, 1001):
        clip = hundredths / 100
        counter = ClassStatsCounter(basis, 2, clip_l1=clip)
        records = worst_records(counter.steps)
        counter.add(records, np.zeros(len(records), np.int64))
        grid_l1 = np.abs(clip_and_quantize(records, counter.steps)).sum(axis=1)
        budget = stats_budget(noise=ConstantNoise(0))
        release_class_stats(counter, budget)
        stated = budget.privacy_facts()["sensitivity_l1"]
        assert counter.steps == hundredths and stated == hundredths + COUNT_STEPS
        assert grid_l1.max() + COUNT_STEPS <= stated, clip
        short.append(grid_l1.max() < counter.steps)
    assert not any(short)  # the whole clip in one coordinate lands exactly on the bound


def test_a_clip_below_one_grid_step_is_refused():
    with pytest.raises(ValueError, match="at least one grid step"):
        clip_steps(0.004)
    assert clip_steps(0.006) == 1 and clip_steps(1.13) == 113
    with pytest.raises(ValueError, match="at least one grid step"):
        clip_steps(float("nan"))


# --------------------------------------------------------------------------- aligned hyperplanes


def test_aligned_hyperplanes_lie_in_the_class_span_and_pass_through_the_mean():
    basis = _basis()
    sums, counts = RNG.standard_normal((3, 5)) * 10, np.array([10.0, 20.0, 5.0])
    planes, offsets = aligned_hyperplanes(9, 4, 3, basis, sums, counts)
    centred, mu = centred_means(sums, counts)
    span = centred @ basis.projection.astype(np.float64)          # (3, dim) in embedding space
    q, _ = np.linalg.qr(span.T)
    flat = planes.reshape(-1, 12).astype(np.float64)
    assert np.allclose(np.linalg.norm(flat, axis=1), 1, atol=1e-6)
    assert np.allclose(flat - (flat @ q) @ q.T, 0, atol=1e-5)        # no component outside the span
    centre = basis.origin + mu @ basis.projection
    assert np.allclose(offsets.reshape(-1), flat @ centre, atol=1e-5)
    again, _ = aligned_hyperplanes(9, 4, 3, basis, sums, counts)
    assert np.array_equal(planes, again)


def test_bits_follow_the_noisy_count_only():
    assert [bits_for(n) for n in (-5.0, 900, 3200, 25600, 1e9)] == [4, 4, 5, 8, 8]


def test_public_texts_are_vocabulary_and_descriptions_only(exported_encoder):
    tok = (exported_encoder.directory / "tokenizer.json").read_text(encoding="utf-8")
    texts = public_texts(tok, ["a public description"], words=50)
    assert texts[-1] == "a public description" and len(texts) == 51
    assert all(t.isalpha() and t.islower() for t in texts[:-1])


# --------------------------------------------------------------------------- the built bundle


def test_default_build_is_format_2_with_exact_statistics_under_the_hook(exact_bundle, exported_encoder):
    raw = msgpack.unpackb(exact_bundle.read_bytes(), raw=False)
    assert raw["version"] == [2, 1]
    b = fmt.load(exact_bundle)
    labels = read_labels(DATA / "labels.txt")
    records = list(read_records(DATA / "train.jsonl", labels))
    assert b.votes.sum() == len(records) * b.tables          # every record once per table
    assert b.class_stats is not None and b.prior is not None and b.offsets is not None
    assert np.allclose(b.class_stats.counts, np.bincount([r.label for r in records], minlength=len(labels)))
    shares = {r["statistic"]: r["epsilon"] for r in b.privacy["releases"]}
    assert shares["class_stats"] == pytest.approx(0.8 * 8) and sum(shares.values()) == pytest.approx(8)
    assert b.privacy["sensitivity_l1"] == b.tables
    assert b.lsh["bits"] == bits_for(len(records))


def test_random_hashing_still_writes_format_1_2(exported_encoder, tmp_path):
    out = tmp_path / "r.dpedge"
    build(build_options(out, hashing="random", bits=5), noise_for_tests=ConstantNoise(0))
    assert msgpack.unpackb(out.read_bytes(), raw=False)["version"] == [1, 2]
    b = fmt.load(out)
    assert b.offsets is None and b.class_stats is None and "releases" not in b.privacy
    assert Scorer.from_bundle(b).plain_votes


def test_classify_cli_shows_releases_and_scores_components(dp_bundle, capsys):
    from runtime.classify import main

    assert main(["--bundle", str(dp_bundle), "--info"]) == 0
    out = capsys.readouterr().out
    assert "release 1             class_stats: epsilon 6.4" in out and "release 2             votes" in out
    for mode in ("blend", "votes", "centroids", "prior"):
        assert main(["--bundle", str(dp_bundle), "--json", "--score", mode, "wake me up at seven"]) == 0
        row = json.loads(capsys.readouterr().out)
        assert row["label"] == max(row["scores"], key=row["scores"].get)


def test_blend_is_better_than_chance_and_agrees_with_its_parts(dp_bundle):
    clf = Classifier.load(dp_bundle, threads=1)
    texts = [json.loads(line)["text"] for line in (DATA / "test.jsonl").read_text().splitlines()]
    gold = [json.loads(line)["label"] for line in (DATA / "test.jsonl").read_text().splitlines()]
    acc = np.mean([p.label == g for p, g in zip(clf.predict(texts), gold)])
    assert acc > 0.6, acc
    x = clf.embed(texts[:20])
    parts = {m: Scorer.from_bundle(clf.bundle, m).scores(x) for m in ("votes", "centroids", "prior")}
    w, s = Weights.from_map(clf.bundle.scoring), Scorer.from_bundle(clf.bundle)
    assert w == Weights.measured(5.0)          # the build ships the measured rule on its own clip
    pos = np.maximum(clf.bundle.votes[np.arange(clf.bundle.tables)[None, :], s.hasher.buckets(x)], 0).sum(axis=1)
    # epsilon 8, but 560 records in 7 classes: the prior's boost is 1000 * 7 / (8 * noisy N) > 1
    n, c = float(clf.bundle.class_stats.counts.sum()), len(clf.labels)
    assert s.prior_boost == pytest.approx(max(1.0, 1000 * c / (8 * n))) and s.prior_boost > 1
    expected = (pos / pos.sum(axis=1, keepdims=True) + w.centroids * parts["centroids"]
                + w.prior * s.prior_boost * parts["prior"])
    assert np.allclose(s.scores(x), expected)


# --------------------------------------------------------------------------- format 2 validation


@pytest.mark.parametrize("mutate,message", [
    (lambda p: p["lsh"].__setitem__("offsets", {"dtype": "<f4", "shape": [1, 1], "data": b"\0" * 4}), "lsh.offsets"),
    (lambda p: p["class_stats"]["sums"].__setitem__("shape", [1, 1]), "class_stats.sums"),
    (lambda p: p["class_stats"]["projection"].update(shape=[385, 384], data=b"\0" * 4 * 385 * 384),
     "class_stats.projection' must have 1 to 384 rows"),
    (lambda p: p["privacy"].pop("releases"), "privacy.releases"),
    (lambda p: p["privacy"]["releases"][0].__setitem__("epsilon", 100.0), "their shares must add up to it"),
    (lambda p: p["privacy"]["releases"][0].__setitem__("noise_scale", 1.0), "the privacy facts contradict each other"),
    (lambda p: p["privacy"]["releases"].pop(0), "every released statistic"),
    (lambda p: p["scoring"].__setitem__("votes", -1.0), "scoring"),
    (lambda p: p["scoring"].__setitem__("votes", "2"), "scoring.votes' must be a number"),
    (lambda p: p["scoring"].__setitem__("centroid_rule", "median"), "scoring.centroid_rule' must be one of"),
    (lambda p: p["scoring"].pop("centroid_clip_l1"), "scoring.centroid_clip_l1' must be positive"),
    (lambda p: p["scoring"].__setitem__("prior_temperature", 0), "scoring.prior_temperature' must be at least 1e-6"),
    (lambda p: p["scoring"].__setitem__("centroid_temperature", 5e-324), "scoring.centroid_temperature' must be at least"),
    (lambda p: p["scoring"].__setitem__("votes", 1e308), "scoring.votes' must be at most 1e6"),
    (lambda p: p["privacy"]["releases"][0].__setitem__("noise_scale", "n/a"), "noise_scale' is string"),
    (lambda p: p["prior"]["embeddings"].__setitem__("shape", [1, 384]), "prior.embeddings"),
])
def test_invalid_format_2_fields(dp_bundle, tmp_path, mutate, message):
    with pytest.raises(BundleError, match=message.replace(".", r"\.")):
        load_bytes(tmp_path, rewrite(dp_bundle.read_bytes(), mutate_payload=mutate))


def test_a_3_0_bundle_is_refused_as_newer(dp_bundle, tmp_path):
    blob = rewrite(dp_bundle.read_bytes(), mutate_outer=lambda o: o.__setitem__("version", [3, 0]))
    with pytest.raises(BundleError, match="newer than this runtime supports"):
        load_bytes(tmp_path, blob)


def test_component_without_its_statistics_is_a_clear_error(exported_encoder, tmp_path):
    out = tmp_path / "r.dpedge"
    build(build_options(out, hashing="random", bits=4), noise_for_tests=ConstantNoise(0))
    with pytest.raises(InputError, match="no class statistics"):
        Classifier.load(out, score="centroids")


def test_scorer_blend_on_a_hand_example():
    planes = np.array([[[1.0, 0.0]]], np.float32)                       # 1 table, 1 bit
    votes = np.array([[[5, -3], [1, 3]]], np.int16)                      # bucket 0: 5/-3, bucket 1: 1/3
    cs = ClassStats(np.zeros(2, np.float32), np.eye(2, dtype=np.float32),
                    np.array([[2.0, 0.0], [0.0, 2.0]], np.float32), np.array([2.0, 2.0], np.float32))
    s = Scorer(planes, votes, offsets=np.array([[0.5]], np.float32), class_stats=cs,
               prior=np.array([[1.0, 0.0], [0.0, 1.0]], np.float32), epsilon=0.5)
    x = np.array([[0.6, 0.8]])                                           # bit 1 (0.6 > 0.5): votes 1/3
    z = np.array([0.6 - 0.5, 0.8 - 0.5]); z /= np.linalg.norm(z)
    dirs = np.array([[0.5, -0.5], [-0.5, 0.5]]) / np.sqrt(0.5)
    soft = lambda v, t: np.exp(v / t) / np.exp(v / t).sum()              # noqa: E731
    expected = np.array([1, 3]) / 4 + soft(dirs @ z, 0.05) + 2.0 * soft(np.array([0.6, 0.8]), 0.05)
    assert np.allclose(s.scores(x)[0], expected)


def test_scorer_gaussian_centroids_on_a_hand_example():
    """The Gaussian rule clips the query like a record, centres it on the released mean and
    scores <z, m_c> - |m_c|^2 / 2 (nearest class mean), at the measured temperature."""
    planes = np.array([[[1.0, 0.0]]], np.float32)
    votes = np.array([[[5, -3], [1, 3]]], np.int16)
    cs = ClassStats(np.zeros(2, np.float32), np.eye(2, dtype=np.float32),
                    np.array([[2.0, 0.0], [0.0, 2.0]], np.float32), np.array([2.0, 2.0], np.float32))
    s = Scorer(planes, votes, offsets=np.array([[0.5]], np.float32), class_stats=cs,
               weights=Weights.measured(1.0), mode="centroids")
    x = np.array([[0.6, 0.8]])                        # L1 1.4 -> clipped to [3/7, 4/7]
    z = np.array([3 / 7, 4 / 7]) - 0.5                 # minus the mean [0.5, 0.5]
    means = np.array([[0.5, -0.5], [-0.5, 0.5]])       # centred class means, |m_c|^2 = 0.5
    logits = (means @ z - 0.25) / 0.003
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert np.allclose(s.scores(x)[0], expected)
    assert s.scores(x)[0].argmax() == 1


def test_a_2_0_bundle_keeps_its_cosine_centroids(dp_bundle, tmp_path):
    """A bundle written before the Gaussian rule (version 2.0, no rule in its scoring map) loads
    and scores its centroids by cosine, as it did when it was measured."""
    def as_2_0(p):
        for k in ("centroid_rule", "centroid_clip_l1", "prior_records_per_class"):
            p["scoring"].pop(k)
        p["scoring"]["centroid_temperature"] = 0.05
    path = tmp_path / "old.dpedge"
    path.write_bytes(rewrite(dp_bundle.read_bytes(), mutate_payload=as_2_0,
                             mutate_outer=lambda o: o.__setitem__("version", [2, 0])))
    old, new = fmt.load(path), fmt.load(dp_bundle)
    assert Weights.from_map(old.scoring) == Weights()
    x = np.random.default_rng(3).standard_normal((5, old.hyperplanes.shape[-1]))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    cs = old.class_stats
    centred = cs.sums / np.maximum(cs.counts, 1)[:, None] - cs.sums.sum(0) / cs.counts.sum()
    z = (x - cs.origin) @ cs.projection.T - cs.sums.sum(0) / cs.counts.sum()
    cos = (z / np.linalg.norm(z, axis=1, keepdims=True)) @ (centred / np.linalg.norm(centred, axis=1, keepdims=True)).T
    expected = np.exp(cos / 0.05) / np.exp(cos / 0.05).sum(axis=1, keepdims=True)
    assert np.allclose(Scorer.from_bundle(old, "centroids").scores(x), expected, atol=1e-6)
    assert not np.allclose(Scorer.from_bundle(new, "centroids").scores(x), expected, atol=1e-3)


def test_probing_reads_the_buckets_one_bit_away():
    """probe_weight w adds w x the votes of every bucket whose code differs in one bit."""
    planes = np.array([[[1.0, 0.0], [0.0, 1.0]]], np.float32)           # 1 table, 2 bits
    votes = np.array([[[1, 0], [2, 0], [0, 4], [8, 8]]], np.int16)       # buckets 0..3
    x = np.array([[-1.0, -1.0]])                                         # bucket 0; neighbours 1 and 2
    assert Scorer(planes, votes).scores(x).tolist() == [[1.0, 0.0]]
    assert Scorer(planes, votes, probe_weight=0.5).scores(x).tolist() == [[1.0 + 0.5 * 2, 0.5 * 4]]
    with pytest.raises(ValueError, match="probe weight"):
        Scorer(planes, votes, probe_weight=-1)


def test_cli_probe_weight_changes_only_the_vote_reading(dp_bundle, capsys):
    from runtime.classify import main
    rows = []
    for w in ("0", "0.5"):
        assert main(["--bundle", str(dp_bundle), "--json", "--score", "votes", "--probe-weight", w,
                     "set an alarm for seven"]) == 0
        rows.append(json.loads(capsys.readouterr().out))
    assert rows[0]["scores"] != rows[1]["scores"]
    assert main(["--bundle", str(dp_bundle), "--probe-weight", "-1", "hello"]) == 2
    assert "probe weight" in capsys.readouterr().err


def test_prior_boost_follows_epsilon_and_the_noisy_records_per_class():
    """The prior leans in where the release holds little signal per class: small epsilon, or
    few (noisy) records per class; never more than SCORING_MAX (a finite blend)."""
    from runtime.bundle.schema import SCORING_MAX
    from runtime.scoring import prior_boost
    assert prior_boost(None, 1000.0, np.array([10.0])) == 1.0
    assert prior_boost(0.1, 0.0, np.array([10.0, 10.0])) == pytest.approx(10.0)       # 2.0: 1/eps only
    assert prior_boost(1.0, 1000.0, np.array([5000.0, 5000.0])) == 1.0                  # plenty of data
    assert prior_boost(1.0, 1000.0, np.array([100.0, 150.0, 250.0])) == pytest.approx(6.0)
    assert prior_boost(2.0, 1000.0, np.array([-30.0, 10.0])) == pytest.approx(1000.0)  # count floored at 1
    assert prior_boost(1e-300, 1000.0, np.array([1.0])) == SCORING_MAX
