"""Where a build's records are read and embedded: the passes both engines implement.

An engine makes the exact, private intermediate results of a build (class statistics, vote
counts) and nothing else; the build releases them through its privacy budget. The local
engine (exporter.local_engine) runs in this process; the Ray engine (exporter.ray_engine) on
a cluster. Each pass over the records ends in `Engine.finish_pass`, so the two checks that
keep a release honest exist once for both: there were records to count, and every pass read
the same records (a file that changed between passes would make the two releases describe
two datasets, and could let a person past the per-person bound).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import numpy as np

from exporter.class_stats import ClassSumCounter
from exporter.dataset import ReadStats
from exporter.head import InMemory, PerUnit, StepSums
from exporter.options import BuildError
from exporter.public_basis import PublicBasis
from exporter.units import UnitStats
from exporter.votes import VoteCounter
from runtime.simhash import SimHasher


def _kept(stats: ReadStats) -> tuple[int, int, int, int]:
    return stats.records, stats.skipped_unknown_label, stats.skipped_empty_texts, stats.blank_lines


class Engine(ABC):
    """One build's passes over the records of ``train``.

    ``stats`` holds the read statistics once a pass has finished; ``units`` the per-person
    bounding's (None without a unit column). Both are for the operator's console only.
    """

    def __init__(self, train: Path):
        self.train = Path(train)
        self.stats: ReadStats | None = None
        self.units: UnitStats | None = None

    @abstractmethod
    def class_counts(self, classes: int) -> np.ndarray:
        """Exact record counts per class (the first pass of a build with class statistics)."""

    @abstractmethod
    def class_sums(self, basis: PublicBasis, classes: int, clip_l1: float) -> ClassSumCounter:
        """Exact clipped, quantized per-class sums of every record in ``basis``."""

    @abstractmethod
    def vote_counts(self, planes: np.ndarray, offsets: np.ndarray | None, classes: int) -> np.ndarray:
        """Exact counts (tables, 2**bits, classes) of every record hashed with ``planes``."""

    def embeddings(self) -> tuple[np.ndarray, np.ndarray]:
        """Every kept record's embedding (n, dim) float32 and class index (n,), in memory, after
        `class_counts`: the head's DP-SGD (exporter.head) reads them all in every step."""
        raise BuildError(f"the {type(self).__name__} cannot hand its embeddings over in one place (nothing was "
                         "written)")

    def record_units(self) -> np.ndarray | None:
        """Each kept record's person, as an integer id (n,), after `class_counts`; None without
        a unit column (each record is its own unit)."""
        return None

    def unit_count(self) -> int:
        """The exact number of persons with a kept record, after `class_counts` (a unit column)."""
        raise BuildError(f"the {type(self).__name__} does not count persons (nothing was written)")

    def head_records(self, origin: np.ndarray) -> StepSums:
        """The head's records for DP-SGD (exporter.head), centred on the public ``origin``,
        after `class_counts`: by default every embedding in this process (`embeddings`),
        grouped by person with a unit column (`PerUnit`)."""
        units = self.record_units()
        return InMemory(*self.embeddings(), origin) if units is None else PerUnit(*self.embeddings(), units, origin)

    def finish_pass(self, stats: ReadStats, *, same_records: bool = True) -> None:
        """End of a pass: refuse an empty dataset, or a pass that read other records than the
        first (``same_records`` False: the engine saw the data change within its passes)."""
        if stats.records == 0:
            raise BuildError(f"{self.train}: no records to count (nothing was written)")
        if not same_records or (self.stats is not None and _kept(stats) != _kept(self.stats)):
            detail = "" if self.stats is None else (f" ({self.stats.records} records in the first pass, "
                                                    f"{stats.records} in this one)")
            raise BuildError(f"{self.train} changed between the passes over it{detail}; nothing was written")
        self.stats = stats

    def close(self) -> None:
        """Release what the engine holds (temporary files, a cluster connection)."""

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class MemoryEngine(Engine):
    """An engine over embeddings already in memory (benchmarks and tests run the build's own
    stages on cached embeddings through it)."""

    def __init__(self, embeddings: np.ndarray, labels: np.ndarray, name: str = "<memory>",
                 units: np.ndarray | None = None):
        super().__init__(Path(name))
        self._embeddings, self.labels = np.asarray(embeddings, np.float32), np.asarray(labels, np.int64)
        #: Each record's person (integer ids), already bounded to K records a person; None: none.
        self._units = None if units is None else np.asarray(units, np.int64)

    def record_units(self) -> np.ndarray | None:
        return self._units

    def unit_count(self) -> int:
        if self._units is None:
            return super().unit_count()
        return len(np.unique(self._units))

    def _pass(self) -> None:
        self.finish_pass(ReadStats(records=len(self.labels)))

    def class_counts(self, classes: int) -> np.ndarray:
        self._pass()
        return np.bincount(self.labels, minlength=classes)

    def class_sums(self, basis: PublicBasis, classes: int, clip_l1: float) -> ClassSumCounter:
        counter = ClassSumCounter(basis, classes, clip_l1)
        counter.add(self._embeddings, self.labels)
        self._pass()
        return counter

    def embeddings(self) -> tuple[np.ndarray, np.ndarray]:
        return self._embeddings, self.labels

    def vote_counts(self, planes: np.ndarray, offsets: np.ndarray | None, classes: int) -> np.ndarray:
        counter = VoteCounter(planes.shape[0], planes.shape[1], classes)
        counter.add(SimHasher(planes, offsets).buckets(self._embeddings), self.labels)
        self._pass()
        return counter.counts
