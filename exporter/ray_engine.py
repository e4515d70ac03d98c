"""Ray Data backend for `exporter.build` (``--engine ray``): embed, hash and count on a cluster.

How the work is split (docs/ray.md):

1. The driver scans the JSONL file for newlines, in 1 MiB blocks and constant memory, and cuts
   it into shards of ``lines_per_shard`` lines: (byte start, byte end, first line number).
   Only these offsets go into the Ray Dataset, never a record.
2. ``map_batches`` runs `EmbedHashCount` on an actor pool: each actor loads the tokenizer and
   the int8 encoder once, then for each shard reads its byte range, parses and validates every
   line with the same rules as `exporter.dataset.read_records` (errors name file and line),
   embeds one text per call (the runtime's rule), hashes with the bundle's hyperplanes and
   returns one partial count table for the shard, plus its read statistics.
3. The driver sums the partial tables into the dense total. Nothing is noised or released
   here: `exporter.build` adds the noise once, on the driver, to that total.

Limits: JSONL only (a CSV record may span lines, so CSV cannot be cut at newlines); the
dataset path must be readable at the same path on every worker; per-person bounding
(``--unit-column``) is not implemented.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from exporter.counting import VoteCounter
from exporter.dataset import (MAX_LISTED_UNKNOWN_LABELS, DatasetError, LabelSet, ReadStats, decode_line,
                              detect_format, parse_jsonl_line, validate_row)
from runtime.bundle import Encoder

INSTALL = "pip install 'dpedge[ray]'"
DEFAULT_LINES_PER_SHARD = 2048


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
    skip_bad_texts: bool = False


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
        record = validate_row(p, n, values, spec.labels, skip_unknown_labels=spec.skip_unknown_labels,
                              skip_bad_texts=spec.skip_bad_texts, unit_field=None, stats=stats)
        if record is not None:
            texts.append(record.text)
            classes.append(record.label)
    return texts, classes


class EmbedHashCount:
    """Ray Data actor: loads the encoder once, turns each shard into a partial count table.

    A DatasetError is returned as a row (not raised), so the driver can raise it unchanged,
    with its file and line, instead of a Ray wrapper around it.
    """

    def __init__(self, encoder: Any, planes: np.ndarray, spec: ReadSpec):
        import ray

        from runtime.encoder import TextEncoder
        from runtime.simhash import SimHasher
        from runtime.tokenize import TextTokenizer

        if isinstance(encoder, ray.ObjectRef):
            encoder = ray.get(encoder)
        assert isinstance(encoder, Encoder)
        self.tokenizer = TextTokenizer(encoder.tokenizer_json, encoder.max_length)
        self.encoder = TextEncoder(encoder, threads=1)
        self.hasher = SimHasher(planes)
        self.spec = spec
        self.shape = (self.hasher.tables, 2**self.hasher.bits, len(spec.labels))

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        out: dict[str, list[Any]] = {"counts": [], "stats": [], "error": []}
        for start, end, first in zip(batch["start"], batch["end"], batch["first_line"]):
            stats = ReadStats()
            counter = VoteCounter(self.hasher.tables, self.hasher.bits, self.shape[2])
            error = ""
            try:
                texts, classes = read_shard(self.spec, int(start), int(end), int(first), stats)
                if texts:
                    emb = self.encoder.embed(self.tokenizer.encode(texts))
                    counter.add(self.hasher.buckets(emb), np.asarray(classes, dtype=np.int64))
            except DatasetError as exc:
                where = f"{self.spec.path}" + ("" if exc.line is None else f":{exc.line}")
                error = json.dumps({"line": exc.line, "message": str(exc)[len(where) + 2:]})
            out["counts"].append(counter.counts.reshape(-1))
            out["stats"].append(json.dumps({"records": stats.records,
                                            "skipped_unknown_label": stats.skipped_unknown_label,
                                            "skipped_bad_text": stats.skipped_bad_text,
                                            "blank_lines": stats.blank_lines,
                                            "unknown_labels": stats.unknown_labels}))
            out["error"].append(error)
        return {"counts": np.stack(out["counts"]), "stats": np.array(out["stats"], dtype=object),
                "error": np.array(out["error"], dtype=object)}


def _merge(total: ReadStats, part: dict[str, Any]) -> None:
    total.records += part["records"]
    total.skipped_unknown_label += part["skipped_unknown_label"]
    total.skipped_bad_text += part["skipped_bad_text"]
    total.blank_lines += part["blank_lines"]
    for name, k in part["unknown_labels"].items():
        if name in total.unknown_labels or len(total.unknown_labels) < MAX_LISTED_UNKNOWN_LABELS:
            total.unknown_labels[name] = total.unknown_labels.get(name, 0) + k


def count_with_ray(spec: ReadSpec, encoder: Encoder, planes: np.ndarray, *, fmt: str | None = None,
                   address: str | None = None, workers: int | None = None,
                   lines_per_shard: int | None = None) -> tuple[np.ndarray, ReadStats]:
    """Exact counts (tables, 2**bits, classes) int32 and read statistics, computed on Ray.

    ``address``: None starts a local Ray instance (shut down afterwards), "auto" or
    "ray://HEAD:10001" joins an existing cluster. If Ray is already initialised in this
    process it is used as it is. ``workers``: actors in the pool (default: the cluster's CPUs).
    ``lines_per_shard``: lines per work item (default DEFAULT_LINES_PER_SHARD).
    The counts are exact: the caller must release them only through exporter.release.
    """
    path = Path(spec.path)
    if (fmt or detect_format(path)) != "jsonl":
        raise RayEngineError("--engine ray reads JSONL only for now (a CSV record may span lines); "
                             "convert the data to JSONL or use --engine local")
    ray = import_ray()
    shards = plan_shards(path, lines_per_shard or DEFAULT_LINES_PER_SHARD)
    tables, bits, _ = planes.shape
    total = np.zeros((tables, 2**bits, len(spec.labels)), dtype=np.int32)
    stats = ReadStats()
    if not shards:
        return total, stats

    started = False
    if not ray.is_initialized():
        if address is None:
            ray.init(num_cpus=workers or os.cpu_count() or 1, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        started = True
    try:
        pool = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        pool = max(1, min(pool, len(shards)))
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ds = ray.data.from_items(shards, override_num_blocks=len(shards))
        ds = ds.map_batches(EmbedHashCount, fn_constructor_kwargs={
                                "encoder": ray.put(encoder), "planes": planes, "spec": spec},
                            batch_size=1, concurrency=pool, num_cpus=1, batch_format="numpy")
        flat = total.reshape(-1)
        for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
            for err in batch["error"]:
                if err:
                    e = json.loads(err)
                    raise DatasetError(path, e["line"], e["message"])
            flat += batch["counts"].sum(axis=0, dtype=np.int64).astype(np.int32)
            for s in batch["stats"]:
                _merge(stats, json.loads(s))
    finally:
        if started:
            ray.shutdown()
    return total, stats
