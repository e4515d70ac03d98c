"""The bundle format 1.0, defined once, as data: every key, type, dtype, shape, bound and relation.

`FIELDS` is the format: one `Field` per key path, in the order a writer writes them and the
specification lists them. The reader (runtime.bundle.reader) interprets the table instead of
checking each field by hand, docs/bundle-format.md's field tables are generated from it
(docs/format_tables.py; a test fails when they differ), and the malformed bundles the Java
core must refuse are derived from it (android_demo/golden.py). `RELATIONS` names the checks
that involve several fields; each reader implements those few by hand, and the spec lists
them from here.

Example:
    >>> FIELDS_BY_PATH["privacy.epsilon"].kind, FIELDS_BY_PATH["releases.votes.values"].shape
    ('float', ('T', '2^H', 'C'))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

FORMAT_NAME = "dpedge"
#: What this reader reads and what the writer writes: major 1 for ever; a minor adds optional fields.
FORMAT_VERSION = (1, 0)
#: The magic of the pre-release formats (0.x to 4.0): recognised only to refuse them in one line.
PRE_RELEASE_NAME = "dpedge-bundle"


#: The statistics a bundle can release, in release order.
STATISTICS = ("class_counts", "class_sums", "votes")
ENCODER_FORMATS = ("onnx", "tflite")
ENCODER_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

# --------------------------------------------------------------------------- the container
#: The file ends with the digest entry: the key "sha256" (a 7-byte fixstr), a bin8 header of
#: length 32, the digest. The digest is SHA-256 of every byte before these 41.
DIGEST_TAIL = b"\xa6sha256\xc4\x20"
DIGEST_BYTES = 32
TAIL_BYTES = len(DIGEST_TAIL) + DIGEST_BYTES
#: Largest file (a Java array holds 2^31 - 9 bytes); containers nest at most MAX_DEPTH deep and
#: hold at most size / BYTES_PER_VALUE + VALUE_ALLOWANCE entries in all (a container counts its
#: length plus one), so a file cannot cost many times its size in memory; no container has
#: more than MAX_CONTAINER entries.
MAX_BUNDLE_BYTES = 2**31 - 9
MAX_DEPTH = 32
BYTES_PER_VALUE = 64
VALUE_ALLOWANCE = 4096
MAX_CONTAINER = 100_000
#: An ONNX encoder's initializers may keep their data in ``encoder.weights``: external data
#: whose location is this placeholder (256 bytes) and whose offset and length (within
#: encoder.weights) are NUMBER_DIGITS-digit decimals. The fixed widths let a reader that maps the
#: bundle file rewrite them in place for its engine.
WEIGHTS_LOCATION = "dpedge-weights" + "." * 242
NUMBER_DIGITS = 20

# --------------------------------------------------------------------------- bounds
MAX_CLASSES = 4096
MAX_DIM = 4096
MAX_TABLES = 1024
MAX_BITS = 24
MAX_LABEL_CHARS = 200
MAX_DESCRIPTION_CHARS = 2000
#: Longest free-text string (mechanism, neighbour relation, public inputs...).
MAX_TEXT_CHARS = 10_000
MAX_CHECK_TEXT_CHARS = 1000
MAX_NAME_CHARS = 128
MAX_PREFIX_CHARS = 64
#: all-MiniLM-L6-v2's tokenizer.json has 466,247 characters; a 250,000-entry vocabulary fits.
MAX_TOKENIZER_JSON_CHARS = 16_000_000
MAX_SENSITIVITY = 2**31 - 1
MAX_RECORDS_PER_UNIT = 1_000_000
#: Every epsilon (the bundle's and each release's) is in [EPSILON_MIN, EPSILON_MAX]: with the
#: other bounds, every quantity the scorer derives stays finite (see `RELATIONS`, "finite").
EPSILON_MIN, EPSILON_MAX = 1e-6, 1e6
TEMPERATURE_MIN, TEMPERATURE_MAX = 1e-3, 1e3
#: The prior's boost R C K / (epsilon N) is capped here.
BOOST_MAX = 1e6
#: Relative tolerance of the privacy relations (the writer derives shares and scales by float
#: arithmetic).
PRIVACY_RTOL = 1e-9
#: A backend whose embedding of the check text is less similar than this to the exporter's is
#: computing something else (docs/encoder.md: other CPUs and engine versions stay above 0.998).
CHECK_MIN_COSINE = 0.98


@dataclass(frozen=True)
class Field:
    """One key of the format.

    ``kind``: "map", "str", "int", "float", "bool", "bin", "version", "strings" (an array of
    strings), "ndarray" (an array record: ``{"dtype", "shape", "data"}``) or "any" (free
    informational msgpack). ``need``: "required", "optional", or ``"iff X"`` (present exactly
    when the condition X of `CONDITIONS` holds). ``low``/``high`` bound a number, or the
    length of a string or of an array of strings. ``shape`` is in the symbols of `DIMS`.
    ``text`` names a text rule of runtime.text ("label": printable, distinct; "printable").
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
    #: A map whose keys are free (informational: encoder.facts, exporter).
    open: bool = False

    @property
    def key(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str:
        return self.path.rpartition(".")[0]


R, O = "required", "optional"
_I4, _I2, _F4 = "<i4", "<i2", "<f4"

FIELDS: tuple[Field, ...] = (
    Field("format", "str", R, "the magic", choices=(FORMAT_NAME,)),
    Field("version", "version", R, "[major, minor]: [1, 0]"),
    Field("requires", "strings", O, "paths a reader must know to answer as the writer meant (section 2)", high=64),
    Field("labels", "strings", R, "the classes, in class-index order", low=2, high=MAX_CLASSES, text="label"),
    Field("label_descriptions", "strings", O, "a public description of each label", text="description"),
    Field("privacy", "map", R, "the guarantee in the bundle's own words"),
    Field("privacy.epsilon", "float", R, "the bundle's epsilon: the releases' epsilons add up to it",
          low=EPSILON_MIN, high=EPSILON_MAX),
    Field("privacy.delta", "float", R, "always 0.0: pure epsilon-DP", low=0.0, high=0.0),
    Field("privacy.max_records_per_unit", "int", R, "K: records one privacy unit may contribute (1: one record)",
          low=1, high=MAX_RECORDS_PER_UNIT),
    Field("privacy.neighbour_relation", "str", R, "who the guarantee protects, in words", high=MAX_TEXT_CHARS, text="printable"),
    Field("privacy.privacy_unit", "str", R, "one record, or one person with up to K records", high=MAX_TEXT_CHARS, text="printable"),
    Field("privacy.noise_source", "str", R, "the sampler and its randomness", high=MAX_TEXT_CHARS, text="printable"),
    Field("privacy.public_inputs", "strings", R, "what the release used that is public (costs nothing)",
          high=256),
    Field("privacy.noise_library", "str", O, "informational", high=MAX_TEXT_CHARS, text="printable"),
    Field("privacy.noise_library_version", "str", O, "informational", high=MAX_TEXT_CHARS, text="printable"),
    Field("privacy.composition", "str", O, "informational", high=MAX_TEXT_CHARS, text="printable"),
    Field("privacy.post_processing", "str", O, "informational", high=MAX_TEXT_CHARS, text="printable"),
    Field("releases", "map", R, "one entry per released statistic; no other keys"),
    *(f for name, values_doc, dtype, shape in (
        ("class_counts", "noisy record count per class", _I4, ("C",)),
        ("class_sums", "noisy per-class sums in the subspace, in grid units", _I4, ("C", "k")),
        ("votes", "noisy vote tables, clipped to int16", _I2, ("T", "2^H", "C")))
      for f in (
        Field(f"releases.{name}", "map", O if name == "votes" else "iff class statistics",
              f"the {name} release"),
        Field(f"releases.{name}.epsilon", "float", R, "its share of epsilon", low=EPSILON_MIN, high=EPSILON_MAX),
        Field(f"releases.{name}.sensitivity_l1", "int", R, "how far one unit moves the values (L1)",
              low=1, high=MAX_SENSITIVITY),
        Field(f"releases.{name}.noise_scale", "float", R, "sensitivity_l1 / epsilon",
              low=0.0, high=MAX_SENSITIVITY / EPSILON_MIN),
        Field(f"releases.{name}.mechanism", "str", R, "what was noised, in words", high=MAX_TEXT_CHARS, text="printable"),
        *((Field("releases.class_sums.grid", "int", R, "grid steps per embedding unit", low=1, high=2**31),
           Field("releases.class_sums.clip_l1", "float", R, "each record's L1 clip in the subspace, in "
                 "embedding units", low=0.0, high=2**31)) if name == "class_sums" else ()),
        Field(f"releases.{name}.values", "ndarray", R, values_doc, dtype=dtype, shape=shape),
      )),
    Field("subspace", "map", "iff class statistics", "the public basis of the class sums: z = P (x - origin)"),
    Field("subspace.origin", "ndarray", R, "the public centre", dtype=_F4, shape=("D",)),
    Field("subspace.projection", "ndarray", R, "P, k public directions", dtype=_F4, shape=("k", "D")),
    Field("hashing", "map", "iff votes", "the SimHash hyperplanes of the vote tables"),
    Field("hashing.hyperplanes", "ndarray", R, "T tables of H hyperplanes", dtype=_F4, shape=("T", "H", "D")),
    Field("hashing.offsets", "ndarray", O, "a threshold per hyperplane (absent: 0)", dtype=_F4, shape=("T", "H")),
    Field("hashing.seed", "int", O, "informational: the hyperplanes' seed", low=0, high=2**64 - 1),
    Field("prior", "ndarray", "iff prior", "the label descriptions' embeddings (public)", dtype=_F4,
          shape=("C", "D")),
    Field("scoring", "map", "iff blend", "the blend's constants"),
    Field("scoring.centroid_temperature", "float", R, "tau_c", low=TEMPERATURE_MIN, high=TEMPERATURE_MAX),
    Field("scoring.prior_temperature", "float", R, "tau_p", low=TEMPERATURE_MIN, high=TEMPERATURE_MAX),
    Field("scoring.prior_records_per_class", "float", R, "R in the prior's boost", low=0.0, high=1e6),
    Field("scoring.description_pull", "float", R, "a: the pull of each class sum toward its description, "
          "in noise norms", low=0.0, high=1e3),
    Field("exporter", "map", O, "informational: name, version, creation time", open=True),
    Field("encoder", "map", R, "the sentence encoder"),
    Field("encoder.format", "str", R, "the engine family of `model`", choices=ENCODER_FORMATS),
    Field("encoder.model", "bin", R, "the int8 model: an ONNX protobuf or a TFLite flatbuffer", low=1),
    Field("encoder.tokenizer_json", "str", R, "a BERT WordPiece tokenizer.json", low=1, high=MAX_TOKENIZER_JSON_CHARS),
    Field("encoder.max_length", "int", R, "tokens per text, [CLS] and [SEP] included", low=2, high=8192),
    Field("encoder.dim", "int", R, "D: the embedding size", low=1, high=MAX_DIM),
    Field("encoder.text_prefix", "str", R, "prepended to every text before tokenizing (often empty)",
          high=MAX_PREFIX_CHARS, text="printable"),
    Field("encoder.inputs", "strings", R, "the model's inputs", low=1, high=3, choices=ENCODER_INPUTS),
    Field("encoder.output", "str", R, "the model's unit-embedding output", low=1, high=MAX_NAME_CHARS,
          text="printable"),
    Field("encoder.check_text", "str", R, "a public text a reader embeds at load", low=1,
          high=MAX_CHECK_TEXT_CHARS, text="printable"),
    Field("encoder.check_embedding", "ndarray", R, "the exporter's embedding of it (a unit vector)",
          dtype=_F4, shape=("D",)),
    Field("encoder.facts", "map", O, "informational: name, quantization, fidelity", open=True),
    Field("encoder.weights", "bin", "iff onnx", "the ONNX initializers' external data (section 6)"),
    Field("sha256", "bin", R, "SHA-256 of every byte before this key (section 1)",
          low=DIGEST_BYTES, high=DIGEST_BYTES),
)
FIELDS_BY_PATH: dict[str, Field] = {f.path: f for f in FIELDS}


class _Keys:
    """Every key of the format as a constant (``Key.EPSILON == "epsilon"``), made from the table
    itself so that a key is spelt once: the table's keys, an array record's, and the informational
    ones the exporter writes. A key used in several maps is one constant."""

    def __init__(self, names: set[str]):
        self.__dict__.update({n.upper(): n for n in names})

    def __getattr__(self, name: str) -> str:  # for type checkers: every attribute is a key
        raise AttributeError(f"the format has no key {name.lower()!r}")


Key = _Keys({f.key for f in FIELDS} | {"dtype", "shape", "data", "name", "created"})

#: The symbols of array shapes, where each is defined, and its bounds.
DIMS = {
    "C": ("the number of labels", 2, MAX_CLASSES),
    "D": ("encoder.dim", 1, MAX_DIM),
    "k": ("rows of subspace.projection", 1, MAX_DIM),
    "T": ("tables: hashing.hyperplanes' first axis", 1, MAX_TABLES),
    "H": ("bits: hashing.hyperplanes' second axis", 1, MAX_BITS),
}

#: The conditions of ``need = "iff X"``.
CONDITIONS = {
    "class statistics": "releases.class_sums or releases.class_counts is present (they and subspace come "
                        "together)",
    "votes": "releases.votes is present",
    "prior": "label_descriptions and releases.class_sums are present",
    "blend": "releases.class_sums is present",
    "onnx": "encoder.format is onnx",
}

#: Checks across fields, in the order a reader applies them (name, what must hold).
RELATIONS = (
    ("something to classify with", "releases holds class_sums or votes (or both)"),
    ("shares", "the releases' epsilons add up to privacy.epsilon (relative tolerance 1e-9)"),
    ("noise scale", "each release's noise_scale is its sensitivity_l1 / epsilon (relative tolerance 1e-9)"),
    ("sensitivity", "with K = privacy.max_records_per_unit: class_counts' sensitivity_l1 is K; class_sums' is "
                    "K x round(grid x clip_l1), which must be at least 1; votes' is K x T"),
    ("descriptions", "label_descriptions has one entry per label"),
    ("subspace", "k is at most D"),
    ("check", "encoder.check_embedding has an L2 norm between 0.9 and 1.1"),
    ("labels", "labels are distinct after fold (section 3)"),
    ("finite", "within these bounds every score is finite: cosines over temperatures of at least 1e-3, a boost "
               "of at most 1e6, a pull of at most 1e3 x sqrt(8192) x (2^31 - 1) / 1e-6"),
)

# --------------------------------------------------------------------------- engines
# A bundle travels, so what it hands to native code (tokenizers, onnxruntime, LiteRT) is of a
# declared family and bounded (runtime/bundle/tokenizer_family.py, runtime/bundle/model_family.py).

MAX_VOCAB_SIZE = 250_000
MAX_TOKEN_CHARS = 100
MAX_ADDED_TOKENS = 1000
MAX_INPUT_CHARS_PER_WORD = 100
MAX_PREFIX_CHARS_WORDPIECE = 8
TOKENIZER_KEYS = ("version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
                  "post_processor", "decoder", "model")
TOKENIZER_REQUIRED = ("added_tokens", "normalizer", "pre_tokenizer", "post_processor", "model")
TOKENIZER_NORMALIZER = "BertNormalizer"
TOKENIZER_PRE_TOKENIZER = "BertPreTokenizer"
TOKENIZER_MODEL = "WordPiece"
TOKENIZER_POST_PROCESSOR = "TemplateProcessing"
TOKENIZER_DECODER = "WordPiece"

#: The ONNX operators an encoder may use: exactly those of the int8 encoders the exporter writes
#: (optimum export, MatMulNBits, int8 Gather). No control flow, no subgraphs.
ONNX_DOMAINS = ("", "ai.onnx", "com.microsoft")
ONNX_OPS = frozenset({
    ("", op) for op in (
        "Add", "Cast", "Clip", "Concat", "Constant", "ConstantOfShape", "DequantizeLinear", "Div", "Equal",
        "Erf", "Expand", "Gather", "LayerNormalization", "MatMul", "Mul", "ReduceL2", "ReduceSum", "Reshape",
        "Shape", "Slice", "Softmax", "Sqrt", "Sub", "Transpose", "Unsqueeze", "Where")
} | {("com.microsoft", "MatMulNBits")})
MAX_ONNX_NODES = 20_000
#: The TFLite builtin operators an encoder may use, by name and schema code, in one subgraph.
TFLITE_OPS = {
    "ADD": 0, "CONCATENATION": 2, "DEQUANTIZE": 6, "FULLY_CONNECTED": 9, "L2_NORMALIZATION": 11, "MUL": 18,
    "RESHAPE": 22, "SOFTMAX": 25, "GATHER": 36, "TRANSPOSE": 39, "MEAN": 40, "SUB": 41, "STRIDED_SLICE": 45,
    "CAST": 53, "EXPAND_DIMS": 70, "RSQRT": 76, "SHAPE": 77, "REDUCE_PROD": 81, "PACK": 83, "ZEROS_LIKE": 93,
    "RANGE": 96, "SQUARED_DIFFERENCE": 99, "BATCH_MATMUL": 126, "BROADCAST_TO": 130, "GELU": 150,
}
MAX_TFLITE_OPERATORS = 20_000

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

    @property
    def epsilon(self) -> float:
        return float(self.privacy[Key.EPSILON])

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
