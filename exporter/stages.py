"""The stages of a build that do not depend on where records are read: the public inputs,
the class statistics' rule, the hashing, and the bundle assembled from the releases.

Both engines (exporter.local_engine, exporter.ray_engine) and benchmarks/accuracy.py go
through these functions, so a Ray build, a local build and the accuracy benchmark fit the
same public basis, hash along the same hyperplanes and state the same facts. Every fact that
describes a public input or post-processing is declared to the build's `PrivacyBudget`
here, next to the code that makes it true, and the budget writes them into the bundle.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from exporter import encoders
from exporter.class_stats import (ClassStatsRelease, ClassSumCounter, choose_subspace, release_class_counts,
                                  release_class_sums)
from exporter.dataset import LabelSet
from exporter.engine import Engine
from exporter.head import RULE_MAX_STEPS, release_head
from exporter.hyperplanes import aligned_hyperplanes, bits_for, draw_hyperplanes
from exporter.privacy import PrivacyBudget
from exporter.progress import Timer
from exporter.public_basis import PublicBasis, task_basis
from exporter.votes import VoteRelease
from runtime import __version__
from runtime.bundle.wording import DELTA_SUMMARY
from runtime.bundle.schema import Bundle, EncoderSpec, HeadRelease, Key, Scoring

#: Turns texts into unit embeddings, shape (n, dim), float32 (an `Embedder`'s `embed`).
EmbedTexts = Callable[[list[str]], np.ndarray]

LABELS_ARE_PUBLIC = "label list and descriptions"
#: How the public inputs state the encoder: a registered encoder (exporter.encoders) is a public
#: pretrained model; a folder is the builder's statement, which the exporter cannot check.
ENCODER_IS_PUBLIC = "encoder (public pretrained model)"
ENCODER_STATED_BY_BUILDER = ("encoder (a model folder the builder states was trained without the private records; "
                             "one fine-tuned on them would break the guarantee)")
#: The line a build with `--encoder FOLDER` prints on stderr.
FOLDER_NOTICE = ("note: --encoder {folder}: the guarantee assumes this encoder was trained without the private "
                 "records (a model fine-tuned on them breaks it); the bundle states that you say so")
#: The line a head build (--delta) prints on stderr: the guarantee is not the default's.
HEAD_NOTICE = ("note: --delta {delta:g} is opt-in: this bundle is (epsilon, delta)-DP, not pure epsilon-DP: the "
               "class counts and a linear head trained by DP-SGD (" + DELTA_SUMMARY + "); leave out --delta for the "
               "default pure epsilon-DP bundle")
STAND_IN = "BENCHMARK STAND-IN: the counts were not made by this encoder; do not classify with this bundle"
#: The blend's constants the exporter ships (docs/accuracy.md has the measurements): the
#: cosine at temperature 0.04, the prior at 0.05 with R = 100 records per class, the class sums
#: pulled toward their descriptions by half the noise's norm.
SCORING = Scoring(centroid_temperature=0.04, prior_temperature=0.05, prior_records_per_class=100.0,
                  description_pull=0.5)


@dataclass(frozen=True)
class PublicInputs:
    """What a build with class statistics derives from public text only: the task basis of
    the class sums and the prior's description embeddings (None without descriptions)."""

    basis: PublicBasis
    prior: np.ndarray | None


def public_inputs(embed: EmbedTexts, vocabulary: np.ndarray, labels: LabelSet, budget: PrivacyBudget) -> PublicInputs:
    """The task basis (the embeddings of the encoder's vocabulary words, and the label
    descriptions) and the prior; never a record."""
    vocabulary = np.asarray(vocabulary, np.float64)
    prior = None if labels.descriptions is None else np.asarray(embed(list(labels.descriptions)), np.float32)
    budget.declare_public("public basis: the label descriptions' contrasts, then the principal directions of the "
                          "encoder's own vocabulary words and the descriptions, and their median L1 norms (no "
                          "private record)")
    if prior is not None:
        budget.declare_public("prior: the label descriptions' embeddings (public text only)")
    return PublicInputs(task_basis(vocabulary, prior), prior)


def release_class_stats(engine: Engine, public: PublicInputs, classes: int, budget: PrivacyBudget, *,
                        basis_dim: int | None = None, clip_l1: float | None = None,
                        planned_records: int | None = None) -> ClassStatsRelease:
    """The class counts, then the rule, then the class sums: the two releases of the class
    statistics, with the subspace chosen between them from the released counts."""
    counts = release_class_counts(engine.class_counts(classes), budget)
    planned = None if planned_records is None else np.full(classes, planned_records / classes)
    k, clip = choose_subspace(budget.share(Key.CLASS_SUMS), counts if planned is None else planned,
                              budget.relation.max_records, public.basis)
    if basis_dim is not None:  # an operator's override, chosen without the data
        k, clip = basis_dim, public.basis.clip_for(basis_dim)
    budget.declare_public("subspace dimension and clip (from the released noisy class counts, or from a number of "
                          "records or a dimension the builder gave)")
    return _release_sums(engine, public.basis.first(k), clip if clip_l1 is None else clip_l1, classes, counts, budget)


def release_head_stats(engine: Engine, embed: EmbedTexts, vocabulary: np.ndarray, labels: LabelSet,
                       budget: PrivacyBudget, timer: Timer | None = None,
                       progress: bool = False, lr_scale: float = 1.0,
                       max_steps: int = RULE_MAX_STEPS) -> tuple[np.ndarray, HeadRelease, int | None]:
    """A head build's releases: the class counts, with a person as the unit the noisy number of
    persons (returned last; None without), then the head (exporter.head) trained on every
    record's embedding, centred on the public origin (the mean embedding of the encoder's
    vocabulary words and the label descriptions: `task_basis`'s origin), by the rule with the
    encoder's public ``lr_scale`` (exporter.encoders.head_lr_scale); ``max_steps`` is for a study
    of the rule (benchmarks/head.py)."""
    from exporter.class_stats import release_class_counts, release_unit_count

    counts = release_class_counts(engine.class_counts(len(labels)), budget)
    persons = release_unit_count(engine.unit_count(), budget) if Key.UNIT_COUNT in budget.plan else None
    prior = None if labels.descriptions is None else np.asarray(embed(list(labels.descriptions)), np.float64)
    origin = task_basis(np.asarray(vocabulary, np.float64), prior).origin
    records = engine.head_records(origin)
    t = Timer.start()
    head = release_head(records, origin, counts, budget, progress, lr_scale, max_steps, persons)
    if timer is not None:
        timer.add("head (DP-SGD)", t)
    return counts, head, persons


def release_class_stats_in(engine: Engine, basis: PublicBasis, clip_l1: float, classes: int,
                           budget: PrivacyBudget) -> ClassStatsRelease:
    """The two releases in a basis and clip chosen before (an extension: the earlier bundle's)."""
    counts = release_class_counts(engine.class_counts(classes), budget)
    return _release_sums(engine, basis, clip_l1, classes, counts, budget)


def _release_sums(engine: Engine, basis: PublicBasis, clip_l1: float, classes: int, counts: np.ndarray,
                  budget: PrivacyBudget) -> ClassStatsRelease:
    sums: ClassSumCounter = engine.class_sums(basis, classes, clip_l1)
    return ClassStatsRelease(release_class_sums(sums, budget), counts, basis)


@dataclass(frozen=True)
class Hashing:
    """The hyperplanes (tables, bits, dim), their offsets (None: through the origin) and their seed."""

    planes: np.ndarray
    offsets: np.ndarray | None
    seed: int

    @property
    def bits(self) -> int:
        return int(self.planes.shape[1])


def random_hashing(seed: int, tables: int, bits: int, dim: int, budget: PrivacyBudget) -> Hashing:
    """The paper's hashing: seeded Gaussian hyperplanes through the origin, data-independent."""
    budget.declare_public("hyperplanes (seeded, data-independent)")
    budget.declare_public("tables and bits (chosen without the data)")
    return Hashing(draw_hyperplanes(seed, tables, bits, dim), None, seed)


def aligned_hashing(stats: ClassStatsRelease, seed: int, tables: int, bits: int | None, public_directions: int,
                    budget: PrivacyBudget) -> Hashing:
    """Hyperplanes in the span of the released noisy class directions, through the released
    mean, with H from the released noisy record count unless given: post-processing."""
    planes, offsets = aligned_hyperplanes(seed, tables, bits or bits_for(float(stats.counts.sum())), stats.basis,
                                          stats.sums, stats.counts, public_directions)
    budget.declare_public("hyperplanes and offsets: seeded Gaussian directions inside the span of the released noisy "
                          "class directions (post-processing of the class statistics)")
    budget.declare_public("tables (fixed) and bits (from the released noisy class counts, or given)")
    return Hashing(planes, offsets, seed)


def encoder_input(source: str | Path | None) -> str:
    """How the public inputs state the encoder of `--encoder` ``source`` (None: the default).

    Example:
        >>> encoder_input("all-MiniLM-L6-v2") == ENCODER_IS_PUBLIC
        True
    """
    return ENCODER_STATED_BY_BUILDER if encoders.is_folder(source) else ENCODER_IS_PUBLIC


def created_stamp(started: datetime | None) -> str:
    """The bundle's creation stamp: the minute the build *started* (``started``; None: now), in UTC.
    Never when it ended: a build's duration grows with its exact record count (embedding, and
    DP-SGD's steps), so an end time would be a timing channel on N.

    Example:
        >>> created_stamp(datetime(2026, 11, 28, 14, 32, 38, 123, tzinfo=timezone.utc))
        '2026-11-28T14:32:00+00:00'
    """
    t = (started or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return t.replace(second=0, microsecond=0).isoformat(timespec="seconds")


def assemble_bundle(labels: LabelSet, encoder: EncoderSpec, budget: PrivacyBudget, hashing: Hashing | None,
                    votes: VoteRelease | None, *, stats: ClassStatsRelease | None = None,
                    public: PublicInputs | None = None, stand_in: bool = False,
                    encoder_statement: str = ENCODER_IS_PUBLIC, head: HeadRelease | None = None,
                    counts: np.ndarray | None = None, persons: int | None = None,
                    started: datetime | None = None) -> Bundle:
    """The bundle: the releases, the public inputs (``encoder_statement``: how the encoder is
    stated, `encoder_input`), and the privacy facts the budget writes. A head bundle
    (``head``, with the released ``counts``) holds the class counts and the head alone, and a
    person-level one the noisy number of ``persons`` too."""
    budget.declare_public(LABELS_ARE_PUBLIC)
    budget.declare_public(encoder_statement)
    exporter = {Key.NAME: "dpedge", Key.VERSION: __version__,
                Key.CREATED: created_stamp(started)}
    if stand_in:
        exporter["embeddings"] = STAND_IN
    parts: dict[str, Any] = {}
    if stats is not None and public is not None:
        parts.update(class_counts=stats.counts, class_sums=stats.sums_grid, origin=stats.basis.origin,
                     projection=stats.basis.projection, scoring=SCORING)
        if labels.descriptions is not None:
            parts["prior"] = public.prior
    if head is not None:
        parts.update(class_counts=counts, head=head, unit_count=persons)
    if hashing is not None and votes is not None:
        parts.update(votes=votes.votes, hyperplanes=hashing.planes, offsets=hashing.offsets, seed=hashing.seed)
    return Bundle(labels=labels.names, label_descriptions=labels.descriptions, privacy=budget.privacy_facts(),
                  releases=budget.releases, encoder=encoder, exporter=exporter, **parts)
