"""A third reader of dpedge bundles, written from docs/bundle-format.md (format 1.0) alone.

It imports nothing from runtime/ or exporter/: only msgpack, numpy, tokenizers and
onnxruntime, as a reader in another language would use their equivalents. It implements what
a reader needs to give a text its label, each step named by the section of the document it
follows:

- section 1, the container: the 41-byte digest entry and the digest, checked before anything
  is parsed; one map, nothing after it, string keys none of which repeats, no extension type,
  nesting depth, entries per container and in all, ``format``/``version`` first and ``sha256``
  last; a pre-release file refused in one line;
- section 2, versions: major 1 only, ``requires`` refused when it names a path this reader does
  not know, ``releases`` closed;
- section 3, the fields this reader uses: their types (a float field refuses an integer) and
  the array records' dtype, shape and length;
- section 6, the encoder: the text prefix, the tokenizer without padding and truncated at
  ``max_length``, the ONNX model with ``encoder.weights`` handed to onnxruntime in memory under
  the placeholder name, one text per run, and the load-time check on ``check_text``;
- section 7, scoring: Algorithm 2 for vote tables without class statistics, else the blend of
  the (pulled) class sums, the prior with its boost and the positive votes.

It does not re-implement every bound and relation of sections 3 and 4, the text rules or the
encoder family check (the fuzz and hostile-bundle suites hold the runtime to those); it runs
only the ONNX encoder (a TFLite bundle is scored from embeddings given to `Decoder.scores`).
tests/test_independent_decoder.py checks that it gives every text the runtime's label and
scores: anything the runtime does that this file does not is a gap in the document.

Example:
    >>> d = Decoder(open("models/quickstart.dpedge", "rb").read())   # doctest: +SKIP
    >>> d.label("wake me at six")                                     # doctest: +SKIP
    'alarm_timer'
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import msgpack
import numpy as np

# Section 1: the file ends with the key "sha256" (fixstr of 6 bytes), a bin 8 header of
# length 32 and the 32-byte digest.
DIGEST_ENTRY = bytes.fromhex("a6 73 68 61 32 35 36 c4 20")
TAIL = len(DIGEST_ENTRY) + 32
MAX_DEPTH = 32
MAX_ENTRIES = 100_000
MAX_FILE = 2**31 - 9
#: Section 6: the location every external initializer of an ONNX encoder names.
PLACEHOLDER = "dpedge-weights" + "." * 242
#: Section 6: a run whose embedding of the check text is less similar than this is refused.
CHECK_COSINE = 0.98
#: Section 3: every path of format 1.0 (what ``requires`` may name without refusal).
KNOWN_PATHS = frozenset(
    ["format", "version", "requires", "labels", "label_descriptions", "privacy", "releases", "subspace",
     "hashing", "prior", "scoring", "exporter", "encoder", "sha256"]
    + [f"privacy.{k}" for k in ("epsilon", "delta", "max_records_per_unit", "neighbour_relation", "privacy_unit",
                                "noise_source", "public_inputs", "noise_library", "noise_library_version",
                                "composition", "post_processing")]
    + [f"releases.{r}{k}" for r in ("class_counts", "class_sums", "votes")
       for k in ("", ".epsilon", ".sensitivity_l1", ".noise_scale", ".mechanism", ".values")]
    + ["releases.class_sums.grid", "releases.class_sums.clip_l1", "subspace.origin", "subspace.projection",
       "hashing.hyperplanes", "hashing.offsets", "hashing.seed"]
    + [f"scoring.{k}" for k in ("centroid_temperature", "prior_temperature", "prior_records_per_class",
                                "description_pull")]
    + [f"encoder.{k}" for k in ("format", "model", "tokenizer_json", "max_length", "dim", "text_prefix", "inputs",
                                "output", "check_text", "check_embedding", "facts", "weights")])
RELEASES = ("class_counts", "class_sums", "votes")
#: The maps whose keys are the format's own (array records are checked as records; the
#: exporter map and encoder.facts hold free keys).
SECTIONS = ("", "privacy", "releases", "releases.class_counts", "releases.class_sums", "releases.votes", "subspace",
            "hashing", "scoring", "encoder")


class Refused(ValueError):
    """The bundle is refused (one line, as section 8 asks)."""


# --------------------------------------------------------------------------- section 1: the container


def parse(data: bytes) -> dict[str, Any]:
    """The document of a sealed, well-formed file (section 1), or Refused."""
    if len(data) > MAX_FILE:
        raise Refused(f"{len(data)} bytes is more than a bundle may have")
    if len(data) < TAIL or data[-TAIL:-32] != DIGEST_ENTRY:
        if _starts_like_pre_release(data):
            raise Refused("a pre-release format bundle: rebuild it")
        raise Refused("not a bundle, or truncated: it does not end with its sha256 entry")
    if hashlib.sha256(data[:-TAIL]).digest() != data[-32:]:
        raise Refused("checksum mismatch: the bundle is corrupted")
    budget = [len(data) // 64 + 4096]  # entries in all, each container counting its length plus one

    def spend(n: int) -> None:
        budget[0] -= n + 1
        if budget[0] < 0:
            raise Refused("more map and array entries than the file's size allows")

    def pairs(items: list[tuple[Any, Any]]) -> dict[str, Any]:
        spend(len(items))
        out: dict[str, Any] = {}
        for k, v in items:
            if not isinstance(k, str):
                raise Refused("a map key that is not a string")
            if k in out:
                raise Refused(f"a map repeats the key {k!r}")
            out[k] = v
        return out

    def items(xs: list[Any]) -> list[Any]:
        spend(len(xs))
        return xs

    def no_extension(code: int, _data: bytes) -> Any:
        raise Refused(f"an extension type ({code}) appears in the file")

    try:
        doc = msgpack.unpackb(data, raw=False, object_pairs_hook=pairs, list_hook=items, ext_hook=no_extension,
                              max_map_len=MAX_ENTRIES, max_array_len=MAX_ENTRIES, max_bin_len=len(data),
                              max_str_len=len(data), max_ext_len=0)
    except Refused:
        raise
    except Exception as exc:  # msgpack's ExtraData (something after the map), FormatError, ValueError...
        raise Refused(f"not one valid msgpack map: {type(exc).__name__}") from None
    if not isinstance(doc, dict):
        raise Refused("the file is not a msgpack map")
    _depth(doc)
    keys = list(doc)
    if keys[:2] != ["format", "version"] or keys[-1] != "sha256":
        raise Refused("the map must start with format, version and end with sha256")
    return doc


def _starts_like_pre_release(data: bytes) -> bool:
    """Section 1: a file that starts with format: "dpedge-bundle" but is not sealed."""
    try:
        u = msgpack.Unpacker(raw=False, max_str_len=64, max_bin_len=0, max_array_len=4, max_map_len=4)
        u.feed(data[:256])
        u.read_map_header()
        return u.unpack() == "format" and u.unpack() == "dpedge-bundle"
    except Exception:  # noqa: BLE001 - anything unreadable is simply not one
        return False


def _depth(doc: Any) -> None:
    """Containers at most MAX_DEPTH deep, and only msgpack's plain types (no extension)."""
    stack = [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            if d > MAX_DEPTH:
                raise Refused(f"containers nest deeper than {MAX_DEPTH}")
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
        elif v is not None and type(v) not in (str, bytes, int, float, bool):
            raise Refused(f"a msgpack {type(v).__name__} appears in the file")


# --------------------------------------------------------------------------- section 3: the fields used


def _known_keys_only(doc: dict[str, Any]) -> None:
    """Section 2: a bundle of a minor version this reader knows has no key it does not know."""
    for section in SECTIONS:
        node: Any = doc
        for key in section.split(".") if section else ():
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            for key in node:
                path = f"{section}.{key}" if section else key
                if path not in KNOWN_PATHS:
                    raise Refused(f"unknown field '{path}'")


def _get(doc: dict[str, Any], path: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    """The value at a dotted path, of the stated msgpack type (bool is not an integer, an
    integer is not a float)."""
    node: Any = doc
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            if default is ...:
                raise Refused(f"missing field '{path}'")
            return default
        node = node[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(node) not in kinds:
        raise Refused(f"field '{path}' is {type(node).__name__}")
    if type(node) is float and not math.isfinite(node):
        raise Refused(f"field '{path}' is not finite")
    return node


def _array(doc: dict[str, Any], path: str, dtype: str, ndim: int, default: Any = ...) -> np.ndarray | None:
    """An array record: exactly dtype, shape and data, the stated dtype, C-order bytes of the
    right length, every float finite."""
    rec = _get(doc, path, dict, default)
    if rec is None:
        return None
    if set(rec) != {"dtype", "shape", "data"} or rec["dtype"] != dtype:
        raise Refused(f"field '{path}' is not a {dtype} array record")
    shape, raw = rec["shape"], rec["data"]
    if not (isinstance(shape, list) and len(shape) == ndim and all(type(n) is int and n >= 0 for n in shape)):
        raise Refused(f"field '{path}.shape' is {shape!r}")
    if type(raw) is not bytes or len(raw) != math.prod(shape) * np.dtype(dtype).itemsize:
        raise Refused(f"field '{path}.data' does not hold {dtype} {shape}")
    a = np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape)
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise Refused(f"field '{path}' holds a value that is not finite")
    return a


class Decoder:
    """One bundle read from its bytes: `scores` and `label` of an embedding, `embed` and
    `classify` of a text (the ONNX engine is started on first use)."""

    def __init__(self, data: bytes):
        doc = parse(data)
        if doc["format"] != "dpedge":
            raise Refused("not a dpedge bundle")
        version = doc["version"]
        if not (isinstance(version, list) and len(version) == 2 and all(type(v) is int for v in version)):
            raise Refused("field 'version' must be [major, minor]")
        if version[0] != 1:
            raise Refused(f"bundle format {version[0]}.{version[1]} is not 1.x")
        self.version = tuple(version)
        if version[1] == 0:                                                 # section 2: not newer than 1.0
            _known_keys_only(doc)
        for path in _get(doc, "requires", list, []):                       # section 2
            if path not in KNOWN_PATHS:
                raise Refused(f"this bundle requires '{path}': upgrade dpedge")
        releases = _get(doc, "releases", dict)
        unknown = [k for k in releases if k not in RELEASES]
        if unknown:                                                         # closed in every version
            raise Refused(f"field 'releases.{unknown[0]}' is a release this reader cannot account for")

        self.labels = _get(doc, "labels", list)
        c = len(self.labels)
        self.epsilon = _get(doc, "privacy.epsilon", float)
        self.per_unit = _get(doc, "privacy.max_records_per_unit", int)      # K
        self.dim = _get(doc, "encoder.dim", int)                            # D
        self.counts = _array(doc, "releases.class_counts.values", "<i4", 1, None)
        self.sums = _array(doc, "releases.class_sums.values", "<i4", 2, None)
        self.votes = _array(doc, "releases.votes.values", "<i2", 3, None)
        if self.sums is None and self.votes is None:
            raise Refused("releases holds neither class_sums nor votes: nothing to classify with")
        if self.sums is not None:
            self.grid = _get(doc, "releases.class_sums.grid", int)
            self.sums_scale = _get(doc, "releases.class_sums.noise_scale", float)
            self.origin = _array(doc, "subspace.origin", "<f4", 1)
            self.projection = _array(doc, "subspace.projection", "<f4", 2)
            k = self.projection.shape[0]
            if (self.counts is None or self.counts.shape != (c,) or self.sums.shape != (c, k)
                    or self.origin.shape != (self.dim,) or self.projection.shape != (k, self.dim)):
                raise Refused("the class statistics' shapes disagree with C, k and D")
            self.tau_c = _get(doc, "scoring.centroid_temperature", float)
            self.tau_p = _get(doc, "scoring.prior_temperature", float)
            self.records_per_class = _get(doc, "scoring.prior_records_per_class", float)   # R
            self.pull = _get(doc, "scoring.description_pull", float)                       # a
        # The prior is there iff label_descriptions and class_sums are (section 3, condition "prior").
        self.prior = _array(doc, "prior", "<f4", 2, None)
        if self.prior is not None and self.prior.shape != (c, self.dim):
            raise Refused("field 'prior' is not [C, D]")
        if self.votes is not None:
            self.hyperplanes = _array(doc, "hashing.hyperplanes", "<f4", 3)
            t, h, d = self.hyperplanes.shape
            self.offsets = _array(doc, "hashing.offsets", "<f4", 2, None)
            if self.offsets is None:
                self.offsets = np.zeros((t, h), np.float32)                # absent: thresholds 0
            if d != self.dim or self.votes.shape != (t, 2**h, c) or self.offsets.shape != (t, h):
                raise Refused("the vote tables' shapes disagree with T, H, C and D")
        self._encoder = _get(doc, "encoder", dict)
        # Section 6: an ONNX encoder's weights end 41 bytes before the end of the file.
        if self._encoder.get("format") == "onnx" and (list(self._encoder)[-1:] != ["weights"]
                                                       or list(doc)[-2] != "encoder"):
            raise Refused("field 'encoder.weights' must be the last entry of encoder, the last map before sha256")
        self._session: Any = None
        self._tokenizer: Any = None

    # ----------------------------------------------------------------------- section 6: the encoder

    def _start(self) -> None:
        """Tokenizer and ONNX session, then the load-time check."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        e = self._encoder
        if _get(e, "format", str) != "onnx":
            raise NotImplementedError("this reader runs ONNX encoders only")
        tok = Tokenizer.from_str(_get(e, "tokenizer_json", str))
        tok.no_padding()                                                    # whatever the JSON says
        tok.enable_truncation(_get(e, "max_length", int))
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        weights = _get(e, "weights", bytes)
        self._weights = np.frombuffer(weights, np.uint8)                   # kept alive with the session
        so.add_external_initializers_from_files_in_memory([PLACEHOLDER], [self._weights], [len(weights)])
        self._session = ort.InferenceSession(_get(e, "model", bytes), so, providers=["CPUExecutionProvider"])
        self._tokenizer = tok
        self._inputs = _get(e, "inputs", list)
        self._output = _get(e, "output", str)
        self._prefix = _get(e, "text_prefix", str)
        got = self.embed(_get(e, "check_text", str))
        ref = _array(e, "check_embedding", "<f4", 1).astype(np.float64)
        cos = float(got @ ref / (np.linalg.norm(got) * np.linalg.norm(ref)))
        if not cos >= CHECK_COSINE:
            raise Refused(f"the engine's embedding of the check text has cosine {cos:.4f} to the bundle's")
        self.check_cosine = cos

    def embed(self, text: str) -> np.ndarray:
        """The unit embedding of one text, (D,) float32, as the model returns it."""
        if self._session is None:
            self._start()
        ids = np.asarray([self._tokenizer.encode(self._prefix + text).ids], np.int64)   # [CLS] ... [SEP]
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        out = self._session.run([self._output], {name: feeds[name] for name in self._inputs})[0]
        return np.asarray(out, np.float32).reshape(self.dim)

    def classify(self, text: str) -> tuple[str, np.ndarray]:
        """The label and the per-class scores of a text."""
        s = self.scores(self.embed(text))
        return self.labels[_argmax(s)], s

    # ----------------------------------------------------------------------- section 7: scoring

    def buckets(self, x: np.ndarray) -> list[int]:
        """Bit h of table t is 1 iff hyperplanes[t, h] . x > offsets[t, h]; bucket = sum bit_h 2^h."""
        planes, offsets = self.hyperplanes.astype(np.float64), self.offsets.astype(np.float64)
        out = []
        for t in range(planes.shape[0]):
            out.append(sum(1 << h for h in range(planes.shape[1]) if float(planes[t, h] @ x) > offsets[t, h]))
        return out

    def boost(self) -> float:
        """min(R C K / (epsilon N), 1e6), N = max(1, sum of class_counts)."""
        n = max(1.0, float(self.counts.astype(np.int64).sum()))
        return min(self.records_per_class * len(self.labels) * self.per_unit / (self.epsilon * n), 1e6)

    def scores(self, embedding: np.ndarray) -> np.ndarray:
        """Per-class scores of a query's embedding (float64 throughout)."""
        x = np.asarray(embedding, np.float64)
        cells = None
        if self.votes is not None:
            u = self.buckets(x)
            cells = np.array([self.votes[t, u[t]] for t in range(len(u))], np.int64)      # (T, C)
        if self.sums is None:                                              # Algorithm 2
            return _shares(np.maximum(cells.sum(axis=0), 0))
        p, o = self.projection.astype(np.float64), self.origin.astype(np.float64)
        z = p @ x - p @ o                                                  # step 1
        s_rows = self.sums.astype(np.float64) / self.grid                  # S_c
        k = p.shape[0]
        if self.prior is not None:                                         # step 2: the pull
            nu = math.sqrt(2 * k) * self.sums_scale / self.grid
            s = self.pull * nu
            m = max(1.0, s)
            e = self.prior.astype(np.float64)
            s_rows = np.array([s_rows[c] / m + (s / m) * _unit(p @ e[c] - p @ o) for c in range(len(self.labels))])
        z_norm = float(np.linalg.norm(z))
        centroid = np.array([float(z @ _unit(row)) / z_norm / self.tau_c if z_norm > 1e-6 else 0.0
                             for row in s_rows])                                                  # step 3
        score = _softmax(centroid)
        weight = 1.0
        if self.prior is not None:                                         # step 4
            x_norm = float(np.linalg.norm(x))
            prior = np.array([float(x @ _unit(e_c)) / x_norm / self.tau_p if x_norm > 1e-6 else 0.0
                              for e_c in self.prior.astype(np.float64)])
            score = score + self.boost() * _softmax(prior)
            weight += self.boost()
        if cells is not None:                                              # step 5
            score = score + _shares(np.maximum(cells, 0).sum(axis=0))
            weight += 1.0
        return score / weight                                              # step 6

    def label(self, embedding: np.ndarray) -> str:
        return self.labels[_argmax(self.scores(embedding))]


def _argmax(s: np.ndarray) -> int:
    """The highest score; a tie goes to the lower class index."""
    return int(np.flatnonzero(s == s.max())[0])


def _shares(pos: np.ndarray) -> np.ndarray:
    """Non-negative sums over their total, 1/C each when all are 0."""
    total = float(pos.sum())
    return pos / total if total > 0 else np.full(len(pos), 1.0 / len(pos))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-12)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()
