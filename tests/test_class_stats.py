"""The class statistics (bundle format 3): the counts release, the subspace rule, the sums
release with its exact grid sensitivity, the public task basis, the built bundle, the
runtime's scoring rules, and the formats 2.x that must keep loading."""

from __future__ import annotations

import dataclasses
import json

import msgpack
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
from runtime import BundleError, Classifier
from runtime import bundle as fmt
from runtime.bundle.schema import ClassStats
from runtime.centroids import centred_means
from runtime.errors import InputError
from runtime.scoring import Scorer, Weights, prior_boost, sums_noise_norm
from test_bundle_format import load_bytes, rewrite

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
    sensitivity = budget.privacy_facts()["sensitivity_l1"]
    assert sensitivity == 150
    for extreme in (np.full(12, 1e9), -np.full(12, 1e9), np.zeros(12), RNG.standard_normal(12)):
        b = ClassSumCounter(basis, 3, clip_l1=1.5)
        b.add(np.vstack([x, extreme]), np.append(y, 2))
        after = release_class_sums(b, one_release("class_sums", noise=ConstantNoise(0)))
        assert QUANTUM * np.abs(after - base).sum() <= sensitivity + 1e-6


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
        stated = budget.privacy_facts()["sensitivity_l1"]
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
    facts = budget.privacy_facts()
    assert counts.tolist() == [3.0, 0.0, 7.0] and facts["sensitivity_l1"] == 4 and facts["noise_scale"] == 8.0
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


def test_default_build_is_format_4_with_exact_statistics_under_the_hook(exported_encoder, tmp_path):
    exact_bundle = tmp_path / "exact.dpedge"
    build(build_options(exact_bundle), noise_for_tests=ConstantNoise(0))
    raw = msgpack.unpackb(exact_bundle.read_bytes(), raw=False)
    assert raw["version"] == [4, 0]
    payload = msgpack.unpackb(raw["payload"], raw=False)
    assert "votes" not in payload and "lsh" not in payload       # class statistics alone
    b = fmt.load(exact_bundle)
    labels = read_labels(DATA / "labels.txt")
    records = list(read_records(DATA / "train.jsonl", labels))
    y = np.array([r.label for r in records])
    cs = b.class_stats
    assert np.array_equal(cs.counts, np.bincount(y, minlength=len(labels)))
    releases = {r["statistic"]: r for r in b.privacy["releases"]}
    assert list(releases) == ["class_counts", "class_sums"]
    assert releases["class_counts"]["epsilon"] == pytest.approx(0.05 * 8) and sum(
        r["epsilon"] for r in releases.values()) == pytest.approx(8)
    k, clip = releases["class_sums"]["dim"], releases["class_sums"]["clip_l1"]
    assert cs.projection.shape == (k, 384) and k == choose_subspace(0.95 * 8, cs.counts, 1, _fitted(b))[0]
    # the exact sums of the records in that subspace, as the exporter's counter computes them
    clf = Classifier.load(exact_bundle, threads=1)
    counter = ClassSumCounter(PublicBasis(cs.origin, cs.projection), len(labels), clip)
    counter.add(clf.embed([r.text for r in records]), y)
    assert np.allclose(cs.sums, counter.sums / QUANTUM, atol=1e-3)
    assert b.privacy["sensitivity_l1"] == releases["class_sums"]["sensitivity_l1"] == round(100 * clip)


def _fitted(b: fmt.Bundle) -> PublicBasis:
    """A basis with the right dimension for the rule (the clip table does not enter k)."""
    return PublicBasis(b.class_stats.origin, np.eye(384, dtype=np.float32), np.ones(384))


def test_vote_tables_come_back_with_a_share(exported_encoder, tmp_path):
    out = tmp_path / "v.dpedge"
    build(build_options(out, votes_share=0.1), noise_for_tests=ConstantNoise(0))
    b = fmt.load(out)
    names = [r["statistic"] for r in b.privacy["releases"]]
    assert names == ["class_counts", "class_sums", "votes"] and b.votes is not None and b.offsets is not None
    assert b.privacy["sensitivity_l1"] == b.tables  # the top level states the vote tables' release
    assert b.votes.sum() == 560 * b.tables
    scorer = Scorer.from_bundle(b)
    assert not scorer.plain_votes and scorer.votes is not None


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
    assert "release 1             class_counts: epsilon 0.4" in out and "release 2             class_sums" in out
    assert "hashing     none" in out
    for mode in ("blend", "centroids", "prior"):
        assert main(["--bundle", str(dp_bundle), "--json", "--score", mode, "wake me up at seven"]) == 0
        row = json.loads(capsys.readouterr().out)
        assert row["label"] == max(row["scores"], key=row["scores"].get)
    assert main(["--bundle", str(dp_bundle), "--score", "votes", "hello"]) == 2
    assert "no vote tables" in capsys.readouterr().err


def test_blend_is_better_than_chance_and_is_the_sum_of_its_parts(dp_bundle):
    clf = Classifier.load(dp_bundle, threads=1)
    rows = [json.loads(line) for line in (DATA / "test.jsonl").read_text().splitlines()]
    acc = np.mean([p.label == r["label"] for p, r in zip(clf.predict([r["text"] for r in rows]), rows)])
    assert acc > 0.6, acc
    x = clf.embed([r["text"] for r in rows[:20]])
    w, s = Weights.from_map(clf.bundle.scoring), Scorer.from_bundle(clf.bundle)
    assert w == Weights.measured()
    n, c = float(clf.bundle.class_stats.counts.sum()), len(clf.labels)
    assert s.prior_boost == pytest.approx(100 * c / (8 * n))      # linear: R C K / (epsilon N)
    parts = {m: Scorer.from_bundle(clf.bundle, m).scores(x) for m in ("centroids", "prior")}
    assert np.allclose(s.scores(x), parts["centroids"] + s.prior_boost * parts["prior"])


# --------------------------------------------------------------------------- format 3 validation


@pytest.mark.parametrize("mutate,message", [
    (lambda p: p["class_stats"]["sums"].__setitem__("shape", [1, 1]), "class_stats.sums"),
    (lambda p: p["class_stats"]["projection"].update(shape=[385, 384], data=b"\0" * 4 * 385 * 384),
     "class_stats.projection' must have 1 to 384 rows"),
    (lambda p: p.pop("class_stats"), "must hold 'class_stats'"),
    (lambda p: p["privacy"].pop("releases"), "privacy.releases"),
    (lambda p: p["privacy"]["releases"][0].__setitem__("epsilon", 100.0), "their shares must add up to it"),
    (lambda p: p["privacy"]["releases"].pop(0), "every released statistic"),
    (lambda p: p["scoring"].__setitem__("centroid_rule", "median"), "scoring.centroid_rule' must be one of"),
    (lambda p: p["scoring"].__setitem__("prior_boost_rule", "cubic"), "scoring.prior_boost_rule' must be one of"),
    (lambda p: p["scoring"].__setitem__("prior_temperature", 0), "scoring.prior_temperature' must be at least 1e-6"),
    (lambda p: p["scoring"].__setitem__("votes", 1e308), "scoring.votes' must be at most 1e6"),
    (lambda p: p["prior"]["embeddings"].__setitem__("shape", [1, 384]), "prior.embeddings"),
    (lambda p: p.__setitem__("votes", {"dtype": "<i2", "shape": [1, 2, 7], "data": b"\0" * 28}), "missing field 'lsh'"),
])
def test_invalid_format_3_fields(dp_bundle, tmp_path, mutate, message):
    with pytest.raises(BundleError, match=message.replace(".", r"\.")):
        load_bytes(tmp_path, rewrite(dp_bundle.read_bytes(), mutate_payload=mutate))


def test_a_5_0_bundle_is_refused_as_newer(dp_bundle, tmp_path):
    blob = rewrite(dp_bundle.read_bytes(), mutate_outer=lambda o: o.__setitem__("version", [5, 0]))
    with pytest.raises(BundleError, match="newer than this runtime supports"):
        load_bytes(tmp_path, blob)


def test_format_3_bundles_score_as_they_did_without_the_pull(dp_bundle, tmp_path):
    """A 3.0 bundle (no description_pull) scores by the plain public-frame cosine, and the 4.0
    bundle's pull, read from its own privacy facts, changes the centroid scores."""
    new = fmt.load(dp_bundle)
    assert new.scoring["description_pull"] == 0.5

    def mutate(p):
        del p["scoring"]["description_pull"]
    old = load_bytes(tmp_path, rewrite(dp_bundle.read_bytes(), mutate_payload=mutate,
                                       mutate_outer=lambda o: o.__setitem__("version", [3, 0])))
    x = np.random.default_rng(0).normal(size=(20, 384))
    plain = Scorer(None, None, class_stats=new.class_stats, prior=new.prior, epsilon=new.privacy["epsilon"],
                   weights=dataclasses.replace(Weights.measured(), description_pull=0.0))
    assert np.array_equal(Scorer.from_bundle(old).scores(x), plain.scores(x))
    pulled = Scorer.from_bundle(new)
    assert not np.allclose(pulled.scores(x), plain.scores(x))
    by_hand = Scorer(None, None, class_stats=new.class_stats, prior=new.prior, epsilon=new.privacy["epsilon"],
                     weights=Weights.measured(), sums_noise=sums_noise_norm(new.privacy, len(new.class_stats.projection)))
    assert np.array_equal(pulled.scores(x), by_hand.scores(x))


def test_a_bundle_without_tables_is_refused_under_an_older_major(dp_bundle, tmp_path):
    """Before format 3 the vote tables were required: a 2.x reader would refuse such a file,
    and so does this reader when the file claims 2.x."""
    blob = rewrite(dp_bundle.read_bytes(), mutate_outer=lambda o: o.__setitem__("version", [2, 1]))
    with pytest.raises(BundleError, match="missing field 'lsh'"):
        load_bytes(tmp_path, blob)


def test_component_without_its_statistics_is_a_clear_error(random_bundle):
    with pytest.raises(InputError, match="no class statistics"):
        Classifier.load(random_bundle, score="centroids")


# --------------------------------------------------------------------------- format 2.x keeps loading


def as_format_2(bundle_3: bytes, random_1_2: bytes, rule: str) -> bytes:
    """A format-2.x bundle as earlier exporters wrote it: the 3.0 bundle's class statistics
    and prior, the random bundle's hashing and vote tables, one class_stats release, and a
    2.1 ("gaussian") or 2.0 (no rule) scoring map."""
    old = msgpack.unpackb(msgpack.unpackb(random_1_2, raw=False)["payload"], raw=False)

    def mutate(p):
        p["lsh"], p["votes"] = old["lsh"], old["votes"]
        eps, t = p["privacy"]["epsilon"], old["lsh"]["tables"]
        stats = {"statistic": "class_stats", "epsilon": 0.8 * eps, "mechanism": "m", "sensitivity_l1": 525,
                 "noise_scale": 525 / (0.8 * eps)}
        votes = {"statistic": "votes", "epsilon": 0.2 * eps, "mechanism": "m", "sensitivity_l1": t,
                 "noise_scale": t / (0.2 * eps)}
        p["privacy"].update(releases=[stats, votes], sensitivity_l1=t, noise_scale=t / (0.2 * eps))
        p["scoring"] = {"votes": 1.0, "centroids": 1.0, "prior": 1.0, "centroid_temperature": 0.05,
                        "prior_temperature": 0.05}
        if rule == "gaussian":
            p["scoring"].update(centroid_rule="gaussian", centroid_clip_l1=5.0, centroid_temperature=0.003,
                                prior_records_per_class=1000.0)
    version = [2, 1] if rule == "gaussian" else [2, 0]
    return rewrite(bundle_3, mutate_payload=mutate, mutate_outer=lambda o: o.__setitem__("version", version))


@pytest.mark.parametrize("rule", ["gaussian", "cosine"])
def test_format_2_bundles_load_and_score_as_they_did(dp_bundle, random_bundle, tmp_path, rule):
    b = load_bytes(tmp_path, as_format_2(dp_bundle.read_bytes(), random_bundle.read_bytes(), rule))
    w = Weights.from_map(b.scoring)
    assert w.centroid_rule == rule and w.prior_boost_rule == "max" and b.votes is not None
    x = np.random.default_rng(3).standard_normal((5, 384))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    cs = b.class_stats
    centred, mu = centred_means(cs.sums, cs.counts)
    z = (x - cs.origin) @ cs.projection.T.astype(np.float64)
    if rule == "gaussian":
        l1 = np.abs(z).sum(axis=1, keepdims=True)
        logits = ((z * np.minimum(1, 5.0 / l1) - mu) @ centred.T - 0.5 * (centred**2).sum(axis=1)) / 0.003
    else:
        zc = z - mu
        logits = (zc / np.linalg.norm(zc, axis=1, keepdims=True)) @ (
            centred / np.linalg.norm(centred, axis=1, keepdims=True)).T / 0.05
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    assert np.allclose(Scorer.from_bundle(b, "centroids").scores(x), expected, atol=1e-6)
    boost = prior_boost(b.privacy["epsilon"], w.prior_records_per_class, cs.counts, "max")
    assert Scorer.from_bundle(b).prior_boost == boost >= 1.0


# --------------------------------------------------------------------------- the scorer by hand


def test_scorer_cosine_public_on_a_hand_example():
    """Format 3's rule: cosine to each noisy class sum in the public-centred frame, at the
    bundle's temperature, plus the prior at its linear weight R C K / (epsilon N)."""
    cs = ClassStats(np.array([0.1, 0.0], np.float32), np.eye(2, dtype=np.float32),
                    np.array([[3.0, 1.0], [-1.0, 2.0]], np.float32), np.array([40.0, 60.0], np.float32))
    prior = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    s = Scorer(None, None, class_stats=cs, prior=prior, weights=Weights.measured(), epsilon=2.0)
    x = np.array([[0.6, 0.8]])
    z = np.array([0.5, 0.8])
    sums = np.array([[3.0, 1.0], [-1.0, 2.0]])
    cos = (sums / np.linalg.norm(sums, axis=1, keepdims=True)) @ (z / np.linalg.norm(z))
    soft = lambda v, t: np.exp(v / t - (v / t).max()) / np.exp(v / t - (v / t).max()).sum()  # noqa: E731
    boost = 100 * 2 * 1 / (2.0 * 100)
    assert s.prior_boost == pytest.approx(boost)
    assert np.allclose(s.scores(x)[0], soft(cos, 0.04) + boost * soft(np.array([0.6, 0.8]), 0.05))


def test_scorer_pulls_the_class_sums_toward_the_descriptions_by_the_stated_noise():
    """Format 4's pull: each noisy class sum moves toward unit(P (d_c - origin)) by a x nu
    before the cosine, nu = sqrt(2 k) x noise_scale / grid of the class_sums release; a large
    class's sum barely turns, a small one's leans on its description."""
    cs = ClassStats(np.array([0.1, 0.0], np.float32), np.eye(2, dtype=np.float32),
                    np.array([[30.0, 10.0], [-1.0, 0.5]], np.float32), np.array([400.0, 6.0], np.float32))
    prior = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    facts = {"releases": [{"statistic": "class_counts", "noise_scale": 20.0},
                          {"statistic": "class_sums", "noise_scale": 300.0, "grid": 100}]}
    nu = sums_noise_norm(facts, 2)
    assert nu == pytest.approx(2 * 3.0)
    s = Scorer(None, None, class_stats=cs, prior=prior, weights=Weights.measured(), epsilon=2.0,
               mode="centroids", sums_noise=nu)
    toward = np.array([[0.9, 0.0], [-0.1, 1.0]])                       # P (d_c - origin)
    pulled = np.array([[30.0, 10.0], [-1.0, 0.5]]) + 0.5 * nu * toward / np.linalg.norm(toward, axis=1,
                                                                                           keepdims=True)
    z = np.array([0.3, 0.8])                                            # x = (0.4, 0.8)
    cos = (pulled / np.linalg.norm(pulled, axis=1, keepdims=True)) @ (z / np.linalg.norm(z))
    expected = np.exp(cos / 0.04 - (cos / 0.04).max())
    assert np.allclose(s.scores(np.array([[0.4, 0.8]]))[0], expected / expected.sum())
    unpulled = Scorer(None, None, class_stats=cs, prior=prior, weights=Weights.measured(), epsilon=2.0,
                      mode="centroids")
    assert unpulled.scores(np.array([[0.4, 0.8]])).argmax() == 0      # the noisy small class loses...
    assert s.scores(np.array([[0.4, 0.8]])).argmax() == 1             # ...until it leans on its description
    assert sums_noise_norm({"releases": [{"statistic": "class_stats", "noise_scale": 9.0}]}, 2) == 0.0


def test_scorer_gaussian_centroids_on_a_hand_example():
    """The 2.1 rule: the query clipped like a record, centred on the released mean, scored
    <z, m_c> - |m_c|^2 / 2 at the bundle's temperature."""
    cs = ClassStats(np.zeros(2, np.float32), np.eye(2, dtype=np.float32),
                    np.array([[2.0, 0.0], [0.0, 2.0]], np.float32), np.array([2.0, 2.0], np.float32))
    weights = Weights(centroid_rule="gaussian", centroid_clip_l1=1.0, centroid_temperature=0.003)
    s = Scorer(None, None, class_stats=cs, weights=weights, mode="centroids")
    x = np.array([[0.6, 0.8]])                        # L1 1.4 -> clipped to [3/7, 4/7]
    z = np.array([3 / 7, 4 / 7]) - 0.5
    means = np.array([[0.5, -0.5], [-0.5, 0.5]])
    logits = (means @ z - 0.25) / 0.003
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert np.allclose(s.scores(x)[0], expected) and s.scores(x)[0].argmax() == 1


def test_probing_reads_the_buckets_one_bit_away():
    """probe_weight w adds w x the votes of every bucket whose code differs in one bit."""
    planes = np.array([[[1.0, 0.0], [0.0, 1.0]]], np.float32)           # 1 table, 2 bits
    votes = np.array([[[1, 0], [2, 0], [0, 4], [8, 8]]], np.int16)       # buckets 0..3
    x = np.array([[-1.0, -1.0]])                                         # bucket 0; neighbours 1 and 2
    assert Scorer(planes, votes).scores(x).tolist() == [[1.0, 0.0]]
    assert Scorer(planes, votes, probe_weight=0.5).scores(x).tolist() == [[1.0 + 0.5 * 2, 0.5 * 4]]
    with pytest.raises(ValueError, match="probe weight"):
        Scorer(planes, votes, probe_weight=-1)


def test_prior_boost_rules():
    """'max' (format 2) leans on the prior where the release holds little signal, never below
    1; 'linear' (format 3) is R C K / (epsilon N) and fades; both at most SCORING_MAX."""
    from runtime.bundle.schema import SCORING_MAX
    assert prior_boost(None, 1000.0, np.array([10.0])) == 1.0
    assert prior_boost(0.1, 0.0, np.array([10.0, 10.0])) == pytest.approx(10.0)
    assert prior_boost(1.0, 1000.0, np.array([5000.0, 5000.0])) == 1.0
    assert prior_boost(1.0, 1000.0, np.array([100.0, 150.0, 250.0])) == pytest.approx(6.0)
    assert prior_boost(2.0, 1000.0, np.array([-30.0, 10.0])) == pytest.approx(1000.0)
    assert prior_boost(1e-300, 1000.0, np.array([1.0])) == SCORING_MAX
    assert prior_boost(1.0, 100.0, np.array([5000.0, 5000.0]), "linear") == pytest.approx(0.02)
    assert prior_boost(1.0, 100.0, np.array([500.0, 500.0]), "linear", max_records_per_unit=3) == pytest.approx(0.6)
    assert prior_boost(1e-300, 100.0, np.array([1.0]), "linear") == SCORING_MAX
    with pytest.raises(ValueError, match="needs the released class counts"):
        prior_boost(1.0, 100.0, None, "linear")
