"""The release families of a build, one recipe each, chosen once from the options.

A recipe is what one family of bundle needs and nothing else: the options it refuses, the
public inputs it derives, the releases it makes through the build's `PrivacyBudget` (whose plan
of shares the options give: `BuildOptions.shares`), and what it does to the assembled bundle. The spine (exporter.build) reads the
labels, chooses the recipe (`choose`), gets the encoder, opens the engine, runs the recipe's
releases and assembles the bundle, in that order and in one direction.

| recipe | chosen by | releases (in order) |
|---|---|---|
| `Head` | ``--delta`` | class counts; with ``--unit-column`` the number of persons; the head, trained by DP-SGD ((epsilon, delta)) |
| `Extension` | ``--extend OLD`` | what OLD released, in OLD's basis and on OLD's hyperplanes; summed with OLD |
| `Aligned` | the default | class counts; class sums; vote tables along them with ``--votes-share`` |
| `Random` | ``--hashing random`` | vote tables on seeded hyperplanes (the paper's) |
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from exporter import encoders
from exporter.class_stats import ClassStatsRelease
from exporter.dataset import LabelSet
from exporter.engine import Engine
from exporter.extend import BATCH_INPUT, check_extension, earlier_basis, earlier_options, merged
from exporter.hyperplanes import new_seed
from exporter.options import DEFAULT_BITS, BuildOptions, check_head, check_statistics
from exporter.privacy import PrivacyBudget
from exporter.progress import Timer
from exporter.stages import (HEAD_NOTICE, EmbedTexts, Hashing, PublicInputs, aligned_hashing, public_inputs,
                             random_hashing, release_class_stats, release_class_stats_in, release_head_stats)
from exporter.votes import VoteRelease, release_votes
from runtime.bundle import load, load_pack
from runtime.bundle.schema import Bundle, EncoderPack, EncoderSpec, HeadRelease

__all__ = ["Aligned", "Extension", "Head", "Inputs", "Plan", "Random", "Recipe", "Releases", "choose"]


@dataclass
class Inputs:
    """What the spine hands a recipe: the build's settings, its labels and encoder, the public
    text embedder of the driver (None where none is made: a Ray build of a recipe that embeds no
    public text), the encoder's vocabulary embeddings on demand (public), the budget, the timer."""

    opts: BuildOptions
    labels: LabelSet
    encoder: EncoderSpec
    embed: EmbedTexts | None
    vocabulary: Callable[[], np.ndarray]
    budget: PrivacyBudget
    timer: Timer


@dataclass
class Releases:
    """What a recipe released, for `exporter.stages.assemble_bundle`."""

    stats: ClassStatsRelease | None = None
    public: PublicInputs | None = None
    hashing: Hashing | None = None
    votes: VoteRelease | None = None
    head: HeadRelease | None = None
    head_counts: np.ndarray | None = None
    head_persons: int | None = None


class Recipe:
    """One release family (see the module doc)."""

    #: Whether the driver embeds public text (label descriptions, the encoder's vocabulary).
    embeds_public_text: ClassVar[bool] = True
    #: Whether the engine hands every embedding over in one place (the head's DP-SGD).
    holds_embeddings: ClassVar[bool] = False

    def check(self, opts: BuildOptions, classes: int, stand_in: bool) -> None:
        """Refuse the options this family cannot honour (before any record is read)."""
        check_statistics(opts, classes, benchmark_stand_in=stand_in)

    def release(self, inputs: Inputs, engine: Engine) -> Releases:
        raise NotImplementedError

    def finish(self, bundle: Bundle) -> Bundle:
        """The bundle once assembled (an extension sums it with the earlier one)."""
        return bundle


class Head(Recipe):
    """``--delta``: the class counts, then a linear head trained by DP-SGD (exporter.head), on
    the embeddings wherever the engine keeps them (`Engine.head_records`)."""

    holds_embeddings = True

    def check(self, opts: BuildOptions, classes: int, stand_in: bool) -> None:
        check_head(opts, benchmark_stand_in=stand_in)

    def release(self, inputs: Inputs, engine: Engine) -> Releases:
        t = inputs.timer.start()
        vocabulary = inputs.vocabulary()
        inputs.timer.add("public basis", t)
        counts, head, persons = release_head_stats(engine, inputs.embed, vocabulary, inputs.labels, inputs.budget,
                                                   inputs.timer, inputs.opts.progress,
                                                   lr_scale=encoders.head_lr_scale(inputs.encoder))
        return Releases(head=head, head_counts=counts, head_persons=persons)


class Aligned(Recipe):
    """The default: class counts and class sums in the public basis, and with ``--votes-share``
    vote tables hashed in the span of the released class directions."""

    def release(self, inputs: Inputs, engine: Engine) -> Releases:
        opts, budget, timer = inputs.opts, inputs.budget, inputs.timer
        t = timer.start()
        public = public_inputs(inputs.embed, inputs.vocabulary(), inputs.labels, budget)
        timer.add("public basis", t)
        stats = release_class_stats(engine, public, len(inputs.labels), budget, basis_dim=opts.basis_dim,
                                    clip_l1=opts.clip_l1, planned_records=opts.planned_records)
        if not opts.has_tables:
            return Releases(stats=stats, public=public)
        hashing = aligned_hashing(stats, _seed(opts), opts.table_count, opts.bits, opts.public_directions, budget)
        return Releases(stats=stats, public=public, hashing=hashing,
                        votes=_votes(engine, hashing, len(inputs.labels), budget, timer))


class Random(Recipe):
    """``--hashing random``: the paper's vote tables on seeded Gaussian hyperplanes."""

    embeds_public_text = False

    def release(self, inputs: Inputs, engine: Engine) -> Releases:
        opts, budget = inputs.opts, inputs.budget
        hashing = random_hashing(_seed(opts), opts.table_count, opts.bits or DEFAULT_BITS, inputs.encoder.dim, budget)
        return Releases(hashing=hashing, votes=_votes(engine, hashing, len(inputs.labels), budget, inputs.timer))


class Extension(Recipe):
    """``--extend OLD``: a batch of records disjoint from OLD's, released with OLD's public
    choices (exporter.extend), and the bundle of both."""

    embeds_public_text = False

    def __init__(self, earlier: Bundle):
        self.earlier = earlier

    def release(self, inputs: Inputs, engine: Engine) -> Releases:
        old, budget = self.earlier, inputs.budget
        budget.declare_public(BATCH_INPUT)
        out = Releases()
        if old.class_sums is not None:
            basis, clip = earlier_basis(old)
            out.public = PublicInputs(basis, old.prior)
            out.stats = release_class_stats_in(engine, basis, clip, len(inputs.labels), budget)
        if old.hyperplanes is not None:
            out.hashing = Hashing(old.hyperplanes, old.offsets, old.seed)
            out.votes = _votes(engine, out.hashing, len(inputs.labels), budget, inputs.timer)
        return out

    def finish(self, bundle: Bundle) -> Bundle:
        return merged(self.earlier, bundle)


@dataclass(frozen=True)
class Plan:
    """A build's plan, chosen once: its recipe, the options it builds with (an extension's carry
    the earlier bundle's plan) and the encoder pack it embeds with (None: no pack)."""

    recipe: Recipe
    opts: BuildOptions
    pack: EncoderPack | None


def choose(opts: BuildOptions, labels: LabelSet, *, stand_in: bool = False) -> Plan:
    """The plan of ``opts``, after its recipe's option checks, before any record is read. A
    head's options are checked, and its notice printed, before the pack or an earlier bundle is
    read."""
    recipe: Recipe | None = None
    if opts.has_head:
        recipe = Head()
        recipe.check(opts, len(labels), stand_in)
        print(HEAD_NOTICE.format(delta=opts.delta), file=sys.stderr)
    pack = None if opts.encoder_pack is None else load_pack(opts.encoder_pack)
    if recipe is None:
        if opts.extend is not None:
            earlier = load(opts.extend, pack=pack)
            check_extension(opts, earlier, labels)
            opts = earlier_options(opts, earlier)
            recipe = Extension(earlier)
        else:
            recipe = Aligned() if opts.aligned else Random()
        recipe.check(opts, len(labels), stand_in)
    return Plan(recipe, opts, pack)


def _seed(opts: BuildOptions) -> int:
    """The hyperplanes' seed: the option's, else a fresh one (public: it is in the bundle)."""
    return new_seed() if opts.seed is None else int(opts.seed)


def _votes(engine: Engine, hashing: Hashing, classes: int, budget: PrivacyBudget, timer: Timer) -> VoteRelease:
    """The vote tables: every record's bucket counted on ``hashing``'s hyperplanes, released."""
    counts = engine.vote_counts(hashing.planes, hashing.offsets, classes)
    t = timer.start()
    votes = release_votes(counts, budget)
    del counts  # the exact counts are not needed past this point
    timer.add("noise", t)
    return votes

