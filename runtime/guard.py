"""The command line's last line of defence: a memory and time budget for the whole process.

onnxruntime can be held to a budget from the inside (a capped arena, runs terminated from a
watchdog: runtime/onnx_engine.py), LiteRT cannot: it has no way to cancel a run or to cap
its allocations, and a TFLite graph within the encoder family can still expand a tensor from
the values of the input (BROADCAST_TO and RANGE are part of it). So `python -m
runtime.classify`, which owns its process, runs a `ProcessGuard`: a daemon thread that reads
the process's resident memory every few milliseconds and, if it exceeds the budget or a
stage (loading, one text) outlives its deadline, writes one line to stderr and ends the
process with exit status 2, the status of an unusable bundle. A stage's deadline is work, as
the engines' budgets are (format/1/schema.json "encoder"): the process's CPU time, up to the
stage's seconds on every core, which other processes on a busy machine do not use up; wall time
is the backstop, at WALL_FACTOR times the stage's seconds. A library cannot end its
host's process, so the Python API has no such guard: an application that opens bundles of
unknown origin with TFLite encoders should do so in a process it can limit
(docs/reliability.md section 5).

Example:
    >>> guard = ProcessGuard.start(limit_bytes=2**40, what="loading")   # doctest: +SKIP
    >>> guard.stage("classifying line 1", seconds=20.0)                  # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

from runtime.limits import WALL_FACTOR

#: How often the guard looks at the process (a page-table read: about 20 microseconds).
PERIOD_SECONDS = 0.005


def resident_bytes() -> int:
    """The process's resident set size (Linux /proc; 0 where unavailable)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class ProcessGuard:
    """Ends the process (one line on stderr, exit 2) past a memory limit or a stage's deadline."""

    def __init__(self, limit_bytes: int, what: str, seconds: float | None, err: TextIO, prefix: str):
        self._lock = threading.Lock()
        self.limit = limit_bytes
        #: The caller's baseline for later stages' limits (runtime.classify keeps it up to date),
        #: and whether the limit was given by a person (then it never moves).
        self.base = limit_bytes
        self.fixed = False
        self._what = what
        self._set_deadline(seconds)
        self._err, self._prefix = err, prefix
        self._stopped = threading.Event()
        self.peak = resident_bytes()

    @classmethod
    def start(cls, limit_bytes: int, what: str, seconds: float | None = None, err: TextIO | None = None,
              prefix: str = "") -> "ProcessGuard":
        guard = cls(limit_bytes, what, seconds, err or sys.stderr, prefix)
        threading.Thread(target=guard._watch, name="dpedge-process-guard", daemon=True).start()
        return guard

    def stage(self, what: str, seconds: float | None = None, limit_bytes: int | None = None) -> None:
        """Enter a stage: its name for the message, its deadline, and optionally a new limit."""
        with self._lock:
            self._what = what
            self._set_deadline(seconds)
            if limit_bytes is not None:
                self.limit = limit_bytes

    def _set_deadline(self, seconds: float | None) -> None:
        self._seconds = seconds
        self._deadline = None if seconds is None else time.monotonic() + WALL_FACTOR * seconds
        self._cpu_start = time.process_time()
        self._cpu_budget = None if seconds is None else seconds * (os.cpu_count() or 1)

    def _over_time(self) -> bool:
        return self._deadline is not None and (time.monotonic() > self._deadline or
                                               time.process_time() - self._cpu_start > self._cpu_budget)

    def stop(self) -> None:
        """End the guard (the CLI's main() returns: nothing of it may end the process later)."""
        self._stopped.set()

    def _watch(self) -> None:
        while not self._stopped.is_set():
            rss = resident_bytes()
            with self._lock:
                self.peak = max(self.peak, rss)
                if self.limit and rss > self.limit:
                    self._end(f"the process exceeded its memory budget of {self.limit // 2**20} MiB while "
                              f"{self._what} ({rss // 2**20} MiB resident)")
                if self._over_time():
                    self._end(f"{self._what} took more than {self._seconds:g} s of work")
            self._stopped.wait(PERIOD_SECONDS)

    def _end(self, why: str) -> None:
        if self._stopped.is_set():
            return
        try:
            self._err.write(f"error: {self._prefix}{why}, so the bundle is refused (docs/reliability.md "
                            f"section 5)\n")
            self._err.flush()
        finally:
            os._exit(2)
