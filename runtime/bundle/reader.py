"""Reading bundles: `load` a file, `unpack` bytes; anything that is not a valid 1.x bundle is refused.

The reader interprets the format's table (runtime.bundle.schema.FIELDS) rather than checking
each field by hand, so every field gets the same treatment: a required field that is missing,
a present field of the wrong type, out of its bounds or not finite, a key a map repeats, an
unknown key in a bundle of a minor version this reader knows, are each refused with one
`BundleError` naming the field's dotted path. Then the relations (schema.RELATIONS), the text
rules (runtime.text) and the engine families (tokenizer_family, model_family).

The container (runtime.bundle.container) is hashed, then decoded with binary values left in
place; each one the table names is read once, into its own buffer (a view, for bytes already in
memory), and no other is read at all.
"""

from __future__ import annotations

import math
import os
import reprlib
import stat
from pathlib import Path
from typing import Any, Callable

import numpy as np

from runtime.bundle.container import Bin, Source, read_document
from runtime.bundle.model_family import check_model
from runtime.bundle.schema import (CONDITIONS, DIMS, FIELDS, FIELDS_BY_PATH, FORMAT_NAME, FORMAT_VERSION,
                                   MAX_BUNDLE_BYTES, MAX_DESCRIPTION_CHARS, MAX_LABEL_CHARS, MAX_TEXT_CHARS,
                                   PRIVACY_RTOL, STATISTICS, Bundle, EncoderSpec, Field, Key, ReleaseFacts, Scoring,
                                   WeightsFile)
from runtime.bundle.tokenizer_family import check_tokenizer_json
from runtime.errors import BundleError
from runtime.text import escape, fold, u_plus, unprintable



def load(file: str | os.PathLike[str]) -> Bundle:
    """Read and validate a bundle file (BundleError, naming the file, for anything unusable).
    The file is hashed one chunk at a time, then read field by field: an ONNX model's weights
    stay in the file for the engine to map (``encoder.weights_file``).

    Example:
        >>> load("models/quickstart.dpedge").privacy["epsilon"]            # doctest: +SKIP
        8.0
    """
    p = Path(file)
    try:
        st = p.stat()
        if stat.S_ISDIR(st.st_mode):
            raise BundleError(f"{p}: is a directory, not a bundle file")
        if not stat.S_ISREG(st.st_mode):  # a device or a pipe has no size to check
            raise BundleError(f"{p}: is not a regular file, so it cannot be a bundle")
        if st.st_size > MAX_BUNDLE_BYTES:
            raise BundleError(f"{p}: {st.st_size} bytes is larger than any bundle ({MAX_BUNDLE_BYTES} max)")
        with open(p, "rb") as f:
            identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            return _read(Source(st.st_size, f=f), (str(p.resolve()), identity))
    except FileNotFoundError:
        raise BundleError(f"{p}: no such bundle file") from None
    except BundleError as exc:
        raise BundleError(f"{p}: {exc}") from None
    except MemoryError:
        raise BundleError(f"{p}: does not fit in the memory this process may use") from None
    except OSError as exc:
        raise BundleError(f"{p}: cannot read bundle: {exc.strerror or exc}") from None


def unpack(data: bytes) -> Bundle:
    """Parse and validate bundle bytes (see `load`); arrays are views of ``data``.

    Example:
        >>> unpack(b"not a bundle")
        Traceback (most recent call last):
        ...
        runtime.errors.BundleError: not a dpedge bundle (it does not start with a msgpack map)
    """
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleError(f"{len(data)} bytes is larger than any bundle ({MAX_BUNDLE_BYTES} max)")
    return _read(Source.of(data), None)


def parse(data: bytes) -> dict[str, Any]:
    """The checked document of bundle bytes: sealed by its digest, one msgpack map within the
    container's bounds, binary values as `container.Bin` (for tools that edit bundles)."""
    src = Source.of(data)
    src.check_digest()
    return _document(src)


def _read(src: Source, file_at: tuple[str, tuple[int, int, int, int]] | None) -> Bundle:
    src.check_digest()
    doc = _document(src)
    return _decode(doc, _version(doc), src, file_at)


def _document(src: Source) -> dict[str, Any]:
    doc = read_document(src)
    keys = list(doc)
    if keys[:2] != [Key.FORMAT, Key.VERSION] or keys[-1] != Key.SHA256:
        raise BundleError(f"a bundle's map starts with '{Key.FORMAT}' and '{Key.VERSION}' and ends with "
                          f"'{Key.SHA256}', got {_show(keys[:2])} ... {_show(keys[-1])}")
    return doc


def _version(doc: dict[str, Any]) -> tuple[int, int]:
    if doc[Key.FORMAT] != FORMAT_NAME:
        raise BundleError(f"not a dpedge bundle: field '{Key.FORMAT}' is {_show(doc[Key.FORMAT])}, expected "
                          f"{FORMAT_NAME!r}")
    v = doc[Key.VERSION]
    if not (isinstance(v, list) and len(v) == 2 and all(type(x) is int and 0 <= x < 2**31 for x in v)):
        raise BundleError(f"field '{Key.VERSION}' must be [major, minor], got {_show(v)}")
    if v[0] != FORMAT_VERSION[0]:
        raise BundleError(f"bundle format version {v[0]}.{v[1]} is not 1.x, the only format dpedge reads")
    return v[0], v[1]


# --------------------------------------------------------------------------- the table


_KIND = {dict: "map", list: "array", Bin: "bin", bytes: "bin", str: "string", int: "integer", float: "float", bool: "boolean",
         type(None): "nil"}
_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxstring, _SHOW.maxother = 2, 6, 4, 60, 60


def _kind(v: Any) -> str:
    return _KIND.get(type(v), type(v).__name__)


def _show(v: Any) -> str:
    """A value from the file for an error message: short, escaped."""
    return escape(_SHOW.repr(v))


def _fail(f: Field | str, why: str) -> BundleError:
    return BundleError(f"field '{f.path if isinstance(f, Field) else f}' {why}")


def has_path(doc: dict[str, Any], path: str) -> bool:
    """Whether ``doc`` holds the dotted ``path`` (every map on the way included)."""
    node: Any = doc
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


_CONDITION: dict[str, Callable[[dict[str, Any]], bool]] = {
    "class statistics": lambda d: has_path(d, "releases.class_sums") or has_path(d, "releases.class_counts"),
    "votes": lambda d: has_path(d, "releases.votes"),
    "prior": lambda d: has_path(d, "label_descriptions") and has_path(d, "releases.class_sums"),
    "blend": lambda d: has_path(d, "releases.class_sums"),
    "onnx": lambda d: isinstance(d.get(Key.ENCODER), dict) and d[Key.ENCODER].get(Key.FORMAT) == "onnx",
}
assert set(_CONDITION) == set(CONDITIONS)


def _fields(doc: dict[str, Any], newer_minor: bool, src: Source) -> tuple[dict[str, Any], dict[str, int]]:
    """Every field of the table checked; returns the present ones by path (arrays decoded) and
    the shape symbols' values."""
    values: dict[str, Any] = {"": doc}
    dims = {"C": len(doc[Key.LABELS]) if isinstance(doc.get(Key.LABELS), list) else 0}
    for f in FIELDS:
        parent = values.get(f.parent)
        if parent is None:  # the parent map is absent
            continue
        if f.need.startswith("iff "):
            wanted = _CONDITION[f.need[4:]](doc)
            if (f.key in parent) != wanted:
                raise _fail(f, f"must be present exactly when {CONDITIONS[f.need[4:]]}")
            if not wanted:
                continue
        elif f.key not in parent:
            if f.need == "required":
                raise BundleError(f"missing field '{f.path}'")
            continue
        values[f.path] = _value(f, parent[f.key], dims, src)
        if f.path == "encoder.dim":
            if dims.setdefault("D", values[f.path]) != values[f.path]:
                raise _fail(f, f"is {values[f.path]}, but the arrays before it are {dims['D']}-d")
    for path, v in values.items():
        f = FIELDS_BY_PATH.get(path)
        if f is not None and (f.kind != "map" or f.open):
            continue
        known = {g.key for g in FIELDS if g.parent == path}
        unknown = [k for k in v if k not in known]
        if unknown and path == Key.RELEASES:
            raise _fail(f"releases.{escape(unknown[0])}", "is a release this reader cannot account for")
        if unknown and not newer_minor:
            raise BundleError(f"unknown field '{escape(f'{path}.{unknown[0]}' if path else unknown[0])}' in a "
                              f"version {FORMAT_VERSION[0]}.{FORMAT_VERSION[1]} bundle")
    return values, dims


def _value(f: Field, v: Any, dims: dict[str, int], src: Source) -> Any:
    """One field's value checked against its row of the table (arrays become numpy arrays, binary
    values are read from the source; the ONNX weights stay a `Bin` until the reader decides)."""
    kind = f.kind
    if kind == "ndarray":
        return _array(f, v, dims, src)
    expected = {"map": dict, "str": str, "int": int, "float": float, "bool": bool, "bin": Bin, "version": list,
                "strings": list}[kind]
    if type(v) is not expected:
        raise _fail(f, f"is {_kind(v)}, expected {'an array of strings' if kind == 'strings' else _KIND[expected]}")
    if kind == "float" and not math.isfinite(v):
        raise _fail(f, f"is {v}, not a finite number")
    if kind in ("int", "float"):
        _bounded(f, v, "is")
    elif kind in ("str", "bin", "strings"):
        _bounded(f, len(v), "has length")
    if kind == "bin" and f.path != "encoder.weights":
        return src.bytes(v)
    if f.open:
        _informational(f, v)
    if kind == "str":
        _text(f, f.path, v)
        if f.choices and v not in f.choices:
            raise _fail(f, f"is {_show(v)}, expected one of {', '.join(map(repr, f.choices))}")
    if kind == "strings":
        for i, item in enumerate(v):
            if type(item) is not str:
                raise _fail(f"{f.path}[{i}]", f"is {_kind(item)}, expected string")
            _text(f, f"{f.path}[{i}]", item)
        if f.choices and (len(set(v)) != len(v) or not set(v) <= set(f.choices)):
            raise _fail(f, f"must hold distinct names of {', '.join(f.choices)}, got {_show(v)}")
    return v


def _informational(f: Field, v: Any) -> None:
    """An open map holds nil, booleans, integers, finite floats, strings, arrays and maps only."""
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, Bin):
            raise _fail(f, "holds binary data, which informational fields may not")
        if isinstance(x, float) and not math.isfinite(x):
            raise _fail(f, f"holds {x}, not a finite number")
        stack.extend(x.values() if isinstance(x, dict) else x if isinstance(x, list) else ())


def _bounded(f: Field, x: float, what: str) -> None:
    if (f.low is not None and x < f.low) or (f.high is not None and x > f.high):
        raise _fail(f, f"{what} {_show(x)}, expected {_num(f.low)} to {_num(f.high)}")


def _num(x: float | None) -> str:
    if x is None:
        return "any"
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


_TEXT_LIMITS = {"label": MAX_LABEL_CHARS, "description": MAX_DESCRIPTION_CHARS}


def _text(f: Field, where: str, s: str) -> None:
    """Text rules: length, and no unprintable character where the table asks for printable text."""
    most = _TEXT_LIMITS.get(f.text or "", MAX_TEXT_CHARS if f.kind == "strings" else None)
    if most is not None and len(s) > most:
        raise _fail(where, f"has {len(s)} characters, more than {most}")
    if f.text is not None or f.kind == "strings":
        bad = unprintable(s)
        if bad is not None:
            raise _fail(where, f"holds {u_plus(bad)}, which is not printable")
    if f.text in ("label", "description") and not fold(s).strip():
        raise _fail(where, "shows nothing (it is empty once invisible characters are removed)")


def _array(f: Field, v: Any, dims: dict[str, int], src: Source) -> np.ndarray:
    if type(v) is not dict:
        raise _fail(f, f"is {_kind(v)}, expected an array record (map of dtype, shape, data)")
    if set(v) != {Key.DTYPE, Key.SHAPE, Key.DATA}:
        raise _fail(f, f"must have exactly the keys dtype, shape and data, got {_show(sorted(v))}")
    dtype, shape, data = v[Key.DTYPE], v[Key.SHAPE], v[Key.DATA]
    if dtype != f.dtype:
        raise _fail(f"{f.path}.{Key.DTYPE}", f"is {_show(dtype)}, expected {f.dtype!r}")
    if not (type(shape) is list and len(shape) == len(f.shape) and all(type(n) is int for n in shape)):
        raise _fail(f"{f.path}.{Key.SHAPE}", f"is {_show(shape)}, expected {len(f.shape)} integers "
                                             f"[{', '.join(f.shape)}]")
    for symbol, n in zip(f.shape, shape):
        power = symbol.startswith("2^")
        name = symbol[2:] if power else symbol
        if name not in dims:
            if power and not (n >= 2 and n & (n - 1) == 0):
                raise _fail(f"{f.path}.{Key.SHAPE}", f"is {shape}: its {symbol} axis is not a power of two")
            dims[name] = n.bit_length() - 1 if power else n
            _, low, high = DIMS[name]
            if not low <= dims[name] <= high:
                raise _fail(f"{f.path}.{Key.SHAPE}", f"is {shape}: {name} must be {low} to {high}")
        if n != (2 ** dims[name] if power else dims[name]):
            want = [None if s.removeprefix("2^") not in dims else 2 ** dims[s[2:]] if s.startswith("2^") else dims[s]
                    for s in f.shape]
            raise _fail(f"{f.path}.{Key.SHAPE}", f"is {shape}, expected [{', '.join(f.shape)}] = {want}")
    if type(data) is not Bin:
        raise _fail(f"{f.path}.{Key.DATA}", f"is {_kind(data)}, expected bin")
    dt = np.dtype(f.dtype)
    if len(data) != math.prod(shape) * dt.itemsize:
        raise _fail(f"{f.path}.{Key.DATA}", f"has {len(data)} bytes, but {f.dtype} {shape} needs "
                                            f"{math.prod(shape) * dt.itemsize}")
    a = np.frombuffer(src.read(data.offset, data.length), dtype=dt).reshape(shape)
    if dt.kind == "f" and not np.isfinite(a).all():
        raise _fail(f, "holds a value that is not finite")
    return a


# --------------------------------------------------------------------------- relations and decoding


def _decode(doc: dict[str, Any], version: tuple[int, int], src: Source,
            file_at: tuple[str, tuple[int, int, int, int]] | None) -> Bundle:
    v, dims = _fields(doc, version[1] > FORMAT_VERSION[1], src)
    unknown = [r for r in v.get(Key.REQUIRES, []) if r not in FIELDS_BY_PATH]
    if unknown:
        raise BundleError(f"this bundle requires '{escape(unknown[0])}', which this dpedge does not know: upgrade "
                          f"dpedge to read it")
    releases = {name: _release(v, name) for name in STATISTICS if f"releases.{name}" in v}
    if Key.CLASS_SUMS not in releases and Key.VOTES not in releases:
        raise BundleError("field 'releases' holds neither class_sums nor votes: nothing to classify with")
    eps = v["privacy.epsilon"]
    total = math.fsum(r.epsilon for r in releases.values())
    if not math.isclose(total, eps, rel_tol=PRIVACY_RTOL):
        raise BundleError(f"the releases spend epsilon {total!r}, but field 'privacy.epsilon' is {eps!r}: their "
                          f"shares must add up to it")
    per_unit = v["privacy.max_records_per_unit"]
    for r in releases.values():
        where = f"releases.{r.statistic}"
        if not math.isclose(r.noise_scale, r.sensitivity_l1 / r.epsilon, rel_tol=PRIVACY_RTOL):
            raise _fail(f"{where}.noise_scale", f"is {r.noise_scale!r}, but sensitivity {r.sensitivity_l1} at epsilon "
                                                f"{r.epsilon!r} needs {r.sensitivity_l1 / r.epsilon!r}: the privacy "
                                                f"facts contradict each other")
        one = {Key.CLASS_COUNTS: 1, Key.VOTES: dims.get("T", 0)}.get(r.statistic)
        if r.statistic == Key.CLASS_SUMS:
            one = round(r.grid * r.clip_l1)
            if one < 1:
                raise _fail(f"{where}.clip_l1", f"is {r.clip_l1!r}: less than one grid step of 1/{r.grid}")
        if r.sensitivity_l1 != per_unit * one:
            raise _fail(f"{where}.sensitivity_l1", f"is {r.sensitivity_l1}, but a {r.statistic} release with at most "
                                                   f"{per_unit} record(s) per unit has {per_unit} x {one}: the privacy "
                                                   f"facts contradict each other")
    labels = v[Key.LABELS]
    descriptions = v.get(Key.LABEL_DESCRIPTIONS)
    if descriptions is not None and len(descriptions) != len(labels):
        raise _fail(Key.LABEL_DESCRIPTIONS, f"has {len(descriptions)} entries for {len(labels)} labels")
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):
        j = seen.setdefault(fold(label), i)
        if j != i:
            raise BundleError(f"labels {j} and {i} ({_show(labels[j])} and {_show(label)}) look the same once "
                              f"normalised (NFKC, invisible characters removed)")
    if "k" in dims and dims["k"] > dims["D"]:
        raise _fail("subspace.projection", f"has {dims['k']} rows, more than the embedding size {dims['D']}")
    check = v["encoder.check_embedding"]
    norm = float(np.linalg.norm(check.astype(np.float64)))
    if not 0.9 < norm < 1.1:
        raise _fail("encoder.check_embedding", f"has norm {norm:.4g}, expected a unit vector")
    w = v.get("encoder.weights", Bin(0, 0))
    if "encoder.weights" in v and (list(doc)[-2] != Key.ENCODER or list(doc[Key.ENCODER])[-1] != Key.WEIGHTS):
        raise _fail("encoder.weights", "must be the last entry of 'encoder', the last map before 'sha256'")
    check_tokenizer_json(v["encoder.tokenizer_json"])
    check_model(v["encoder.format"], v["encoder.model"], w.length)
    # The weights stay in a file for the engine to map (runtime.onnx_backend); from memory, a view.
    weights_file = None if file_at is None or not w.length else WeightsFile(file_at[0], w.offset, w.length, file_at[1])
    weights = src.read(w.offset, w.length) if weights_file is None else b""
    encoder = EncoderSpec(**{k: v[f"encoder.{k}"] for k in (
        Key.FORMAT, Key.MODEL, Key.TOKENIZER_JSON, Key.MAX_LENGTH, Key.DIM, Key.TEXT_PREFIX, Key.OUTPUT,
        Key.CHECK_TEXT, Key.CHECK_EMBEDDING)}, inputs=tuple(v["encoder.inputs"]), facts=v.get("encoder.facts"),
        weights=weights, weights_file=weights_file)
    scoring = None if Key.SCORING not in v else Scoring(**{k.split(".")[1]: v[k] for k in v if k.startswith("scoring.")})
    return Bundle(
        labels=tuple(labels), label_descriptions=None if descriptions is None else tuple(descriptions),
        privacy=v[Key.PRIVACY], releases=releases, encoder=encoder,
        class_counts=v.get("releases.class_counts.values"), class_sums=v.get("releases.class_sums.values"),
        origin=v.get("subspace.origin"), projection=v.get("subspace.projection"),
        votes=v.get("releases.votes.values"), hyperplanes=v.get("hashing.hyperplanes"),
        offsets=v.get("hashing.offsets"), seed=v.get("hashing.seed"), prior=v.get(Key.PRIOR), scoring=scoring,
        exporter=v.get(Key.EXPORTER), requires=None if Key.REQUIRES not in v else tuple(v[Key.REQUIRES]),
        version=version)


def _release(v: dict[str, Any], name: str) -> ReleaseFacts:
    p = f"releases.{name}."
    return ReleaseFacts(statistic=name, epsilon=v[p + Key.EPSILON], sensitivity_l1=v[p + Key.SENSITIVITY_L1],
                        noise_scale=v[p + Key.NOISE_SCALE], mechanism=v[p + Key.MECHANISM],
                        grid=v.get(p + Key.GRID), clip_l1=v.get(p + Key.CLIP_L1))
