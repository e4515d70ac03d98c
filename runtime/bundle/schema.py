"""The bundle schema: every field name, type, version and bound of the format, named once.

The reader, the writer, `describe`, the exporter, the golden vectors of the Java core and
the bundle fuzzer all take names and limits from here, so a field cannot be spelt two ways
and a bound cannot drift between the code that enforces it and the message that states it.
docs/bundle-format.md is the normative description of the same contract.

Names are grouped by the map they live in (`Payload`, `Privacy`, `Lsh`, ...); a dotted path
such as ``privacy.epsilon`` is ``f"{Payload.PRIVACY}.{Privacy.EPSILON}"``.

Example:
    >>> Payload.PRIVACY, Privacy.EPSILON, path(Payload.PRIVACY, Privacy.EPSILON)
    ('privacy', 'epsilon', 'privacy.epsilon')
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

FORMAT_NAME = "dpedge-bundle"
#: What a bundle with class statistics is written as (3.0: vote tables optional, the
#: public-frame cosine rule and the linear prior weight; 4.0: the description pull).
FORMAT_VERSION = (4, 0)
#: What a bundle with vote tables only is written as (``--hashing random``).
FORMAT_VERSION_PLAIN = (1, 2)
#: Majors this reader understands; a newer major is refused, a newer minor only adds fields.
SUPPORTED_MAJORS = (1, 2, 3, 4)
#: From this major on, ``lsh`` and ``votes`` are optional (a bundle may release class
#: statistics alone).
VOTES_OPTIONAL_FROM = 3
CHECKSUM_ALGORITHM = "sha256"


#: A release's ``grid`` is read only when it is an integer from 1 to this (see `stated_grid`).
MAX_GRID = 2**31


def stated_grid(value: Any) -> int | None:
    """A release's ``grid`` when it is one a reader may compute with (an integer from 1 to
    MAX_GRID), else None: the sums' sensitivity check and the scorer's noise units read it
    alike, so a bundle cannot mean one grid to one and another to the other.

    Example:
        >>> stated_grid(100), stated_grid(0), stated_grid(100.0), stated_grid(True)
        (100, None, None, None)
    """
    return value if type(value) is int and 1 <= value <= MAX_GRID else None


def path(*keys: str) -> str:
    """The dotted path of a field, as error messages name it.

    Example:
        >>> path(Payload.LSH, Lsh.OFFSETS)
        'lsh.offsets'
    """
    return ".".join(k for k in keys if k)


class Outer:
    """The file's outer map: the magic, the version, the checksum and the payload bytes."""

    FORMAT = "format"
    VERSION = "version"
    CHECKSUM = "checksum"
    PAYLOAD = "payload"
    #: Inside ``checksum``.
    ALGORITHM = "algorithm"
    DIGEST = "digest"


class Payload:
    """Keys of the payload map."""

    LABELS = "labels"
    LABEL_DESCRIPTIONS = "label_descriptions"
    PRIVACY = "privacy"
    LSH = "lsh"
    VOTES = "votes"
    ENCODER = "encoder"
    EXPORTER = "exporter"
    # format 2
    CLASS_STATS = "class_stats"
    PRIOR = "prior"
    SCORING = "scoring"


class Array:
    """Keys of an array record: explicit little-endian dtype, shape, C-order bytes."""

    DTYPE = "dtype"
    SHAPE = "shape"
    DATA = "data"


class Privacy:
    """Keys of ``privacy``: the bundle's own statement of its guarantee."""

    EPSILON = "epsilon"
    DELTA = "delta"
    MECHANISM = "mechanism"
    SENSITIVITY_L1 = "sensitivity_l1"
    NOISE_SCALE = "noise_scale"
    NEIGHBOUR_RELATION = "neighbour_relation"
    PRIVACY_UNIT = "privacy_unit"
    MAX_RECORDS_PER_UNIT = "max_records_per_unit"
    NOISE_SOURCE = "noise_source"
    NOISE_LIBRARY = "noise_library"
    NOISE_LIBRARY_VERSION = "noise_library_version"
    POST_PROCESSING = "post_processing"
    RELEASED_STATISTICS = "released_statistics"
    PUBLIC_INPUTS = "public_inputs"
    COMPOSITION = "composition"
    RELEASES = "releases"


class Release:
    """Keys of one entry of ``privacy.releases``: a released statistic and its share."""

    STATISTIC = "statistic"
    EPSILON = "epsilon"
    MECHANISM = "mechanism"
    SENSITIVITY_L1 = "sensitivity_l1"
    NOISE_SCALE = "noise_scale"
    MAX_RECORDS_PER_UNIT = "max_records_per_unit"
    NOISE_SOURCE = "noise_source"
    # class statistics only
    GRID = "grid"
    COUNT_GRID = "count_grid"
    CLIP_L1 = "clip_l1"
    DIM = "dim"
    NOTE = "note"


class Statistic:
    """Values of ``privacy.releases[i].statistic``: the statistics a bundle can release."""

    VOTES = "votes"
    #: Format 2: class sums and counts in one release.
    CLASS_STATS = "class_stats"
    #: Format 3: the class counts, then the class sums in a subspace the counts chose.
    CLASS_COUNTS = "class_counts"
    CLASS_SUMS = "class_sums"


class Lsh:
    """Keys of ``lsh``: the SimHash parameters and hyperplanes."""

    FAMILY = "family"
    TABLES = "tables"
    BITS = "bits"
    DIM = "dim"
    SEED = "seed"
    DISTRIBUTION = "distribution"
    BIT_RULE = "bit_rule"
    BITS_RULE = "bits_rule"
    HYPERPLANES = "hyperplanes"
    OFFSETS = "offsets"


LSH_FAMILY = "simhash"


class EncoderKey:
    """Keys of ``encoder``: the sentence encoder and what a reader needs to run it."""

    FORMAT = "format"
    MODEL = "model"
    TOKENIZER_JSON = "tokenizer_json"
    MAX_LENGTH = "max_length"
    DIM = "dim"
    POOLING = "pooling"
    NORMALIZED = "normalized"
    INPUTS = "inputs"
    OUTPUT = "output"
    FACTS = "facts"
    CHECK = "check"
    #: Inside ``check``.
    CHECK_TEXT = "text"
    CHECK_EMBEDDING = "embedding"


class ClassStatsKey:
    """Keys of ``class_stats``: the released class statistics and their public subspace."""

    ORIGIN = "origin"
    PROJECTION = "projection"
    SUMS = "sums"
    COUNTS = "counts"


class PriorKey:
    """Keys of ``prior``: the label descriptions' embeddings."""

    EMBEDDINGS = "embeddings"
    SOURCE = "source"


class Scoring:
    """Keys of ``scoring``: the blend's weights, temperatures and rules."""

    VOTES = "votes"
    CENTROIDS = "centroids"
    PRIOR = "prior"
    CENTROID_TEMPERATURE = "centroid_temperature"
    PRIOR_TEMPERATURE = "prior_temperature"
    CENTROID_RULE = "centroid_rule"
    CENTROID_CLIP_L1 = "centroid_clip_l1"
    PRIOR_RECORDS_PER_CLASS = "prior_records_per_class"
    PRIOR_BOOST_RULE = "prior_boost_rule"
    #: 4.0: how far the "cosine_public" rule pulls each noisy class sum toward its label
    #: description, in root-mean-square norms of the sums' noise (absent: 0, no pull).
    DESCRIPTION_PULL = "description_pull"
    RULE = "rule"


class ExporterKey:
    """Keys of ``exporter``: who wrote the bundle and when."""

    NAME = "name"
    VERSION = "version"
    CREATED = "created"
    #: Only in benchmark stand-in bundles: says their votes were not made by their encoder.
    EMBEDDINGS = "embeddings"


# --------------------------------------------------------------------------- types and bounds

VOTES_DTYPE = np.dtype("<i2")
FLOAT_DTYPE = np.dtype("<f4")
#: The float arrays (hyperplanes, offsets, class statistics, prior, check embedding) are all <f4.
HYPERPLANES_DTYPE = FLOAT_DTYPE
ENCODER_FORMATS = ("onnx", "tflite")
ENCODER_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

#: Largest file a reader reads; bundles are tens of MB, so anything near this is not one.
MAX_BUNDLE_BYTES = 2 * 1024**3
#: Bits per table and tables the format admits (the exporter itself allows 20 and 128).
MAX_BITS = 24
MAX_TABLES = 1024
MAX_LENGTH_RANGE = (2, 8192)
#: A backend whose embedding of the check text is less similar than this to the exporter's
#: is computing something else (docs/encoder.md: other CPUs and engine versions stay above 0.998).
CHECK_MIN_COSINE = 0.98

#: How the centroid component turns a query into logits: "cosine" (format 2.0), "gaussian"
#: (2.1), "cosine_public" (3.0: cosine to the class sums in the public-centred frame).
CENTROID_RULES = ("cosine", "gaussian", "cosine_public")
#: How the prior's weight follows the release: "max" (2.x: max(1, 1/epsilon, R C / (epsilon
#: N))) or "linear" (3.0: R C K / (epsilon N), fading as the release holds more signal).
PRIOR_BOOST_RULES = ("max", "linear")
#: The ``scoring`` names that hold numbers.
SCORING_NUMBERS = (Scoring.VOTES, Scoring.CENTROIDS, Scoring.PRIOR, Scoring.CENTROID_TEMPERATURE,
                   Scoring.PRIOR_TEMPERATURE, Scoring.CENTROID_CLIP_L1, Scoring.PRIOR_RECORDS_PER_CLASS,
                   Scoring.DESCRIPTION_PULL)
SCORING_TEMPERATURES = (Scoring.CENTROID_TEMPERATURE, Scoring.PRIOR_TEMPERATURE)
#: Bounds on those numbers: far outside anything measured, and inside them the blend cannot
#: overflow (weights and the prior's boost at most SCORING_MAX, temperatures at least
#: TEMPERATURE_MIN).
SCORING_MAX = 1e6
TEMPERATURE_MIN = 1e-6
# --------------------------------------------------------------------------- hostile contents
# A bundle travels (downloads, tickets, copies to a device), so what it hands to native code
# (tokenizers, onnxruntime, LiteRT) is bounded and of a declared family, checked before any
# engine sees it (docs/bundle-format.md section 10; runtime/bundle/tokenizer_family.py and
# runtime/bundle/model_family.py enforce these).

#: Longest msgpack string anywhere in a bundle, in bytes (the longest field, the tokenizer's
#: JSON, is at most MAX_TOKENIZER_JSON_CHARS characters of at most 4 bytes each).
MAX_STRING_BYTES = 16 * 1024**2
#: Longest ``encoder.check.text``: the exporter's is 83 characters. Each byte of it is run
#: through the tokenizer and the encoder at load, before any query.
MAX_CHECK_TEXT_CHARS = 1000
#: Longest ``encoder.tokenizer_json`` (all-MiniLM-L6-v2's is 466,247 characters; a 120,000-token
#: multilingual BERT vocabulary fits in about 2.5 million).
MAX_TOKENIZER_JSON_CHARS = 4_000_000
#: Most vocabulary entries, longest token (vocabulary and added tokens), most added tokens.
MAX_VOCAB_SIZE = 250_000
MAX_TOKEN_CHARS = 100
MAX_ADDED_TOKENS = 1000
#: WordPiece's ``max_input_chars_per_word`` (longer words become the unknown token); its
#: greedy match costs up to the square of this per word, so it is bounded too.
MAX_INPUT_CHARS_PER_WORD = 100
#: Longest ``continuing_subword_prefix`` (BERT's is "##").
MAX_PREFIX_CHARS = 8
#: Longest ``encoder.output`` name.
MAX_NAME_CHARS = 128
#: Labels and their descriptions are printed by the CLI: bounded, and none of the characters
#: of UNPRINTABLE_CODE_POINTS.
MAX_LABEL_CHARS = 200
MAX_DESCRIPTION_CHARS = 2000
#: What labels and descriptions may not hold: the control characters (Unicode category Cc: C0,
#: DEL and C1, which carry terminal escape sequences, carriage returns and line breaks), the
#: line and paragraph separators, and the bidirectional controls (which reorder what a line
#: shows). Ranges of code points, inclusive.
UNPRINTABLE_CODE_POINTS = ((0x00, 0x1F), (0x7F, 0x9F), (0x061C, 0x061C), (0x200E, 0x200F), (0x2028, 0x202E),
                           (0x2066, 0x2069))

#: The tokenizer family (the components of a BERT WordPiece tokenizer.json, as the exporter
#: writes all-MiniLM-L6-v2's): anything else is refused before `tokenizers` parses it.
TOKENIZER_KEYS = ("version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
                  "post_processor", "decoder", "model")
TOKENIZER_REQUIRED = ("added_tokens", "normalizer", "pre_tokenizer", "post_processor", "model")
TOKENIZER_NORMALIZER = "BertNormalizer"
TOKENIZER_PRE_TOKENIZER = "BertPreTokenizer"
TOKENIZER_MODEL = "WordPiece"
TOKENIZER_POST_PROCESSOR = "TemplateProcessing"
TOKENIZER_DECODER = "WordPiece"

#: The ONNX operators an encoder may use: exactly those of the int8 all-MiniLM-L6-v2 that
#: exporter/encoder_export.py writes (optimum export, MatMulNBits, int8 Gather), read from the
#: exported model (tests/test_hostile_bundles.py checks the exporter's own model against it).
#: No control flow (Loop, If, Scan), no Tile, Range or anything else the exporter never writes.
ONNX_DOMAINS = ("", "ai.onnx", "com.microsoft")
ONNX_OPS = frozenset({
    ("", op) for op in (
        "Add", "Cast", "Clip", "Concat", "Constant", "ConstantOfShape", "DequantizeLinear", "Div", "Equal",
        "Erf", "Expand", "Gather", "LayerNormalization", "MatMul", "Mul", "ReduceL2", "ReduceSum", "Reshape",
        "Shape", "Slice", "Softmax", "Sqrt", "Sub", "Transpose", "Unsqueeze", "Where")
} | {("com.microsoft", "MatMulNBits")})
#: Most nodes and initializers in an ONNX encoder graph (the exporter's: 571 and 143).
MAX_ONNX_NODES = 20_000
#: The TFLite builtin operators an encoder may use, by name and schema code: exactly those of
#: the int8 all-MiniLM-L6-v2 that exporter/tflite_export.py writes (no WHILE, IF, CALL_ONCE,
#: FILL, TILE or custom operators), in one subgraph (control flow needs a second).
TFLITE_OPS = {
    "ADD": 0, "CONCATENATION": 2, "DEQUANTIZE": 6, "FULLY_CONNECTED": 9, "L2_NORMALIZATION": 11, "MUL": 18,
    "RESHAPE": 22, "SOFTMAX": 25, "GATHER": 36, "TRANSPOSE": 39, "MEAN": 40, "SUB": 41, "STRIDED_SLICE": 45,
    "CAST": 53, "EXPAND_DIMS": 70, "RSQRT": 76, "SHAPE": 77, "REDUCE_PROD": 81, "PACK": 83, "ZEROS_LIKE": 93,
    "RANGE": 96, "SQUARED_DIFFERENCE": 99, "BATCH_MATMUL": 126, "BROADCAST_TO": 130, "GELU": 150,
}
#: Most operators and tensors in the TFLite subgraph (the exporter's: 555 and 673).
MAX_TFLITE_OPERATORS = 20_000

#: What running the encoder may cost (runtime/onnx_backend.py, runtime/encoder.py): onnxruntime
#: allocates every tensor from an arena capped at ENGINE_ARENA_BYTES (the exporter's encoder
#: needs under 16 MiB at 256 tokens, 40 MiB at 512), and a run longer than the budget is stopped (the check
#: text at load: LOAD_RUN_SECONDS; a query: QUERY_RUN_SECONDS).
ENGINE_ARENA_BYTES = 128 * 1024**2

#: The user's environment (never the bundle) may stretch every time budget by a factor for a
#: slow CPU: an emulator runs the encoder 10 to 50 times slower than the host, and a bundle
#: that would be stopped there is not hostile. Any finite budget still stops a hang.
TIME_SCALE_ENV = "DPEDGE_TIME_SCALE"
MAX_TIME_SCALE = 1000.0


def time_scale(environ: dict[str, str] | None = None) -> float:
    """The factor from ``$DPEDGE_TIME_SCALE`` (1 to 1000; unset, empty or invalid: 1, and an
    invalid value is reported on stderr in one line rather than stopping the import).

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
        value = math.nan
    if not 1.0 <= value <= MAX_TIME_SCALE:
        print(f"dpedge: ignoring {TIME_SCALE_ENV}={raw[:40]!r}: it must be a number from 1 to "
              f"{MAX_TIME_SCALE:g}", file=sys.stderr)
        return 1.0
    return value


TIME_SCALE = time_scale()
LOAD_RUN_SECONDS = 3.0 * TIME_SCALE
QUERY_RUN_SECONDS = 10.0 * TIME_SCALE

#: Relative tolerance when the reader compares privacy numbers that the writer derived by
#: float arithmetic (a share's epsilons summing to the total, scale = sensitivity / epsilon).
PRIVACY_RTOL = 1e-9


# --------------------------------------------------------------------------- decoded form


@dataclass(frozen=True)
class Encoder:
    """The sentence encoder shipped in the bundle, with what a reader needs to run it.

    ``model`` is the serialized model (an ONNX protobuf for format ``"onnx"``, a TFLite
    flatbuffer for ``"tflite"``); the runtime hands it to the inference engine and never
    interprets or executes anything else in the bundle. ``facts`` holds descriptive metadata
    (source model, quantization, fidelity). ``check_text``/``check_embedding`` are a fixed
    public text and the exporter's embedding of it, so a device can verify at load that its
    inference engine computes the same function (None in bundles written before v1.1).
    """

    format: str
    model: bytes
    tokenizer_json: str
    max_length: int
    dim: int
    pooling: str
    normalized: bool
    inputs: tuple[str, ...]
    output: str
    facts: dict[str, Any] = field(default_factory=dict)
    check_text: str | None = None
    check_embedding: np.ndarray | None = None


@dataclass(frozen=True)
class ClassStats:
    """The released class statistics and the public subspace they live in: z = P (x - origin)."""

    origin: np.ndarray       # (dim,)
    projection: np.ndarray   # (k, dim), orthonormal rows
    sums: np.ndarray         # (classes, k), noisy
    counts: np.ndarray       # (classes,), noisy


@dataclass(frozen=True)
class Bundle:
    """A differentially private release plus its encoder.

    ``votes`` has shape (tables, 2**bits, classes), int16; ``hyperplanes`` has shape
    (tables, bits, dim), float32. Bit h (0-based) of a table's bucket id is 1 iff the
    embedding's dot product with ``hyperplanes[t, h]`` is greater than ``offsets[t, h]``
    (0 without offsets; see runtime.simhash). From format 3 a bundle may release class
    statistics alone: ``lsh``, ``hyperplanes`` and ``votes`` are then None.
    """

    labels: tuple[str, ...]
    label_descriptions: tuple[str, ...] | None
    privacy: dict[str, Any]
    lsh: dict[str, Any] | None
    hyperplanes: np.ndarray | None
    votes: np.ndarray | None
    encoder: Encoder
    exporter: dict[str, Any]
    #: Formats 2 and 3 (all optional): hyperplane offsets (tables, bits); the released class
    #: statistics; the label descriptions' embeddings (classes, dim); the blend's weights.
    offsets: np.ndarray | None = None
    class_stats: ClassStats | None = None
    prior: np.ndarray | None = None
    scoring: dict[str, Any] | None = None

    @property
    def uses_class_stats_format(self) -> bool:
        """True when the bundle needs format 3 (anything beyond plain vote tables)."""
        return self.votes is None or any(x is not None for x in (self.offsets, self.class_stats, self.prior,
                                                                 self.scoring))

    @property
    def records_per_unit(self) -> int:
        """K, the records kept per privacy unit: what every consumer of a decoded bundle reads,
        so that "absent (before 1.2) or nil means one record" is applied in one place."""
        return int(self.privacy.get(Privacy.MAX_RECORDS_PER_UNIT) or 1)

    @property
    def tables(self) -> int:
        return 0 if self.votes is None else int(self.votes.shape[0])

    @property
    def bits(self) -> int:
        return 0 if self.hyperplanes is None else int(self.hyperplanes.shape[1])
