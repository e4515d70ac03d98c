"""The local engine: reads, embeds and counts records in this process, one chunk at a time.

Records are streamed in chunks of CHUNK_RECORDS and only exact aggregates are kept. A build
with class statistics needs the released class counts before it can choose the subspace of
the class sums (and the released sums before it can hash along them), so the embeddings of
the first pass are spilled to a temporary file and read back in chunks for the later passes:
memory stays one chunk, the disk holds 1.5 KB per record, and nothing is embedded twice.

Where the raw embeddings of every record sit meanwhile: in an unnamed file in the temporary
folder (tempfile.TemporaryFile: opened with O_TMPFILE, or unlinked as soon as it is created,
so no other process can open it by a name, and no name is left behind). It is closed, and so
gone, when the engine closes (the build's ``with``), and also as soon as the first pass fails
or is interrupted (an exception, Ctrl-C, SIGTERM turned into SystemExit by the build); if the
process is killed outright, the system frees an unnamed file with the process. On Windows
the file is deleted when closed, or when the process ends.

With a unit column, a first quick pass reads only the units (exporter.units plans which K
records of each person to keep) and the records pass keeps at most K per person.
"""

from __future__ import annotations

import itertools
from array import array
import tempfile
from typing import IO, Callable, Iterable, Iterator

import numpy as np

from exporter.class_stats import ClassSumCounter
from exporter.dataset import LabelSet, ReadStats, Record, read_records
from exporter.engine import Engine
from exporter.options import BuildOptions
from exporter.progress import Timer, progress
from exporter.public_basis import PublicBasis
from exporter.units import UnitBound
from exporter.votes import VoteCounter
from runtime.simhash import SimHasher

CHUNK_RECORDS = 256

#: Turns one chunk of records into their unit embeddings, shape (len(chunk), dim), float32.
EmbedChunk = Callable[[list[Record]], np.ndarray]


def _chunks(records: Iterable[Record], size: int) -> Iterator[list[Record]]:
    it = iter(records)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


class LocalEngine(Engine):
    """Passes over ``opts.train`` in this process; ``embed`` turns a chunk of records into
    embeddings (the bundle's own `Embedder`, or a benchmark's stand-in)."""

    def __init__(self, opts: BuildOptions, labels: LabelSet, embed: EmbedChunk, timer: Timer):
        super().__init__(opts.train)
        self.opts, self.labels, self.embed, self.timer = opts, labels, embed, timer
        self.bound = UnitBound(int(opts.max_records_per_unit or 0)) if opts.unit_field else None
        self.units = None if self.bound is None else self.bound.stats
        self._spill: IO[bytes] | None = None
        self._dim = 0
        #: With a unit column, each kept record's person as a dense id (first-seen order) and the
        #: ids by key: the head's grouping and the exact number of persons (never released raw).
        self._units = array("q")  # 8 bytes a record
        self._unit_ids: dict[str, int] = {}

    def _read(self, stats: ReadStats) -> Iterator[Record]:
        o = self.opts
        return read_records(o.train, self.labels, fmt=o.fmt, text_field=o.text_field, label_field=o.label_field,
                            skip_unknown_labels=o.skip_unknown_labels, skip_empty_texts=o.skip_empty_texts,
                            unit_field=o.unit_field, stats=stats)

    def _embedded(self, desc: str, stage: str, units: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(embeddings, class indices) per chunk of kept records; the consumer's work on a
        chunk is timed as ``stage``; ``units`` records each kept record's person (a unit column)."""
        stats = ReadStats()
        records: Iterable[Record] = self._read(stats)
        if self.bound is not None:
            self.bound.plan(r.unit for r in self._read(ReadStats()))
            records = self.bound.keep(records, unit_of=lambda r: r.unit)
        t = self.timer.start()
        with progress(self.train, desc, self.opts.progress) as bar:
            for chunk in _chunks(records, CHUNK_RECORDS):
                t = self.timer.add("read", t)
                emb = np.ascontiguousarray(self.embed(chunk), dtype=np.float32)
                if units and self.bound is not None:
                    ids = self._unit_ids
                    self._units.extend(ids.setdefault(r.unit, len(ids)) for r in chunk)
                t = self.timer.add("tokenize+encode", t)
                yield emb, np.fromiter((r.label for r in chunk), np.int64, len(chunk))
                t = self.timer.add(stage, t)
                bar.update(chunk[-1].line - bar.n)
            bar.update(max(0, (bar.total or 0) - bar.n))  # trailing blank or skipped lines were read too
        self.timer.add("read", t)
        self.finish_pass(stats, same_records=self.bound is None or self.bound.consistent)

    def class_counts(self, classes: int) -> np.ndarray:
        """Pass 1: read, embed and spill every kept record (to the unnamed file of the module
        doc, closed here if the pass does not finish); count them per class."""
        counts = np.zeros(classes, np.int64)
        self.close()
        self._spill = tempfile.TemporaryFile(prefix="dpedge-embeddings-")
        self._units, self._unit_ids = array("q"), {}
        try:
            for emb, y in self._embedded("embed (pass 1)", "class counts", units=True):
                counts += np.bincount(y, minlength=classes)
                self._dim = emb.shape[1]
                self._spill.write(np.concatenate([emb, y.astype(np.float32)[:, None]], axis=1).tobytes())
        except BaseException:  # also KeyboardInterrupt and SystemExit: the embeddings go now
            self.close()
            raise
        return counts

    def _spilled(self, stage: str) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(embeddings, class indices) of the first pass, read back from the spill file in blocks;
        the consumer's work is timed as ``stage``."""
        assert self._spill is not None
        t = self.timer.start()
        self._spill.seek(0)
        row, dim = (self._dim + 1) * 4, self._dim
        while block := self._spill.read(row * CHUNK_RECORDS * 16):
            a = np.frombuffer(block, dtype=np.float32).reshape(-1, dim + 1)
            yield a[:, :dim], a[:, dim].astype(np.int64)
        self.timer.add(stage, t)

    def class_sums(self, basis: PublicBasis, classes: int, clip_l1: float) -> ClassSumCounter:
        counter = ClassSumCounter(basis, classes, clip_l1)
        for emb, y in self._spilled("class sums"):
            counter.add(emb, y)
        return counter

    def embeddings(self) -> tuple[np.ndarray, np.ndarray]:
        """The first pass's embeddings and class indices, read back from the spill file into
        memory once (the head's DP-SGD reads them all in every step: 4 x (dim + 1) bytes a
        record): the embeddings are a view of the rows read, not a second copy of them."""
        if self._spill is None:
            raise RuntimeError("embeddings() needs the first pass (class_counts) first")
        self._spill.seek(0)
        a = np.fromfile(self._spill, dtype=np.float32).reshape(-1, self._dim + 1)
        return a[:, :self._dim], a[:, self._dim].astype(np.int64)

    def record_units(self) -> np.ndarray | None:
        if self.bound is None:
            return None
        if self._spill is None:
            raise RuntimeError("record_units() needs the first pass (class_counts) first")
        return np.frombuffer(self._units, np.int64).copy()

    def unit_count(self) -> int:
        if self.bound is None or self._spill is None:
            raise RuntimeError("unit_count() needs a unit column and the first pass (class_counts)")
        return len(self._unit_ids)

    def vote_counts(self, planes: np.ndarray, offsets: np.ndarray | None, classes: int) -> np.ndarray:
        tables, bits, _ = planes.shape
        counter = VoteCounter(tables, bits, classes)
        hasher = SimHasher(planes, offsets)
        chunks = (self._embedded("embed+hash+count", "hash+count") if self._spill is None  # the only pass
                  else self._spilled("hash+count"))
        for emb, y in chunks:
            counter.add(hasher.buckets(emb), y)
        return counter.counts

    def close(self) -> None:
        """Close (and so delete) the spilled embeddings, if any."""
        if self._spill is not None:
            self._spill.close()
            self._spill = None
