"""Releases that add up: a batch of new records released with an earlier bundle's public
choices, and the bundle whose statistics are the sums of both noisy releases.

`python -m exporter build --extend OLD.dpedge --train NEW.jsonl ...` releases the statistics of
records disjoint from every earlier batch (the user's promise: no record, or with
``--unit-column`` no person, in two batches). Each batch's releases are epsilon-DP for the
records of that batch, and the batches are disjoint, so the sum is epsilon-DP for every record
(parallel composition), however many batches are added. To add up, every batch uses the same
public choices, taken from the earlier bundle: the labels and their descriptions, the encoder
(or its pack), the shares of epsilon, the basis, k, clip and grid, the hyperplanes and
offsets; the epsilon and the unit must be the earlier ones, and the options that would choose
them again are refused. The merged bundle says how many batches it sums (``privacy.batches``),
so that a reader knows the noise on a sum is that of that many releases.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from exporter.dataset import LabelSet
from exporter.options import BuildError, BuildOptions
from exporter.privacy import TEST_HOOK
from exporter.public_basis import PublicBasis
from exporter.stages import ENCODER_IS_PUBLIC, ENCODER_STATED_BY_BUILDER
from exporter.votes import INT16_MAX, INT16_MIN
from runtime.bundle import wording
from runtime.bundle.schema import PRIVACY_RTOL, Bundle, Key

#: The options that choose what an extension takes from the earlier bundle.
FIXED_BY_EARLIER = {"hashing": "aligned", "votes_share": 0.0, "basis_dim": None, "clip_l1": None, "tables": None,
                    "bits": None, "seed": None, "public_directions": 0, "encoder_source": None, "encoder_format": "onnx",
                    "planned_records": None}

BATCH_INPUT = "each batch after the first: the earlier bundle's labels, encoder, basis, clip, grid and hyperplanes"


def check_extension(opts: BuildOptions, old: Bundle, labels: LabelSet) -> None:
    """Refuse an extension whose settings would not add up with ``old`` (naming what to change)."""
    flags = {"hashing": "--hashing", "votes_share": "--votes-share", "basis_dim": "--basis-dim", "clip_l1": "--clip-l1",
             "tables": "--tables", "bits": "--bits", "seed": "--seed", "public_directions": "--public-directions",
             "encoder_source": "--encoder", "encoder_format": "--encoder-format",
             "planned_records": "--planned-records"}
    given = [flags[k] for k, default in FIXED_BY_EARLIER.items() if getattr(opts, k) != default]
    if given:
        raise BuildError(f"--extend takes these from the earlier bundle: leave out {', '.join(given)}")
    if labels.names != old.labels or labels.descriptions != old.label_descriptions:
        raise BuildError("--labels must be the earlier bundle's labels and descriptions, in the same order "
                         "(python -m exporter inspect OLD shows them)")
    if opts.epsilon != old.epsilon:
        raise BuildError(f"--epsilon must be the earlier bundle's, {old.epsilon:g}: each batch spends the same "
                         f"epsilon on its own records")
    relation = opts.relation().facts()
    for key in (Key.MAX_RECORDS_PER_UNIT, Key.NEIGHBOUR_RELATION):
        if relation[key] != old.privacy[key]:
            raise BuildError(f"the privacy unit must be the earlier bundle's ({old.privacy[Key.PRIVACY_UNIT]}; "
                             f"{old.privacy[Key.NEIGHBOUR_RELATION]}): give the same --unit-column and "
                             f"--max-records-per-unit")
    if old.exporter and "embeddings" in old.exporter:
        raise BuildError("the earlier bundle is a benchmark stand-in, not a release of records")
    if old.head is not None:
        raise BuildError("--extend: the earlier bundle is a head bundle (--delta): a head's DP-SGD steps do not add up "
                         "over batches; build a new head from all the records instead (nothing was read or written)")


def earlier_options(opts: BuildOptions, old: Bundle) -> BuildOptions:
    """``opts`` with the earlier bundle's plan: its hashing and its vote tables' share."""
    aligned = old.class_sums is not None
    votes_share = old.releases[Key.VOTES].epsilon / old.epsilon if aligned and old.votes is not None else 0.0
    return dataclasses.replace(opts, hashing="aligned" if aligned else "random", votes_share=round(votes_share, 12),
                               tables=None if old.votes is None else old.tables,
                               bits=None if old.votes is None else old.bits)


def earlier_encoder_statement(old: Bundle) -> str:
    """How the earlier bundle stated its encoder among the public inputs: every batch has the
    same encoder, so the same statement (a folder's stays the builder's)."""
    stated = old.privacy.get(Key.PUBLIC_INPUTS) or ()
    return ENCODER_STATED_BY_BUILDER if ENCODER_STATED_BY_BUILDER in stated else ENCODER_IS_PUBLIC


def earlier_basis(old: Bundle) -> tuple[PublicBasis, float]:
    """The class sums' basis and clip of the earlier bundle."""
    return PublicBasis(np.asarray(old.origin, np.float32), np.asarray(old.projection, np.float32)), \
        float(old.releases[Key.CLASS_SUMS].clip_l1)


def merged(old: Bundle, new: Bundle) -> Bundle:
    """The bundle of both batches: each noisy statistic summed (vote cells clipped to int16, as
    a release is), the public parts the earlier ones, the privacy facts the new batch's with the
    batches counted and the composition stated."""
    for name, r in new.releases.items():
        before = old.releases.get(name)
        if before is None or not math.isclose(before.noise_scale, r.noise_scale, rel_tol=PRIVACY_RTOL):
            raise BuildError(f"release {name} of this batch does not match the earlier bundle's (noise scale "
                             f"{r.noise_scale:g}): the batches would not add up")
    batches = old.batches + 1

    def add(a: np.ndarray | None, b: np.ndarray | None, lo: int, hi: int, dtype: Any) -> np.ndarray | None:
        if a is None:
            return None
        total = a.astype(np.int64) + b.astype(np.int64)
        if total.min(initial=0) < lo or total.max(initial=0) > hi:
            if dtype is not np.int16:
                raise BuildError("the summed statistics overflow 32-bit integers: start a new series of bundles")
            total = np.clip(total, lo, hi)
        return total.astype(dtype)

    i32 = np.iinfo(np.int32)
    # the contract's words (relation "composition"): parallel over the batches, each as the new one
    composition = wording.composition(new.releases, new.head is not None, batches)
    privacy = {**new.privacy, Key.BATCHES: batches, Key.COMPOSITION: composition,
               Key.PUBLIC_INPUTS: list(dict.fromkeys([*old.privacy[Key.PUBLIC_INPUTS], *new.privacy[Key.PUBLIC_INPUTS]]))}
    old_source, new_source = old.privacy[Key.NOISE_SOURCE], new.privacy[Key.NOISE_SOURCE]
    if TEST_HOOK in old_source and TEST_HOOK not in new_source:  # a pinned batch's marker stays for ever after
        privacy[Key.NOISE_SOURCE] = f"{new_source}; an earlier batch: {old_source}"
    return dataclasses.replace(  # the writer lists privacy.batches (and encoder_pack) in requires
        new, privacy=privacy, requires=old.requires,
        class_counts=add(old.class_counts, new.class_counts, i32.min, i32.max, np.int32),
        class_sums=add(old.class_sums, new.class_sums, i32.min, i32.max, np.int32),
        votes=add(old.votes, new.votes, INT16_MIN, INT16_MAX, np.int16),
        origin=old.origin, projection=old.projection, hyperplanes=old.hyperplanes, offsets=old.offsets,
        seed=old.seed, prior=old.prior, encoder=old.encoder, encoder_pack=old.encoder_pack)
