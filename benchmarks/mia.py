"""Membership inference against released bundles (the paper's Section 4.2 / Table 6).

    python benchmarks/mia.py --data ../shared/data/agnews ../shared/data/trec \\
        [--grid 24x4,6x32,default] [--epsilons inf,inf-sparse,8,5,3,1] [--seeds 3] \\
        [--max-pairs 2000] [--shift-control] [--out results.json] [--plot mia.png]

Threat model. The attacker holds the bundle (hyperplanes, vote tables and, for the default
bundle, the released class statistics) and may query it without limit. For a candidate
record (its embedding, and for one attack variant its label) they want to know whether it
was in the training data.

Targets (--grid): ``HxT`` is the paper's hashing, random hyperplanes with H bits and T
tables, all of epsilon on the vote tables (``--hashing random`` bundles); ``default`` is
what users ship by default: the noisy class counts (5% of epsilon) and class sums (95%) in
the public subspace the counts choose, through the exporter's own budget and stage
functions. Against the default bundle the attacker reads the released class statistics: the
query's cosine to each noisy class sum (the runtime's centroid rule before its public pull
toward the label descriptions, which adds no information about a record), the Gaussian-rule
logits and distances to the class means, and (label-aware) its own class's values and rank,
so a record that pulled its class mean towards itself can show.

Method, per dataset, hashing setting (H bits x T tables), privacy setting and seed:

- Non-members are the test records (at most --max-pairs); members are a random sample of the
  training records with the same count per class, so the label alone tells nothing. The
  datastore is built from the whole training set, members included.
- The attacker hashes each candidate with the product's SimHasher and reads the released
  tables. Standard features (the paper's): the per-class vote sums over the T tables
  (Algorithm 2's scores), the maximum vote, the confidence max/total and the entropy of the
  vote vector (both over its positive part; total = 0 gives confidence 0 and entropy log C),
  and the bucket hit rate, the fraction of the T tables in which the query's bucket is
  present in the release. Label-aware features add the vote of the record's own label and
  its share of the positive total (an attacker testing a record usually knows its label).
- The member/non-member pairs are split 50/50 (stratified by membership). A scikit-learn
  HistGradientBoostingClassifier on standardized features is fitted on one half; the
  accuracy on the other half is reported, with the advantage accuracy - 0.5.
- Each seed redraws the hyperplanes, the noise, the member sample and the attack split; the
  sample and split (numpy, not release noise) are shared by all settings of that seed.

Privacy settings:

- ``inf``: exact counts, stored densely (every bucket present, zeros included): hit rate 1.
- ``inf-sparse``: exact counts, only non-empty buckets stored (the common non-private
  practice the paper warns about): a query to an absent bucket gets nothing from that table,
  and the hit rate counts the tables whose bucket is present.
- a number: the real DP release at that epsilon, discrete Laplace noise of scale T/epsilon
  from OpenDP on every cell (every bucket present, so the hit rate is always 1; the script
  checks and reports that it is constant).

Simulation shortcut (benchmark only; the product always releases the whole table). When
T x 2^H x C exceeds --max-dense-cells (H=24, T=4 is 2^26 C cells, about 10 us each through
OpenDP) the dense table is not materialised. DP noise is independent per cell and the
attack's features read only the cells its queries hit, so the attacker's observations have
exactly the same joint distribution if noise is drawn only for those cells: the script
counts the training records in each distinct (table, bucket) pair the queries touch, passes
just those cells through release_votes (OpenDP noise of scale T/epsilon, budget check, int16
clipping) once, and every query hitting a cell reads the same value. Smaller tables go through the real
dense path: exporter.votes.VoteCounter and release_votes.

The non-private reference "exact kNN" is a datastore that answers a query with the k = 10
nearest training records' cosine similarities and labels. Its features: the top-10
similarities, their mean, the label vote histogram and the maximum vote (label-aware: plus
the own-label vote and share).

Shift control (--shift-control): the same attack on exact tables built from the training set
minus the sampled members. No candidate is then in the datastore, so any accuracy above 50%
measures how differently the train and test splits are distributed (trec's test questions
were collected separately from its training questions), which the main rows cannot separate
from membership.

The pure-DP bound: an epsilon-DP release lets no attack on a balanced member/non-member
set exceed accuracy e^eps / (1 + e^eps), i.e. advantage tanh(eps/2) / 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Dataset, Embedder  # noqa: E402

from exporter.class_stats import ClassStatsRelease, choose_subspace, clip_to_l1  # noqa: E402
from exporter.engine import MemoryEngine  # noqa: E402
from exporter.hyperplanes import centred_means, draw_hyperplanes  # noqa: E402
from exporter.noise import NoiseSource  # noqa: E402
from exporter.privacy import PrivacyBudget, default_shares  # noqa: E402
from exporter.public_basis import public_texts, task_basis  # noqa: E402
from exporter.stages import PublicInputs, release_class_stats  # noqa: E402
from exporter.votes import VoteCounter, release_votes  # noqa: E402
from runtime.scoring import vote_sums  # noqa: E402
from runtime.simhash import SimHasher  # noqa: E402

KNN_K = 10
#: The --grid token for the default bundle (class statistics + aligned vote tables).
DEFAULT_TARGET = "default"
DEFAULT_MAX_DENSE_CELLS = 1 << 22
ATTACKS = ("standard", "label_aware")
#: Mixed into the seed of the numpy generator for member sampling and the attack split, so
#: it never coincides with the hyperplane seed (both are public, non-secret randomness).
SAMPLING_STREAM = 0x4D4941
#: The paper's Table 6 (DBpedia, H=24, T=4, its own encoder): epsilon -> attack accuracy, for the plot.
PAPER_TABLE6 = {"inf": 0.7022, 8.0: 0.6002, 7.0: 0.5880, 5.0: 0.5720, 3.0: 0.5360}


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Setting:
    """One privacy setting: exact counts (dense or sparse storage) or a DP release."""

    name: str        # "inf", "inf-sparse" or the epsilon as typed ("8")
    epsilon: float   # math.inf for both exact settings
    sparse: bool     # only non-empty buckets stored (hit rate is informative)

    @property
    def private(self) -> bool:
        return math.isfinite(self.epsilon)


INF_DENSE = Setting("inf", math.inf, sparse=False)


def parse_settings(text: str) -> list[Setting]:
    """``inf,inf-sparse,8,5`` -> settings, in the order given."""
    out = []
    for token in (t.strip() for t in text.split(",") if t.strip()):
        if token == "inf":
            out.append(INF_DENSE)
        elif token == "inf-sparse":
            out.append(Setting("inf-sparse", math.inf, sparse=True))
        else:
            eps = float(token)
            if not (eps > 0 and math.isfinite(eps)):
                raise ValueError(f"epsilon must be positive and finite (or inf, inf-sparse), got {token!r}")
            out.append(Setting(format(eps, "g"), eps, sparse=False))
    return out


def parse_grid(text: str) -> list[tuple[int, int] | str]:
    """``24x4,6x32,default`` -> [(bits, tables), ..., "default"]."""
    out: list[tuple[int, int] | str] = []
    for g in (g.strip() for g in text.split(",") if g.strip()):
        out.append(DEFAULT_TARGET if g == DEFAULT_TARGET else tuple(int(x) for x in g.split("x")))  # type: ignore[misc]
    return out


def grid_name(target: tuple[int, int] | str) -> str:
    return target if isinstance(target, str) else f"{target[0]}x{target[1]}"


def dp_accuracy_bound(epsilon: float) -> float:
    """Highest accuracy any attack can reach on a balanced set against an epsilon-DP release."""
    return 1.0 if not math.isfinite(epsilon) else 1.0 / (1.0 + math.exp(-epsilon))


# --------------------------------------------------------------------------- member / non-member pairs


@dataclass
class Pairs:
    """The attack's evaluation set: queries = members (training rows) then non-members (test rows)."""

    members: np.ndarray      # indices into the training split
    nonmembers: np.ndarray   # indices into the test split
    attack_train: np.ndarray  # bool over the concatenated queries: fit the attack on these

    @property
    def is_member(self) -> np.ndarray:
        return np.r_[np.ones(len(self.members), bool), np.zeros(len(self.nonmembers), bool)]


def draw_pairs(train_labels: np.ndarray, test_labels: np.ndarray, max_pairs: int,
               rng: np.random.Generator) -> Pairs:
    """Non-members from the test set (at most ``max_pairs``), members drawn from the training
    set with the same count per class, so that class membership carries no signal; then a
    50/50 split of each group into attack-train and attack-test."""
    nonmembers = np.arange(len(test_labels))
    if len(nonmembers) > max_pairs:
        nonmembers = np.sort(rng.choice(nonmembers, size=max_pairs, replace=False))
    keep_non, members = [], []
    for c in np.unique(test_labels[nonmembers]):
        non_c = nonmembers[test_labels[nonmembers] == c]
        train_c = np.flatnonzero(train_labels == c)
        n = min(len(non_c), len(train_c))  # a class rarer in train than in test: match the smaller count
        keep_non.append(rng.choice(non_c, size=n, replace=False))
        members.append(rng.choice(train_c, size=n, replace=False))
    mem, non = np.sort(np.concatenate(members)), np.sort(np.concatenate(keep_non))

    def half(n: int) -> np.ndarray:
        mask = np.zeros(n, bool)
        mask[rng.permutation(n)[: n // 2]] = True
        return mask

    return Pairs(mem, non, np.r_[half(len(mem)), half(len(non))])


# --------------------------------------------------------------------------- what the attacker observes


@dataclass
class Observation:
    """The attacker's view of each query: Algorithm 2's per-class vote sums and the hit rate."""

    votes: np.ndarray     # (n, C) int64
    hit_rate: np.ndarray  # (n,) float: fraction of tables whose bucket is present in the release


def table_cells(hasher: SimHasher, classes: int) -> int:
    return hasher.tables * 2**hasher.bits * classes


def observe_dense(counts: np.ndarray, query_codes: np.ndarray, setting: Setting) -> Observation:
    """Query a whole released table: the product path (VoteCounter counts -> release_votes)."""
    tables = np.arange(counts.shape[0])[None, :]
    if setting.private:
        released = release_votes(counts, PrivacyBudget(setting.epsilon)).votes  # real OpenDP noise on every cell
        present = np.ones(counts.shape[:2], bool)
    else:
        released = counts
        present = counts.sum(axis=2) > 0 if setting.sparse else np.ones(counts.shape[:2], bool)
    return Observation(vote_sums(query_codes, released), present[tables, query_codes].mean(axis=1))


@dataclass
class TouchedCells:
    """Exact counts for just the (table, bucket) pairs the queries touch.

    ``counts[i]`` is the per-class count of cell ``i``; ``index[q, t]`` is the cell that query
    q reads in table t. Equal to ``VoteCounter.counts[t, code]`` cell for cell (tested), without
    allocating T x 2^H x C integers.
    """

    counts: np.ndarray  # (U, C) int32
    index: np.ndarray   # (n, T) int64 into counts


def touched_cells(train_codes: np.ndarray, train_labels: np.ndarray, query_codes: np.ndarray,
                  bits: int, classes: int) -> TouchedCells:
    """Count training records per class in each distinct (table, bucket) the queries hit."""
    tables = np.arange(train_codes.shape[1], dtype=np.int64)[None, :] << bits
    query_keys = tables + query_codes       # a global cell id: table * 2^H + bucket
    train_keys = tables + train_codes
    cells, index = np.unique(query_keys, return_inverse=True)
    pos = np.minimum(np.searchsorted(cells, train_keys), len(cells) - 1)
    hit = cells[pos] == train_keys          # training (record, table) pairs in a touched cell
    labels = np.broadcast_to(np.asarray(train_labels, np.int64)[:, None], train_keys.shape)
    counts = np.zeros((len(cells), classes), np.int32)
    np.add.at(counts, (pos[hit], labels[hit]), 1)
    return TouchedCells(counts, index.reshape(query_codes.shape))


def noisy_touched_cells(counts: np.ndarray, tables: int, epsilon: float,
                        source: NoiseSource | None = None) -> np.ndarray:
    """The simulation shortcut: what release_votes would put in these cells, drawn only for them.

    The U touched cells are laid out as a (T, ceil(U/T), C) table (zero-padded) and passed
    through release_votes itself, so the sensitivity (T), scale (T/epsilon), budget check,
    OpenDP noise and int16 clipping are the product's; cell noise is i.i.d., so the layout
    does not change its distribution. Every query reading a cell sees the one value drawn
    for it. ``source`` is release_votes' test-only noise hook.
    """
    per_table = -(-len(counts) // tables)
    padded = np.zeros((tables * per_table, counts.shape[1]), np.int32)
    padded[:len(counts)] = counts
    votes = release_votes(padded.reshape(tables, per_table, -1), PrivacyBudget(epsilon, noise_for_tests=source)).votes
    return votes.reshape(-1, counts.shape[1])[:len(counts)]


def observe_touched(cells: TouchedCells, tables: int, setting: Setting,
                    source: NoiseSource | None = None) -> Observation:
    """Query a table of which only the touched cells exist (large tables; see the module doc)."""
    if setting.private:
        values = noisy_touched_cells(cells.counts, tables, setting.epsilon, source)
        present = np.ones(len(values), bool)
    else:
        values = cells.counts
        present = cells.counts.sum(axis=1) > 0 if setting.sparse else np.ones(len(values), bool)
    # One pseudo-table of U cells: vote_sums gathers values[0, index[q, t]] and sums over t.
    return Observation(vote_sums(cells.index, values[None]), present[cells.index].mean(axis=1))


# --------------------------------------------------------------------------- the default bundle


@dataclass
class DefaultRelease:
    """What a default bundle releases: the class statistics (no vote tables), and the public
    clip of their subspace."""

    stats: ClassStatsRelease
    clip: float


def release_default(train_emb: np.ndarray, train_labels: np.ndarray, public: PublicInputs, classes: int,
                    setting: Setting) -> DefaultRelease:
    """The exporter's own default release (budget, class counts, the subspace rule, class
    sums) on the training split; for the no-noise settings, the exact statistics in the
    subspace the rule picks at epsilon 8 from the exact count."""
    if setting.private:
        budget = PrivacyBudget(setting.epsilon, shares=default_shares("aligned"))
        stats = release_class_stats(MemoryEngine(train_emb, train_labels), public, classes, budget)
        return DefaultRelease(stats, stats.basis.clip_for(stats.basis.dim))
    counts = np.bincount(train_labels, minlength=classes)
    k, clip = choose_subspace(0.95 * 8.0, counts, 1, public.basis)
    basis = public.basis.first(k)
    sums_grid = MemoryEngine(train_emb, train_labels).class_sums(basis, classes, clip).sums
    return DefaultRelease(ClassStatsRelease(sums_grid, counts, basis), clip)


def centroid_features(stats: ClassStatsRelease, clip: float, query_emb: np.ndarray,
                      labels: np.ndarray | None) -> np.ndarray:
    """What the released class statistics say about a query: the cosine to each noisy class
    sum in the public-centred frame (the runtime's centroid rule without the pull), and the
    Gaussian-rule logits <z, m_c> - |m_c|^2/2 and squared distances to the centred class means
    (z clipped like a record), the top-1 margin and |z|; label-aware, the own class's cosine,
    logit, distance and rank."""
    raw = stats.basis.project(query_emb)
    sums = stats.sums
    cosine = (raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)) @ (
        sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)).T
    centred, mu = centred_means(sums, stats.counts)
    z = clip_to_l1(raw, clip) - mu
    logits = z @ centred.T - 0.5 * (centred**2).sum(axis=1)
    dist = (z**2).sum(axis=1)[:, None] - 2 * z @ centred.T + (centred**2).sum(axis=1)[None, :]
    top2 = np.sort(cosine, axis=1)[:, -2:]
    cols = [cosine, logits, dist, (top2[:, 1] - top2[:, 0])[:, None], np.linalg.norm(z, axis=1)[:, None]]
    if labels is not None:
        rows = np.arange(len(z))
        own = cosine[rows, labels]
        cols += [own[:, None], logits[rows, labels][:, None], dist[rows, labels][:, None],
                 (cosine > own[:, None]).sum(axis=1)[:, None]]
    return np.hstack(cols)


def default_inputs(embedder: Embedder, ds: Dataset) -> PublicInputs:
    """The public inputs a default build of ``ds`` fits (vocabulary words and descriptions)."""
    tokenizer_json = (embedder.exported.directory / "tokenizer.json").read_text(encoding="utf-8")
    vocab = embedder.embedder.embed(public_texts(tokenizer_json, None))
    prior = None if ds.labels.descriptions is None else embedder.embedder.embed(list(ds.labels.descriptions))
    return PublicInputs(task_basis(vocab, prior), prior)


# --------------------------------------------------------------------------- features and the attack


def vote_features(obs: Observation, labels: np.ndarray | None) -> np.ndarray:
    """The paper's query-response features; with ``labels``, also the own-label vote and share."""
    votes = obs.votes.astype(np.float64)
    classes = votes.shape[1]
    pos = np.clip(votes, 0, None)
    total = pos.sum(axis=1)
    some = total > 0
    safe = np.where(some, total, 1.0)
    p = pos / safe[:, None]
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    entropy = np.where(some, -plogp.sum(axis=1), math.log(classes))
    cols = [votes, votes.max(axis=1, keepdims=True), (pos.max(axis=1) / safe)[:, None],
            entropy[:, None], obs.hit_rate[:, None]]
    if labels is not None:
        own = votes[np.arange(len(votes)), labels]
        cols += [own[:, None], (np.clip(own, 0, None) / safe)[:, None]]
    return np.hstack(cols)


def knn_features(train_emb: np.ndarray, train_labels: np.ndarray, query_emb: np.ndarray,
                 classes: int, labels: np.ndarray | None, k: int = KNN_K) -> np.ndarray:
    """What a non-private exact-kNN datastore answers: the k nearest similarities and labels."""
    sims = query_emb @ train_emb.T
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    top_sims = np.take_along_axis(sims, top, axis=1)
    order = np.argsort(-top_sims, axis=1)
    top_sims = np.take_along_axis(top_sims, order, axis=1).astype(np.float64)
    top_labels = train_labels[np.take_along_axis(top, order, axis=1)]
    hist = np.stack([(top_labels == c).sum(axis=1) for c in range(classes)], axis=1).astype(np.float64)
    cols = [top_sims, top_sims.mean(axis=1, keepdims=True), hist, hist.max(axis=1, keepdims=True)]
    if labels is not None:
        own = hist[np.arange(len(hist)), labels]
        cols += [own[:, None], (own / k)[:, None]]
    return np.hstack(cols)


def attack_accuracy(features: np.ndarray, pairs: Pairs, seed: int) -> float:
    """Fit the attack on attack-train, return its accuracy on the held-out attack-test half."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    y, fit = pairs.is_member, pairs.attack_train
    model = make_pipeline(StandardScaler(), HistGradientBoostingClassifier(
        max_iter=200, learning_rate=0.05, max_leaf_nodes=15, early_stopping=True,
        validation_fraction=0.2, n_iter_no_change=20, random_state=seed))
    model.fit(features[fit], y[fit])
    return float((model.predict(features[~fit]) == y[~fit]).mean())


# --------------------------------------------------------------------------- running the grid


@dataclass
class Cell:
    """Accumulates one table row over seeds."""

    dataset: str
    hashing: str
    setting: Setting | None           # None: the exact-kNN reference
    simulated: bool = False
    runs: dict[str, list[float]] = field(default_factory=lambda: {a: [] for a in ATTACKS})
    hits_members: list[float] = field(default_factory=list)
    hits_nonmembers: list[float] = field(default_factory=list)
    hit_values: set[float] = field(default_factory=set)
    seconds: float = 0.0

    def add_hits(self, hit_rate: np.ndarray, is_member: np.ndarray) -> None:
        self.hits_members.append(float(hit_rate[is_member].mean()))
        self.hits_nonmembers.append(float(hit_rate[~is_member].mean()))
        self.hit_values.update(np.unique(hit_rate).tolist())

    def to_json(self) -> dict[str, Any]:
        attacks = {a: {"mean": float(np.mean(r)), "std": float(np.std(r)),
                       "advantage": float(np.mean(r)) - 0.5, "runs": r} for a, r in self.runs.items()}
        row: dict[str, Any] = {"dataset": self.dataset, "hashing": self.hashing, "attacks": attacks,
                               "seconds": round(self.seconds, 2)}
        if self.setting is None:
            row["k"] = KNN_K
            return row
        eps = self.setting.epsilon
        if self.hashing == DEFAULT_TARGET:  # class statistics only: no tables, two releases
            bits, tables, scale = None, None, None
        else:
            bits, tables = (int(x) for x in self.hashing.split("x"))
            scale = tables / eps if math.isfinite(eps) else None
        row.update({
            "bits": bits, "tables": tables, "setting": self.setting.name,
            "epsilon": eps if math.isfinite(eps) else None, "sparse_storage": self.setting.sparse,
            "noise_scale": scale,
            "dp_accuracy_bound": dp_accuracy_bound(eps),
            "release": "touched cells only (simulation)" if self.simulated else "dense",
            "hit_rate": None if not self.hits_members else {
                "constant": len(self.hit_values) == 1,
                "value": next(iter(self.hit_values)) if len(self.hit_values) == 1 else None,
                "members_mean": float(np.mean(self.hits_members)),
                "nonmembers_mean": float(np.mean(self.hits_nonmembers))},
        })
        return row


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def exact_table(train_codes: np.ndarray, train_labels: np.ndarray, query_codes: np.ndarray, bits: int,
                classes: int, dense: bool) -> np.ndarray | TouchedCells:
    """Exact counts: the whole table through VoteCounter, or only the cells the queries touch."""
    if not dense:
        return touched_cells(train_codes, train_labels, query_codes, bits, classes)
    counter = VoteCounter(train_codes.shape[1], bits, classes)
    counter.add(train_codes, train_labels)
    return counter.counts


def observe(table: np.ndarray | TouchedCells, query_codes: np.ndarray, setting: Setting) -> Observation:
    if isinstance(table, TouchedCells):
        return observe_touched(table, query_codes.shape[1], setting)
    return observe_dense(table, query_codes, setting)


def run_attacks(cell: Cell, obs: Observation, query_labels: np.ndarray, pairs: Pairs, seed: int) -> None:
    """Both attack variants on one observation of vote tables, recorded in ``cell``."""
    cell.add_hits(obs.hit_rate, pairs.is_member)
    run_attack_features(cell, lambda labels: vote_features(obs, labels), pairs, seed, query_labels)


def run_attack_features(cell: Cell, features: Any, pairs: Pairs, seed: int, query_labels: np.ndarray) -> None:
    """Both attack variants on ``features(labels or None)``, recorded in ``cell``."""
    t0 = time.perf_counter()
    for attack in ATTACKS:
        feats = features(query_labels if attack == "label_aware" else None)
        cell.runs[attack].append(attack_accuracy(feats, pairs, seed))
    cell.seconds += time.perf_counter() - t0


@dataclass
class DatasetResult:
    rows: list[Cell]
    controls: list[Cell]
    pairs: dict[str, int]


def run_dataset(ds: Dataset, grid: list[tuple[int, int] | str], settings: list[Setting], seeds: int,
                max_pairs: int, max_dense_cells: int, shift_control: bool = False,
                public: PublicInputs | None = None) -> DatasetResult:
    """All target x privacy settings and the kNN reference for one dataset, over seeds.

    With ``shift_control`` it also attacks, per random hashing, an exact table built from the
    training set *minus* the sampled members: they are then non-members too, so whatever
    accuracy the attack still reaches comes from members (train split) and non-members (test
    split) being distributed differently, not from membership. ``public``: the public inputs
    of the default bundle (needed when the grid holds "default").
    """
    classes = len(ds.labels)
    train, test = ds.train, ds.test
    dim = train.embeddings.shape[1]
    knn = Cell(ds.name, "exact kNN (non-private)", None)
    cells = {(grid_name(g), s.name): Cell(ds.name, grid_name(g), s) for g in grid for s in settings}
    hashed = [g for g in grid if not isinstance(g, str)]
    controls = {grid_name(g): Cell(ds.name, grid_name(g), INF_DENSE) for g in grid} if shift_control else {}
    info: dict[str, int] = {}
    for seed in range(seeds):
        rng = np.random.default_rng([SAMPLING_STREAM, seed])
        pairs = draw_pairs(train.labels, test.labels, max_pairs, rng)
        query_emb = np.vstack([train.embeddings[pairs.members], test.embeddings[pairs.nonmembers]])
        query_labels = np.r_[train.labels[pairs.members], test.labels[pairs.nonmembers]]
        info = {"members": len(pairs.members), "nonmembers": len(pairs.nonmembers),
                "attack_test": int((~pairs.attack_train).sum())}

        t0 = time.perf_counter()
        for attack in ATTACKS:
            feats = knn_features(train.embeddings, train.labels, query_emb, classes,
                                 query_labels if attack == "label_aware" else None)
            knn.runs[attack].append(attack_accuracy(feats, pairs, seed))
        knn.seconds += time.perf_counter() - t0

        if DEFAULT_TARGET in grid:
            def attack_default(cell: Cell, setting: Setting, keep: np.ndarray) -> None:
                rel = release_default(train.embeddings[keep], train.labels[keep], public, classes, setting)
                run_attack_features(cell, lambda labels: centroid_features(rel.stats, rel.clip, query_emb, labels),
                                    pairs, seed, query_labels)

            everyone = np.ones(len(train.labels), bool)
            for s in settings:
                attack_default(cells[(DEFAULT_TARGET, s.name)], s, everyone)
            if shift_control:
                without = everyone.copy()
                without[pairs.members] = False
                attack_default(controls[DEFAULT_TARGET], INF_DENSE, without)
            log(f"  {ds.name} seed {seed} default bundle: done")
        for bits, tables in hashed:
            hasher = SimHasher(draw_hyperplanes(seed, tables, bits, dim))
            train_codes = hasher.buckets(train.embeddings)
            query_codes = hasher.buckets(query_emb)  # what the attacker computes from the bundle
            dense = table_cells(hasher, classes) <= max_dense_cells
            table = exact_table(train_codes, train.labels, query_codes, bits, classes, dense)
            for s in settings:
                cells[(f"{bits}x{tables}", s.name)].simulated = not dense
                run_attacks(cells[(f"{bits}x{tables}", s.name)], observe(table, query_codes, s), query_labels, pairs,
                            seed)
            if shift_control:
                keep = np.ones(len(train.labels), bool)
                keep[pairs.members] = False
                without = exact_table(train_codes[keep], train.labels[keep], query_codes, bits, classes, dense)
                controls[f"{bits}x{tables}"].simulated = not dense
                run_attacks(controls[f"{bits}x{tables}"], observe(without, query_codes, INF_DENSE), query_labels,
                            pairs, seed)
            log(f"  {ds.name} seed {seed} {bits}x{tables}: done ({'dense release' if dense else 'touched cells'})")
    return DatasetResult([knn, *cells.values()], list(controls.values()), info)


# --------------------------------------------------------------------------- output


def pct(runs: list[float]) -> str:
    return f"{100 * np.mean(runs):.1f} ± {100 * np.std(runs):.1f}"


def adv(runs: list[float]) -> str:
    return f"{100 * (np.mean(runs) - 0.5):+.1f}"


def markdown_table(rows: list[dict[str, Any]]) -> str:
    head = ("| dataset | hashing | epsilon | attack acc % | advantage | label-aware acc % | advantage "
            "| DP bound on acc % | hit rate (members / non-members) |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        a, la = r["attacks"]["standard"]["runs"], r["attacks"]["label_aware"]["runs"]
        if "setting" not in r:
            lines.append(f"| {r['dataset']} | {r['hashing']} | - | {pct(a)} | {adv(a)} | {pct(la)} | {adv(la)} | - | - |")
            continue
        h = r["hit_rate"]
        hits = ("- (no tables)" if h is None else f"{h['value']:g} (constant)" if h["constant"]
                else f"{h['members_mean']:.2f} / {h['nonmembers_mean']:.2f}")
        star = "*" if r["release"] != "dense" else ""
        lines.append(f"| {r['dataset']} | {r['hashing']}{star} | {r['setting']} | {pct(a)} | {adv(a)} | {pct(la)} "
                     f"| {adv(la)} | {100 * r['dp_accuracy_bound']:.1f} | {hits} |")
    if any(r.get("release", "dense") != "dense" for r in rows):
        lines.append("\n\\* table too large to release densely here: noise drawn only for the cells the attack "
                     "queries (same distribution; see the module docstring).")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], settings: list[Setting], path: Path) -> None:
    """Advantage against epsilon, one line per dataset x hashing, kNN and the DP bound for reference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    finite = sorted(s.epsilon for s in settings if s.private)
    top = max(finite) if finite else 8.0
    x_of = {s.name: s.epsilon for s in settings if s.private}
    x_of.update({"inf": top * 2.5, "inf-sparse": top * 5})
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    hashings = list(dict.fromkeys(r["hashing"] for r in rows if "setting" in r))
    colors = dict(zip(datasets, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    styles = ["-", "-.", ":", (0, (5, 1))]
    markers = ["o", "s", "^", "D", "v"]

    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    for ax, attack in zip(axes, ATTACKS):
        for r in rows:
            if "setting" not in r:
                ax.axhline(r["attacks"][attack]["advantage"], color=colors[r["dataset"]], ls="--", lw=1,
                           label=f"{r['dataset']} exact kNN (non-private)")
        for ds in datasets:
            for i, hashing in enumerate(hashings):
                pts = sorted((x_of[r["setting"]], r["attacks"][attack]["advantage"], r["attacks"][attack]["std"])
                             for r in rows if r["dataset"] == ds and r.get("hashing") == hashing and "setting" in r)
                if not pts:
                    continue
                xs, ys, es = map(np.array, zip(*pts))
                fin = xs <= top
                kw = dict(color=colors[ds], marker=markers[i % len(markers)], capsize=3)
                ax.errorbar(xs[fin], ys[fin], es[fin], ls=styles[i % len(styles)], label=f"{ds} {hashing}", **kw)
                ax.errorbar(xs[~fin], ys[~fin], es[~fin], ls="none", **kw)
        if attack == "standard":
            px = [x_of["inf"] if k == "inf" else k for k in PAPER_TABLE6]
            ax.plot(px, [a - 0.5 for a in PAPER_TABLE6.values()], "x", color="grey", ms=8,
                    label="paper Table 6 (DBpedia, 24x4)")
        if finite:
            e = np.geomspace(min(finite) / 1.3, top * 1.3, 200)
            ax.plot(e, np.tanh(e / 2) / 2, "k:", label="pure-DP bound on advantage")
        ticks = [x_of[s.name] for s in settings]
        ax.set_xscale("log")
        ax.set_xticks(ticks, [s.name if s.private else {"inf": "inf\n(dense)", "inf-sparse": "inf\n(sparse)"}[s.name]
                              for s in settings], minor=False)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        if finite:
            ax.axvline(top * 1.6, color="grey", lw=0.5)
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_ylim(-0.05, 0.53)
        ax.set_xlabel("epsilon (log scale); no-noise settings at the right")
        ax.set_title(f"{'standard' if attack == 'standard' else 'label-aware'} attack features")
    axes[0].set_ylabel("attack advantage (accuracy - 0.5)")
    handles = {lab: h for ax in axes for h, lab in zip(*ax.get_legend_handles_labels())}
    axes[1].legend(handles.values(), handles.keys(), fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.suptitle("Membership inference against dpedge bundles (mean ± std over seeds)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", type=Path, required=True, help="dataset folders (train/test.jsonl, labels.txt)")
    ap.add_argument("--grid", default="24x4,6x32,default",
                    help="comma-separated targets: BITSxTABLES (random hashing) or default (the default bundle)")
    ap.add_argument("--epsilons", default="inf,inf-sparse,8,5,3,1", help="epsilons, plus inf and inf-sparse")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--max-pairs", type=int, default=2000, help="at most this many non-members (and as many members)")
    ap.add_argument("--max-dense-cells", type=int, default=DEFAULT_MAX_DENSE_CELLS,
                    help="larger tables use the touched-cells simulation instead of a dense release")
    ap.add_argument("--shift-control", action="store_true",
                    help="also attack exact tables built without the members (measures train/test shift)")
    ap.add_argument("--out", type=Path, default=None, help="write results as JSON")
    ap.add_argument("--plot", type=Path, default=None, help="write the advantage plot (PNG)")
    args = ap.parse_args(argv)
    settings, grid = parse_settings(args.epsilons), parse_grid(args.grid)

    start = time.perf_counter()
    embedder = Embedder()
    rows: list[dict[str, Any]] = []
    controls: list[dict[str, Any]] = []
    pairs_info = {}
    for folder in args.data:
        t0 = time.perf_counter()
        ds = embedder.dataset(folder)
        log(f"{ds.name}: {len(ds.train.labels)} train, {len(ds.test.labels)} test, {len(ds.labels)} classes")
        public = default_inputs(embedder, ds) if DEFAULT_TARGET in grid else None
        res = run_dataset(ds, grid, settings, args.seeds, args.max_pairs, args.max_dense_cells, args.shift_control,
                          public)
        rows += [c.to_json() for c in res.rows]
        controls += [{**c.to_json(), "control": "members removed from the datastore"} for c in res.controls]
        pairs_info[ds.name] = res.pairs
        log(f"  ({ds.name}: {time.perf_counter() - t0:.0f} s)")

    print(markdown_table(rows))
    if controls:
        print("\nShift control: exact tables (every bucket present) built WITHOUT the members (no member is in the datastore, "
              "so accuracy above 50% is member/non-member distribution shift, not membership):\n")
        print(markdown_table(controls))
    elapsed = time.perf_counter() - start
    log(f"total {elapsed:.0f} s")
    if args.out:
        result = {
            "config": {"data": [str(p) for p in args.data], "grid": [grid_name(g) for g in grid],
                       "settings": [s.name for s in settings], "seeds": args.seeds, "max_pairs": args.max_pairs,
                       "max_dense_cells": args.max_dense_cells, "knn_k": KNN_K,
                       "attack": "HistGradientBoostingClassifier on standardized features, 50/50 split",
                       "opendp": version("opendp"), "scikit_learn": version("scikit-learn")},
            "pairs": pairs_info, "seconds": round(elapsed, 1), "rows": rows,
            **({"shift_controls": controls} if controls else {}),
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    if args.plot:
        plot(rows, settings, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
