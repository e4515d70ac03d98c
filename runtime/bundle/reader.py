"""Reading bundles: `load` a file, `unpack` bytes, and refuse anything that is not a valid bundle.

Every malformed input becomes one `BundleError` naming the field (its dotted path from
`runtime.bundle.schema`), never a KeyError or a msgpack exception from deep inside, and a
size the file declares never drives an allocation: array byte counts are checked against
dtype and shape before an array is built, and the msgpack walk is held to a value budget
(runtime.bundle.stream, which also reads a file once, about its size in memory).
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import reprlib
import stat
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from runtime.bundle import stream
from runtime.bundle.model_family import check_model
from runtime.bundle.schema import (CENTROID_RULES, CHECKSUM_ALGORITHM, ENCODER_FORMATS, ENCODER_INPUTS, FLOAT_DTYPE,
                                   FORMAT_NAME, LSH_FAMILY, MAX_BITS, MAX_BUNDLE_BYTES, MAX_CHECK_TEXT_CHARS,
                                   MAX_DESCRIPTION_CHARS, MAX_LABEL_CHARS, MAX_LENGTH_RANGE, MAX_NAME_CHARS, MAX_TABLES,
                                   PRIOR_BOOST_RULES, PRIVACY_RTOL, SCORING_MAX, SCORING_NUMBERS,
                                   SCORING_TEMPERATURES, SUPPORTED_MAJORS, TEMPERATURE_MIN, VOTES_DTYPE,
                                   VOTES_OPTIONAL_FROM, Array, Bundle, ClassStats,
                                   ClassStatsKey, Encoder, EncoderKey, Lsh, Outer, Payload, PriorKey, Privacy,
                                   Release, Scoring, Statistic, UNPRINTABLE_CODE_POINTS, path,
                                   stated_grid)
from runtime.bundle.tokenizer_family import check_tokenizer_json
from runtime.errors import BundleError


def load(file: str | os.PathLike[str]) -> Bundle:
    """Read and validate a bundle file.

    Raises BundleError for a missing, oversized, truncated, corrupted or incompatible file.
    The file is read once, about its size in memory (runtime.bundle.stream), and a corrupted
    one is refused after a streaming checksum pass that holds one chunk at a time.

    Example:
        >>> b = load("models/quickstart.dpedge")             # doctest: +SKIP
        >>> b.privacy["epsilon"]                             # doctest: +SKIP
        8.0
    """
    p = Path(file)
    try:
        st = p.stat()
        size = st.st_size
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            # A device or pipe has no size to check: /dev/zero would be read until memory runs out.
            raise BundleError(f"{p}: is not a regular file, so it cannot be a bundle")
        if size > MAX_BUNDLE_BYTES:
            raise BundleError(f"{p}: {size} bytes is larger than any bundle ({MAX_BUNDLE_BYTES} max)")
        f = open(p, "rb", buffering=0)
    except FileNotFoundError:
        raise BundleError(f"{p}: no such bundle file") from None
    except IsADirectoryError:
        raise BundleError(f"{p}: is a directory, not a bundle file") from None
    except OSError as exc:
        raise BundleError(f"{p}: cannot read bundle: {exc.strerror or exc}") from None
    with f:
        try:
            return _read(io.BufferedReader(f, _BUFFER), size)
        except BundleError as exc:
            raise BundleError(f"{p}: {exc}") from exc.__cause__
        except MemoryError:
            raise BundleError(f"{p}: does not fit in the memory this process may use") from None
        except OSError as exc:
            raise BundleError(f"{p}: cannot read bundle: {exc.strerror or exc}") from None


def unpack(data: bytes) -> Bundle:
    """Parse and validate bundle bytes (see `load`).

    Example:
        >>> unpack(b"not a bundle")
        Traceback (most recent call last):
        ...
        runtime.errors.BundleError: bundle is not a dpedge bundle: top level is integer, expected a map
    """
    data = bytes(data)
    return _read(stream.open_bytes(data), len(data))


#: Read-ahead of the file reader: headers are small, and big fields are read whole anyway.
_BUFFER = 64 * 1024


def _top_map(doc: stream.Document, what: str) -> dict[str, Any]:
    """The document's map; its type is checked before its trailing bytes."""
    obj = stream.parse_skeleton(doc, what)
    if not isinstance(obj, dict):
        raise BundleError(f"{what} is not a dpedge bundle: top level is {_msgpack_name(type(obj))}, expected a map")
    if doc.trailing:
        raise BundleError(f"{what} has {doc.trailing} unexpected trailing bytes")
    return obj


def _read(f: BinaryIO, size: int) -> Bundle:
    """The outer map, then its payload: checked, hashed, parsed and validated."""
    # Every binary field of the outer map longer than a digest stays in the file: the payload is
    # hashed and walked from there, never held twice.
    outer_doc = stream.split(f, 0, size, "bundle", lazy_min=64)
    outer = _top_map(outer_doc, "bundle")
    checksum = outer.get(Outer.CHECKSUM)
    if isinstance(checksum, dict) and isinstance(checksum.get(Outer.DIGEST), stream.LazyBin):
        checksum[Outer.DIGEST] = b""  # a SHA-256 digest is 32 bytes: this one cannot match
    payload = outer.get(Outer.PAYLOAD)
    source: BinaryIO | None = None
    start = end = 0
    if isinstance(payload, stream.LazyBin):
        source, start, end = f, payload.span.offset, payload.span.offset + payload.span.length
        outer[Outer.PAYLOAD] = b""
    major, digest = _checked_outer(outer)
    if source is None:
        body = outer[Outer.PAYLOAD]
        source, start, end = stream.open_bytes(body), 0, len(body)
    # The walk reads the small values; the digest then streams the whole payload (big fields
    # included, one chunk at a time), so a corrupted file is refused before any big field is
    # read; then the big fields the reader uses are read once, into their own buffers, and the
    # others (unknown fields) never are. A walk that fails on a corrupted payload is reported as
    # the corruption it is. (The checksum guards against corruption, not against a file that
    # changes while it is being read: the format has no signature.)
    try:
        doc = stream.split(source, start, end, "bundle payload")
        obj = _top_map(doc, "bundle payload")
    except BundleError:
        if _stream_sha256(source, start, end) != digest:
            raise BundleError(_CORRUPTED) from None
        raise
    if doc.digest({}, source) != digest:
        raise BundleError(_CORRUPTED)
    wanted = [lazy.span for where, lazy in stream.find_lazy(obj, 4) if _read_into_memory(where)]
    values = stream.read_spans(source, wanted, "bundle payload")
    return _validate_payload(_Fields(stream.fill(obj, values), ""), major)


_CORRUPTED = "checksum mismatch: the bundle is corrupted (its payload changed after it was written)"


#: Array records whose data the reader uses (the encoder's model is the other binary field).
_ARRAY_RECORDS = {(Payload.VOTES,), (Payload.LSH, Lsh.HYPERPLANES), (Payload.LSH, Lsh.OFFSETS),
                  (Payload.PRIOR, PriorKey.EMBEDDINGS), (Payload.ENCODER, EncoderKey.CHECK, EncoderKey.CHECK_EMBEDDING),
                  *((Payload.CLASS_STATS, k) for k in (ClassStatsKey.ORIGIN, ClassStatsKey.PROJECTION,
                                                       ClassStatsKey.SUMS, ClassStatsKey.COUNTS))}


def _read_into_memory(where: tuple[Any, ...]) -> bool:
    """Whether a big binary field at this path (at most 4 keys deep) is one the reader uses."""
    return where == (Payload.ENCODER, EncoderKey.MODEL) or (where[-1:] == (Array.DATA,)
                                                            and tuple(where[:-1]) in _ARRAY_RECORDS)


def _stream_sha256(f: BinaryIO, start: int, end: int) -> bytes:
    """SHA-256 of f[start:end], one chunk in memory at a time."""
    h = hashlib.sha256()
    stream.hash_range(h, f, start, end - start)
    return h.digest()


class _Fields:
    """Typed access to a msgpack map, naming the dotted path of whatever is wrong."""

    def __init__(self, m: Any, where: str):
        if not isinstance(m, dict):
            raise BundleError(f"field '{where}' must be a map, got {_msgpack_name(type(m))}")
        self.m, self.path = m, where

    def where(self, key: str) -> str:
        return path(self.path, key)

    def get(self, key: str, typ: type | tuple[type, ...], *, optional: bool = False) -> Any:
        if key not in self.m:
            if optional:
                return None
            raise BundleError(f"missing field '{self.where(key)}'")
        v = self.m[key]
        if v is None and optional:
            return None
        # bool is an int subclass in Python; never accept it where a number is meant.
        if not isinstance(v, typ) or (isinstance(v, bool) and bool not in _as_tuple(typ)):
            raise BundleError(f"field '{self.where(key)}' is {_msgpack_name(type(v))}, expected {_names(typ)}")
        return v

    def sub(self, key: str) -> "_Fields":
        return _Fields(self.get(key, dict), self.where(key))


def _as_tuple(t: type | tuple[type, ...]) -> tuple[type, ...]:
    return t if isinstance(t, tuple) else (t,)


_MSGPACK_NAMES = {dict: "map", list: "array", bytes: "bin", stream.LazyBin: "bin", str: "string", int: "integer",
                  float: "float", bool: "boolean", type(None): "nil"}
_NUMBER = (float, int)


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


def _short(x: float) -> str:
    """A bound as the format document writes it: 1e6, 1e-6.

    Example:
        >>> _short(1e6), _short(1e-6), _short(0.98)
        ('1e6', '1e-6', '0.98')
    """
    mantissa, _, exponent = f"{x:g}".partition("e")
    return mantissa if not exponent else f"{mantissa}e{int(exponent)}"


def _read_array(f: _Fields, dtype: np.dtype, ndim: int) -> np.ndarray:
    if f.get(Array.DTYPE, str) != dtype.str:
        raise BundleError(f"field '{f.where(Array.DTYPE)}' is {_show(f.m[Array.DTYPE])}, expected {dtype.str!r}")
    shape = f.get(Array.SHAPE, list)
    if len(shape) != ndim or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise BundleError(f"field '{f.where(Array.SHAPE)}' must be {ndim} non-negative integers, got {_show(shape)}")
    data = f.get(Array.DATA, bytes)
    expected = math.prod(shape) * dtype.itemsize
    if len(data) != expected:
        raise BundleError(
            f"field '{f.where(Array.DATA)}' has {len(data)} bytes, but dtype {dtype.str} and shape "
            f"{shape} need {expected}"
        )
    try:
        return np.frombuffer(data, dtype=dtype).reshape(shape)
    except ValueError:  # no elements, but a dimension numpy cannot represent, e.g. [0, 2**64 - 1, 7]
        raise BundleError(
            f"field '{f.where(Array.SHAPE)}' {shape} has no elements but a dimension too large for an array") from None


def _finite_array(f: _Fields, key: str, shape: tuple[int, ...]) -> np.ndarray:
    """A float array field of exactly ``shape``, all values finite."""
    a = _read_array(f.sub(key), FLOAT_DTYPE, len(shape))
    if a.shape != shape or not np.isfinite(a).all():
        raise BundleError(f"field '{f.where(key)}' must be finite with shape {shape}, got {a.shape}")
    return a


def _read_str_list(f: _Fields, key: str, *, optional: bool = False) -> list[str] | None:
    v = f.get(key, list, optional=optional)
    if v is None:
        return None
    if not all(isinstance(s, str) for s in v):
        raise BundleError(f"field '{f.where(key)}' must be a list of strings")
    return v


def _read_check(enc: _Fields, dim: int) -> dict[str, Any]:
    """The optional probe (v1.1): a public text and the exporter's unit embedding of it."""
    if enc.get(EncoderKey.CHECK, dict, optional=True) is None:
        return {}
    check = enc.sub(EncoderKey.CHECK)
    text = check.get(EncoderKey.CHECK_TEXT, str)
    # The check text is tokenized and encoded at load, before any query: bounded like a query
    # could never be (queries may have 1,000,000 characters).
    if len(text) > MAX_CHECK_TEXT_CHARS:
        raise BundleError(f"field '{check.where(EncoderKey.CHECK_TEXT)}' has {len(text)} characters, more than "
                          f"{MAX_CHECK_TEXT_CHARS}")
    emb = _read_array(check.sub(EncoderKey.CHECK_EMBEDDING), FLOAT_DTYPE, 1)
    # The norm in float64: float32 values near 3.4e38 would overflow (and warn) when squared.
    if not text.strip() or emb.shape != (dim,) or not np.isfinite(emb).all() \
            or not 0.9 < float(np.linalg.norm(emb.astype(np.float64))) < 1.1:
        raise BundleError(f"field '{check.path}' must hold a non-empty text and a finite unit {dim}-d embedding")
    return {"check_text": text, "check_embedding": emb}


def _check_version(version: Any) -> int:
    if (not isinstance(version, list) or len(version) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in version)):
        raise BundleError(f"field '{Outer.VERSION}' must be [major, minor], got {_show(version)}")
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
    return major


_PRIVACY_REQUIRED: dict[str, type | tuple[type, ...]] = {
    Privacy.EPSILON: _NUMBER,
    Privacy.DELTA: _NUMBER,
    Privacy.MECHANISM: str,
    Privacy.SENSITIVITY_L1: int,
    Privacy.NOISE_SCALE: _NUMBER,
    Privacy.NEIGHBOUR_RELATION: str,
    Privacy.PRIVACY_UNIT: str,
    Privacy.NOISE_SOURCE: str,
}


def _checked_outer(m: dict[str, Any]) -> tuple[int, bytes]:
    """The outer map's checks (format, version, checksum fields, a binary payload); returns
    the major version and the digest the payload must have."""
    outer = _Fields(m, "")
    if outer.m.get(Outer.FORMAT) != FORMAT_NAME:
        raise BundleError(f"not a dpedge bundle: field '{Outer.FORMAT}' is {_show(outer.m.get(Outer.FORMAT))}, "
                          f"expected {FORMAT_NAME!r}")
    major = _check_version(outer.get(Outer.VERSION, list))
    checksum = outer.sub(Outer.CHECKSUM)
    if checksum.get(Outer.ALGORITHM, str) != CHECKSUM_ALGORITHM:
        raise BundleError(f"unsupported checksum algorithm {_show(checksum.m[Outer.ALGORITHM])}")
    digest = checksum.get(Outer.DIGEST, bytes)
    outer.get(Outer.PAYLOAD, bytes)
    return major, digest


def _validate_payload(p: _Fields, major: int) -> Bundle:
    labels = _read_str_list(p, Payload.LABELS)
    if len(labels) < 2 or len(set(labels)) != len(labels) or not all(labels):
        raise BundleError(f"field '{Payload.LABELS}' must hold at least two distinct, non-empty labels")
    _check_printable(labels, Payload.LABELS, MAX_LABEL_CHARS)
    descriptions = _read_str_list(p, Payload.LABEL_DESCRIPTIONS, optional=True)
    if descriptions is not None and len(descriptions) != len(labels):
        raise BundleError(f"field '{Payload.LABEL_DESCRIPTIONS}' has {len(descriptions)} entries for "
                          f"{len(labels)} labels")
    if descriptions is not None:
        _check_printable(descriptions, Payload.LABEL_DESCRIPTIONS, MAX_DESCRIPTION_CHARS)

    privacy = p.sub(Payload.PRIVACY)
    for key, typ in _PRIVACY_REQUIRED.items():
        privacy.get(key, typ)
    eps = float(privacy.m[Privacy.EPSILON])
    if not (eps > 0 and math.isfinite(eps)):
        raise BundleError(f"field '{privacy.where(Privacy.EPSILON)}' must be a positive finite number, got {eps}")
    if privacy.m[Privacy.DELTA] != 0:
        raise BundleError(f"field '{privacy.where(Privacy.DELTA)}' is {privacy.m[Privacy.DELTA]}: only pure "
                          f"epsilon-DP bundles (delta = 0) exist")

    per_unit = privacy.get(Privacy.MAX_RECORDS_PER_UNIT, int, optional=True)  # absent before format 1.2
    per_unit = 1 if per_unit is None else per_unit
    if per_unit < 1:
        raise BundleError(f"field '{privacy.where(Privacy.MAX_RECORDS_PER_UNIT)}' is {per_unit}, expected at least 1")
    lsh = hyperplanes = votes = offsets = None
    if major < VOTES_OPTIONAL_FROM or Payload.LSH in p.m or Payload.VOTES in p.m:
        lsh, hyperplanes, votes, offsets = _read_tables(p, privacy, len(labels), per_unit)
        dim = lsh.m[Lsh.DIM]
    else:  # format 3: class statistics alone
        dim = p.sub(Payload.ENCODER).get(EncoderKey.DIM, int)
    class_stats = _read_class_stats(p, len(labels), dim) if Payload.CLASS_STATS in p.m else None
    if votes is None and class_stats is None:
        raise BundleError(f"a bundle without vote tables ('{Payload.VOTES}') must hold '{Payload.CLASS_STATS}': "
                          "it has nothing to classify with")
    _check_releases(privacy, eps, class_stats, votes is not None, per_unit)
    _check_noise_scale(privacy, eps)
    prior = None
    if Payload.PRIOR in p.m:
        prior = _finite_array(p.sub(Payload.PRIOR), PriorKey.EMBEDDINGS, (len(labels), dim))
    scoring = p.get(Payload.SCORING, dict, optional=True)
    if scoring is not None:
        _check_scoring(scoring, class_stats is not None)

    enc = p.sub(Payload.ENCODER)
    fmt = enc.get(EncoderKey.FORMAT, str)
    if fmt not in ENCODER_FORMATS:
        raise BundleError(f"encoder format {_show(fmt)} is not supported by this runtime (supports "
                          f"{', '.join(ENCODER_FORMATS)})")
    inputs = _read_str_list(enc, EncoderKey.INPUTS)
    encoder = Encoder(
        format=fmt,
        model=enc.get(EncoderKey.MODEL, bytes),
        tokenizer_json=enc.get(EncoderKey.TOKENIZER_JSON, str),
        max_length=enc.get(EncoderKey.MAX_LENGTH, int),
        dim=enc.get(EncoderKey.DIM, int),
        pooling=enc.get(EncoderKey.POOLING, str),
        normalized=enc.get(EncoderKey.NORMALIZED, bool),
        inputs=tuple(inputs),
        output=enc.get(EncoderKey.OUTPUT, str),
        facts=enc.get(EncoderKey.FACTS, dict),
        **_read_check(enc, dim),
    )
    if encoder.dim != dim:
        raise BundleError(f"encoder produces {encoder.dim}-d embeddings but the hyperplanes are {dim}-d")
    if encoder.dim < 1:
        raise BundleError(f"field '{enc.where(EncoderKey.DIM)}' is {encoder.dim}, expected at least 1")
    low, high = MAX_LENGTH_RANGE
    if not low <= encoder.max_length <= high:
        raise BundleError(f"field '{enc.where(EncoderKey.MAX_LENGTH)}' is {encoder.max_length}, expected {low}..{high}")
    if not encoder.model:
        raise BundleError(f"field '{enc.where(EncoderKey.MODEL)}' is empty")
    unknown_inputs = set(inputs) - set(ENCODER_INPUTS)
    if unknown_inputs:
        raise BundleError(f"encoder declares unsupported inputs {_show(sorted(unknown_inputs))}")
    if not 1 <= len(encoder.output) <= MAX_NAME_CHARS or not encoder.output.isprintable():
        raise BundleError(f"field '{enc.where(EncoderKey.OUTPUT)}' must be a printable name of 1 to {MAX_NAME_CHARS} "
                          f"characters, got {_show(encoder.output)}")
    # The declared families (docs/bundle-format.md section 10), last: they read the most bytes.
    check_tokenizer_json(encoder.tokenizer_json)
    check_model(encoder.format, encoder.model)

    return Bundle(
        labels=tuple(labels),
        label_descriptions=None if descriptions is None else tuple(descriptions),
        privacy=privacy.m,
        lsh=None if lsh is None else {k: v for k, v in lsh.m.items() if k not in (Lsh.HYPERPLANES, Lsh.OFFSETS)},
        hyperplanes=hyperplanes,
        votes=votes,
        encoder=encoder,
        exporter=p.get(Payload.EXPORTER, dict),
        offsets=offsets,
        class_stats=class_stats,
        prior=prior,
        scoring=scoring,
    )


def _read_tables(p: _Fields, privacy: _Fields, classes: int,
                 per_unit: int) -> tuple[_Fields, np.ndarray, np.ndarray, np.ndarray | None]:
    """The hashing and the vote tables (required before format 3, optional from it): ``lsh``
    as a field map, the hyperplanes, the votes and the offsets (None when absent)."""
    lsh = p.sub(Payload.LSH)
    if lsh.get(Lsh.FAMILY, str) != LSH_FAMILY:
        raise BundleError(f"field '{lsh.where(Lsh.FAMILY)}' is {_show(lsh.m[Lsh.FAMILY])}, expected {LSH_FAMILY!r}")
    tables, bits, dim = lsh.get(Lsh.TABLES, int), lsh.get(Lsh.BITS, int), lsh.get(Lsh.DIM, int)
    if not (1 <= bits <= MAX_BITS and 1 <= tables <= MAX_TABLES and dim >= 1):
        raise BundleError(f"LSH parameters out of range: tables={tables}, bits={bits}, dim={dim}")
    hyperplanes = _read_array(lsh.sub(Lsh.HYPERPLANES), FLOAT_DTYPE, 3)
    if hyperplanes.shape != (tables, bits, dim):
        raise BundleError(f"field '{lsh.where(Lsh.HYPERPLANES)}' has shape {hyperplanes.shape}, "
                          f"expected {(tables, bits, dim)}")
    if not np.isfinite(hyperplanes).all():
        raise BundleError(f"field '{lsh.where(Lsh.HYPERPLANES)}' holds non-finite values")
    votes = _read_array(p.sub(Payload.VOTES), VOTES_DTYPE, 3)
    if votes.shape != (tables, 2**bits, classes):
        raise BundleError(f"field '{Payload.VOTES}' has shape {votes.shape}, expected {(tables, 2**bits, classes)}")
    if privacy.m[Privacy.SENSITIVITY_L1] != per_unit * tables:
        person = f", for each of the up to {per_unit} records of a person" if per_unit > 1 else ""
        raise BundleError(
            f"field '{privacy.where(Privacy.SENSITIVITY_L1)}' is {privacy.m[Privacy.SENSITIVITY_L1]} but a record "
            f"touches one cell in each of {tables} tables{person}"
        )
    offsets = _finite_array(lsh, Lsh.OFFSETS, (tables, bits)) if Lsh.OFFSETS in lsh.m else None
    return lsh, hyperplanes, votes, offsets


def _check_scoring(scoring: dict[str, Any], has_class_stats: bool) -> None:
    """The names the runtime reads must hold what it can use (a number where a number is meant,
    a known centroid rule, positive temperatures and clip), within bounds that keep the blend
    finite (SCORING_MAX, TEMPERATURE_MIN)."""
    where = Payload.SCORING
    if not all(isinstance(v, _NUMBER) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
               for v in scoring.values() if not isinstance(v, str)):
        raise BundleError(f"field '{where}' must map names to finite non-negative numbers")
    for name in SCORING_NUMBERS:
        if name in scoring and isinstance(scoring[name], str):
            raise BundleError(f"field '{path(where, name)}' must be a number, got str")
    rule = scoring.get(Scoring.CENTROID_RULE, CENTROID_RULES[0])
    if rule not in CENTROID_RULES:
        raise BundleError(f"field '{path(where, Scoring.CENTROID_RULE)}' must be one of {', '.join(CENTROID_RULES)}, "
                          f"got {_show(rule)}")
    for name in SCORING_NUMBERS:
        if name in scoring and scoring[name] > SCORING_MAX:
            raise BundleError(f"field '{path(where, name)}' must be at most {_short(SCORING_MAX)}")
    for name in SCORING_TEMPERATURES:
        if name in scoring and scoring[name] < TEMPERATURE_MIN:
            raise BundleError(f"field '{path(where, name)}' must be at least {_short(TEMPERATURE_MIN)}")
    if rule == "gaussian" and not scoring.get(Scoring.CENTROID_CLIP_L1):
        raise BundleError(f"field '{path(where, Scoring.CENTROID_CLIP_L1)}' must be positive for the gaussian "
                          f"centroid rule")
    boost = scoring.get(Scoring.PRIOR_BOOST_RULE, PRIOR_BOOST_RULES[0])
    if boost not in PRIOR_BOOST_RULES:
        raise BundleError(f"field '{path(where, Scoring.PRIOR_BOOST_RULE)}' must be one of "
                          f"{', '.join(PRIOR_BOOST_RULES)}, got {_show(boost)}")
    if boost == "linear" and not has_class_stats:
        raise BundleError(f"field '{path(where, Scoring.PRIOR_BOOST_RULE)}' is 'linear', which needs the released "
                          f"class counts of '{Payload.CLASS_STATS}'")


def _read_class_stats(p: _Fields, classes: int, dim: int) -> ClassStats:
    cs = p.sub(Payload.CLASS_STATS)
    projection = _read_array(cs.sub(ClassStatsKey.PROJECTION), FLOAT_DTYPE, 2)
    k = projection.shape[0]
    if not 1 <= k <= dim:
        raise BundleError(f"field '{cs.where(ClassStatsKey.PROJECTION)}' must have 1 to {dim} rows (the embedding "
                          f"size), got {k}")
    if projection.shape != (k, dim) or not np.isfinite(projection).all():
        raise BundleError(f"field '{cs.where(ClassStatsKey.PROJECTION)}' must be finite with shape {(k, dim)}, "
                          f"got {projection.shape}")
    return ClassStats(origin=_finite_array(cs, ClassStatsKey.ORIGIN, (dim,)), projection=projection,
                      sums=_finite_array(cs, ClassStatsKey.SUMS, (classes, k)),
                      counts=_finite_array(cs, ClassStatsKey.COUNTS, (classes,)))


def _check_releases(privacy: _Fields, eps: float, class_stats: ClassStats | None, has_votes: bool,
                    per_unit: int) -> None:
    """Formats 2 and 3: each released statistic with its share; the shares add up to the
    epsilon, and each release's noise scale is its sensitivity over its share (a reader cannot
    prove that noise was added, but it refuses a bundle whose own statements contradict each
    other). The class statistics are one release in format 2 (``class_stats``) and two in
    format 3 (``class_counts``, then ``class_sums``), whose sensitivities follow from the person
    bound K (`_check_person_bound`)."""
    releases = privacy.get(Privacy.RELEASES, list, optional=class_stats is None)
    if releases is None:
        return
    names, total, checked = [], 0.0, []
    for i, r in enumerate(releases):
        f = _Fields(r, f"{privacy.where(Privacy.RELEASES)}[{i}]")
        names.append(f.get(Release.STATISTIC, str))
        share = f.get(Release.EPSILON, _NUMBER)
        sensitivity = f.get(Release.SENSITIVITY_L1, int)
        scale = f.get(Release.NOISE_SCALE, _NUMBER)
        f.get(Release.MECHANISM, str)
        if not (share > 0 and math.isfinite(share)):
            raise BundleError(f"field '{f.where(Release.EPSILON)}' must be positive, got {share}")
        total += float(share)
        checked.append((f, float(share), sensitivity, scale))
    needed = {Statistic.VOTES} if has_votes else set()
    if class_stats is not None:
        needed |= ({Statistic.CLASS_STATS} if Statistic.CLASS_STATS in names
                   else {Statistic.CLASS_COUNTS, Statistic.CLASS_SUMS})
    if not needed <= set(names):
        raise BundleError(f"field '{privacy.where(Privacy.RELEASES)}' must list every released statistic, got {names}")
    if not math.isclose(total, eps, rel_tol=PRIVACY_RTOL):
        raise BundleError(f"the releases spend epsilon {total}, but field '{privacy.where(Privacy.EPSILON)}' is {eps}: "
                          f"their shares must add up to it")
    for f, share, sensitivity, scale in checked:
        _check_scale(f, Release.SENSITIVITY_L1, Release.NOISE_SCALE, sensitivity, scale, share)
        _check_person_bound(f, sensitivity, per_unit)


def _check_person_bound(f: _Fields, sensitivity: int, per_unit: int) -> None:
    """A release states the person bound K it was made under (if it names one, the bundle's),
    and a format-3 class release's sensitivity is K times one record's: 1 for ``class_counts``,
    round(grid x clip_l1) for ``class_sums`` (when it states its grid and clip). Otherwise a
    bundle could claim a person-level guarantee with record-level noise."""
    stated = f.m.get(Release.MAX_RECORDS_PER_UNIT)
    if stated is not None and not (type(stated) is int and stated == per_unit):
        raise BundleError(f"field '{f.where(Release.MAX_RECORDS_PER_UNIT)}' is {_show(stated)}, but field "
                          f"'{path(Payload.PRIVACY, Privacy.MAX_RECORDS_PER_UNIT)}' is {per_unit}")
    statistic = f.m[Release.STATISTIC]
    if statistic == Statistic.CLASS_COUNTS:
        per_record = 1
    elif statistic == Statistic.CLASS_SUMS:
        grid, clip = stated_grid(f.m.get(Release.GRID)), f.m.get(Release.CLIP_L1)
        # Only a stated grid (1 to 2^31) and a clip whose product with it is in (0, 2^53): exact
        # in a double, so that every reader computes the same integer.
        if type(clip) is int:
            clip = float(clip) if abs(clip) < 2**53 else math.inf
        if not (grid is not None and type(clip) is float and 0 < clip * grid < 2**53):
            return
        per_record = round(clip * grid)
    else:
        return
    if sensitivity != per_unit * per_record:
        raise BundleError(f"field '{f.where(Release.SENSITIVITY_L1)}' is {sensitivity}, but a {statistic} release "
                          f"with at most {per_unit} record(s) per unit has sensitivity {per_unit} x {per_record}: "
                          "the privacy facts contradict each other")


def _check_scale(f: _Fields, sensitivity_key: str, scale_key: str, sensitivity: int, scale: float,
                 epsilon: float) -> None:
    """A discrete Laplace release of L1 sensitivity s at epsilon e has noise scale s / e."""
    if sensitivity < 1:
        raise BundleError(f"field '{f.where(sensitivity_key)}' must be at least 1, got {sensitivity}")
    if not (scale > 0 and math.isfinite(scale)):
        raise BundleError(f"field '{f.where(scale_key)}' must be a positive finite number, got {scale}")
    expected = sensitivity / epsilon
    if not math.isclose(float(scale), expected, rel_tol=PRIVACY_RTOL):
        raise BundleError(f"field '{f.where(scale_key)}' is {scale}, but sensitivity {sensitivity} at epsilon "
                          f"{epsilon} needs noise scale {expected}: the privacy facts contradict each other")


def _check_noise_scale(privacy: _Fields, eps: float) -> None:
    """The top-level sensitivity and noise scale are one release's: with releases, the votes
    release's, or the last release's in a bundle without vote tables (format 3); without
    releases (format 1.x), those of the whole epsilon."""
    sensitivity, scale = privacy.m[Privacy.SENSITIVITY_L1], privacy.m[Privacy.NOISE_SCALE]
    releases = privacy.m.get(Privacy.RELEASES)
    if not isinstance(releases, list) or not releases:
        _check_scale(privacy, Privacy.SENSITIVITY_L1, Privacy.NOISE_SCALE, sensitivity, scale, eps)
        return
    head = next((r for r in releases if r.get(Release.STATISTIC) == Statistic.VOTES), releases[-1])
    if sensitivity != head[Release.SENSITIVITY_L1] or not math.isclose(float(scale), float(head[Release.NOISE_SCALE]),
                                                                       rel_tol=PRIVACY_RTOL):
        raise BundleError(f"fields '{privacy.where(Privacy.SENSITIVITY_L1)}' and '{privacy.where(Privacy.NOISE_SCALE)}' "
                          f"({sensitivity}, {scale}) must be the {head[Release.STATISTIC]} release's "
                          f"({head[Release.SENSITIVITY_L1]}, {head[Release.NOISE_SCALE]})")


def _check_printable(texts: list[str], where: str, most: int) -> None:
    """Labels and descriptions reach terminals: bounded, and without the characters of
    UNPRINTABLE_CODE_POINTS, so a bundle cannot send escape sequences or break, reorder or
    spoof output lines."""
    for i, t in enumerate(texts):
        if len(t) > most:
            raise BundleError(f"field '{where}[{i}]' has {len(t)} characters, more than {most}")
        if not t.isprintable():  # a fast path: printable text holds none of them
            bad = next((c for c in t if any(lo <= ord(c) <= hi for lo, hi in UNPRINTABLE_CODE_POINTS)), None)
            if bad is not None:
                raise BundleError(f"field '{where}[{i}]' holds control character U+{ord(bad):04X}, which a terminal "
                                  f"would act on")
