"""What a build shows its operator: stage timings and progress bars (console only, never the
bundle)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from exporter.dataset import count_lines


class Timer:
    """Seconds per stage, summed over however many times a stage runs.

    Example:
        >>> t = Timer(); since = t.add("read", t.start())
        >>> list(t.seconds)
        ['read']
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @staticmethod
    def start() -> float:
        return time.perf_counter()

    def add(self, stage: str, since: float) -> float:
        """Count the time since ``since`` towards ``stage``; returns now, the next stage's start."""
        now = time.perf_counter()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + now - since
        return now


@contextmanager
def progress(path: Path, desc: str, enabled: bool) -> Iterator[Any]:
    """A tqdm bar over the lines of ``path`` (its total counted in one quick pass)."""
    from tqdm import tqdm

    with tqdm(total=count_lines(path) if enabled else None, unit="line", desc=desc, disable=not enabled,
              dynamic_ncols=True) as bar:
        yield bar
