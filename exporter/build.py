"""Build a bundle, in one direction: read the labels -> choose the plan (exporter.recipes: one
recipe per release family, its options checked before any record is read) -> get the encoder
the bundle ships -> open the engine -> the recipe's releases -> assemble -> write.

| family | releases |
|---|---|
| default (aligned) | class counts, class sums [, vote tables along them] |
| ``--hashing random`` | vote tables on seeded hyperplanes |
| ``--extend OLD`` | OLD's releases for disjoint records, summed with OLD |
| ``--delta`` (opt-in) | class counts, a linear head trained by DP-SGD ((epsilon, delta)) |

One `PrivacyBudget` owns the build's epsilon: the releases (exporter.class_stats,
exporter.votes, exporter.head) take their shares from it and get their noise through it, and it
writes the bundle's privacy facts. Everything else is public input or post-processing of a
release: the task basis and the prior (exporter.stages), the subspace the counts choose for the
sums, the aligned hyperplanes and their number of bits, the scoring rule. Records are read and
embedded by an engine (exporter.local_engine in this process, exporter.ray_engine on a cluster)
with the runtime's own `Embedder` on the very model the bundle ships, so a training text and
the same text typed on a device are embedded alike. Only exact aggregates are kept, and only
until they are released.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from exporter import recipes
from exporter.dataset import LabelSet, ReadStats, read_labels
from exporter.encoder_export import ExportedEncoder, PackedEncoder, export_encoder, exporter_embedder, in_memory
from exporter.extend import earlier_encoder_statement
from exporter.engine import Engine
from exporter.local_engine import EmbedChunk, LocalEngine
from exporter.memory_plan import check_memory
from exporter.noise import GaussianNoiseSource, NoiseSource
from exporter.options import BuildError, BuildOptions
from exporter.privacy import PrivacyBudget
from exporter.progress import Timer
from exporter.stages import ENCODER_STATED_BY_BUILDER, FOLDER_NOTICE, assemble_bundle, encoder_input
from exporter.units import UnitStats
from runtime.bundle import save
from runtime.describe import privacy_summary
from runtime.bundle.schema import EncoderSpec
from runtime.embedder import Embedder

__all__ = ["BuildError", "BuildOptions", "BuildReport", "build"]


@dataclass
class BuildReport:
    """What happened, for the data owner's console; none of it goes into the bundle."""

    out: Path
    bundle_bytes: int
    stats: ReadStats
    privacy: dict[str, Any]
    summary: str
    clipped_cells: int
    seconds: dict[str, float] = field(default_factory=dict)
    units: UnitStats | None = None
    #: Exact values clamped into the noise domain before the noise, by statistic (`PrivacyBudget.clamped`).
    clamped_values: dict[str, int] = field(default_factory=dict)


def build(opts: BuildOptions, *, noise_for_tests: NoiseSource | None = None,
          embed_for_benchmarks: EmbedChunk | None = None,
          gaussian_for_tests: GaussianNoiseSource | None = None) -> BuildReport:
    """Export (or reuse) the encoder, release the statistics, write the bundle.

    ``noise_for_tests`` is the test-only hook of `exporter.privacy.PrivacyBudget`: it pins the
    noise, and the bundle then says it is not differentially private (``gaussian_for_tests``:
    the same for a head's Gaussian noise). ``embed_for_benchmarks``
    replaces the tokenizer and encoder for the records (benchmarks/export_scale.py streams a
    million records with precomputed embeddings through this same code); the bundle still
    ships the real encoder, which did not make its counts, so its exporter facts say not to
    classify with it. The CLI never sets either.

    Example:
        >>> build(BuildOptions(Path("data/assistant/train.jsonl"), Path("data/assistant/labels.txt"),
        ...                    epsilon=8, out=Path("models/quickstart.dpedge")))   # doctest: +SKIP
    """
    with _sigterm_as_exit():
        return _build(opts, noise_for_tests, embed_for_benchmarks, gaussian_for_tests)


def _build(opts: BuildOptions, noise_for_tests: NoiseSource | None, embed_for_benchmarks: EmbedChunk | None,
           gaussian_for_tests: GaussianNoiseSource | None = None) -> BuildReport:
    started = datetime.now(timezone.utc)  # the bundle's stamp: public, unlike when the build ends
    stand_in = embed_for_benchmarks is not None
    labels = read_labels(opts.labels)
    timer = Timer()
    t = timer.start()
    plan = recipes.choose(opts, labels, stand_in=stand_in)
    recipe, opts = plan.recipe, plan.opts
    exported, encoder, statement = _encoder(plan)
    if opts.engine == "local" and not stand_in:  # before anything is embedded
        check_memory(encoder, opts.train, head=recipe.holds_embeddings)
    embedder = None
    if opts.engine == "local" or recipe.embeds_public_text:  # the Ray driver embeds only public text
        embedder = exporter_embedder(encoder, workers=opts.workers or os.cpu_count() or 1)
    budget = PrivacyBudget(opts.epsilon, opts.relation(), shares=opts.shares(), noise_for_tests=noise_for_tests,
                           delta=opts.delta or 0.0, gaussian_for_tests=gaussian_for_tests)
    timer.add("load encoder", t)

    inputs = recipes.Inputs(opts, labels, encoder, None if embedder is None else embedder.embed,
                            lambda: exported.vocabulary_embeddings(embedder.embed), budget, timer)
    with _engine(opts, labels, encoder, embedder, embed_for_benchmarks, timer) as engine:
        out = recipe.release(inputs, engine)
        read_stats, units = engine.stats, engine.units

    t = timer.start()
    bundle = assemble_bundle(labels, encoder, budget, out.hashing, out.votes, stats=out.stats, public=out.public,
                             stand_in=stand_in, encoder_statement=statement, head=out.head, counts=out.head_counts,
                             persons=out.head_persons, started=started)
    if plan.pack is not None:  # a statistics bundle: the pack's digest stands for the encoder
        bundle = dataclasses.replace(bundle, encoder_pack=plan.pack.digest)
    bundle = recipe.finish(bundle)
    saved = save(bundle, opts.out)
    timer.add("write", t)
    return BuildReport(out=saved, bundle_bytes=saved.stat().st_size, stats=read_stats, privacy=bundle.privacy,
                       summary=privacy_summary(bundle),
                       clipped_cells=0 if out.votes is None else out.votes.clipped_cells, seconds=timer.seconds,
                       units=units, clamped_values=dict(budget.clamped))


def _encoder(plan: recipes.Plan) -> tuple[ExportedEncoder | PackedEncoder | None, EncoderSpec, str]:
    """The encoder the bundle ships (or its pack names), where it came from (for its vocabulary)
    and how the public inputs state it: an extension's is the earlier bundle's."""
    opts = plan.opts
    if isinstance(plan.recipe, recipes.Extension):
        earlier = plan.recipe.earlier
        return None, in_memory(earlier.encoder), earlier_encoder_statement(earlier)
    statement = encoder_input(opts.encoder_source)
    if statement == ENCODER_STATED_BY_BUILDER:  # a folder: the builder's promise
        print(FOLDER_NOTICE.format(folder=opts.encoder_source), file=sys.stderr)
    if plan.pack is not None:
        exported: ExportedEncoder | PackedEncoder = PackedEncoder(plan.pack, opts.models_dir)
    else:
        exported = export_encoder(opts.encoder_source, opts.models_dir, encoder_format=opts.encoder_format)
    return exported, exported.to_bundle_encoder(), statement


def _engine(opts: BuildOptions, labels: LabelSet, encoder: EncoderSpec, embedder: Embedder | None,
            embed_for_benchmarks: EmbedChunk | None, timer: Timer) -> Engine:
    if opts.engine == "ray":
        from exporter.ray_engine import RayEngine

        return RayEngine(opts, labels, encoder, timer)
    embed = embed_for_benchmarks or (lambda chunk: embedder.embed([r.text for r in chunk]))
    return LocalEngine(opts, labels, embed, timer)


@contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """While a build runs, SIGTERM (kill, timeout, systemd, docker stop) raises SystemExit(143).

    Python's default for SIGTERM is to stop on the spot, which skips the clean-up that removes
    the temp bundle (runtime.bundle.write_atomic) and the encoder's half-exported folder. As an
    exception it unwinds like Ctrl-C, so an interrupted build leaves nothing behind. Nothing is
    changed if the caller has its own SIGTERM handler or builds outside the main thread.
    """
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return

    def terminate(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
