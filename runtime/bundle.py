"""The dpedge bundle format, v1: one msgpack file with everything a device needs.

The whole format sits behind four functions, `pack`/`unpack` (bytes) and `save`/`load`
(files), so the exporter and every reader share one definition. `docs/bundle-format.md` is
the normative description, written for the phone ports; this module is the reference reader.

The file is a msgpack map ``{"format", "version", "checksum", "payload"}`` whose payload is
itself a msgpack document stored as one binary field, so the SHA-256 checksum covers exactly
the bytes that are parsed. Arrays are stored as ``{"dtype", "shape", "data"}`` with an
explicit little-endian dtype and C-order raw bytes; the reader checks the byte count against
dtype and shape before it builds the array, so a declared size never drives an allocation.

Example:
    >>> from runtime import bundle
    >>> b = bundle.load("models/quickstart.dpedge")      # doctest: +SKIP
    >>> b.votes.shape                                   # doctest: +SKIP
    (32, 64, 7)
"""

from __future__ import annotations

import hashlib
import math
import os
import reprlib
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from runtime.errors import BundleError
from runtime.scoring import CENTROID_RULES, SCORING_MAX, SCORING_NUMBERS, TEMPERATURE_MIN, ClassStats

FORMAT_NAME = "dpedge-bundle"
# 1.1 added the "tflite" encoder format and the optional encoder.check probe (fields only
# added, so 1.0 bundles still load; a 1.0 reader refuses a TFLite bundle by its format name).
# 1.2 added privacy.max_records_per_unit (per-person privacy: sensitivity K*T); a reader that
# ignores it refuses such a bundle by its sensitivity check, which is the safe outcome.
# 2.0 added aligned hashing and blended scoring: lsh.offsets (a hyperplane no longer passes
# through the origin), class_stats (noisy per-class sums and counts in a public subspace, a
# second release of the one epsilon), prior (label descriptions' embeddings), scoring (blend
# weights) and privacy.releases (each released statistic with its share). A 1.x reader
# would hash such a bundle wrongly, so the major version changed and 1.x readers refuse it.
# Bundles that use none of these are still written as 1.2.
# 2.1 added scoring.centroid_rule ("gaussian": the query clipped like the records, logits
# <z, m_c> - |m_c|^2/2) and scoring.centroid_clip_l1; without them a bundle means the 2.0
# cosine rule. A 2.0 reader ignores both and scores centroids by cosine at the bundle's
# temperature: still post-processing of the same release, only less accurate than measured.
FORMAT_VERSION = (2, 1)
FORMAT_VERSION_PLAIN = (1, 2)
SUPPORTED_MAJORS = (1, 2)
CHECKSUM_ALGORITHM = "sha256"

#: Largest file `load` will read; bundles are tens of MB, so anything near this is not one.
MAX_BUNDLE_BYTES = 2 * 1024**3
#: Bits per table the format admits (the exporter itself allows at most 20).
MAX_BITS = 24
MAX_TABLES = 1024

VOTES_DTYPE = np.dtype("<i2")
HYPERPLANES_DTYPE = np.dtype("<f4")
ENCODER_FORMATS = ("onnx", "tflite")
#: A backend whose embedding of the bundle's check text is less similar than this to the
#: exporter's own is computing something else (tflite-runtime 2.14 can run an int8 model to
#: garbage without an error); other CPUs and kernel versions stay above 0.998 (docs/encoder.md).
CHECK_MIN_COSINE = 0.98


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
class Bundle:
    """A released DP datastore plus its encoder.

    ``votes`` has shape (tables, 2**bits, classes), int16; ``hyperplanes`` has shape
    (tables, bits, dim), float32. Bit h (0-based) of a table's bucket id is 1 iff the
    embedding's dot product with ``hyperplanes[t, h]`` is > 0 (see runtime.simhash).
    """

    labels: tuple[str, ...]
    label_descriptions: tuple[str, ...] | None
    privacy: dict[str, Any]
    lsh: dict[str, Any]
    hyperplanes: np.ndarray
    votes: np.ndarray
    encoder: Encoder
    exporter: dict[str, Any]
    #: Format 2 (all optional): hyperplane offsets (tables, bits); the released class
    #: statistics; the label descriptions' embeddings (classes, dim); the blend's weights.
    offsets: np.ndarray | None = None
    class_stats: ClassStats | None = None
    prior: np.ndarray | None = None
    scoring: dict[str, Any] | None = None

    @property
    def uses_format_2(self) -> bool:
        return any(x is not None for x in (self.offsets, self.class_stats, self.prior, self.scoring))

    @property
    def tables(self) -> int:
        return int(self.votes.shape[0])

    @property
    def bits(self) -> int:
        return int(self.hyperplanes.shape[1])


# --------------------------------------------------------------------------- writing


def _array(a: np.ndarray, dtype: np.dtype) -> dict[str, Any]:
    a = np.ascontiguousarray(a, dtype=dtype)
    return {"dtype": dtype.str, "shape": list(a.shape), "data": a.tobytes(order="C")}


def pack(b: Bundle) -> bytes:
    """Serialize a bundle to bytes (format v1).

    Example:
        >>> data = pack(b)                                   # doctest: +SKIP
        >>> unpack(data).labels == b.labels                  # doctest: +SKIP
        True
    """
    e = b.encoder
    payload = {
        "labels": list(b.labels),
        "label_descriptions": None if b.label_descriptions is None else list(b.label_descriptions),
        "privacy": b.privacy,
        "lsh": {**b.lsh, "hyperplanes": _array(b.hyperplanes, HYPERPLANES_DTYPE)},
        "votes": _array(b.votes, VOTES_DTYPE),
        "encoder": {
            "format": e.format,
            "model": bytes(e.model),
            "tokenizer_json": e.tokenizer_json,
            "max_length": e.max_length,
            "dim": e.dim,
            "pooling": e.pooling,
            "normalized": e.normalized,
            "inputs": list(e.inputs),
            "output": e.output,
            "facts": e.facts,
            **({} if e.check_text is None else {"check": {
                "text": e.check_text, "embedding": _array(e.check_embedding, HYPERPLANES_DTYPE)}}),
        },
        "exporter": b.exporter,
    }
    if b.offsets is not None:
        payload["lsh"]["offsets"] = _array(b.offsets, HYPERPLANES_DTYPE)
    if b.class_stats is not None:
        cs = b.class_stats
        payload["class_stats"] = {"origin": _array(cs.origin, HYPERPLANES_DTYPE),
                                  "projection": _array(cs.projection, HYPERPLANES_DTYPE),
                                  "sums": _array(cs.sums, HYPERPLANES_DTYPE),
                                  "counts": _array(cs.counts, HYPERPLANES_DTYPE)}
    if b.prior is not None:
        payload["prior"] = {"embeddings": _array(b.prior, HYPERPLANES_DTYPE),
                            "source": "the label descriptions (public text), embedded by the bundle's encoder"}
    if b.scoring is not None:
        payload["scoring"] = b.scoring
    body = msgpack.packb(payload, use_bin_type=True)
    outer = {
        "format": FORMAT_NAME,
        "version": list(FORMAT_VERSION if b.uses_format_2 else FORMAT_VERSION_PLAIN),
        "checksum": {"algorithm": CHECKSUM_ALGORITHM, "digest": hashlib.sha256(body).digest()},
        "payload": body,
    }
    return msgpack.packb(outer, use_bin_type=True)


def save(b: Bundle, path: str | os.PathLike[str]) -> Path:
    """Write a bundle atomically: a temp file in the same folder, fsync, then rename.

    An interrupted write leaves the previous file (or none), never half a bundle.

    Example:
        >>> save(b, "out/app.dpedge")                        # doctest: +SKIP
        PosixPath('out/app.dpedge')
    """
    return write_atomic(Path(path), pack(b))


def write_atomic(path: Path, data: bytes) -> Path:
    """Write bytes to ``path`` via temp file + fsync + rename (shared by every writer)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates the file 0600; give it the mode open() would (0666 minus the umask).
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------- reading


def load(path: str | os.PathLike[str]) -> Bundle:
    """Read and validate a bundle file.

    Raises BundleError for a missing, oversized, truncated, corrupted or incompatible file.

    Example:
        >>> b = load("models/quickstart.dpedge")             # doctest: +SKIP
        >>> b.privacy["epsilon"]                             # doctest: +SKIP
        8.0
    """
    p = Path(path)
    try:
        st = p.stat()
        size = st.st_size
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            # A device or pipe has no size to check: /dev/zero would be read until memory runs out.
            raise BundleError(f"{p}: is not a regular file, so it cannot be a bundle")
        if size > MAX_BUNDLE_BYTES:
            raise BundleError(f"{p}: {size} bytes is larger than any bundle ({MAX_BUNDLE_BYTES} max)")
        data = p.read_bytes()
    except FileNotFoundError:
        raise BundleError(f"{p}: no such bundle file") from None
    except IsADirectoryError:
        raise BundleError(f"{p}: is a directory, not a bundle file") from None
    except OSError as exc:
        raise BundleError(f"{p}: cannot read bundle: {exc.strerror or exc}") from None
    try:
        body = _checked_payload(data)
        # Drop the file's bytes before parsing the payload: a bundle is mostly its encoder,
        # so each copy alive at once costs its whole size in peak memory on the device.
        del data
        return _parse_payload(body)
    except BundleError as exc:
        raise BundleError(f"{p}: {exc}") from exc.__cause__


def _no_ext(code: int, data: bytes) -> Any:
    raise BundleError(f"unexpected msgpack extension type {code}")


#: A bundle holds a few hundred msgpack values besides megabytes of binary fields. Each value
#: becomes a Python object of up to about 100 bytes however small its msgpack form (an empty
#: map is one byte, a 64-byte dict), so a document is refused as soon as it holds more than one
#: value per this many bytes (plus a small allowance): a crafted file cannot make the parser
#: use many times its own size in memory.
BYTES_PER_VALUE = 64
VALUE_ALLOWANCE = 4096


def _parse_msgpack(data: bytes, what: str) -> Any:
    """Parse exactly one msgpack map, mapping every parser failure to BundleError.

    ``unpackb`` parses straight from ``data``; a streaming Unpacker would first copy the
    whole buffer, doubling the transient memory of a load. The hooks count each array or map
    and its elements as it is completed (see BYTES_PER_VALUE), and no single array or map may
    declare more than the whole budget, so the parser stops early on a dense document.
    """
    limit = len(data) // BYTES_PER_VALUE + VALUE_ALLOWANCE
    left = limit

    def counted(container: Any) -> Any:
        nonlocal left
        left -= len(container) + 1
        if left < 0:
            raise BundleError(f"{what} is not a dpedge bundle: it holds more than {limit} msgpack values "
                              f"for its {len(data)} bytes")
        return container

    trailing = 0
    try:
        obj = msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=True, ext_hook=_no_ext,
                              list_hook=counted, object_hook=counted, max_array_len=limit, max_map_len=limit)
    except msgpack.ExtraData as exc:
        obj, trailing = exc.unpacked, len(exc.extra)
    except BundleError:
        raise
    except msgpack.StackError:
        raise BundleError(f"{what} is not valid msgpack: it nests deeper than the parser allows") from None
    except Exception as exc:  # msgpack raises several types (ValueError, FormatError, ExtraData...)
        if "incomplete input" in str(exc):
            raise BundleError(f"{what} is truncated ({len(data)} bytes): the file was cut short") from None
        raise BundleError(f"{what} is not valid msgpack ({type(exc).__name__}: {exc})") from None
    if not isinstance(obj, dict):
        raise BundleError(f"{what} is not a dpedge bundle: top level is {_msgpack_name(type(obj))}, expected a map")
    if trailing:
        raise BundleError(f"{what} has {trailing} unexpected trailing bytes")
    return obj


class _Fields:
    """Typed access to a msgpack map, naming the dotted path of whatever is wrong."""

    def __init__(self, m: Any, path: str):
        if not isinstance(m, dict):
            raise BundleError(f"field '{path}' must be a map, got {_msgpack_name(type(m))}")
        self.m, self.path = m, path

    def get(self, key: str, typ: type | tuple[type, ...], *, optional: bool = False) -> Any:
        where = f"{self.path}.{key}" if self.path else key
        if key not in self.m:
            if optional:
                return None
            raise BundleError(f"missing field '{where}'")
        v = self.m[key]
        if v is None and optional:
            return None
        # bool is an int subclass in Python; never accept it where a number is meant.
        if not isinstance(v, typ) or (isinstance(v, bool) and bool not in _as_tuple(typ)):
            raise BundleError(f"field '{where}' is {_msgpack_name(type(v))}, expected {_names(typ)}")
        return v

    def sub(self, key: str) -> "_Fields":
        return _Fields(self.get(key, dict), f"{self.path}.{key}" if self.path else key)


def _as_tuple(t: type | tuple[type, ...]) -> tuple[type, ...]:
    return t if isinstance(t, tuple) else (t,)


_MSGPACK_NAMES = {dict: "map", list: "array", bytes: "bin", str: "string", int: "integer", float: "float",
                  bool: "boolean", type(None): "nil"}


def _msgpack_name(t: type) -> str:
    return _MSGPACK_NAMES.get(t, t.__name__)


def _names(t: type | tuple[type, ...]) -> str:
    return " or ".join(_msgpack_name(x) for x in _as_tuple(t))


_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxstring, _SHOW.maxother = 3, 8, 4, 60, 60


def _show(v: Any) -> str:
    """repr() of a value from the file for an error message: short, even for huge or deeply
    nested values (plain repr() of 1,000 nested arrays raises RecursionError)."""
    return _SHOW.repr(v)


def _read_array(f: _Fields, dtype: np.dtype, ndim: int) -> np.ndarray:
    if f.get("dtype", str) != dtype.str:
        raise BundleError(f"field '{f.path}.dtype' is {_show(f.m['dtype'])}, expected {dtype.str!r}")
    shape = f.get("shape", list)
    if len(shape) != ndim or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise BundleError(f"field '{f.path}.shape' must be {ndim} non-negative integers, got {_show(shape)}")
    data = f.get("data", bytes)
    expected = math.prod(shape) * dtype.itemsize
    if len(data) != expected:
        raise BundleError(
            f"field '{f.path}.data' has {len(data)} bytes, but dtype {dtype.str} and shape "
            f"{shape} need {expected}"
        )
    try:
        return np.frombuffer(data, dtype=dtype).reshape(shape)
    except ValueError:  # no elements, but a dimension numpy cannot represent, e.g. [0, 2**64 - 1, 7]
        raise BundleError(
            f"field '{f.path}.shape' {shape} has no elements but a dimension too large for an array") from None


def _read_str_list(f: _Fields, key: str, *, optional: bool = False) -> list[str] | None:
    v = f.get(key, list, optional=optional)
    if v is None:
        return None
    if not all(isinstance(s, str) for s in v):
        raise BundleError(f"field '{f.path + '.' if f.path else ''}{key}' must be a list of strings")
    return v


def _read_check(enc: _Fields, dim: int) -> dict[str, Any]:
    """The optional probe (v1.1): a public text and the exporter's unit embedding of it."""
    if enc.get("check", dict, optional=True) is None:
        return {}
    check = enc.sub("check")
    text = check.get("text", str)
    emb = _read_array(check.sub("embedding"), HYPERPLANES_DTYPE, 1)
    # The norm in float64: float32 values near 3.4e38 would overflow (and warn) when squared.
    if not text.strip() or emb.shape != (dim,) or not np.isfinite(emb).all() \
            or not 0.9 < float(np.linalg.norm(emb.astype(np.float64))) < 1.1:
        raise BundleError(f"field 'encoder.check' must hold a non-empty text and a finite unit {dim}-d embedding")
    return {"check_text": text, "check_embedding": emb}


def _check_version(version: Any) -> None:
    if (not isinstance(version, list) or len(version) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in version)):
        raise BundleError(f"field 'version' must be [major, minor], got {_show(version)}")
    major, minor = version
    readable = " and ".join(f"{m}.x" for m in SUPPORTED_MAJORS)
    if major > SUPPORTED_MAJORS[-1]:
        raise BundleError(
            f"bundle format version {major}.{minor} is newer than this runtime supports "
            f"({readable}); upgrade dpedge to read it"
        )
    if major not in SUPPORTED_MAJORS:
        raise BundleError(f"bundle format version {major}.{minor} is not supported (this runtime reads {readable})")
    # A newer minor version only adds fields; readers ignore fields they do not know.


_PRIVACY_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "epsilon": (float, int),
    "delta": (float, int),
    "mechanism": str,
    "sensitivity_l1": int,
    "noise_scale": (float, int),
    "neighbour_relation": str,
    "privacy_unit": str,
    "noise_source": str,
}


def unpack(data: bytes) -> Bundle:
    """Parse and validate bundle bytes (see `load`).

    Example:
        >>> unpack(b"not a bundle")
        Traceback (most recent call last):
        ...
        runtime.errors.BundleError: bundle is not a dpedge bundle: top level is integer, expected a map
    """
    return _parse_payload(_checked_payload(bytes(data)))


def _checked_payload(data: bytes) -> bytes:
    """The outer map's payload bytes, after the format, version and checksum checks."""
    outer = _Fields(_parse_msgpack(data, "bundle"), "")
    if outer.m.get("format") != FORMAT_NAME:
        raise BundleError(f"not a dpedge bundle: field 'format' is {_show(outer.m.get('format'))}, expected {FORMAT_NAME!r}")
    _check_version(outer.get("version", list))
    checksum = outer.sub("checksum")
    if checksum.get("algorithm", str) != CHECKSUM_ALGORITHM:
        raise BundleError(f"unsupported checksum algorithm {_show(checksum.m['algorithm'])}")
    digest = checksum.get("digest", bytes)
    body = outer.get("payload", bytes)
    if hashlib.sha256(body).digest() != digest:
        raise BundleError("checksum mismatch: the bundle is corrupted (its payload changed after it was written)")
    return body


def _parse_payload(body: bytes) -> Bundle:
    return _validate_payload(_Fields(_parse_msgpack(body, "bundle payload"), ""))


def _validate_payload(p: _Fields) -> Bundle:
    labels = _read_str_list(p, "labels")
    if len(labels) < 2 or len(set(labels)) != len(labels) or not all(labels):
        raise BundleError("field 'labels' must hold at least two distinct, non-empty labels")
    descriptions = _read_str_list(p, "label_descriptions", optional=True)
    if descriptions is not None and len(descriptions) != len(labels):
        raise BundleError(f"field 'label_descriptions' has {len(descriptions)} entries for {len(labels)} labels")

    privacy = p.sub("privacy")
    for key, typ in _PRIVACY_REQUIRED.items():
        privacy.get(key, typ)
    eps = float(privacy.m["epsilon"])
    if not (eps > 0 and math.isfinite(eps)):
        raise BundleError(f"field 'privacy.epsilon' must be a positive finite number, got {eps}")
    if privacy.m["delta"] != 0:
        raise BundleError(f"field 'privacy.delta' is {privacy.m['delta']}: only pure epsilon-DP bundles (delta = 0) exist in v1")

    lsh = p.sub("lsh")
    if lsh.get("family", str) != "simhash":
        raise BundleError(f"field 'lsh.family' is {_show(lsh.m['family'])}, expected 'simhash'")
    tables, bits, dim = lsh.get("tables", int), lsh.get("bits", int), lsh.get("dim", int)
    if not (1 <= bits <= MAX_BITS and 1 <= tables <= MAX_TABLES and dim >= 1):
        raise BundleError(f"LSH parameters out of range: tables={tables}, bits={bits}, dim={dim}")
    hyperplanes = _read_array(lsh.sub("hyperplanes"), HYPERPLANES_DTYPE, 3)
    if hyperplanes.shape != (tables, bits, dim):
        raise BundleError(f"field 'lsh.hyperplanes' has shape {hyperplanes.shape}, expected {(tables, bits, dim)}")
    if not np.isfinite(hyperplanes).all():
        raise BundleError("field 'lsh.hyperplanes' holds non-finite values")
    votes = _read_array(p.sub("votes"), VOTES_DTYPE, 3)
    if votes.shape != (tables, 2**bits, len(labels)):
        raise BundleError(f"field 'votes' has shape {votes.shape}, expected {(tables, 2**bits, len(labels))}")
    per_unit = privacy.get("max_records_per_unit", int, optional=True)  # absent before format 1.2
    per_unit = 1 if per_unit is None else per_unit
    if per_unit < 1:
        raise BundleError(f"field 'privacy.max_records_per_unit' is {per_unit}, expected at least 1")
    if privacy.m["sensitivity_l1"] != per_unit * tables:
        person = f", for each of the up to {per_unit} records of a person" if per_unit > 1 else ""
        raise BundleError(
            f"field 'privacy.sensitivity_l1' is {privacy.m['sensitivity_l1']} but a record touches one cell "
            f"in each of {tables} tables{person}"
        )

    offsets = None
    if "offsets" in lsh.m:
        offsets = _read_array(lsh.sub("offsets"), HYPERPLANES_DTYPE, 2)
        if offsets.shape != (tables, bits) or not np.isfinite(offsets).all():
            raise BundleError(f"field 'lsh.offsets' must be finite with shape {(tables, bits)}, got {offsets.shape}")
    class_stats = _read_class_stats(p, len(labels), dim) if "class_stats" in p.m else None
    _check_releases(privacy, eps, class_stats)
    prior = None
    if "prior" in p.m:
        prior = _read_array(p.sub("prior").sub("embeddings"), HYPERPLANES_DTYPE, 2)
        if prior.shape != (len(labels), dim) or not np.isfinite(prior).all():
            raise BundleError(f"field 'prior.embeddings' must be finite with shape {(len(labels), dim)}, got {prior.shape}")
    scoring = p.get("scoring", dict, optional=True)
    if scoring is not None and not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                       and v >= 0 for v in scoring.values() if not isinstance(v, str)):
        raise BundleError("field 'scoring' must map names to finite non-negative numbers")
    if scoring is not None:
        _check_scoring(scoring)

    enc = p.sub("encoder")
    fmt = enc.get("format", str)
    if fmt not in ENCODER_FORMATS:
        raise BundleError(f"encoder format {_show(fmt)} is not supported by this runtime (supports {', '.join(ENCODER_FORMATS)})")
    inputs = _read_str_list(enc, "inputs")
    encoder = Encoder(
        format=fmt,
        model=enc.get("model", bytes),
        tokenizer_json=enc.get("tokenizer_json", str),
        max_length=enc.get("max_length", int),
        dim=enc.get("dim", int),
        pooling=enc.get("pooling", str),
        normalized=enc.get("normalized", bool),
        inputs=tuple(inputs),
        output=enc.get("output", str),
        facts=enc.get("facts", dict),
        **_read_check(enc, dim),
    )
    if encoder.dim != dim:
        raise BundleError(f"encoder produces {encoder.dim}-d embeddings but the hyperplanes are {dim}-d")
    if not 2 <= encoder.max_length <= 8192:
        raise BundleError(f"field 'encoder.max_length' is {encoder.max_length}, expected 2..8192")
    if not encoder.model:
        raise BundleError("field 'encoder.model' is empty")
    unknown_inputs = set(inputs) - {"input_ids", "attention_mask", "token_type_ids"}
    if unknown_inputs:
        raise BundleError(f"encoder declares unsupported inputs {_show(sorted(unknown_inputs))}")

    return Bundle(
        labels=tuple(labels),
        label_descriptions=None if descriptions is None else tuple(descriptions),
        privacy=privacy.m,
        lsh={k: v for k, v in lsh.m.items() if k not in ("hyperplanes", "offsets")},
        hyperplanes=hyperplanes,
        votes=votes,
        encoder=encoder,
        exporter=p.get("exporter", dict),
        offsets=offsets,
        class_stats=class_stats,
        prior=prior,
        scoring=scoring,
    )


def _check_scoring(scoring: dict[str, Any]) -> None:
    """Format 2.1: the names the runtime reads must hold what it can use (a number where a
    number is meant, a known centroid rule, positive temperatures and clip), within bounds
    that keep the blend finite (SCORING_MAX, TEMPERATURE_MIN)."""
    for name in SCORING_NUMBERS:
        if name in scoring and isinstance(scoring[name], str):
            raise BundleError(f"field 'scoring.{name}' must be a number, got str")
    rule = scoring.get("centroid_rule", "cosine")
    if rule not in CENTROID_RULES:
        raise BundleError(f"field 'scoring.centroid_rule' must be one of {', '.join(CENTROID_RULES)}, got {_show(rule)}")
    for name in SCORING_NUMBERS:
        if name in scoring and scoring[name] > SCORING_MAX:
            raise BundleError(f"field 'scoring.{name}' must be at most 1e6")
    for name in ("centroid_temperature", "prior_temperature"):
        if name in scoring and scoring[name] < TEMPERATURE_MIN:
            raise BundleError(f"field 'scoring.{name}' must be at least 1e-6")
    if rule == "gaussian" and not scoring.get("centroid_clip_l1"):
        raise BundleError("field 'scoring.centroid_clip_l1' must be positive for the gaussian centroid rule")


def _read_class_stats(p: _Fields, classes: int, dim: int) -> ClassStats:
    cs = p.sub("class_stats")
    projection = _read_array(cs.sub("projection"), HYPERPLANES_DTYPE, 2)
    k = projection.shape[0]
    if not 1 <= k <= dim:
        raise BundleError(f"field 'class_stats.projection' must have 1 to {dim} rows (the embedding size), got {k}")
    shapes = {"origin": (dim,), "projection": (k, dim), "sums": (classes, k), "counts": (classes,)}
    arrays = {"projection": projection}
    for name, shape in shapes.items():
        a = arrays.get(name)
        if a is None:
            a = _read_array(cs.sub(name), HYPERPLANES_DTYPE, len(shape))
        if a.shape != shape or not np.isfinite(a).all():
            raise BundleError(f"field 'class_stats.{name}' must be finite with shape {shape}, got {a.shape}")
        arrays[name] = a
    return ClassStats(**arrays)


def _check_releases(privacy: _Fields, eps: float, class_stats: ClassStats | None) -> None:
    """Format 2: each released statistic with its share; the shares add up to the epsilon."""
    releases = privacy.get("releases", list, optional=class_stats is None)
    if releases is None:
        return
    names, total = [], 0.0
    for i, r in enumerate(releases):
        f = _Fields(r, f"privacy.releases[{i}]")
        names.append(f.get("statistic", str))
        share = f.get("epsilon", (float, int))
        f.get("sensitivity_l1", int)
        f.get("noise_scale", (float, int))
        f.get("mechanism", str)
        if not (share > 0 and math.isfinite(share)):
            raise BundleError(f"field 'privacy.releases[{i}].epsilon' must be positive, got {share}")
        total += float(share)
    if "votes" not in names or (class_stats is not None and "class_stats" not in names):
        raise BundleError(f"field 'privacy.releases' must list every released statistic, got {names}")
    if total > eps * (1 + 1e-9):
        raise BundleError(f"the releases spend epsilon {total}, more than the bundle's epsilon {eps}")
