"""A build's settings and the checks that refuse bad ones before any record is read.

Every default here is public and chosen without the private data (docs/accuracy.md says
how); choosing them by looking at results on the private records would be a use of those
records that the budget does not cover.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from exporter.class_stats import clip_steps
from exporter.hyperplanes import AUTO_BITS
from exporter.privacy import (MAX_VOTES_SHARE, BudgetError, NeighbourRelation, check_delta, check_epsilon,
                              default_shares, head_shares)

__all__ = ["BuildError", "BuildOptions", "check_head", "check_options", "check_statistics"]

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
    tables: int | None = None  # None: DEFAULT_TABLES (only bundles with vote tables have any)
    bits: int | None = None  # None: DEFAULT_BITS, or with aligned hashing chosen from the noisy record count
    seed: int | None = None
    encoder_source: str | Path | None = None  # a registered name (exporter.encoders) or a folder
    encoder_format: str = "onnx"  # "tflite" ships a LiteRT model (needs the [tflite] extra)
    #: An encoder pack (1.1): embed with its encoder and write a statistics bundle that names it
    #: instead of carrying the encoder (the source and format are the pack's).
    encoder_pack: Path | None = None
    #: An earlier bundle: release these records (disjoint from its) with its public choices and
    #: write the sum of both releases (exporter.extend).
    extend: Path | None = None
    #: The first bundle of an --extend series: the class sums' subspace is chosen for this many
    #: records (the builder's public plan) instead of the first batch's released noisy count.
    planned_records: int | None = None
    models_dir: Path = Path("models")
    fmt: str | None = None
    text_field: str = "text"
    label_field: str = "label"
    skip_unknown_labels: bool = False
    skip_empty_texts: bool = False
    max_table_mib: float | None = None  # None: DEFAULT_MAX_TABLE_MIB (only bundles with vote tables have any)
    unit_field: str | None = None  # privacy unit column (e.g. a user id); None: one record is the unit
    max_records_per_unit: int | None = None  # K, required with unit_field: records kept per unit
    workers: int | None = None  # texts embedded at once, one engine thread each (None: all cores)
    progress: bool = True
    engine: str = "local"  # "local" (this process) or "ray" (Ray Data; exporter/ray_engine.py, docs/ray.md)
    #: "aligned" (default): release noisy class counts and class sums, plus vote tables hashed
    #: in the span of the noisy class directions when ``votes_share`` > 0.
    #: "random": the paper's random hyperplanes and vote tables only.
    hashing: str = "aligned"
    votes_share: float = 0.0
    basis_dim: int | None = None  # None: chosen from the noisy record count (class_stats.choose_subspace)
    clip_l1: float | None = None  # None: the public clip of the chosen dimension
    public_directions: int = 0  # with vote tables: public basis directions hashed besides the class directions
    ray_address: str | None = None  # with engine "ray": None starts a local Ray; "auto" / "ray://HOST:10001" joins
    #: Opt-in (epsilon, delta): release the class counts and a linear head trained by DP-SGD
    #: (exporter.head) instead of the class sums; None (the default): pure epsilon-DP.
    delta: float | None = None

    @property
    def has_head(self) -> bool:
        """Whether the bundle is a head bundle (``--delta``: (epsilon, delta)-DP)."""
        return self.delta is not None

    @property
    def aligned(self) -> bool:
        return self.hashing == "aligned"

    @property
    def has_tables(self) -> bool:
        """Whether the bundle releases vote tables."""
        return not self.has_head and (not self.aligned or self.votes_share > 0)

    @property
    def table_count(self) -> int:
        return DEFAULT_TABLES if self.tables is None else self.tables

    def relation(self) -> NeighbourRelation:
        """The neighbour relation the guarantee is stated for (checked by `check_options`)."""
        if self.unit_field:
            return NeighbourRelation.person(self.unit_field, int(self.max_records_per_unit or 0))
        return NeighbourRelation.record()

    def shares(self) -> dict[str, float]:
        if self.has_head:  # a person of one record is a record: only K above 1 counts the persons
            return head_shares(person=bool(self.unit_field) and (self.max_records_per_unit or 1) > 1)
        return default_shares(self.hashing, self.votes_share)


#: Options only some builds use, as option -> (flag, the value that means "not given"):
#: TABLES_ONLY shape vote tables, ALIGNED_ONLY are aligned hashing's. A build that would ignore
#: one refuses it instead, so that a setting never silently does nothing.
TABLES_ONLY = {"tables": ("--tables", None), "bits": ("--bits", None), "public_directions": ("--public-directions", 0),
               "max_table_mib": ("--max-table-mib", None)}
ALIGNED_ONLY = {"votes_share": ("--votes-share", 0.0), "basis_dim": ("--basis-dim", None),
                "clip_l1": ("--clip-l1", None), "public_directions": ("--public-directions", 0),
                "planned_records": ("--planned-records", None)}
#: Options a head build (--delta) would ignore: it has no class sums, subspace, vote tables,
#: hyperplanes or series of batches. It refuses them, as the other modes do theirs.
HEAD_IGNORES = {"hashing": ("--hashing random", "aligned"), "votes_share": ("--votes-share", 0.0),
                "basis_dim": ("--basis-dim", None), "clip_l1": ("--clip-l1", None), "tables": ("--tables", None),
                "bits": ("--bits", None), "seed": ("--seed", None), "public_directions": ("--public-directions", 0),
                "max_table_mib": ("--max-table-mib", None), "extend": ("--extend", None),
                "planned_records": ("--planned-records", None)}


def _given(opts: BuildOptions, options: dict[str, tuple[str, object]]) -> list[str]:
    """The flags of ``options`` that ``opts`` sets."""
    return [flag for name, (flag, unset) in options.items() if getattr(opts, name) != unset]


def table_bytes(tables: int, bits: int, classes: int) -> int:
    return tables * 2**bits * classes * 2  # int16 cells


def check_options(opts: BuildOptions, classes: int, *, benchmark_stand_in: bool = False) -> None:
    """Refuse settings the build cannot honour, naming the option to change: a head build's
    (`check_head`) or a build with class statistics or vote tables (`check_statistics`)."""
    if opts.has_head:
        check_head(opts, benchmark_stand_in=benchmark_stand_in)
    else:
        check_statistics(opts, classes, benchmark_stand_in=benchmark_stand_in)


def check_head(opts: BuildOptions, *, benchmark_stand_in: bool = False) -> None:
    """The settings of a head build (``--delta``)."""
    _check_epsilon(opts)
    _check_head(opts)
    _check_unit(opts)
    _check_engine(opts, benchmark_stand_in)
    _check_pack(opts)


def check_statistics(opts: BuildOptions, classes: int, *, benchmark_stand_in: bool = False) -> None:
    """The settings of a build that releases class statistics or vote tables."""
    _check_epsilon(opts)
    _check_hashing(opts)
    if opts.has_tables:
        check_shape(opts.table_count, opts.bits or (AUTO_BITS[1] if opts.aligned else DEFAULT_BITS), classes,
                    DEFAULT_MAX_TABLE_MIB if opts.max_table_mib is None else opts.max_table_mib)
    elif given := _given(opts, TABLES_ONLY):
        raise BuildError(f"only a bundle with vote tables uses {', '.join(given)}, and this bundle has none: add "
                         f"--votes-share (or --hashing random), or leave them out")
    _check_unit(opts)
    _check_engine(opts, benchmark_stand_in)
    _check_pack(opts)


def _check_epsilon(opts: BuildOptions) -> None:
    try:
        check_epsilon(opts.epsilon)
    except ValueError as exc:
        raise BuildError(str(exc)) from None


def _check_pack(opts: BuildOptions) -> None:
    if opts.encoder_pack is not None and opts.extend is None and (opts.encoder_source is not None
                                                                  or opts.encoder_format != "onnx"):
        raise BuildError("--encoder-pack gives the encoder (its model and format): leave out --encoder and "
                         "--encoder-format")


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
        if given := _given(opts, ALIGNED_ONLY):
            raise BuildError(f"only aligned hashing uses {', '.join(given)}, and --hashing random releases its "
                             f"vote tables alone: leave them out, or use --hashing aligned")
        return
    try:
        opts.shares()
    except BudgetError:
        raise BuildError(f"--votes-share must be between 0 and {MAX_VOTES_SHARE}, got {opts.votes_share}") from None
    if opts.basis_dim is not None and not 1 <= opts.basis_dim <= 384:
        raise BuildError(f"--basis-dim must be between 1 and 384, got {opts.basis_dim}")
    if opts.planned_records is not None and (opts.planned_records < 1 or opts.basis_dim is not None):
        raise BuildError("--planned-records is a number of records (at least 1) the subspace is chosen for; "
                         "--basis-dim chooses it outright: give one of them")
    if opts.clip_l1 is not None:
        try:
            clip_steps(opts.clip_l1)
        except ValueError as exc:
            raise BuildError(f"--clip-l1: {exc}") from None


def _check_head(opts: BuildOptions) -> None:
    """A head build (--delta): delta in range, and none of the options it would ignore."""
    try:
        check_delta(opts.delta)
    except ValueError as exc:
        raise BuildError(f"--delta: {exc} (it is opt-in: leave --delta out for the default pure epsilon-DP "
                         "bundle)") from None
    if given := _given(opts, HEAD_IGNORES):
        raise BuildError(f"a head bundle (--delta) has no class sums, vote tables or hyperplanes and does not extend a "
                         f"series, so it would ignore {', '.join(given)}: leave them out, or leave out --delta")


def _check_unit(opts: BuildOptions) -> None:
    """A privacy unit needs its bound K, and K means nothing without a unit."""
    k = opts.max_records_per_unit
    if opts.unit_field and (k is None or k < 1):
        raise BuildError("--unit-column needs --max-records-per-unit K (at least 1): the most records one "
                         "person may contribute; every release's sensitivity and noise scale grow K-fold")
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
