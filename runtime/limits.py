"""What running a bundle's encoder may cost: the memory and time budgets of the engines.

A bundle's model is executable content, so every engine session runs under budgets
(runtime/onnx_engine.py, runtime/encoder.py, and the CLI's process guard, runtime/guard.py).
The user's environment, never the bundle, may stretch the time budgets for a slow CPU.
"""

from __future__ import annotations

import os
import sys

#: onnxruntime allocates every tensor from an arena capped at ENGINE_ARENA_BYTES (the
#: exporter's encoder needs under 16 MiB at 256 tokens); runs have the contract's time budgets.
from runtime.bundle.schema import (ENGINE_ARENA_BYTES, LOAD_RUN_SECONDS_BASE, QUERY_RUN_SECONDS_BASE,  # noqa: F401
                                   WALL_FACTOR)

#: The user's environment (never the bundle) may stretch every time budget for a slow CPU (an
#: emulator runs the encoder 10 to 50 times slower): 1 to 1000.
TIME_SCALE_ENV = "DPEDGE_TIME_SCALE"
MAX_TIME_SCALE = 1000.0


def time_scale(environ: dict[str, str] | None = None) -> float:
    """The factor from ``$DPEDGE_TIME_SCALE`` (unset, empty or invalid: 1, an invalid value
    reported on stderr in one line).

    Example:
        >>> time_scale({}), time_scale({"DPEDGE_TIME_SCALE": "20"})
        (1.0, 20.0)
    """
    raw = (os.environ if environ is None else environ).get(TIME_SCALE_ENV, "").strip()
    if not raw:
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 1.0 <= value <= MAX_TIME_SCALE:
        print(f"dpedge: ignoring {TIME_SCALE_ENV}={raw[:40]!r}: it must be a number from 1 to {MAX_TIME_SCALE:g}",
              file=sys.stderr)
        return 1.0
    return value


TIME_SCALE = time_scale()
LOAD_RUN_SECONDS = LOAD_RUN_SECONDS_BASE * TIME_SCALE
QUERY_RUN_SECONDS = QUERY_RUN_SECONDS_BASE * TIME_SCALE
