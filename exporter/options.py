"""A build's settings and the checks that refuse bad ones before any record is read.

Every default here is public and chosen without the private data (docs/accuracy.md says
how); choosing them by looking at results on the private records would be a use of those
records that the budget does not cover.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from exporter.class_stats import DEFAULT_CLIP_L1, clip_steps
from exporter.hyperplanes import AUTO_BITS
from exporter.privacy import DEFAULT_CLASS_SHARE, BudgetError, NeighbourRelation, check_epsilon, default_shares
from exporter.public_basis import DEFAULT_DIM as DEFAULT_BASIS_DIM

__all__ = ["DEFAULT_BASIS_DIM", "DEFAULT_CLASS_SHARE", "DEFAULT_CLIP_L1", "BuildError", "BuildOptions", "check_options"]

#: Coarse hashing with many tables: the paper's H=24, T=4 leaves almost every query in an
#: empty bucket with this encoder (docs/accuracy.md).
DEFAULT_TABLES = 32
DEFAULT_BITS = 6  # random hashing; aligned hashing picks H from the released noisy count
MAX_TABLES = 128
MAX_BITS = 20
DEFAULT_MAX_TABLE_MIB = 64.0
HASHINGS = ("aligned", "random")
ENGINES = ("local", "ray")


class BuildError(ValueError):
    """The build cannot start or finish with the given settings; nothing was written."""


@dataclass
class BuildOptions:
    train: Path
    labels: Path
    epsilon: float
    out: Path
    tables: int = DEFAULT_TABLES
    bits: int | None = None  # None: DEFAULT_BITS, or with aligned hashing chosen from the noisy record count
    seed: int | None = None
    encoder_source: Path | None = None
    encoder_format: str = "onnx"  # "tflite" ships a LiteRT model (needs the [tflite] extra)
    models_dir: Path = Path("models")
    fmt: str | None = None
    text_field: str = "text"
    label_field: str = "label"
    skip_unknown_labels: bool = False
    skip_empty_texts: bool = False
    max_table_mib: float = DEFAULT_MAX_TABLE_MIB
    unit_field: str | None = None  # privacy unit column (e.g. a user id); None: one record is the unit
    max_records_per_unit: int | None = None  # K, required with unit_field: records kept per unit
    workers: int | None = None  # texts embedded at once, one engine thread each (None: all cores)
    progress: bool = True
    engine: str = "local"  # "local" (this process) or "ray" (Ray Data; exporter/ray_engine.py, docs/ray.md)
    #: "aligned" (default): release noisy class statistics first (share ``class_share`` of
    #: epsilon), hash in the span of their class directions, and ship centroids and the
    #: label-description prior for blended scoring (format 2). "random": the paper's random
    #: hyperplanes and Algorithm 2 only (format 1.2).
    hashing: str = "aligned"
    class_share: float = DEFAULT_CLASS_SHARE
    basis_dim: int = DEFAULT_BASIS_DIM
    clip_l1: float = DEFAULT_CLIP_L1
    public_directions: int = 0
    ray_address: str | None = None  # with engine "ray": None starts a local Ray; "auto" / "ray://HOST:10001" joins

    @property
    def aligned(self) -> bool:
        return self.hashing == "aligned"

    def relation(self) -> NeighbourRelation:
        """The neighbour relation the guarantee is stated for (checked by `check_options`)."""
        if self.unit_field:
            return NeighbourRelation.person(self.unit_field, int(self.max_records_per_unit or 0))
        return NeighbourRelation.record()

    def shares(self) -> dict[str, float]:
        return default_shares(self.hashing, self.class_share)


def table_bytes(tables: int, bits: int, classes: int) -> int:
    return tables * 2**bits * classes * 2  # int16 cells


def check_options(opts: BuildOptions, classes: int, *, benchmark_stand_in: bool = False) -> None:
    """Refuse settings the build cannot honour, naming the option to change."""
    try:
        check_epsilon(opts.epsilon)
    except ValueError as exc:
        raise BuildError(str(exc)) from None
    _check_hashing(opts)
    check_shape(opts.tables, opts.bits or (AUTO_BITS[1] if opts.aligned else DEFAULT_BITS), classes, opts.max_table_mib)
    _check_unit(opts)
    _check_engine(opts, benchmark_stand_in)


def check_shape(tables: int, bits: int, classes: int, max_table_mib: float = DEFAULT_MAX_TABLE_MIB) -> None:
    """Refuse hashing settings outside the supported range or whose dense tables are too big."""
    if not 1 <= bits <= MAX_BITS:
        raise BuildError(f"--bits must be between 1 and {MAX_BITS}, got {bits}")
    if not 1 <= tables <= MAX_TABLES:
        raise BuildError(f"--tables must be between 1 and {MAX_TABLES}, got {tables}")
    size = table_bytes(tables, bits, classes)
    if size > max_table_mib * 2**20:
        raise BuildError(
            f"the vote tables would be {tables} x 2^{bits} x {classes} = {size // 2:,} int16 cells = "
            f"{size / 2**20:,.1f} MiB, over the limit of {max_table_mib:g} MiB; lower --bits or --tables, "
            f"or raise --max-table-mib"
        )


def _check_hashing(opts: BuildOptions) -> None:
    if opts.hashing not in HASHINGS:
        raise BuildError(f"unknown hashing {opts.hashing!r} (use one of {', '.join(HASHINGS)})")
    if not opts.aligned:
        return
    try:
        opts.shares()
    except BudgetError:
        raise BuildError(f"--class-share must be between 0 and 1 (exclusive), got {opts.class_share}") from None
    if not 1 <= opts.basis_dim <= 384:
        raise BuildError(f"--basis-dim must be between 1 and 384, got {opts.basis_dim}")
    try:
        clip_steps(opts.clip_l1)
    except ValueError as exc:
        raise BuildError(f"--clip-l1: {exc}") from None


def _check_unit(opts: BuildOptions) -> None:
    """A privacy unit needs its bound K, and K means nothing without a unit."""
    k = opts.max_records_per_unit
    if opts.unit_field and (k is None or k < 1):
        raise BuildError("--unit-column needs --max-records-per-unit K (at least 1): the most records one "
                         "person may contribute; the noise scale grows to K*T/epsilon")
    if not opts.unit_field and k not in (None, 1):
        raise BuildError("--max-records-per-unit needs --unit-column: without it, each record is its own unit")


def _check_engine(opts: BuildOptions, benchmark_stand_in: bool) -> None:
    """Refuse engine settings the Ray backend does not support (before any work is done)."""
    if opts.engine not in ENGINES:
        raise BuildError(f"unknown engine {opts.engine!r} (use one of {', '.join(ENGINES)})")
    if opts.engine != "ray":
        if opts.ray_address is not None:
            raise BuildError("--ray-address needs --engine ray")
        return
    if opts.unit_field:
        raise BuildError("--engine ray does not support --unit-column yet (per-person bounding needs a global "
                         "pass over the units); use --engine local")
    if benchmark_stand_in:
        raise BuildError("embed_for_benchmarks is not supported with engine 'ray'")
