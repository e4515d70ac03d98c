"""Build a bundle: read -> embed -> release class counts -> release class sums -> [hash, count
and release votes] -> write; with the opt-in ``--delta``: read -> embed -> release class counts
-> train the head by DP-SGD (exporter.head, an (epsilon, delta) release) -> write.

One `PrivacyBudget` owns the build's epsilon: the releases (exporter.class_stats and, when the
bundle has vote tables, exporter.votes) take their shares from it and get their noise through
it, and it writes the bundle's privacy facts. Everything else is public input or
post-processing of a release: the task basis and the prior (exporter.stages), the subspace
the counts choose for the sums, the aligned hyperplanes and their number of bits, the
scoring rule. Records are read and embedded by an engine (exporter.local_engine in this
process, exporter.ray_engine on a cluster) with the runtime's own `Embedder` on the very model
the bundle ships, so a training text and the same text typed on a device are embedded alike.
Only exact aggregates are kept, and only until they are released.
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

from exporter import encoders
from exporter.class_stats import ClassStatsRelease
from exporter.dataset import LabelSet, ReadStats, read_labels
from exporter.encoder_export import PackedEncoder, export_encoder, exporter_embedder, in_memory
from exporter.extend import (BATCH_INPUT, check_extension, earlier_basis, earlier_encoder_statement, earlier_options,
                             merged)
from exporter.engine import Engine
from exporter.hyperplanes import new_seed
from exporter.local_engine import EmbedChunk, LocalEngine
from exporter.memory_plan import check_memory
from exporter.noise import GaussianNoiseSource, NoiseSource
from exporter.options import DEFAULT_BITS, BuildError, BuildOptions, check_options
from exporter.privacy import PrivacyBudget
from exporter.progress import Timer
from exporter.stages import (ENCODER_STATED_BY_BUILDER, FOLDER_NOTICE, HEAD_NOTICE, Hashing, PublicInputs,
                             aligned_hashing, assemble_bundle, encoder_input, public_inputs, release_class_stats_in,
                             random_hashing, release_class_stats, release_head_stats)
from exporter.units import UnitStats
from exporter.votes import VoteRelease, release_votes
from runtime.bundle import load, load_pack, save
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
    labels = read_labels(opts.labels)
    timer = Timer()
    t = timer.start()
    if opts.has_head:  # before an --extend is read: a head bundle refuses it
        check_options(opts, len(labels), benchmark_stand_in=embed_for_benchmarks is not None)
        print(HEAD_NOTICE.format(delta=opts.delta), file=sys.stderr)
    pack = None if opts.encoder_pack is None else load_pack(opts.encoder_pack)
    earlier = None
    if opts.extend is not None:  # a batch on the earlier bundle's public choices (exporter.extend)
        earlier = load(opts.extend, pack=pack)
        check_extension(opts, earlier, labels)
        opts = earlier_options(opts, earlier)
    check_options(opts, len(labels), benchmark_stand_in=embed_for_benchmarks is not None)
    encoder_statement = encoder_input(opts.encoder_source) if earlier is None else earlier_encoder_statement(earlier)
    if earlier is None and encoder_statement == ENCODER_STATED_BY_BUILDER:  # a folder: the builder's promise
        print(FOLDER_NOTICE.format(folder=opts.encoder_source), file=sys.stderr)
    if earlier is not None:
        exported, encoder = None, in_memory(earlier.encoder)
    elif pack is not None:
        exported = PackedEncoder(pack, opts.models_dir)
        encoder = exported.to_bundle_encoder()
    else:
        exported = export_encoder(opts.encoder_source, opts.models_dir, encoder_format=opts.encoder_format)
        encoder = exported.to_bundle_encoder()
    if opts.engine == "local" and embed_for_benchmarks is None:  # before anything is embedded
        check_memory(encoder, opts.train, head=opts.has_head)
    embedder = None
    if opts.engine == "local" or opts.aligned:  # the Ray driver embeds only public text
        embedder = exporter_embedder(encoder, workers=opts.workers or os.cpu_count() or 1)
    seed = new_seed() if opts.seed is None else int(opts.seed)
    budget = PrivacyBudget(opts.epsilon, opts.relation(), shares=opts.shares(), noise_for_tests=noise_for_tests,
                           delta=opts.delta or 0.0, gaussian_for_tests=gaussian_for_tests)
    t = timer.add("load encoder", t)

    stats: ClassStatsRelease | None = None
    public: PublicInputs | None = None
    hashing: Hashing | None = None
    votes: VoteRelease | None = None
    head = head_counts = None
    with _engine(opts, labels, encoder, embedder, embed_for_benchmarks, timer) as engine:
        if opts.has_head:
            vocabulary = exported.vocabulary_embeddings(embedder.embed)
            t = timer.add("public basis", t)
            head_counts, head = release_head_stats(engine, embedder.embed, vocabulary, labels, budget, timer,
                                                   opts.progress, lr_scale=encoders.head_lr_scale(encoder))
            t = timer.start()
        elif earlier is not None:
            budget.declare_public(BATCH_INPUT)
            if earlier.class_sums is not None:
                basis, clip = earlier_basis(earlier)
                public = PublicInputs(basis, earlier.prior)
                stats = release_class_stats_in(engine, basis, clip, len(labels), budget)
            if earlier.hyperplanes is not None:
                hashing = Hashing(earlier.hyperplanes, earlier.offsets, earlier.seed)
        elif opts.aligned:
            public = public_inputs(embedder.embed, exported.vocabulary_embeddings(embedder.embed), labels, budget)
            t = timer.add("public basis", t)
            stats = release_class_stats(engine, public, len(labels), budget, basis_dim=opts.basis_dim,
                                        clip_l1=opts.clip_l1, planned_records=opts.planned_records)
            t = timer.start()
            if opts.has_tables:
                hashing = aligned_hashing(stats, seed, opts.table_count, opts.bits, opts.public_directions, budget)
        else:
            hashing = random_hashing(seed, opts.table_count, opts.bits or DEFAULT_BITS, encoder.dim, budget)
        if hashing is not None:
            counts = engine.vote_counts(hashing.planes, hashing.offsets, len(labels))
            t = timer.start()
            votes = release_votes(counts, budget)
            del counts  # the exact counts are not needed past this point
            t = timer.add("noise", t)
        read_stats, units = engine.stats, engine.units

    bundle = assemble_bundle(labels, encoder, budget, hashing, votes, stats=stats, public=public,
                             stand_in=embed_for_benchmarks is not None, encoder_statement=encoder_statement,
                             head=head, counts=head_counts, started=started)
    if pack is not None:  # a statistics bundle: the pack's digest stands for the encoder
        bundle = dataclasses.replace(bundle, encoder_pack=pack.digest)
    if earlier is not None:
        bundle = merged(earlier, bundle)
    out = save(bundle, opts.out)
    timer.add("write", t)
    return BuildReport(out=out, bundle_bytes=out.stat().st_size, stats=read_stats, privacy=bundle.privacy,
                       summary=privacy_summary(bundle),
                       clipped_cells=0 if votes is None else votes.clipped_cells, seconds=timer.seconds, units=units,
                       clamped_values=dict(budget.clamped))


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
