"""The bundle format 1, in Python: format/1/schema.json read into names the runtime uses.

The format is defined once, as data, in format/1/schema.json (every key, type, dtype, shape,
bound, condition, relation, constant and error code); the Python, Java and TypeScript readers
each interpret that file, and docs/bundle-format.md is generated from it. This module gives
the Python code its rows as `Field` objects, its constants as names (spelt once: each comes
from the file), and the decoded form of a bundle (`Bundle`).

Example:
    >>> FIELDS_BY_PATH["privacy.epsilon"].kind, FIELDS_BY_PATH["releases.votes.values"].shape
    ('float', ('T', '2^H', 'C'))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime.contract import schema as _contract

_S = _contract()
FORMAT_NAME: str = _S["format"]
#: The magic of an encoder pack (1.1): a file holding one encoder, named by bundles by its digest.
PACK_FORMAT_NAME: str = _S["pack_format"]
#: What this reader reads and what the writer writes: major 1 for ever; a minor adds optional fields.
FORMAT_VERSION: tuple[int, int] = tuple(_S["version"])  # type: ignore[assignment]
#: The magic of the pre-release formats (0.x to 4.0): recognised only to refuse them in one line.
PRE_RELEASE_NAME: str = _S["pre_release_name"]
#: The statistics a bundle can release, in release order.
STATISTICS: tuple[str, ...] = tuple(_S["statistics"])

_C = _S["container"]
#: The file ends with the digest entry: the key "sha256" (a 7-byte fixstr), a bin8 header of
#: length 32, the digest: SHA-256 of every byte before these 41.
DIGEST_TAIL = bytes.fromhex(_C["digest_tail_hex"])
DIGEST_BYTES: int = _C["digest_bytes"]
TAIL_BYTES = len(DIGEST_TAIL) + DIGEST_BYTES
MAX_BUNDLE_BYTES: int = _C["max_bundle_bytes"]
MAX_DEPTH: int = _C["max_depth"]
BYTES_PER_VALUE: int = _C["bytes_per_value"]
VALUE_ALLOWANCE: int = _C["value_allowance"]
MAX_CONTAINER: int = _C["max_container"]


@dataclass(frozen=True)
class Field:
    """One row of the format's field table (format/1/schema.json "fields").

    ``kind``: "map", "str", "int", "float", "bool", "bin", "version", "strings" (an array of
    strings) or "ndarray" (an array record: ``{"dtype", "shape", "data"}``). ``need``:
    "required", "optional", or ``"iff X"`` (present exactly when the condition X holds).
    ``low``/``high`` bound a number, or the length of a string, a bin or an array of strings.
    ``shape`` is in the symbols of `DIMS`; ``text`` names a text kind ("printable", "label",
    "description"); ``open`` marks an informational map with free keys.
    """

    path: str
    kind: str
    need: str
    doc: str
    low: float | None = None
    high: float | None = None
    dtype: str | None = None
    shape: tuple[str, ...] = ()
    choices: tuple[Any, ...] = ()
    text: str | None = None
    open: bool = False
    #: The minor version that added the field (None: 1.0); a writer writes the newest minor of
    #: the fields it writes, so that older readers read every bundle that needs nothing newer.
    since: tuple[int, int] | None = None
    #: Present, it must be in ``requires`` (relation "listed"): its absence would change an answer,
    #: so a reader that does not know it must refuse the bundle rather than ignore it.
    listed: bool = False

    @property
    def key(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str:
        return self.path.rpartition(".")[0]


def _field(row: dict[str, Any]) -> Field:
    bounds = {k: float(row[k]) for k in ("low", "high") if k in row and row["kind"] == "float"}  # 1e6, not 1000000
    return Field(**{**row, **bounds, "shape": tuple(row.get("shape", ())), "choices": tuple(row.get("choices", ())),
                    "since": tuple(row["since"]) if "since" in row else None})


FIELDS: tuple[Field, ...] = tuple(_field(row) for row in _S["fields"])
FIELDS_BY_PATH: dict[str, Field] = {f.path: f for f in FIELDS}
#: An encoder pack's rows: its magic, the version and the table's encoder (required there), then
#: the digest; a pack holds nothing else.
PACK_FIELDS: tuple[Field, ...] = (
    Field(**{**vars(FIELDS_BY_PATH["format"]), "choices": (PACK_FORMAT_NAME,), "doc": "the magic of a pack"}),
    FIELDS_BY_PATH["version"],
    *(Field(**{**vars(f), "need": "required"}) if f.path == "encoder" else f
      for f in FIELDS if f.path == "encoder" or f.path.startswith("encoder.")),
    FIELDS_BY_PATH["sha256"],
)


class _Keys:
    """Every key of the format as a constant (``Key.EPSILON == "epsilon"``), made from the table
    itself so that a key is spelt once: the table's keys, an array record's, and the informational
    ones the exporter writes. A key used in several maps is one constant."""

    def __init__(self, names: set[str]):
        self.__dict__.update({n.upper(): n for n in names})

    def __getattr__(self, name: str) -> str:  # for type checkers: every attribute is a key
        raise AttributeError(f"the format has no key {name.lower()!r}")


Key = _Keys({f.key for f in FIELDS} | set(_S["array_keys"]) | {"name", "created"})

#: The symbols of array shapes: (what defines it, low, high).
DIMS: dict[str, tuple[str, int, int]] = {k: (v["defined_by"], v["low"], v["high"]) for k, v in _S["dims"].items()}
#: The conditions of ``need = "iff X"``: name -> (rule, words).
CONDITIONS: dict[str, str] = {k: v["doc"] for k, v in _S["conditions"].items()}
#: Checks across fields, in the order a reader applies them: (name, code, path, statement).
RELATIONS: tuple[tuple[str, str | None, str | None, str], ...] = tuple(
    (r["name"], r["code"], r["path"], r["statement"]) for r in _S["relations"])
#: The text kinds: name -> (most characters, rules in order).
TEXT_KINDS: dict[str, tuple[int, tuple[str, ...]]] = {
    k: (v["max_chars"], tuple(v["rules"])) for k, v in _S["text"]["kinds"].items()}
#: Every refusal's code and what it means.
ERRORS: dict[str, str] = _S["errors"]

ENCODER_FORMATS: tuple[str, ...] = FIELDS_BY_PATH["encoder.format"].choices
ENCODER_INPUTS: tuple[str, ...] = FIELDS_BY_PATH["encoder.inputs"].choices
MAX_CLASSES, MAX_DIM = DIMS["C"][2], DIMS["D"][2]
MAX_TABLES, MAX_BITS = DIMS["T"][2], DIMS["H"][2]
MAX_LABEL_CHARS, MAX_DESCRIPTION_CHARS = TEXT_KINDS["label"][0], TEXT_KINDS["description"][0]
#: Longest free-text string (mechanism, neighbour relation, public inputs...).
MAX_TEXT_CHARS = TEXT_KINDS["printable"][0]
MAX_CHECK_TEXT_CHARS = int(FIELDS_BY_PATH["encoder.check_text"].high)
MAX_TOKENIZER_JSON_CHARS = int(FIELDS_BY_PATH["encoder.tokenizer_json"].high)
MAX_SENSITIVITY = int(FIELDS_BY_PATH["releases.votes.sensitivity_l1"].high)
MAX_RECORDS_PER_UNIT = int(FIELDS_BY_PATH["privacy.max_records_per_unit"].high)
EPSILON_MIN, EPSILON_MAX = FIELDS_BY_PATH["privacy.epsilon"].low, FIELDS_BY_PATH["privacy.epsilon"].high
TEMPERATURE_MIN = FIELDS_BY_PATH["scoring.centroid_temperature"].low
TEMPERATURE_MAX = FIELDS_BY_PATH["scoring.centroid_temperature"].high
#: Relative tolerance of the privacy relations (the writer derives shares and scales by float
#: arithmetic).
PRIVACY_RTOL: float = _S["privacy_rtol"]
#: Largest C x k x D (relation "work").
MAX_WORK: int = _S["max_work"]
CHECK_NORM: tuple[float, float] = tuple(_S["check_norm"])  # type: ignore[assignment]
#: How the bundle must word its privacy unit and neighbour relation (relation "wording").
WORDING: dict[str, dict[str, str]] = _S["wording"]
#: The prior's boost R C K / (epsilon N) is capped here; a vector whose norm is at most
#: NEAR_ZERO has no direction; unit(v) divides by at least UNIT_MIN_NORM.
BOOST_MAX: float = float(_S["scoring"]["boost_max"])
NEAR_ZERO: float = _S["scoring"]["near_zero"]
UNIT_MIN_NORM: float = _S["scoring"]["unit_min_norm"]
#: A text longer than this (code points) is refused rather than tokenized.
MAX_QUERY_CHARS: int = _S["query"]["max_chars"]

_E = _S["encoder"]
#: An engine whose embedding of the check text is less similar than this to the exporter's is
#: computing something else (docs/encoder.md: other CPUs and engine versions stay above 0.998).
CHECK_MIN_COSINE: float = _E["check_min_cosine"]
#: Engine budgets (runtime/limits.py): the arena every tensor comes from, and the time one run
#: may take at load and per query.
ENGINE_ARENA_BYTES: int = _E["arena_bytes"]
LOAD_RUN_SECONDS_BASE: float = _E["load_run_seconds"]
QUERY_RUN_SECONDS_BASE: float = _E["query_run_seconds"]
#: Budgets are CPU seconds of the work's thread; wall time may run to this many times them.
WALL_FACTOR: float = _E["wall_factor"]
#: Settings every ONNX session gets (no constant folding: it runs where a load cannot be stopped).
ONNX_SESSION_CONFIG: dict[str, str] = _E["onnx_session_config"]

# --------------------------------------------------------------------------- engines
# A bundle travels, so what it hands to native code (onnxruntime, LiteRT) is of a declared
# family and bounded (runtime/bundle/model_family.py).
_O, _T = _S["onnx"], _S["tflite"]
ONNX_DOMAINS: tuple[str, ...] = tuple(_O["domains"])
ONNX_OPS = frozenset(tuple(op) for op in _O["ops"])
#: The node inputs an encoder may leave out (an empty name), by (domain, operator): those the
#: kernel takes as optional. onnxruntime crashed on a LayerNormalization whose bias was left out.
ONNX_OPTIONAL_INPUTS: dict[tuple[str, str], frozenset[int]] = {(d, op): frozenset(p) for d, op, p in _O["optional_inputs"]}
#: The encoder families (``encoder.family``, 1.2; absent: ``DEFAULT_FAMILY``): the encoder formats
#: each is read in, and its ONNX operators (the common `ONNX_OPS` and the family's own).
DEFAULT_FAMILY = "bert"
FAMILY_FORMATS: dict[str, tuple[str, ...]] = {k: tuple(v["formats"]) for k, v in _S["families"].items()}
FAMILY_ONNX_OPS: dict[str, frozenset[tuple[str, str]]] = {
    k: ONNX_OPS | frozenset(tuple(op) for op in v["onnx_ops"]) for k, v in _S["families"].items()}
MAX_ONNX_NODES: int = _O["max_nodes"]
#: An ONNX encoder's initializers may keep their data in ``encoder.weights``: external data
#: whose location is this placeholder (256 bytes) and whose offset and length (within
#: encoder.weights) are NUMBER_DIGITS-digit decimals. The fixed widths let a reader that maps the
#: bundle file rewrite them in place for its engine.
WEIGHTS_LOCATION: str = _O["weights_location"] + "." * (_O["weights_location_bytes"] - len(_O["weights_location"]))
NUMBER_DIGITS: int = _O["number_digits"]
#: The TFLite builtin operators an encoder may use, by name and schema code, in one subgraph.
TFLITE_OPS: dict[str, int] = _T["ops"]
MAX_TFLITE_OPERATORS: int = _T["max_operators"]
#: The operator inputs an encoder may leave out (tensor index -1), by operator code: those the
#: operator's kernel treats as optional (FULLY_CONNECTED's bias). Elsewhere a kernel reads an
#: omitted input as a tensor that is not there.
TFLITE_OPTIONAL_INPUTS: dict[int, frozenset[int]] = {TFLITE_OPS[k]: frozenset(v) for k, v in _T["optional_inputs"].items()}
#: Fields of a TFLite Tensor and Operator table (schema.fbs field indices, by name) the family's
#: encoders never write: state (variable tensors and the operators that change them), sparse
#: and variant tensors, custom options. Each must be absent from the vtable.
TFLITE_ABSENT_FIELDS: dict[str, dict[str, int]] = _T["absent_fields"]
#: The tokenizer family's largest vocabulary (format/1/schema.json "tokenizer").
MAX_VOCAB_SIZE: int = dict(dict(_S["tokenizer"]["document"]["keys"])["model"]["keys"])["vocab"]["max_items"]
# --------------------------------------------------------------------------- decoded form


@dataclass(frozen=True)
class WeightsFile:
    """Where an ONNX encoder's weights were left: ``length`` bytes at ``offset`` of the file at
    ``path``, whose identity (device, inode, size, modification time) must not change while an
    engine maps it."""

    path: str
    offset: int
    length: int
    identity: tuple[int, int, int, int]


@dataclass(frozen=True)
class EncoderSpec:
    """What the bundle says about its encoder: the model bytes the engine runs and what a
    reader must do around them (tokenizer, prefix, length, inputs, output, check).

    An ONNX model's initializers keep their data in ``weights`` (in memory), or, when the
    reader left them in the bundle file for the engine to map, at ``weights_file``.
    """

    format: str
    model: bytes
    tokenizer_json: str
    max_length: int
    dim: int
    text_prefix: str
    inputs: tuple[str, ...]
    output: str
    check_text: str
    check_embedding: np.ndarray
    facts: dict[str, Any] | None = None
    weights: bytes = b""
    weights_file: WeightsFile | None = None
    #: The tokenizer.json as the reader checked it (runtime.bundle.tokenizer_family); None until
    #: a reader has checked it (an exporter's own spec).
    tokenizer: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    #: The architecture (``encoder.family``, 1.2): which operators the model may use.
    family: str = DEFAULT_FAMILY


@dataclass(frozen=True)
class EncoderPack:
    """A checked encoder pack (1.1): its digest, which a statistics bundle names in
    ``encoder_pack``, the encoder it holds, and its checked field values (the ``encoder``
    paths), which stand in for a bundle's own when the bundle is read with it."""

    digest: bytes
    encoder: EncoderSpec
    values: dict[str, Any] = field(compare=False, repr=False)

    @property
    def sha256(self) -> str:
        """The digest in hex, as people and `expect` lists write it."""
        return self.digest.hex()


@dataclass(frozen=True)
class ReleaseFacts:
    """One release's privacy facts (its noisy values live in the `Bundle`)."""

    statistic: str
    epsilon: float
    sensitivity_l1: int
    noise_scale: float
    mechanism: str
    grid: int | None = None
    clip_l1: float | None = None


@dataclass(frozen=True)
class HeadRelease:
    """The linear head (1.1): a softmax layer trained by DP-SGD on the frozen embeddings, with
    the facts of its (epsilon, delta) guarantee. Its weights are post-processing of the noisy
    gradient sums; ``origin`` is the public centre its inputs are measured from. A text's
    scores are softmax(weights (x - origin) + bias)."""

    epsilon: float
    delta: float
    #: round(grid x clip_l2): how far one unit (a record, or a person's records clipped together)
    #: moves one step's gradient sum (L2, grid units).
    sensitivity_l2: int
    #: The Gaussian's standard deviation in grid units: noise_multiplier x sensitivity_l2.
    noise_scale: float
    noise_multiplier: float
    #: Poisson sampling: each unit (a record, or a person) is in a step's batch with this probability.
    sample_rate: float
    steps: int
    grid: int
    clip_l2: float
    #: The accountant that bounds (epsilon, delta): library, version and method, in words.
    accountant: str
    mechanism: str
    origin: np.ndarray
    weights: np.ndarray
    bias: np.ndarray


@dataclass(frozen=True)
class Scoring:
    """The blend's constants (section "Scoring" of docs/bundle-format.md)."""

    centroid_temperature: float
    prior_temperature: float
    prior_records_per_class: float
    description_pull: float


@dataclass(frozen=True)
class Bundle:
    """A decoded, validated bundle.

    ``class_counts`` (C,) and ``class_sums`` (C, k) are the noisy integers as released (sums in
    grid units: divide by ``releases["class_sums"].grid``); ``votes`` is (T, 2^H, C) int16.
    Class statistics come with ``origin`` (D,) and ``projection`` (k, D); vote tables with
    ``hyperplanes`` (T, H, D) and optional ``offsets`` (T, H). ``privacy`` is the privacy map
    as read, ``releases`` each release's facts by statistic.
    """

    labels: tuple[str, ...]
    label_descriptions: tuple[str, ...] | None
    privacy: dict[str, Any]
    releases: dict[str, ReleaseFacts]
    encoder: EncoderSpec
    class_counts: np.ndarray | None = None
    class_sums: np.ndarray | None = None
    origin: np.ndarray | None = None
    projection: np.ndarray | None = None
    votes: np.ndarray | None = None
    hyperplanes: np.ndarray | None = None
    offsets: np.ndarray | None = None
    seed: int | None = None
    prior: np.ndarray | None = None
    scoring: Scoring | None = None
    exporter: dict[str, Any] | None = None
    #: Paths a reader must know to answer as the writer meant (absent: None).
    requires: tuple[str, ...] | None = None
    version: tuple[int, int] = FORMAT_VERSION
    #: The digest of the encoder pack the bundle names (a statistics bundle), else None: the
    #: bundle carries its encoder. Either way ``encoder`` is the encoder it is scored with.
    encoder_pack: bytes | None = None
    #: The linear head (1.1, an approximate (epsilon, delta) release), else None.
    head: HeadRelease | None = None
    #: The noisy number of persons a person-level head's rule read (1.3), else None.
    unit_count: int | None = None

    @property
    def delta(self) -> float:
        """The bundle's delta: 0.0 for pure epsilon-DP; the head's delta with a head (1.1)."""
        return float(self.privacy[Key.DELTA])

    @property
    def epsilon(self) -> float:
        return float(self.privacy[Key.EPSILON])

    @property
    def batches(self) -> int:
        """B, the disjoint batches whose releases the statistics sum (1.1; absent: 1)."""
        return int(self.privacy.get(Key.BATCHES, 1))

    @property
    def records_per_unit(self) -> int:
        """K, the records kept per privacy unit."""
        return int(self.privacy[Key.MAX_RECORDS_PER_UNIT])

    @property
    def sums(self) -> np.ndarray | None:
        """The noisy class sums in embedding units, float64 (post-processing of the release)."""
        if self.class_sums is None:
            return None
        return self.class_sums.astype(np.float64) / self.releases[Key.CLASS_SUMS].grid

    @property
    def tables(self) -> int:
        return 0 if self.hyperplanes is None else int(self.hyperplanes.shape[0])

    @property
    def bits(self) -> int:
        return 0 if self.hyperplanes is None else int(self.hyperplanes.shape[1])
