"""The stages of a build that do not depend on where records are read: the public inputs,
the hashing, and the bundle assembled from the releases.

Both engines (exporter.local_engine, exporter.ray_engine) and benchmarks/accuracy.py go
through these functions, so a Ray build, a local build and the accuracy benchmark fit the
same public basis, hash along the same hyperplanes and state the same facts. Every fact that
describes a public input or post-processing is declared to the build's `PrivacyBudget`
here, next to the code that makes it true, and the budget writes them into the bundle.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from exporter.class_stats import ClassStatsRelease
from exporter.dataset import LabelSet
from exporter.hyperplanes import aligned_hyperplanes, bits_for, draw_hyperplanes
from exporter.privacy import PrivacyBudget
from exporter.public_basis import PublicBasis, fit_public_basis, public_texts
from exporter.votes import VoteRelease
from runtime import __version__
from runtime.bundle.schema import LSH_FAMILY, Bundle, Encoder, ExporterKey, Lsh
from runtime.scoring import Weights

#: Turns texts into unit embeddings, shape (n, dim), float32 (an `Embedder`'s `embed`).
EmbedTexts = Callable[[list[str]], np.ndarray]

LABELS_ARE_PUBLIC = "label list and descriptions"
ENCODER_IS_PUBLIC = "encoder (public pretrained model)"
STAND_IN = "BENCHMARK STAND-IN: the counts were not made by this encoder; do not classify with this bundle"


@dataclass(frozen=True)
class PublicInputs:
    """What an aligned build derives from public text only: the subspace of the class
    statistics and the prior's description embeddings (None without descriptions)."""

    basis: PublicBasis
    prior: np.ndarray | None


def public_inputs(embed: EmbedTexts, tokenizer_json: str, labels: LabelSet, basis_dim: int,
                  budget: PrivacyBudget) -> PublicInputs:
    """The public basis (the encoder's vocabulary words and the label descriptions) and the
    prior; never a record."""
    basis = fit_public_basis(embed, public_texts(tokenizer_json, labels.descriptions), basis_dim)
    budget.declare_public("public basis: principal components of the encoder's own vocabulary words and the label "
                          "descriptions (no private record)")
    prior = None
    if labels.descriptions is not None:
        prior = np.asarray(embed(list(labels.descriptions)), np.float32)
        budget.declare_public("prior: the label descriptions' embeddings (public text only)")
    return PublicInputs(basis, prior)


@dataclass(frozen=True)
class Hashing:
    """The hyperplanes (tables, bits, dim), their offsets (None: through the origin) and how
    they were made, as the bundle's ``lsh`` map states it."""

    planes: np.ndarray
    offsets: np.ndarray | None
    seed: int
    distribution: str
    bit_rule: str
    bits_rule: str | None = None

    @property
    def bits(self) -> int:
        return int(self.planes.shape[1])

    def lsh_map(self) -> dict[str, Any]:
        tables, bits, dim = self.planes.shape
        m = {Lsh.FAMILY: LSH_FAMILY, Lsh.TABLES: int(tables), Lsh.BITS: int(bits), Lsh.DIM: int(dim),
             Lsh.SEED: self.seed, Lsh.DISTRIBUTION: self.distribution, Lsh.BIT_RULE: self.bit_rule}
        if self.bits_rule is not None:
            m[Lsh.BITS_RULE] = self.bits_rule
        return m


def random_hashing(seed: int, tables: int, bits: int, dim: int, budget: PrivacyBudget) -> Hashing:
    """The paper's hashing: seeded Gaussian hyperplanes through the origin, data-independent."""
    budget.declare_public("hyperplanes (seeded, data-independent)")
    budget.declare_public("tables and bits (chosen without the data)")
    return Hashing(draw_hyperplanes(seed, tables, bits, dim), None, seed, "gaussian",
                   "bit h (h = 0..bits-1) is 1 iff <x, r_h> > 0; bucket = sum_h bit_h * 2^h")


def aligned_hashing(stats: ClassStatsRelease, basis: PublicBasis, seed: int, tables: int, bits: int | None,
                    public_directions: int, budget: PrivacyBudget) -> Hashing:
    """Hyperplanes in the span of the released noisy class directions, through the released
    mean, with H from the released noisy record count unless given: post-processing."""
    planes, offsets = aligned_hyperplanes(seed, tables, bits or bits_for(float(stats.counts.sum())), basis,
                                          stats.sums, stats.counts, public_directions)
    budget.declare_public("hyperplanes and offsets: seeded Gaussian directions inside the span of the released noisy "
                          "class directions (post-processing of the class statistics)")
    budget.declare_public("tables (fixed) and bits (from the released noisy class counts, or given)")
    return Hashing(planes, offsets, seed,
                   "aligned: gaussian in the span of the noisy centred class directions plus "
                   f"{public_directions} public directions, through the noisy mean",
                   "bit h (h = 0..bits-1) is 1 iff <x, r_h> > offset_h; bucket = sum_h bit_h * 2^h",
                   "given" if bits else "bits_for(sum of the noisy class counts)")


def assemble_bundle(labels: LabelSet, encoder: Encoder, budget: PrivacyBudget, hashing: Hashing, votes: VoteRelease,
                    *, stats: ClassStatsRelease | None = None, public: PublicInputs | None = None,
                    clip_l1: float = 0.0, stand_in: bool = False) -> Bundle:
    """The bundle: the releases, the public inputs, and the privacy facts the budget writes."""
    budget.declare_public(LABELS_ARE_PUBLIC)
    budget.declare_public(ENCODER_IS_PUBLIC)
    exporter = {ExporterKey.NAME: "dpedge", ExporterKey.VERSION: __version__,
                ExporterKey.CREATED: datetime.now(timezone.utc).isoformat(timespec="seconds")}
    if stand_in:
        exporter[ExporterKey.EMBEDDINGS] = STAND_IN
    format_2: dict[str, Any] = {}
    if stats is not None and public is not None:
        format_2 = dict(class_stats=stats.for_bundle(public.basis), prior=public.prior,
                        scoring=Weights.measured(clip_l1).as_map())
    return Bundle(labels=labels.names, label_descriptions=labels.descriptions, privacy=budget.privacy_facts(),
                  lsh=hashing.lsh_map(), hyperplanes=hashing.planes, votes=votes.votes, encoder=encoder,
                  exporter=exporter, offsets=hashing.offsets, **format_2)
