"""Ray Data backend for `exporter.build` (``--engine ray``): embed, hash and count on a cluster.

How the work is split (docs/ray.md):

1. The driver scans the JSONL file for newlines, in 1 MiB blocks and constant memory, and cuts
   it into shards of ``lines_per_shard`` lines: (byte start, byte end, first line number).
   Only these offsets go into the Ray Dataset, never a record.
2. ``map_batches`` runs an actor on an actor pool: each actor loads the tokenizer and the int8
   encoder once, then for each shard reads its byte range, parses and validates every line
   with the same rules as `exporter.dataset.read_records` (errors name file and line), embeds
   one text per call (the runtime's rule) and returns one exact partial result for the shard,
   plus its read statistics:

   - `EmbedHashCount`: hashes with the bundle's hyperplanes (and offsets, under aligned
     hashing) through the runtime's SimHasher and returns a partial count table;
   - `EmbedClassSums` (pass 2 of a build with class statistics): returns the shard's exact
     clipped, quantized per-class sums (`exporter.class_stats.ClassSumCounter`).
3. The driver sums the partial results into the dense totals. Nothing is noised or released
   here: the build releases each total once, on the driver, through its privacy budget.

Before any of its rows count, each actor embeds PROBE_TEXTS (fixed public text) and must get
the driver's embeddings bit for bit. int8 kernels are chosen by the CPU's instruction set, so
on mixed hardware a record's embedding could depend on the worker that ran it, and two
neighbouring datasets' exact statistics could differ by more than the stated sensitivity; a
worker that embeds differently stops the build (`probe_mismatch`), naming its node.

`RayEngine` runs these passes for `exporter.build` with the same interface as the local
engine (exporter.engine), inside one Ray session. A build's first pass, the class counts,
needs no embedding: the driver streams the file itself with the local reader.

Limits: JSONL only (a CSV record may span lines, so CSV cannot be cut at newlines); the
dataset path must be readable at the same path on every worker; per-person bounding
(``--unit-column``) is not implemented.
"""

from __future__ import annotations

import io
import json
import os
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from exporter.class_stats import ClassSumCounter
from exporter.dataset import (DatasetError, LabelSet, ReadStats, decode_line, detect_format, parse_jsonl_line,
                              read_records, validate_row)
from exporter.engine import Engine
from exporter.fidelity_texts import FIDELITY_TEXTS
from exporter.options import BuildError, BuildOptions
from exporter.progress import Timer
from exporter.public_basis import PublicBasis
from exporter.votes import VoteCounter
from runtime.bundle.schema import EncoderSpec

INSTALL = "pip install 'dpedge[ray]'"
DEFAULT_LINES_PER_SHARD = 2048
#: What every worker embeds before its rows count, to be compared with the driver's embeddings
#: bit for bit: every eighth text of the fidelity sample (tiny texts, punctuation, requests,
#: non-ASCII, emoji, code) and its longest (near the default encoder's 256-token limit). Public text only.
PROBE_TEXTS: tuple[str, ...] = (*FIDELITY_TEXTS[::8], max(FIDELITY_TEXTS, key=len))


class RayEngineError(ValueError):
    """The Ray engine cannot run with these settings (exporter.build turns it into BuildError)."""


@dataclass(frozen=True)
class ReadSpec:
    """What a worker needs to parse its shard exactly as the single-machine reader would."""

    path: str
    labels: LabelSet
    text_field: str = "text"
    label_field: str = "label"
    skip_unknown_labels: bool = False
    skip_empty_texts: bool = False


def import_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise RayEngineError(f"--engine ray needs Ray Data, which is not installed: {INSTALL}") from None
    return ray


def plan_shards(path: Path, lines_per_shard: int = DEFAULT_LINES_PER_SHARD) -> list[dict[str, int]]:
    """Cut a file at newlines into shards of at most ``lines_per_shard`` lines, in constant memory.

    Each shard is {"start": byte, "end": byte, "first_line": 1-based line number}.
    """
    if lines_per_shard < 1:
        raise RayEngineError("lines_per_shard must be at least 1")
    try:
        f = Path(path).open("rb")
    except OSError as exc:
        raise DatasetError(path, None, f"cannot open: {exc.strerror or exc}") from None
    shards: list[dict[str, int]] = []
    start, first_line, lines_in_shard, offset, line = 0, 1, 0, 0, 1
    with f:
        while block := f.read(1 << 20):
            for nl in np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10):
                lines_in_shard += 1
                line += 1
                if lines_in_shard == lines_per_shard:
                    end = offset + int(nl) + 1
                    shards.append({"start": start, "end": end, "first_line": first_line})
                    start, first_line, lines_in_shard = end, line, 0
            offset += len(block)
    if offset > start:  # the rest, including a last line without a newline
        shards.append({"start": start, "end": offset, "first_line": first_line})
    return shards


def _shard_lines(path: Path, start: int, end: int, first_line: int):
    """(line number, text) of one byte range, decoded as exporter.dataset._decoded_lines does."""
    with path.open("rb") as f:
        f.seek(start)
        data = f.read(end - start)
    # Iterating a binary stream splits at b"\n" only, exactly as the local reader's file does
    # (bytes.splitlines would also split at a lone \r inside a line and shift line numbers).
    for i, raw in enumerate(io.BytesIO(data)):
        yield first_line + i, decode_line(path, first_line + i, raw)


def read_shard(spec: ReadSpec, start: int, end: int, first_line: int, stats: ReadStats) -> tuple[list[str], list[int]]:
    """Texts and class indices of one JSONL shard, through the same line parser and row checks
    as exporter.dataset.read_records (so both engines accept and refuse the same records)."""
    p = Path(spec.path)
    texts: list[str] = []
    classes: list[int] = []
    fields = (spec.text_field, spec.label_field)
    for n, line in _shard_lines(p, start, end, first_line):
        values = parse_jsonl_line(p, n, line, fields, stats)
        if values is None:
            continue
        record = validate_row(p, n, values, spec.labels, fields=fields, skip_unknown_labels=spec.skip_unknown_labels,
                              skip_empty_texts=spec.skip_empty_texts, stats=stats)
        if record is not None:
            texts.append(record.text)
            classes.append(record.label)
    return texts, classes


def probe_embeddings(embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """The embeddings of PROBE_TEXTS by ``embed`` (an exporter `Embedder`'s)."""
    return np.asarray(embed(list(PROBE_TEXTS)))


def driver_probe(encoder: EncoderSpec) -> np.ndarray:
    """The driver's own embeddings of PROBE_TEXTS, which every worker's must equal."""
    from exporter.encoder_export import exporter_embedder

    return probe_embeddings(exporter_embedder(encoder).embed)


def probe_mismatch(driver: np.ndarray, worker: np.ndarray) -> str | None:
    """Why a worker's probe embeddings are not the driver's bit for bit (None: they are).

    Example:
        >>> a = np.ones((2, 3), np.float32)
        >>> probe_mismatch(a, a.copy()) is None
        True
        >>> probe_mismatch(a, a + np.float32(1e-7) * np.eye(2, 3, dtype=np.float32))
        '2 of the 2 probe texts embed differently (largest difference 1.19e-07)'
    """
    if worker.shape != driver.shape or worker.dtype != driver.dtype:
        return f"its probe embeddings are {worker.shape} {worker.dtype}, the driver's {driver.shape} {driver.dtype}"
    differ = [i for i in range(len(driver)) if driver[i].tobytes() != worker[i].tobytes()]
    if not differ:
        return None
    gap = float(np.max(np.abs(driver[differ].astype(np.float64) - worker[differ].astype(np.float64))))
    return f"{len(differ)} of the {len(driver)} probe texts embed differently (largest difference {gap:.3g})"


def _worker_name(ray: Any) -> str:
    """Where an actor runs, for a message: its Ray node, host and process."""
    import socket

    return f"node {ray.get_runtime_context().get_node_id()} (host {socket.gethostname()}, pid {os.getpid()})"


class _ShardActor:
    """Ray Data actor base: loads the tokenizer and the encoder once, checks that it embeds the
    public probe texts as the driver did (``probe``: the driver's embeddings), then turns each
    shard into one exact partial result (`partial`) plus the shard's read statistics.

    A DatasetError, or a probe that differs, is returned as a row (not raised), so the driver
    can raise it with its file and line, or the worker's node, instead of a Ray wrapper around
    it. A worker whose probe differs reads nothing: its rows are empty partial results.
    """

    def __init__(self, encoder: Any, spec: ReadSpec, probe: np.ndarray):
        import ray

        from exporter.encoder_export import exporter_embedder

        if isinstance(encoder, ray.ObjectRef):
            encoder = ray.get(encoder)
        assert isinstance(encoder, EncoderSpec)
        self.embedder = exporter_embedder(encoder)
        self.spec = spec
        why = probe_mismatch(np.asarray(probe), probe_embeddings(self.embedder.embed))
        self.probe_error = "" if why is None else json.dumps({"kind": "probe", "worker": _worker_name(ray),
                                                              "why": why})

    def partial(self, embeddings: np.ndarray | None, classes: np.ndarray) -> dict[str, np.ndarray]:
        """The shard's exact partial result (embeddings None: a shard without records)."""
        raise NotImplementedError

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out: dict[str, list[Any]] = {"stats": [], "error": []}
        for start, end, first in zip(batch["start"], batch["end"], batch["first_line"]):
            stats = ReadStats()
            error = self.probe_error
            emb, classes = None, np.zeros(0, np.int64)
            try:
                texts, labels = ([], []) if error else read_shard(self.spec, int(start), int(end), int(first), stats)
                if texts:
                    emb = self.embedder.embed(texts)
                    classes = np.asarray(labels, dtype=np.int64)
            except DatasetError as exc:
                error = _dataset_error(self.spec, exc)
            for k, v in self.partial(emb, classes).items():
                out.setdefault(k, []).append(v)
            out["stats"].append(_stats_json(stats))
            out["error"].append(error)
        return {k: (np.array(v, dtype=object) if k in ("stats", "error") else np.stack(v)) for k, v in out.items()}


def _dataset_error(spec: ReadSpec, exc: DatasetError) -> str:
    """A shard's DatasetError as a row, for the driver to raise again with its file and line."""
    where = f"{spec.path}" + ("" if exc.line is None else f":{exc.line}")
    return json.dumps({"kind": "dataset", "line": exc.line, "message": str(exc)[len(where) + 2:]})


class HeadShard:
    """A Ray actor holding one worker's share of the records for the head's DP-SGD
    (exporter.head): it checks the public probe texts, reads and embeds its shards once, and then
    answers each step with the exact integer sum (`exporter.head.InMemory`) of the clipped
    gradients of a Poisson sample of its records, drawn on the worker from its own os.urandom
    (every record joins independently, so the workers' samples together are one Poisson sample
    of all records). Only those sums and the read statistics leave it; the driver adds them
    (exactly: integers) and the noise, once per step."""

    def __init__(self, encoder: Any, spec: ReadSpec, probe: np.ndarray, shards: list[dict[str, int]],
                 origin: np.ndarray):
        import ray

        from exporter.encoder_export import exporter_embedder
        from exporter.head import InMemory

        if isinstance(encoder, ray.ObjectRef):
            encoder = ray.get(encoder)
        embedder = exporter_embedder(encoder)
        self.stats, self.error = ReadStats(), ""
        parts, classes = [np.zeros((0, encoder.dim), np.float32)], []
        why = probe_mismatch(np.asarray(probe), probe_embeddings(embedder.embed))
        if why is not None:
            self.error = json.dumps({"kind": "probe", "worker": _worker_name(ray), "why": why})
        else:
            try:
                for s in shards:
                    texts, labels = read_shard(spec, s["start"], s["end"], s["first_line"], self.stats)
                    if texts:
                        parts.append(np.asarray(embedder.embed(texts), np.float32))
                        classes += labels
            except DatasetError as exc:
                self.error = _dataset_error(spec, exc)
        self.records = InMemory(np.concatenate(parts), np.asarray(classes, np.int64), origin)

    def loaded(self) -> tuple[str, str]:
        """What the shard's read gave: an error row ("" if none) and its read statistics."""
        return self.error, _stats_json(self.stats)

    def step(self, weights: np.ndarray, bias: np.ndarray, sample_rate: float, clip_l2: float, grid: int) -> np.ndarray:
        return self.records(weights, bias, sample_rate=sample_rate, clip_l2=clip_l2, grid=grid)


class RayHeadRecords:
    """`exporter.head.StepSums` over HeadShard actors: a step is each actor's exact integer sum,
    added on the driver."""

    def __init__(self, ray: Any, actors: list[Any], dim: int):
        self._ray, self.actors, self.dim = ray, actors, dim

    def __call__(self, weights: np.ndarray, bias: np.ndarray, *, sample_rate: float, clip_l2: float,
                 grid: int) -> np.ndarray:
        parts = self._ray.get([a.step.remote(weights, bias, sample_rate, clip_l2, grid) for a in self.actors])
        return np.sum(np.stack(parts), axis=0, dtype=np.int64)


class EmbedHashCount(_ShardActor):
    """Pass 2 (or the only pass with random hashing): hashes each shard through the runtime's
    SimHasher with the bundle's hyperplanes (and offsets, under aligned hashing) and returns
    one exact partial count table."""

    def __init__(self, encoder: Any, planes: np.ndarray, spec: ReadSpec, probe: np.ndarray,
                 offsets: np.ndarray | None = None):
        from runtime.simhash import SimHasher

        super().__init__(encoder, spec, probe)
        self.hasher = SimHasher(planes, offsets)
        self.classes = len(spec.labels)

    def partial(self, embeddings: np.ndarray | None, classes: np.ndarray) -> dict[str, np.ndarray]:
        counter = VoteCounter(self.hasher.tables, self.hasher.bits, self.classes)
        if embeddings is not None:
            counter.add(self.hasher.buckets(embeddings), classes)
        return {"counts": counter.counts.reshape(-1)}


class EmbedClassSums(_ShardActor):
    """Pass 1 of an aligned build: each shard's exact clipped, quantized per-class sums and
    sums (`exporter.class_stats.ClassSumCounter`, int64), never anything released."""

    def __init__(self, encoder: Any, basis: PublicBasis, clip_l1: float, spec: ReadSpec, probe: np.ndarray):
        super().__init__(encoder, spec, probe)
        self.basis, self.clip_l1, self.classes = basis, float(clip_l1), len(spec.labels)

    def partial(self, embeddings: np.ndarray | None, classes: np.ndarray) -> dict[str, np.ndarray]:
        counter = ClassSumCounter(self.basis, self.classes, self.clip_l1)
        if embeddings is not None:
            counter.add(embeddings, classes)
        return {"sums": counter.sums.reshape(-1)}


def _stats_json(stats: ReadStats) -> str:
    """A shard's read statistics as the driver merges them (`_merge`): counts, and the unknown
    labels' digests only (their values are private data and never leave the worker)."""
    return json.dumps({"records": stats.records, "skipped_unknown_label": stats.skipped_unknown_label,
                       "skipped_empty_texts": stats.skipped_empty_texts, "blank_lines": stats.blank_lines,
                       "unknown_label_digests": sorted(stats.unknown_label_digests)})


def _merge(total: ReadStats, part: dict[str, Any]) -> None:
    total.records += part["records"]
    total.skipped_unknown_label += part["skipped_unknown_label"]
    total.skipped_empty_texts += part["skipped_empty_texts"]
    total.blank_lines += part["blank_lines"]
    total.add_unknown_labels(part["unknown_label_digests"])


def check_format(path: Path, fmt: str | None = None) -> None:
    if (fmt or detect_format(Path(path))) != "jsonl":
        raise RayEngineError("--engine ray reads JSONL only for now (a CSV record may span lines); "
                             "convert the data to JSONL or use --engine local")


@contextmanager
def ray_session(address: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """Ray for the duration of the block: None starts a local instance (shut down at the end),
    "auto" or "ray://HEAD:10001" joins a cluster; if Ray is already initialised in this
    process it is used as it is (and left running)."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        if address is None:
            ray.init(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        started = True
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


def _run_shards(ray: Any, spec: ReadSpec, shards: list[dict[str, int]], actor: type, kwargs: dict[str, Any],
                add: Callable[[dict[str, np.ndarray]], None], workers: int | None) -> ReadStats:
    """Run ``actor`` over the shards on an actor pool (inside a `ray_session`); ``add`` folds each
    batch of exact partial results into the driver's total. Raises the first DatasetError a
    shard returned, or RayEngineError for a worker whose probe differs, before that batch counts."""
    path = Path(spec.path)
    stats = ReadStats()
    pool = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    pool = max(1, min(pool, len(shards)))
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ds = ray.data.from_items(shards, override_num_blocks=len(shards))
    ds = ds.map_batches(actor, fn_constructor_kwargs=kwargs,
                        batch_size=1, concurrency=pool, num_cpus=1, batch_format="numpy")
    for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
        for err in batch["error"]:
            if err:
                _raise(path, json.loads(err))
        add(batch)
        for s in batch["stats"]:
            _merge(stats, json.loads(s))
    return stats


def _raise(path: Path, error: dict[str, Any]) -> None:
    """Raise what a shard's row reported: its DatasetError, or its worker's probe mismatch."""
    if error["kind"] == "probe":
        raise RayEngineError(
            f"the Ray worker on {error['worker']} embeds the public probe texts differently from the driver: "
            f"{error['why']}. A record's embedding would depend on the machine that ran it (int8 kernels are "
            f"chosen by the CPU's instruction set), so its statistics could move by more than the stated "
            f"sensitivity; nothing was written. Run every worker on CPUs of the driver's kind, or use --engine local")
    raise DatasetError(path, error["line"], error["message"])


def count_with_ray(spec: ReadSpec, encoder: EncoderSpec, planes: np.ndarray, *, offsets: np.ndarray | None = None,
                   fmt: str | None = None, address: str | None = None, workers: int | None = None,
                   lines_per_shard: int | None = None, probe: np.ndarray | None = None) -> tuple[np.ndarray, ReadStats]:
    """Exact counts (tables, 2**bits, classes) int32 and read statistics, computed on Ray.

    ``offsets``: the aligned hashing's per-hyperplane offsets (None: through the origin).
    ``address``: see `ray_session`. ``workers``: actors in the pool (default: the cluster's
    CPUs). ``lines_per_shard``: lines per work item (default DEFAULT_LINES_PER_SHARD).
    ``probe``: the driver's embeddings of PROBE_TEXTS (None: `driver_probe` here).
    The counts are exact: the caller must release them only through its privacy budget.
    """
    check_format(Path(spec.path), fmt)
    import_ray()
    shards = plan_shards(Path(spec.path), lines_per_shard or DEFAULT_LINES_PER_SHARD)
    tables, bits, _ = planes.shape
    total = np.zeros((tables, 2**bits, len(spec.labels)), dtype=np.int32)
    if not shards:
        return total, ReadStats()
    flat = total.reshape(-1)

    def add(batch: dict[str, np.ndarray]) -> None:
        flat[:] += batch["counts"].sum(axis=0, dtype=np.int64).astype(np.int32)

    probe = driver_probe(encoder) if probe is None else probe
    with ray_session(address, workers) as ray:
        kwargs = {"encoder": ray.put(encoder), "planes": planes, "spec": spec, "probe": probe, "offsets": offsets}
        stats = _run_shards(ray, spec, shards, EmbedHashCount, kwargs, add, workers)
    return total, stats


def class_sums_with_ray(spec: ReadSpec, encoder: EncoderSpec, basis: PublicBasis, clip_l1: float, *,
                        fmt: str | None = None, address: str | None = None, workers: int | None = None,
                        lines_per_shard: int | None = None,
                        probe: np.ndarray | None = None) -> tuple[ClassSumCounter, ReadStats]:
    """Pass 1 of an aligned build on Ray: the exact per-class sums and counts of every record,
    as a `ClassStatsCounter` (the same integers the local engine accumulates: each record's
    clipped, quantized projection is an integer vector, so partial sums add up exactly), and
    the read statistics. Nothing is released: the caller noises the total once, on the driver,
    through its privacy budget. ``probe``: as in `count_with_ray`."""
    check_format(Path(spec.path), fmt)
    import_ray()
    shards = plan_shards(Path(spec.path), lines_per_shard or DEFAULT_LINES_PER_SHARD)
    total = ClassSumCounter(basis, len(spec.labels), clip_l1)
    if not shards:
        return total, ReadStats()

    def add(batch: dict[str, np.ndarray]) -> None:
        total.sums += batch["sums"].sum(axis=0, dtype=np.int64).reshape(total.sums.shape)

    probe = driver_probe(encoder) if probe is None else probe
    with ray_session(address, workers) as ray:
        kwargs = {"encoder": ray.put(encoder), "basis": basis, "clip_l1": clip_l1, "spec": spec, "probe": probe}
        stats = _run_shards(ray, spec, shards, EmbedClassSums, kwargs, add, workers)
    return total, stats


class RayEngine(Engine):
    """`exporter.build`'s passes on Ray Data, inside one Ray session for all of them."""

    def __init__(self, opts: BuildOptions, labels: LabelSet, encoder: EncoderSpec, timer: Timer):
        super().__init__(opts.train)
        self.timer = timer
        try:
            import_ray()
            check_format(opts.train, opts.fmt)
        except RayEngineError as exc:
            raise BuildError(str(exc)) from None
        self.encoder = encoder
        self.spec = ReadSpec(str(opts.train), labels, text_field=opts.text_field, label_field=opts.label_field,
                             skip_unknown_labels=opts.skip_unknown_labels, skip_empty_texts=opts.skip_empty_texts)
        self.run = dict(fmt=opts.fmt, address=opts.ray_address, workers=opts.workers)
        self._session = ExitStack()
        self._started = False
        self._probe: np.ndarray | None = None
        self._actors: list[Any] = []

    def probe(self) -> np.ndarray:
        """The driver's embeddings of PROBE_TEXTS (once per build; every Ray pass checks them)."""
        if self._probe is None:
            self._probe = driver_probe(self.encoder)
        return self._probe

    def _pass(self, stage: str, work: Callable[[], tuple[Any, ReadStats]], start_ray: bool = True) -> Any:
        t = self.timer.start()
        try:
            if start_ray and not self._started:  # one Ray instance for every Ray pass
                self._session.enter_context(ray_session(self.run["address"], self.run["workers"]))
                self._started = True
            result, stats = work()
        except RayEngineError as exc:
            raise BuildError(str(exc)) from None
        self.timer.add(stage, t)
        self.finish_pass(stats)
        return result

    def class_counts(self, classes: int) -> np.ndarray:
        """Pass 1 needs no embedding: the driver streams the file once with the local reader
        (the same parser and row checks as the shards) and counts the records per class."""
        def count() -> tuple[np.ndarray, ReadStats]:
            stats, counts = ReadStats(), np.zeros(classes, np.int64)
            for record in read_records(self.spec.path, self.spec.labels, fmt="jsonl", text_field=self.spec.text_field,
                                       label_field=self.spec.label_field,
                                       skip_unknown_labels=self.spec.skip_unknown_labels,
                                       skip_empty_texts=self.spec.skip_empty_texts, stats=stats):
                counts[record.label] += 1
            return counts, stats
        return self._pass("driver: read+count classes", count, start_ray=False)

    def class_sums(self, basis: PublicBasis, classes: int, clip_l1: float) -> ClassSumCounter:
        return self._pass("ray: read+embed+class sums", lambda: class_sums_with_ray(
            self.spec, self.encoder, basis, clip_l1, probe=self.probe(), **self.run))

    def vote_counts(self, planes: np.ndarray, offsets: np.ndarray | None, classes: int) -> np.ndarray:
        return self._pass("ray: read+embed+hash+count", lambda: count_with_ray(
            self.spec, self.encoder, planes, offsets=offsets, probe=self.probe(), **self.run))

    def head_records(self, origin: np.ndarray) -> RayHeadRecords:
        """The head's records on the workers: one HeadShard actor per worker embeds its share of
        the shards once (the probe texts checked first) and keeps it for every step."""
        def load() -> tuple[RayHeadRecords, ReadStats]:
            ray = import_ray()
            shards = plan_shards(Path(self.spec.path), DEFAULT_LINES_PER_SHARD)
            pool = self.run["workers"] or max(1, int(ray.cluster_resources().get("CPU", 1)))
            pool = max(1, min(pool, len(shards)))
            actor = ray.remote(num_cpus=1)(HeadShard)
            encoder, probe = ray.put(self.encoder), self.probe()
            self._actors = [actor.remote(encoder, self.spec, probe, shards[i::pool], np.asarray(origin, np.float32))
                            for i in range(pool)]
            stats = ReadStats()
            for error, part in ray.get([a.loaded.remote() for a in self._actors]):
                if error:
                    _raise(Path(self.spec.path), json.loads(error))
                _merge(stats, json.loads(part))
            return RayHeadRecords(ray, self._actors, self.encoder.dim), stats
        return self._pass("ray: read+embed (head)", load)

    def close(self) -> None:
        if self._actors:
            ray = import_ray()
            for a in self._actors:
                ray.kill(a)
            self._actors = []
        self._session.close()
