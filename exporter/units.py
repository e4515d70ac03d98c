"""Bound each person's contribution: keep at most K records per privacy unit.

Record-level DP protects one record; a customer with 40 tickets is 40 records. With a unit
column (a user id), the exporter keeps at most K records of each unit, so adding or removing
a whole person changes the vote tables by at most K*T in L1, and the release adds noise of
scale K*T/epsilon (exporter.release). Which K records are kept is chosen uniformly at random
with a cryptographically secure generator, looking at nothing but the unit key and how many
records the unit has: not at labels or texts (choosing, say, the longest texts would make the
selection itself depend on content), and not simply the first K in file order (file order
often follows time or topic).

It takes two streaming passes over the data: the first counts records per unit, the second
keeps the chosen ones. Memory grows with the number of distinct units (one count each, and
K chosen positions for each unit over the bound), never with the number of records. Whether
a unit was over the bound is not released: only the noisy tables are.
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

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"max records per unit must be at least 1, got {self.k}")

    def plan(self, units: Iterable[str]) -> None:
        """First pass: count each unit's records and draw which of them to keep."""
        counts = Counter(units)
        self.stats.units = len(counts)
        self._chosen = {}
        for unit, n in counts.items():
            if n > self.k:
                self._chosen[unit] = frozenset(_random.sample(range(n), self.k))
                self.stats.units_over_bound += 1
                self.stats.records_dropped += n - self.k

    def keep(self, records: Iterable[R], unit_of: Callable[[R], str]) -> Iterator[R]:
        """Second pass, same records in the same order: yield only the chosen ones."""
        seen: Counter[str] = Counter()
        for record in records:
            unit = unit_of(record)
            position = seen[unit]
            seen[unit] += 1
            chosen = self._chosen.get(unit)
            if chosen is None or position in chosen:
                yield record
