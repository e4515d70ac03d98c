"""Build a bundle: records -> embeddings -> codes -> counts -> noisy tables -> bundle.

The records are read once, streamed in chunks, and only their exact counts are kept; the
counts are dropped as soon as the noisy tables exist. Embedding uses the runtime's own
tokenizer, encoder and hasher on the very int8 model the bundle ships, so a training text and
the same text typed on a device land in the same buckets.
"""

from __future__ import annotations

import itertools
import os
import signal
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from exporter.class_stats import DEFAULT_CLIP_L1, ClassStatsCounter, ClassStatsRelease, release_class_stats
from exporter.counting import VoteCounter
from exporter.dataset import LabelSet, ReadStats, Record, count_lines, read_labels, read_records
from exporter.encoder_export import export_encoder
from exporter.hyperplanes import aligned_hyperplanes, draw_hyperplanes, new_seed
from exporter.public_basis import DEFAULT_DIM as DEFAULT_BASIS_DIM, PublicBasis, fit_public_basis, public_texts
from exporter.noise import NoiseSource
from exporter.release import check_epsilon, release_votes
from exporter.units import UnitBound, UnitStats
from runtime import __version__
from runtime.bundle import Bundle, save
from runtime.scoring import Weights
from runtime.encoder import TextEncoder
from runtime.simhash import SimHasher
from runtime.tokenize import TextTokenizer

# Defaults measured on the four ../shared/data sets with all-MiniLM-L6-v2 (docs/defaults.md,
# `python benchmarks/accuracy.py`): coarse hashing with many tables; the paper's H=24, T=4
# leaves almost every query in an empty bucket with this encoder.
DEFAULT_TABLES = 32
DEFAULT_BITS = 6
MAX_TABLES = 128
MAX_BITS = 20
DEFAULT_MAX_TABLE_MIB = 64.0
HASHINGS = ("aligned", "random")
#: Share of epsilon spent on the class statistics under aligned hashing (docs/accuracy.md).
DEFAULT_CLASS_SHARE = 0.8


#: The range `bits_for` chooses from; the table-size check before a build assumes the top.
AUTO_BITS = (4, 8)


def bits_for(records: float) -> int:
    """H from the released (noisy) record count: about 100 records per bucket, 4..8 bits.

    The count is the sum of the noisy class counts, so this choice is post-processing of a
    release, not of the private N.

    Example:
        >>> [bits_for(n) for n in (500, 1775, 8000, 10**6)]
        [4, 4, 6, 8]
    """
    low, high = AUTO_BITS
    return int(min(high, max(low, np.floor(np.log2(max(records, 1.0) / 100)))))


@dataclass(frozen=True)
class AlignedRelease:
    """The class statistics released, and the hashing derived from them (post-processing)."""

    stats: ClassStatsRelease
    planes: np.ndarray
    offsets: np.ndarray
    votes_epsilon: float  # what is left of the budget for the vote tables


def release_aligned(counter: ClassStatsCounter, basis: PublicBasis, epsilon: float, *, seed: int, tables: int,
                    bits: int | None = None, class_share: float = DEFAULT_CLASS_SHARE, public_directions: int = 0,
                    max_records_per_unit: int = 1, noise_for_tests: NoiseSource | None = None) -> AlignedRelease:
    """First release of an aligned build: noisy class statistics (``class_share`` of epsilon),
    then H from their noisy count and the hyperplanes along their class directions.

    The exporter and benchmarks/accuracy.py both call this, so the benchmark measures the
    build's own budget split and hashing choices.
    """
    class_eps = epsilon * class_share
    stats = release_class_stats(counter, class_eps, max_records_per_unit=max_records_per_unit,
                                noise_for_tests=noise_for_tests)
    planes, offsets = aligned_hyperplanes(seed, tables, bits or bits_for(float(stats.counts.sum())), basis,
                                          stats.sums, stats.counts, public_directions)
    return AlignedRelease(stats, planes, offsets, epsilon - class_eps)
CHUNK_RECORDS = 256

#: Turns one chunk of records into their unit embeddings, shape (len(chunk), dim), float32.
EmbedChunk = Callable[[list[Record]], np.ndarray]


class BuildError(ValueError):
    """The build cannot start or finish with the given settings; nothing was written."""


def table_bytes(tables: int, bits: int, classes: int) -> int:
    return tables * 2**bits * classes * 2  # int16 cells


def check_shape(tables: int, bits: int, classes: int, max_table_mib: float = DEFAULT_MAX_TABLE_MIB) -> None:
    """Refuse hashing settings outside the supported range or whose dense tables are too big."""
    if not 1 <= bits <= MAX_BITS:
        raise BuildError(f"--bits must be between 1 and {MAX_BITS}, got {bits}")
    if not 1 <= tables <= MAX_TABLES:
        raise BuildError(f"--tables must be between 1 and {MAX_TABLES}, got {tables}")
    size = table_bytes(tables, bits, classes)
    if size > max_table_mib * 2**20:
        raise BuildError(
            f"the vote tables would be {tables} x 2^{bits} x {classes} = {size // 2:,} int16 cells = "
            f"{size / 2**20:,.1f} MiB, over the limit of {max_table_mib:g} MiB; lower --bits or --tables, "
            f"or raise --max-table-mib"
        )


@dataclass
class BuildOptions:
    train: Path
    labels: Path
    epsilon: float
    out: Path
    tables: int = DEFAULT_TABLES
    bits: int | None = None  # None: DEFAULT_BITS, or with aligned hashing chosen from the noisy record count
    seed: int | None = None
    encoder_source: Path | None = None
    encoder_format: str = "onnx"  # "tflite" ships a LiteRT model (needs the [tflite] extra)
    models_dir: Path = Path("models")
    fmt: str | None = None
    text_field: str = "text"
    label_field: str = "label"
    skip_unknown_labels: bool = False
    skip_empty_texts: bool = False
    max_table_mib: float = DEFAULT_MAX_TABLE_MIB
    unit_field: str | None = None  # privacy unit column (e.g. a user id); None: one record is the unit
    max_records_per_unit: int | None = None  # K, required with unit_field: records kept per unit
    workers: int | None = None  # texts embedded at once, one engine thread each (None: all cores)
    progress: bool = True
    engine: str = "local"  # "local" (this process) or "ray" (Ray Data; exporter/ray_engine.py, docs/ray.md)
    #: "aligned" (default): release noisy class statistics first (share ``class_share`` of
    #: epsilon), hash in the span of their class directions, and ship centroids and the
    #: label-description prior for blended scoring (format 2). "random": the paper's random
    #: hyperplanes and Algorithm 2 only (format 1.2).
    hashing: str = "aligned"
    class_share: float = DEFAULT_CLASS_SHARE
    basis_dim: int = DEFAULT_BASIS_DIM
    clip_l1: float = DEFAULT_CLIP_L1
    public_directions: int = 0
    ray_address: str | None = None  # with engine "ray": None starts a local Ray; "auto" / "ray://HOST:10001" joins


@dataclass
class BuildReport:
    """What happened, for the data owner's console; none of it goes into the bundle."""

    out: Path
    bundle_bytes: int
    stats: ReadStats
    privacy: dict[str, Any]
    clipped_cells: int
    seconds: dict[str, float] = field(default_factory=dict)
    units: UnitStats | None = None


class _Timer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - since
        return now


def check_unit(unit_field: str | None, max_records_per_unit: int | None) -> None:
    """A privacy unit needs its bound K, and K means nothing without a unit."""
    if unit_field and (max_records_per_unit is None or max_records_per_unit < 1):
        raise BuildError("--unit-column needs --max-records-per-unit K (at least 1): the most records one "
                         "person may contribute; the noise scale grows to K*T/epsilon")
    if not unit_field and max_records_per_unit not in (None, 1):
        raise BuildError("--max-records-per-unit needs --unit-column: without it, each record is its own unit")


def _chunks(records: Iterable[Record], size: int) -> Iterator[list[Record]]:
    it = iter(records)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


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


def build(opts: BuildOptions, *, noise_for_tests: NoiseSource | None = None,
          embed_for_benchmarks: EmbedChunk | None = None) -> BuildReport:
    """Export (or reuse) the encoder, count the records, release the tables, write the bundle.

    ``noise_for_tests`` is the test-only noise hook of `exporter.release.release_votes`.
    ``embed_for_benchmarks`` replaces the tokenizer and encoder (benchmarks/export_scale.py uses
    it to stream a million records with precomputed embeddings through this same read, hash,
    count, noise and write code). The bundle still ships the real encoder, which did not make
    its counts, so its exporter facts say not to classify with it. The CLI never sets it.

    Example:
        >>> build(BuildOptions(Path("data/assistant/train.jsonl"), Path("data/assistant/labels.txt"),
        ...                    epsilon=8, out=Path("models/quickstart.dpedge")))   # doctest: +SKIP
    """
    with _sigterm_as_exit():
        return _build(opts, noise_for_tests, embed_for_benchmarks)


ENGINES = ("local", "ray")


def check_engine(opts: BuildOptions, embed_for_benchmarks: EmbedChunk | None = None) -> None:
    """Refuse engine settings the Ray backend does not support (before any work is done)."""
    if opts.engine not in ENGINES:
        raise BuildError(f"unknown engine {opts.engine!r} (use one of {', '.join(ENGINES)})")
    if opts.engine != "ray":
        if opts.ray_address is not None:
            raise BuildError("--ray-address needs --engine ray")
        return
    if opts.unit_field:
        raise BuildError("--engine ray does not support --unit-column yet (per-person bounding needs a global "
                         "pass over the units); use --engine local")
    if embed_for_benchmarks is not None:
        raise BuildError("embed_for_benchmarks is not supported with engine 'ray'")


def public_basis_and_prior(embed_texts: Callable[[list[str]], np.ndarray], tokenizer_json: str, labels: LabelSet,
                           basis_dim: int) -> tuple[PublicBasis, np.ndarray | None]:
    """The public inputs of an aligned build, from public text only (the encoder's vocabulary
    and the label descriptions, never a record): the subspace of the class statistics, and
    the prior's description embeddings (None without descriptions). Both engines call this, so
    a Ray build and a local one fit the same basis."""
    basis = fit_public_basis(embed_texts, public_texts(tokenizer_json, labels.descriptions), basis_dim)
    prior = None if labels.descriptions is None else embed_texts(list(labels.descriptions))
    return basis, prior


def _build_ray(opts: BuildOptions, labels: LabelSet, eps: float, noise_for_tests: NoiseSource | None,
               timer: _Timer) -> BuildReport:
    """Count on Ray Data (partitions return exact partial results, never anything released), then
    noise once on the driver's dense totals, exactly as the local engine does.

    Aligned hashing takes two Ray passes over the data (docs/ray.md): pass 1 sums the exact
    class statistics, the driver releases them with the local engine's `release_aligned`, and
    pass 2 hashes every record with the aligned hyperplanes and offsets. The public basis and
    the prior are embedded on the driver from public text only, as in the local engine.
    """
    from exporter import ray_engine

    try:
        ray_engine.import_ray()
        ray_engine.check_format(opts.train, opts.fmt)
    except ray_engine.RayEngineError as exc:
        raise BuildError(str(exc)) from None
    t = time.perf_counter()
    exported = export_encoder(opts.encoder_source, opts.models_dir, encoder_format=opts.encoder_format)
    encoder_spec = exported.to_bundle_encoder()
    seed = new_seed() if opts.seed is None else int(opts.seed)
    t = timer.add("load encoder", t)
    spec = ray_engine.ReadSpec(str(opts.train), labels, text_field=opts.text_field, label_field=opts.label_field,
                               skip_unknown_labels=opts.skip_unknown_labels, skip_bad_texts=opts.skip_empty_texts)
    run = dict(fmt=opts.fmt, address=opts.ray_address, workers=opts.workers)
    if opts.hashing == "random":
        planes = draw_hyperplanes(seed, opts.tables, opts.bits or DEFAULT_BITS, encoder_spec.dim)
        try:
            counts, stats = ray_engine.count_with_ray(spec, encoder_spec, planes, **run)
        except ray_engine.RayEngineError as exc:
            raise BuildError(str(exc)) from None
        t = timer.add("ray: read+embed+hash+count", t)
        if stats.records == 0:
            raise BuildError(f"{opts.train}: no records to count (nothing was written)")
        return _release_and_save(opts, labels, eps, counts, stats, encoder_spec, seed, planes, timer, t,
                                 noise_for_tests, None, None)

    # Aligned: the driver embeds public text only (the basis and the prior), with the same
    # runtime tokenizer and encoder as the local engine, so both fit the same basis.
    tokenizer = TextTokenizer(encoder_spec.tokenizer_json, encoder_spec.max_length)
    encoder = TextEncoder(encoder_spec, threads=1, workers=os.cpu_count() or 1)
    embed_texts = lambda texts: encoder.embed(tokenizer.encode(texts))  # noqa: E731
    basis, prior = public_basis_and_prior(embed_texts, encoder_spec.tokenizer_json, labels, opts.basis_dim)
    del encoder, embed_texts
    t = timer.add("public basis", t)
    try:
        with ray_engine.ray_session(opts.ray_address, opts.workers):  # one Ray instance for both passes
            stats_counter, stats = ray_engine.class_stats_with_ray(spec, encoder_spec, basis, opts.clip_l1, **run)
            t = timer.add("ray pass 1: read+embed+class statistics", t)
            if stats.records == 0:
                raise BuildError(f"{opts.train}: no records to count (nothing was written)")
            aligned = release_aligned(stats_counter, basis, eps, seed=seed, tables=opts.tables, bits=opts.bits,
                                      class_share=opts.class_share, public_directions=opts.public_directions,
                                      noise_for_tests=noise_for_tests)
            del stats_counter
            t = timer.add("noise", t)
            counts, stats2 = ray_engine.count_with_ray(spec, encoder_spec, aligned.planes, offsets=aligned.offsets,
                                                       **run)
            t = timer.add("ray pass 2: read+embed+hash+count", t)
    except ray_engine.RayEngineError as exc:
        raise BuildError(str(exc)) from None
    kept = lambda st: (st.records, st.skipped_unknown_label, st.skipped_bad_text, st.blank_lines)  # noqa: E731
    if kept(stats2) != kept(stats):
        raise BuildError(f"{opts.train} changed between the two passes of the Ray build ({stats.records} records "
                         f"in pass 1, {stats2.records} in pass 2); nothing was written")
    return _release_and_save(opts, labels, eps, counts, stats, encoder_spec, seed, aligned.planes, timer, t,
                             noise_for_tests, None, None, votes_eps=aligned.votes_epsilon, offsets=aligned.offsets,
                             released_stats=aligned.stats, basis=basis, prior=prior)


def _build(opts: BuildOptions, noise_for_tests: NoiseSource | None, embed_for_benchmarks: EmbedChunk | None) -> BuildReport:
    try:
        eps = check_epsilon(opts.epsilon)
    except ValueError as exc:
        raise BuildError(str(exc)) from None
    labels: LabelSet = read_labels(opts.labels)
    check_hashing(opts)
    check_shape(opts.tables, opts.bits or (AUTO_BITS[1] if opts.hashing == "aligned" else DEFAULT_BITS), len(labels),
                opts.max_table_mib)
    check_unit(opts.unit_field, opts.max_records_per_unit)
    check_engine(opts, embed_for_benchmarks)
    timer = _Timer()
    t = time.perf_counter()

    if opts.engine == "ray":
        return _build_ray(opts, labels, eps, noise_for_tests, timer)

    exported = export_encoder(opts.encoder_source, opts.models_dir, encoder_format=opts.encoder_format)
    encoder_spec = exported.to_bundle_encoder()
    tokenizer = TextTokenizer(encoder_spec.tokenizer_json, encoder_spec.max_length)
    encoder = TextEncoder(encoder_spec, threads=1, workers=opts.workers or os.cpu_count() or 1)
    embed_texts = lambda texts: encoder.embed(tokenizer.encode(texts))  # noqa: E731
    embed: EmbedChunk = embed_for_benchmarks or (lambda chunk: embed_texts([r.text for r in chunk]))
    seed = new_seed() if opts.seed is None else int(opts.seed)
    t = timer.add("load encoder", t)

    stats = ReadStats()
    def read(stats: ReadStats) -> Iterator[Record]:
        return read_records(opts.train, labels, fmt=opts.fmt, text_field=opts.text_field,
                            label_field=opts.label_field, skip_unknown_labels=opts.skip_unknown_labels,
                            skip_bad_texts=opts.skip_empty_texts, unit_field=opts.unit_field, stats=stats)

    records: Iterable[Record] = read(stats)
    bound = None
    if opts.unit_field:  # a first pass reads only the units, then the second keeps <= K per unit
        bound = UnitBound(int(opts.max_records_per_unit or 0))
        bound.plan(r.unit for r in read(ReadStats()))
        records = bound.keep(records, unit_of=lambda r: r.unit)
    k_unit = int(opts.max_records_per_unit) if opts.unit_field else 1

    if opts.hashing == "random":
        bits = opts.bits or DEFAULT_BITS
        planes, offsets, extra = draw_hyperplanes(seed, opts.tables, bits, encoder_spec.dim), None, {}
        counter = VoteCounter(opts.tables, bits, len(labels))
        hasher = SimHasher(planes)
        with _progress(opts, "embed+hash+count") as bar:
            for chunk in _chunks(records, CHUNK_RECORDS):  # one chunk in memory at a time
                t = timer.add("read", t)
                emb = embed(chunk)
                t = timer.add("tokenize+encode", t)
                counter.add(hasher.buckets(emb), np.fromiter((r.label for r in chunk), np.int64, len(chunk)))
                t = timer.add("hash+count", t)
                bar.update(chunk[-1].line - bar.n)
            bar.update(max(0, (bar.total or 0) - bar.n))  # trailing blank or skipped lines were read too
        t = timer.add("read", t)  # includes count_lines' pass for the bar's total
        if stats.records == 0:
            raise BuildError(f"{opts.train}: no records to count (nothing was written)")
        counts, votes_eps = counter.counts, eps
    else:
        # Aligned hashing needs the released class statistics before any record is hashed, so
        # the embeddings of pass 1 are spilled to an anonymous temporary file (deleted on close,
        # also on a crash) and read back in chunks: memory stays one chunk, the disk holds
        # 1.5 KB per record, and nothing is embedded twice.
        basis, prior = public_basis_and_prior(embed_texts, encoder_spec.tokenizer_json, labels, opts.basis_dim)
        t = timer.add("public basis", t)
        stats_counter = ClassStatsCounter(basis, len(labels), opts.clip_l1)
        dim = encoder_spec.dim
        with tempfile.TemporaryFile(prefix="dpedge-embeddings-") as spill:
            with _progress(opts, "embed (pass 1 of 2)") as bar:
                for chunk in _chunks(records, CHUNK_RECORDS):
                    t = timer.add("read", t)
                    emb = np.ascontiguousarray(embed(chunk), dtype=np.float32)
                    t = timer.add("tokenize+encode", t)
                    y = np.fromiter((r.label for r in chunk), np.int64, len(chunk))
                    stats_counter.add(emb, y)
                    spill.write(np.concatenate([emb, y.astype(np.float32)[:, None]], axis=1).tobytes())
                    t = timer.add("class statistics", t)
                    bar.update(chunk[-1].line - bar.n)
                bar.update(max(0, (bar.total or 0) - bar.n))
            t = timer.add("read", t)
            if stats.records == 0:
                raise BuildError(f"{opts.train}: no records to count (nothing was written)")
            aligned = release_aligned(stats_counter, basis, eps, seed=seed, tables=opts.tables, bits=opts.bits,
                                      class_share=opts.class_share, public_directions=opts.public_directions,
                                      max_records_per_unit=k_unit, noise_for_tests=noise_for_tests)
            del stats_counter
            planes, offsets, bits = aligned.planes, aligned.offsets, aligned.planes.shape[1]
            t = timer.add("noise", t)
            counter = VoteCounter(opts.tables, bits, len(labels))
            hasher = SimHasher(planes, offsets)
            spill.seek(0)
            row = (dim + 1) * 4
            while block := spill.read(row * CHUNK_RECORDS * 16):
                a = np.frombuffer(block, dtype=np.float32).reshape(-1, dim + 1)
                counter.add(hasher.buckets(a[:, :dim]), a[:, dim].astype(np.int64))
            t = timer.add("hash+count", t)
        extra = {"offsets": offsets, "released_stats": aligned.stats, "basis": basis, "prior": prior}
        counts, votes_eps = counter.counts, aligned.votes_epsilon

    return _release_and_save(opts, labels, eps, counts, stats, encoder_spec, seed, planes, timer, t,
                             noise_for_tests, embed_for_benchmarks, bound, votes_eps=votes_eps, **extra)


def check_hashing(opts: BuildOptions) -> None:
    if opts.hashing not in HASHINGS:
        raise BuildError(f"unknown hashing {opts.hashing!r} (use one of {', '.join(HASHINGS)})")
    if opts.hashing == "aligned":
        if not 0 < opts.class_share < 1:
            raise BuildError(f"--class-share must be between 0 and 1 (exclusive), got {opts.class_share}")
        if not 1 <= opts.basis_dim <= 384:
            raise BuildError(f"--basis-dim must be between 1 and 384, got {opts.basis_dim}")
        if not opts.clip_l1 > 0:
            raise BuildError(f"--clip-l1 must be positive, got {opts.clip_l1}")


@contextmanager
def _progress(opts: BuildOptions, desc: str) -> Iterator[Any]:
    from tqdm import tqdm

    with tqdm(total=count_lines(opts.train), unit="line", desc=desc, disable=not opts.progress,
              dynamic_ncols=True) as bar:
        yield bar


def _release_and_save(opts: BuildOptions, labels: LabelSet, eps: float, counts: np.ndarray, stats: ReadStats,
                      encoder_spec: Any, seed: int, planes: np.ndarray, timer: _Timer, t: float,
                      noise_for_tests: NoiseSource | None, embed_for_benchmarks: EmbedChunk | None,
                      bound: UnitBound | None, *, votes_eps: float | None = None, offsets: np.ndarray | None = None,
                      released_stats: Any = None, basis: Any = None, prior: np.ndarray | None = None) -> BuildReport:
    """Noise once on the dense total, then the bundle: shared by the local and the Ray engine."""
    release = release_votes(counts, eps if votes_eps is None else votes_eps, unit=opts.unit_field,
                            max_records_per_unit=opts.max_records_per_unit if opts.unit_field else 1,
                            noise_for_tests=noise_for_tests)
    del counts  # the exact counts are not needed past this point (the caller drops its own reference)
    t = timer.add("noise", t)
    privacy = release.privacy
    lsh = {"family": "simhash", "tables": opts.tables, "bits": int(planes.shape[1]), "dim": encoder_spec.dim,
           "seed": seed, "distribution": "gaussian",
           "bit_rule": "bit h (h = 0..bits-1) is 1 iff <x, r_h> > 0; bucket = sum_h bit_h * 2^h"}
    format_2: dict[str, Any] = {}
    if released_stats is not None:
        privacy = compose_privacy(eps, release.privacy, released_stats.facts, prior is not None)
        lsh.update(distribution="aligned: gaussian in the span of the noisy centred class directions "
                                f"plus {opts.public_directions} public directions, through the noisy mean",
                   bit_rule="bit h (h = 0..bits-1) is 1 iff <x, r_h> > offset_h; bucket = sum_h bit_h * 2^h",
                   bits_rule="given" if opts.bits else "bits_for(sum of the noisy class counts)")
        format_2 = dict(
            offsets=offsets,
            class_stats=released_stats.for_bundle(basis),
            prior=None if prior is None else np.asarray(prior, np.float32),
            scoring=Weights.measured(opts.clip_l1).as_map(),
        )

    bundle = Bundle(
        labels=labels.names,
        label_descriptions=labels.descriptions,
        privacy=privacy,
        lsh=lsh,
        hyperplanes=planes,
        votes=release.votes,
        encoder=encoder_spec,
        exporter={"name": "dpedge", "version": __version__,
                  "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  **({} if embed_for_benchmarks is None else {
                      "embeddings": "BENCHMARK STAND-IN: the counts were not made by this encoder; "
                                    "do not classify with this bundle"})},
        **format_2,
    )
    out = save(bundle, opts.out)
    timer.add("write", t)
    return BuildReport(out=out, bundle_bytes=out.stat().st_size, stats=stats, privacy=privacy,
                       clipped_cells=release.clipped_cells, seconds=timer.seconds,
                       units=None if bound is None else bound.stats)


def compose_privacy(eps: float, votes: dict[str, Any], class_stats: dict[str, Any], has_prior: bool) -> dict[str, Any]:
    """Privacy facts of a two-release bundle (sequential composition within one epsilon).

    The top-level sensitivity and scale stay those of the vote tables (what 1.x readers
    check); ``releases`` lists both releases with their shares.
    """
    votes_entry = {"statistic": "votes", "epsilon": votes["epsilon"], "mechanism": votes["mechanism"],
                   "sensitivity_l1": votes["sensitivity_l1"], "noise_scale": votes["noise_scale"]}
    public = list(votes["public_inputs"])
    public[1] = ("hyperplanes and offsets: seeded Gaussian directions inside the span of the released noisy class "
                 "directions (post-processing of the class statistics)")
    public = [x if not x.startswith("tables and bits") else
              "tables (fixed) and bits (from the released noisy class counts, or given)" for x in public]
    public += ["public basis: principal components of the encoder's own vocabulary words and the label "
               "descriptions (no private record)"]
    if has_prior:
        public += ["prior: the label descriptions' embeddings (public text only)"]
    return {
        **votes,
        "epsilon": float(eps),
        "mechanism": "two discrete Laplace releases, composed sequentially: noisy class statistics, then "
                     "noisy vote tables (see releases); sensitivity_l1 and noise_scale above are the vote tables'",
        "composition": "sequential: the releases' epsilons add up to the bundle's epsilon",
        "releases": [{**class_stats, "max_records_per_unit": votes["max_records_per_unit"]}, votes_entry],
        "released_statistics": ["class_stats", "votes"],
        "public_inputs": public,
    }
