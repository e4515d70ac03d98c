"""Privacy evidence: an empirical audit of the real release, and what a bundle contains.

The audit (tests/dp_audit.py) runs the real `release_votes` thousands of times on two
neighbouring datasets, D and D' = D + {x}, hashed and counted by the product's own SimHasher
and VoteCounter under fixed hyperplanes, and bounds the privacy loss from below with
Clopper-Pearson intervals. The correct release must stay at or below its stated epsilon;
each planted bug (tests/noise_hooks.py) must push the bound above it, which shows the audit
has the power to catch them.
"""

import msgpack
import numpy as np
import pytest

pytest.importorskip("scipy", reason="the audits' confidence bounds need the dev extra's scipy")
from dp_audit import epsilon_lower_bound, run_releases, run_statistic
from exporter.hyperplanes import draw_hyperplanes
from exporter.privacy import NeighbourRelation, PrivacyBudget
from exporter.votes import VoteCounter, release_votes
from noise_hooks import ConstantNoise, ConstantSeedNoise, HalvedScaleNoise, NonEmptyOnlyNoise, ScaleIgnoresUnitNoise
from runtime.simhash import SimHasher

pytestmark = pytest.mark.dev

EPSILON = 1.0
TABLES, BITS, DIM, CLASSES = 2, 1, 16, 2
RUNS = 3000          # releases per dataset, each a separate call
ALPHA = 1e-3         # chance that a correct release fails the audit
THRESHOLDS = range(-3, 5)


@pytest.fixture(scope="module")
def neighbours():
    """D: 12 records (fixed hyperplanes, T=2, H=1); x: a class-1 record whose bucket holds no
    class-1 record of D in either table, so D' = D + {x} turns empty cells non-empty."""
    hasher = SimHasher(draw_hyperplanes(seed=7, tables=TABLES, bits=BITS, dim=DIM))
    rng = np.random.default_rng(0)  # test data, not noise
    points = rng.standard_normal((400, DIM))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    codes = hasher.buckets(points)
    x, x_cells = points[0], codes[0]
    elsewhere = np.all(codes != x_cells, axis=1)  # in neither of x's buckets
    d_points = np.vstack([points[1:7], points[elsewhere][:6]])  # class 0 anywhere, class 1 elsewhere
    d_labels = np.array([0] * 6 + [1] * 6)

    def counts(pts, labels):
        c = VoteCounter(TABLES, BITS, CLASSES)
        c.add(hasher.buckets(pts), labels)
        return c.counts

    d = counts(d_points, d_labels)
    dp = counts(np.vstack([d_points, x]), np.append(d_labels, 1))
    assert (d[np.arange(TABLES), x_cells, 1] == 0).all() and (dp - d).sum() == TABLES
    return d, dp, x_cells


def audit(neighbours, noise=None, records_per_unit: int = 1):
    """With records_per_unit = K > 1, D' adds one person with K records (all like x) and the
    release is the per-person one (scale K*T/epsilon)."""
    d, dp, cells = neighbours
    dp = d + records_per_unit * (dp - d)
    relation = NeighbourRelation.record() if records_per_unit == 1 else NeighbourRelation.person("person", records_per_unit)

    def release(counts):
        return release_votes(counts, PrivacyBudget(EPSILON, relation, noise_for_tests=noise)).votes

    stat_d = run_statistic(release, d, cells, label=1, runs=RUNS)
    stat_dp = run_statistic(release, dp, cells, label=1, runs=RUNS)
    result = epsilon_lower_bound(stat_d, stat_dp, THRESHOLDS, ALPHA)
    print(f"\n{type(noise).__name__ if noise else 'OpenDP (product)'}: epsilon lower bound "
          f"{result.epsilon_lower:.3f} from '{result.event}' over {RUNS} releases each of D and D'")
    return result


def test_the_real_release_stays_within_its_epsilon(neighbours):
    result = audit(neighbours)
    assert result.epsilon_lower <= EPSILON
    # and it is not vacuous: the tightest event gets close to the stated epsilon
    assert result.epsilon_lower > 0.4 * EPSILON


@pytest.mark.parametrize("bug", [HalvedScaleNoise, NonEmptyOnlyNoise, ConstantSeedNoise],
                         ids=["scale T/(2 eps)", "noise only on non-empty buckets", "constant seed"])
def test_the_audit_catches_a_planted_bug(neighbours, bug):
    assert audit(neighbours, bug()).epsilon_lower > EPSILON


PERSON_RECORDS = 3


def test_the_per_person_release_stays_within_its_epsilon_for_a_person(neighbours):
    """One person with K = 3 records, all in x's cells: the per-person release (scale K*T/eps)
    bounds that person's privacy loss by epsilon."""
    result = audit(neighbours, records_per_unit=PERSON_RECORDS)
    assert 0.4 * EPSILON < result.epsilon_lower <= EPSILON


def test_the_audit_catches_a_per_person_scale_that_ignores_k(neighbours):
    assert audit(neighbours, ScaleIgnoresUnitNoise(PERSON_RECORDS), records_per_unit=PERSON_RECORDS).epsilon_lower > EPSILON


# --------------------------------------------------------------------------- class statistics
# A default bundle's whole epsilon goes to the class statistics: the counts (5%), then the
# sums (95%). Each release is audited on its own worst case, at epsilon 1.
#
# Sums: a 2-d public subspace (identity basis), 2 classes, clip 0.25 (S = 25 grid steps). D:
# 6 records; D' = D + x, x an extreme class-1 record whose clip lands whole in one coordinate
# (the worst case: it moves one coordinate of its class's sum by S). Two checks per
# implementation: the exact sums of D and D' (noise pinned at 0 through the test hook) differ
# by at most the sensitivity the release states, and 3000 real releases on each bound the
# privacy loss from below.

STATS_CLIP = 0.25
STATS_THRESHOLDS = (0, 10, 20, 40)


def _stats_neighbours():
    from exporter.public_basis import PublicBasis

    basis = PublicBasis(np.zeros(2, np.float32), np.eye(2, dtype=np.float32))
    rng = np.random.default_rng(1)  # test data, not noise
    d = (rng.standard_normal((6, 2)) * 0.05, np.array([0, 0, 0, 1, 1, 1]))
    x = np.array([[10.0, 0.0]])      # L1 40 x the clip: clipped to (S, 0) on the grid
    return basis, d, (np.vstack([d[0], x]), np.append(d[1], 1))


def _sums_impl(bug: str):
    from exporter.class_stats import ClassSumCounter, release_class_sums
    from noise_hooks import UnclippedCounter, class_sums_in_embedding_units, class_sums_with_the_float_bound

    return {"product": (ClassSumCounter, release_class_sums),
            "float bound one step short": (ClassSumCounter, class_sums_with_the_float_bound),
            "sensitivity in embedding units": (ClassSumCounter, class_sums_in_embedding_units),
            "noise before clipping": (UnclippedCounter, release_class_sums)}[bug]


def _sums_release(bug: str, noise=None):
    """data -> (released sums in grid units, flattened; the stated sensitivity)."""
    make_counter, release = _sums_impl(bug)
    basis, *_ = _stats_neighbours()

    def run(data):
        counter = make_counter(basis, 2, STATS_CLIP)
        counter.add(*data)
        budget = PrivacyBudget(EPSILON, shares={"class_sums": 1.0}, noise_for_tests=noise)
        grid = np.asarray(release(counter, budget), np.int64).reshape(-1)
        return grid, budget.releases["class_sums"].sensitivity_l1
    return run


def sums_distance(bug: str) -> tuple[float, int]:
    """L1 distance (grid units) between the exact sums of D and D', and the stated sensitivity."""
    _, d, dp = _stats_neighbours()
    run = _sums_release(bug, noise=ConstantNoise(0))
    (a, stated), (b, _) = run(d), run(dp)
    return float(np.abs(b - a).sum()), stated


def sums_audit(bug: str):
    """Lower bound on the privacy loss from 3000 real releases of D and of D' each. The
    statistic: x's sum coordinate measured from its exact value under D' (in the upper tail
    the event's loss is exactly epsilon for a correct release)."""
    _, d, dp = _stats_neighbours()
    run = _sums_release(bug)
    exact, _ = _sums_release("product", noise=ConstantNoise(0))(dp)
    at = 2                                    # sums[1, 0] in the flat grid vector
    stat = lambda data: run_releases(lambda: run(data)[0], lambda g: g[at] - exact[at], RUNS)  # noqa: E731
    result = epsilon_lower_bound(stat(d), stat(dp), STATS_THRESHOLDS, ALPHA)
    print(f"\nclass sums, {bug}: epsilon lower bound {result.epsilon_lower:.3f} from '{result.event}' "
          f"over {RUNS} releases each of D and D'")
    return result


def test_the_class_sums_move_by_at_most_their_stated_sensitivity():
    distance, stated = sums_distance("product")
    assert distance == stated == 25   # tight: the worst record uses the whole bound


@pytest.mark.parametrize("bug", ["float bound one step short", "sensitivity in embedding units",
                                 "noise before clipping"])
def test_the_sensitivity_check_catches_a_planted_bug(bug):
    distance, stated = sums_distance(bug)
    assert distance > stated


def test_the_real_class_sums_release_stays_within_its_epsilon():
    result = sums_audit("product")
    assert 0.4 * EPSILON < result.epsilon_lower <= EPSILON


@pytest.mark.parametrize("bug", ["sensitivity in embedding units", "noise before clipping"])
def test_the_class_sums_audit_catches_a_planted_bug(bug):
    """(The float bound one step short costs 25/24 of epsilon: too little for 3000 runs to show;
    the sensitivity check above catches it.)"""
    assert sums_audit(bug).epsilon_lower > EPSILON


def counts_audit(noise=None):
    """The class counts: D has no record of class 1, D' adds one. Statistic: class 1's noisy
    count minus 1 (its exact value under D'); scale 1 / epsilon = 1."""
    from exporter.class_stats import release_class_counts

    d, dp = np.array([6, 0]), np.array([6, 1])

    def release(counts):
        return release_class_counts(counts, PrivacyBudget(EPSILON, shares={"class_counts": 1.0}, noise_for_tests=noise))
    stat = lambda c: run_releases(lambda: release(c), lambda out: out[1] - 1, RUNS)  # noqa: E731
    result = epsilon_lower_bound(stat(d), stat(dp), (-1, 0, 1, 2, 3), ALPHA)
    print(f"\nclass counts, {type(noise).__name__ if noise else 'product'}: epsilon lower bound "
          f"{result.epsilon_lower:.3f} from '{result.event}' over {RUNS} releases each of D and D'")
    return result


def test_the_real_class_counts_release_stays_within_its_epsilon():
    result = counts_audit()
    assert 0.4 * EPSILON < result.epsilon_lower <= EPSILON


def test_the_counts_audit_catches_noise_only_where_records_are():
    from noise_hooks import CountsOnlyWhereRecords

    assert counts_audit(CountsOnlyWhereRecords()).epsilon_lower > EPSILON


def test_bundle_holds_only_noisy_statistics_and_public_inputs(dp_bundle, exported_encoder):
    """Every field of a default bundle is accounted for: the noisy class counts and sums,
    public inputs (labels, descriptions, the public basis, the prior, the pretrained encoder and
    its check text) and facts about the mechanism. No exact counts, embeddings, record ids or
    record count."""
    from conftest import DATA
    from exporter.class_stats import ClassSumCounter
    from exporter.dataset import read_labels, read_records
    from exporter.encoder_export import WEIGHTS_FILE
    from exporter.public_basis import PublicBasis
    from runtime import Classifier

    doc = msgpack.unpackb(dp_bundle.read_bytes(), raw=False)
    assert list(doc) == ["format", "version", "labels", "label_descriptions", "privacy", "releases", "subspace",
                         "prior", "scoring", "exporter", "encoder", "sha256"]  # no vote tables by default
    assert set(doc["releases"]) == {"class_counts", "class_sums"}
    assert set(doc["encoder"]) == {"format", "model", "tokenizer_json", "max_length", "dim", "text_prefix", "inputs",
                                   "output", "check_text", "check_embedding", "facts", "weights"}
    # the encoder is the public export, byte for byte: it was not touched by the records
    assert doc["encoder"]["model"] == (exported_encoder.directory / "model.onnx").read_bytes()
    assert doc["encoder"]["weights"] == (exported_encoder.directory / WEIGHTS_FILE).read_bytes()
    assert doc["encoder"]["check_text"] == exported_encoder.facts["check"]["text"]
    assert set(doc["subspace"]) == {"origin", "projection"}
    assert set(doc["exporter"]) == {"name", "version", "created"}

    clf = Classifier.load(dp_bundle, threads=1)
    b = clf.bundle
    labels = read_labels(DATA / "labels.txt")
    records = list(read_records(DATA / "train.jsonl", labels))
    n = len(records)
    # the released values are not the exact ones (noise on every coordinate and every count)
    y = np.array([r.label for r in records])
    exact_counts = np.bincount(y, minlength=len(labels))
    counter = ClassSumCounter(PublicBasis(b.origin, b.projection), len(labels), b.releases["class_sums"].clip_l1)
    emb = clf.embed([r.text for r in records])
    counter.add(emb, y)
    # Counts: some count moved. Each of the seven is left unchanged with probability tanh(1/(2 x
    # 2.5)) = 0.197 at this bundle's scale, so "most counts moved" failed about 3% of builds;
    # all seven unchanged has probability 1e-5. The sums have far more coordinates: most moved.
    assert np.any(b.class_counts != exact_counts) and np.mean(b.class_sums != counter.sums) > 0.5
    blob = dp_bundle.read_bytes()
    assert counter.sums.astype("<i4").tobytes()[:64] not in blob
    # the projection is the public task basis (the same for every dataset with these labels),
    # and its size was chosen from the released noisy count
    assert np.allclose(b.projection @ b.projection.T, np.eye(len(b.projection)), atol=1e-4)
    # no record count anywhere in the metadata (the counts' own total is a noisy statistic)
    metadata = msgpack.packb({k: v for k, v in doc.items() if k not in ("encoder", "releases", "subspace", "prior")})
    assert str(n).encode() not in metadata and msgpack.packb(n) not in msgpack.packb(doc["privacy"])
    # no record embedding: nothing in the bundle is a record's embedding
    assert float((emb @ b.encoder.check_embedding).max()) < 0.99
    assert emb[:20].astype("<f4").tobytes()[:64] not in blob
    for r in records[:50]:
        assert r.text.encode() not in blob  # no training text is shipped
