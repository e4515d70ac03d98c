"""Bound each person's contribution: keep at most K records per privacy unit.

Record-level DP protects one record; a customer with 40 tickets is 40 records. With a unit
column (a user id), the exporter keeps at most K records of each unit, so adding or removing
a whole person changes every release by at most K times a record's sensitivity, which the
privacy budget (exporter.privacy) pays for. Which K records are kept is chosen uniformly at
random with a cryptographically secure generator, looking at nothing but the unit key and
how many records the unit has: not at labels or texts (choosing, say, the longest texts would
make the selection itself depend on content), and not simply the first K in file order (file
order often follows time or topic). The unit key is the id as the reader gives it
(exporter.dataset): surrounding white space stripped and an integer read as its text, so
" ana", "ana" and 7, "7" are one person each.

It takes two streaming passes over the data: the first counts records per unit, the second
keeps the chosen ones, and never more than K of any unit even if the data changed in between
(the build then refuses: both passes must see the same records). Memory grows with the
number of distinct units (one count each, and K chosen positions for each unit over the
bound), never with the number of records. Whether a unit was over the bound is not released.
"""

from __future__ import annotations

import secrets
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, TypeVar

R = TypeVar("R")

_random = secrets.SystemRandom()


@dataclass
class UnitStats:
    """For the data owner's console only (never put in the bundle)."""

    units: int = 0
    units_over_bound: int = 0
    records_dropped: int = 0


@dataclass
class UnitBound:
    """Keeps at most ``k`` records per unit; ``plan`` first, then ``keep`` on a second pass.

    Example:
        >>> bound = UnitBound(k=2)
        >>> bound.plan(["ana", "ana", "ana", "bo"])
        >>> kept = list(bound.keep(["ana", "ana", "ana", "bo"], unit_of=lambda u: u))
        >>> sorted(kept)
        ['ana', 'ana', 'bo']
    """

    k: int
    stats: UnitStats = field(default_factory=UnitStats)
    _chosen: dict[str, frozenset[int]] = field(default_factory=dict, repr=False)
    _planned: Counter[str] = field(default_factory=Counter, repr=False)
    _mismatch: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"max records per unit must be at least 1, got {self.k}")

    def plan(self, units: Iterable[str]) -> None:
        """First pass: count each unit's records and draw which of them to keep."""
        counts = Counter(units)
        self._planned = counts
        self.stats.units = len(counts)
        self._chosen = {}
        for unit, n in counts.items():
            if n > self.k:
                self._chosen[unit] = frozenset(_random.sample(range(n), self.k))
                self.stats.units_over_bound += 1
                self.stats.records_dropped += n - self.k

    def keep(self, records: Iterable[R], unit_of: Callable[[R], str]) -> Iterator[R]:
        """Second pass: yield the chosen records, and never more than ``k`` of any unit.

        The cap holds by construction, whatever this pass sees: a unit absent from the plan
        (new since the first pass) keeps its first ``k`` records, and a unit with more records
        than planned keeps at most ``k``. Either means the data changed between the passes,
        which `consistent` then reports so the build can refuse.
        """
        seen: Counter[str] = Counter()
        kept: Counter[str] = Counter()
        self._mismatch = False
        for record in records:
            unit = unit_of(record)
            position = seen[unit]
            seen[unit] += 1
            chosen = self._chosen.get(unit)
            if kept[unit] < self.k and (chosen is None or position in chosen):
                kept[unit] += 1
                yield record
        self._mismatch = seen != self._planned

    @property
    def consistent(self) -> bool:
        """True when the last `keep` pass saw exactly the units and counts `plan` saw."""
        return not self._mismatch
