"""What a build will hold in memory, checked against what the machine has before it embeds.

A build on one machine holds the exporter itself, the encoder (its weights read into memory,
onnxruntime's session over them and its prepacked int8 kernels) and, for a head (``--delta``),
every record's embedding, which DP-SGD reads in every step. The default release streams the
records in constant memory. The figures are measured (docs/encoder.md, "Two tiers"): a build
of data/assistant peaks at 0.49 GB of resident memory with all-MiniLM-L6-v2 (23 MB of int8
weights) and 1.06 GB with all-mpnet-base-v2 (112 MB): about BASE_BYTES and ENCODER_FACTOR
times the weights. The head's embeddings are counted twice (the engine's chunks and the array
they are joined into).

The record count is bounded from above by the training file's line count, which the machine's
owner can see anyway; nothing of this goes into the bundle. A build that stops here writes
nothing, like any build that stops on its input.
"""

from __future__ import annotations

from pathlib import Path

from exporter.options import BuildError
from runtime.bundle.schema import EncoderSpec

#: The exporter's own resident memory before any encoder (measured: 0.49 GB with MiniLM's 23 MB).
BASE_BYTES = 384 << 20
#: Resident bytes per byte of int8 weights (measured: +0.57 GB for MPNet's 89 MB more weights).
ENCODER_FACTOR = 6
#: The fraction of the available memory a build may plan to use (the rest: the system, caches).
USABLE = 0.9


def available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo (Linux), or None where the platform does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def line_count(path: Path) -> int:
    """The lines of a file (an upper bound on its records), counted in 4 MiB blocks."""
    lines, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


def planned_bytes(encoder: EncoderSpec, *, head_records: int | None) -> dict[str, int]:
    """The build's memory by part: the exporter, the encoder, and a head's embeddings (None: no head)."""
    weights = len(encoder.weights) or (encoder.weights_file.length if encoder.weights_file else 0)
    parts = {"exporter": BASE_BYTES, "encoder": ENCODER_FACTOR * (len(encoder.model) + weights)}
    if head_records is not None:
        # the local engine's spill read back once: each record's floats and its class (exporter.local_engine)
        parts["head embeddings"] = head_records * (encoder.dim + 1) * 4
    return parts


def check_memory(encoder: EncoderSpec, train: Path, *, head: bool, available: int | None = None) -> None:
    """Refuse (BuildError) a build whose plan exceeds USABLE of the available memory."""
    available = available_bytes() if available is None else available
    if available is None:
        return
    records = line_count(train) if head else None
    parts = planned_bytes(encoder, head_records=records)
    need = sum(parts.values())
    if need > USABLE * available:
        gib = lambda n: f"{n / 2**30:.1f} GiB"  # noqa: E731
        what = ", ".join(f"{k} {gib(v)}" for k, v in parts.items())
        hint = ("a smaller --encoder, or a machine with more memory" if records is None else
                "the default release without --delta (it streams the records in constant memory), a smaller --encoder, "
                "or a machine with more memory")
        raise BuildError(f"this build would need about {gib(need)} of memory ({what}"
                              + ("" if records is None else f"; up to {records:,} records of {encoder.dim} floats")
                              + f") and this machine has {gib(available)} available: choose {hint} (nothing was "
                                "embedded or written)")
