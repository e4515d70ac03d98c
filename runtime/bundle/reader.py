"""Reading bundles: `load` a file, `unpack` bytes; anything that is not a valid 1.x bundle is refused.

The reader interprets the format's table (runtime.bundle.schema.FIELDS) rather than checking
each field by hand, so every field gets the same treatment: a required field that is missing,
a present field of the wrong type, out of its bounds or not finite, a key a map repeats, an
unknown key in a bundle of a minor version this reader knows, are each refused with one
`BundleError` naming the field's dotted path. Then the relations (schema.RELATIONS), the text
rules (runtime.text) and the engine families (tokenizer_family, model_family).

The container is read whole and hashed once (the digest covers every byte but the last 41),
then parsed by msgpack with hooks that refuse repeated keys and hold the document to a value
budget; each array is then a view of its own bytes, never copied again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import reprlib
import stat
from pathlib import Path
from typing import Any, Callable

import msgpack
import numpy as np

from runtime.bundle.model_family import check_model
from runtime.bundle.schema import (BYTES_PER_VALUE, CONDITIONS, DIGEST_BYTES, DIGEST_TAIL, DIMS,
                                   FIELDS, FIELDS_BY_PATH, FORMAT_NAME, FORMAT_VERSION, MAX_BUNDLE_BYTES,
                                   MAX_CONTAINER, MAX_DEPTH, MAX_DESCRIPTION_CHARS, MAX_LABEL_CHARS, MAX_TEXT_CHARS,
                                   PRE_RELEASE_NAME, PRIVACY_RTOL, STATISTICS, TAIL_BYTES, VALUE_ALLOWANCE, Bundle,
                                   EncoderSpec, Field, Key, ReleaseFacts, Scoring, WeightsFile)
from runtime.bundle.tokenizer_family import check_tokenizer_json
from runtime.errors import BundleError
from runtime.text import escape, fold, u_plus, unprintable

_CORRUPTED = "checksum mismatch: the bundle is corrupted (its bytes changed after it was written)"
_EXTENSION = "not a dpedge bundle: it holds a msgpack extension type, which no field may"
_TOO_DEEP = f"not a dpedge bundle: containers nest deeper than {MAX_DEPTH}"


def load(file: str | os.PathLike[str]) -> Bundle:
    """Read and validate a bundle file (BundleError, naming the file, for anything unusable).

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
            data = f.read(MAX_BUNDLE_BYTES + 1)
    except FileNotFoundError:
        raise BundleError(f"{p}: no such bundle file") from None
    except OSError as exc:
        raise BundleError(f"{p}: cannot read bundle: {exc.strerror or exc}") from None
    try:
        b = unpack(data)
    except BundleError as exc:
        raise BundleError(f"{p}: {exc}") from None
    except MemoryError:
        raise BundleError(f"{p}: does not fit in the memory this process may use") from None
    if b.encoder.format != "onnx":
        return b
    # The weights are the last bytes before the digest entry: leave them in the file, for the
    # engine to map (runtime.onnx_backend), and drop this copy.
    n = len(b.encoder.weights)
    where = WeightsFile(str(p.resolve()), len(data) - TAIL_BYTES - n, n,
                        (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    return dataclasses.replace(b, encoder=dataclasses.replace(b.encoder, weights=b"", weights_file=where))


def unpack(data: bytes) -> Bundle:
    """Parse and validate bundle bytes (see `load`).

    Example:
        >>> unpack(b"not a bundle")
        Traceback (most recent call last):
        ...
        runtime.errors.BundleError: not a dpedge bundle (it does not start with a msgpack map)
    """
    doc = parse(data)
    return _decode(doc, _version(doc))


# --------------------------------------------------------------------------- the container


def parse(data: bytes) -> dict[str, Any]:
    """The checked document: sealed by its digest, one msgpack map, no repeated key, within the
    value budget, depth and types of the container (schema: MAX_DEPTH, BYTES_PER_VALUE)."""
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleError(f"{len(data)} bytes is larger than any bundle ({MAX_BUNDLE_BYTES} max)")
    if len(data) < TAIL_BYTES or data[-TAIL_BYTES:-DIGEST_BYTES] != DIGEST_TAIL:
        raise BundleError(_unsealed(data))
    if hashlib.sha256(memoryview(data)[:-TAIL_BYTES]).digest() != data[-DIGEST_BYTES:]:
        raise BundleError(_CORRUPTED)
    _prescan(data)

    def pairs(items: list[tuple[Any, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if not isinstance(k, str):
                raise BundleError(f"a map has a key that is not a string: {_show(k)}")
            if k in out:
                raise BundleError(f"a map repeats the key {_show(k)}")
            out[k] = v
        return out

    try:
        doc = msgpack.unpackb(data, raw=False, object_pairs_hook=pairs, max_bin_len=len(data), max_str_len=len(data),
                              max_array_len=MAX_CONTAINER, max_map_len=MAX_CONTAINER)
    except BundleError:
        raise
    except Exception as exc:  # msgpack's FormatError, ExtraData, ValueError, UnicodeDecodeError...
        raise BundleError(f"not valid msgpack ({type(exc).__name__}: {escape(str(exc))[:200]})") from None
    if not isinstance(doc, dict):
        raise BundleError(f"not a dpedge bundle (its top level is {_kind(doc)}, expected a map)")
    keys = list(doc)
    if keys[:2] != [Key.FORMAT, Key.VERSION] or keys[-1] != Key.SHA256:
        raise BundleError(f"a bundle's map starts with '{Key.FORMAT}' and '{Key.VERSION}' and ends with "
                          f"'{Key.SHA256}', got {_show(keys[:2])} ... {_show(keys[-1])}")
    return doc


def _unsealed(data: bytes) -> str:
    """Why a file that does not end with its digest entry is refused: a pre-release bundle, a
    truncated one, or not a bundle (read from its first two entries)."""
    try:
        u = msgpack.Unpacker(raw=False, max_buffer_size=len(data), max_bin_len=0, max_str_len=64,
                             max_array_len=4, max_map_len=1)
        u.feed(data[:4096])
        u.read_map_header()
        first = [u.unpack() for _ in range(4)]
    except Exception:  # noqa: BLE001 - anything unreadable is simply not a bundle
        return "not a dpedge bundle (it does not start with a msgpack map)"
    if first[:1] == [Key.FORMAT] and first[1] == PRE_RELEASE_NAME:
        v = first[3] if isinstance(first[3], list) and all(type(x) is int for x in first[3]) else ["?", "?"]
        return (f"this bundle uses the pre-release format {'.'.join(map(str, v[:2]))}, which dpedge 1.x does not "
                f"read: rebuild it with `python -m exporter build` (a new release of the data: its epsilon adds to "
                f"the old bundle's if both are used)")
    if first[:2] == [Key.FORMAT, FORMAT_NAME]:
        return f"the bundle is truncated or corrupted: it does not end with its '{Key.SHA256}' entry"
    return "not a dpedge bundle (its first entry is not format: dpedge)"


# msgpack header byte -> (kind, bytes of its length field or fixed size); "fix" kinds carry the
# length in the byte itself.
_HEADS: dict[int, tuple[str, int]] = {
    0xC0: ("raw", 0), 0xC2: ("raw", 0), 0xC3: ("raw", 0), 0xCA: ("raw", 4), 0xCB: ("raw", 8),
    **{b: ("raw", 1 << (b & 3)) for b in range(0xCC, 0xD4)},
    0xC4: ("bytes", 1), 0xC5: ("bytes", 2), 0xC6: ("bytes", 4), 0xD9: ("bytes", 1), 0xDA: ("bytes", 2),
    0xDB: ("bytes", 4), 0xDC: ("array", 2), 0xDD: ("array", 4), 0xDE: ("map", 2), 0xDF: ("map", 4),
    **{b: ("ext", 0) for b in (*range(0xC7, 0xCA), *range(0xD4, 0xD9))},
}


def _prescan(data: bytes) -> None:
    """The container rules, from the headers alone, before msgpack builds anything: msgpack
    allocates a container's declared length before it reads a single entry (a 5 KB file of
    nested headers would cost 76 MiB), so depth, lengths and the value budget are checked here
    first, and no extension type is let through (written by hand: no msgpack library reads
    headers without building values). Malformed bytes are left for msgpack to report."""
    n, pos = len(data), 0
    left = n // BYTES_PER_VALUE + VALUE_ALLOWANCE
    todo = [1]  # values still to read at each open level
    while todo:
        if todo[-1] == 0:
            todo.pop()
            continue
        todo[-1] -= 1
        if pos >= n:
            return
        b = data[pos]
        pos += 1
        if b <= 0x7F or b >= 0xE0:
            continue
        kind, size = ("map", 0) if b <= 0x8F else ("array", 0) if b <= 0x9F else ("bytes", 0) if b <= 0xBF \
            else _HEADS.get(b, ("invalid", 0))
        if kind == "invalid":
            return
        if kind == "ext":
            raise BundleError(_EXTENSION)
        if kind == "raw":
            pos += size
            continue
        count = b & (0x0F if b <= 0x9F else 0x1F) if size == 0 else int.from_bytes(data[pos:pos + size], "big")
        pos += size
        if kind == "bytes":
            pos += count
            continue
        if count > MAX_CONTAINER:
            raise BundleError(f"not valid msgpack (ValueError: {count} exceeds max_{kind}_len({MAX_CONTAINER}))")
        left -= count + 1
        if left < 0:
            raise BundleError(f"not a dpedge bundle: it holds more msgpack values than {n} bytes may")
        if len(todo) > MAX_DEPTH:
            raise BundleError(_TOO_DEEP)
        todo.append(2 * count if kind == "map" else count)


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


_KIND = {dict: "map", list: "array", bytes: "bin", str: "string", int: "integer", float: "float", bool: "boolean",
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


def _fields(doc: dict[str, Any], newer_minor: bool) -> tuple[dict[str, Any], dict[str, int]]:
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
        values[f.path] = _value(f, parent[f.key], dims)
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


def _value(f: Field, v: Any, dims: dict[str, int]) -> Any:
    """One field's value checked against its row of the table (arrays become numpy views)."""
    kind = f.kind
    if kind == "any":
        return v
    if kind == "ndarray":
        return _array(f, v, dims)
    expected = {"map": dict, "str": str, "int": int, "float": float, "bool": bool, "bin": bytes, "version": list,
                "strings": list}[kind]
    if type(v) is not expected:
        raise _fail(f, f"is {_kind(v)}, expected {'an array of strings' if kind == 'strings' else _KIND[expected]}")
    if kind == "float" and not math.isfinite(v):
        raise _fail(f, f"is {v}, not a finite number")
    if kind in ("int", "float"):
        _bounded(f, v, "is")
    elif kind in ("str", "bin", "strings"):
        _bounded(f, len(v), "has length")
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


def _array(f: Field, v: Any, dims: dict[str, int]) -> np.ndarray:
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
    if type(data) is not bytes:
        raise _fail(f"{f.path}.{Key.DATA}", f"is {_kind(data)}, expected bin")
    dt = np.dtype(f.dtype)
    if len(data) != math.prod(shape) * dt.itemsize:
        raise _fail(f"{f.path}.{Key.DATA}", f"has {len(data)} bytes, but {f.dtype} {shape} needs "
                                            f"{math.prod(shape) * dt.itemsize}")
    a = np.frombuffer(data, dtype=dt).reshape(shape)
    if dt.kind == "f" and not np.isfinite(a).all():
        raise _fail(f, "holds a value that is not finite")
    return a


# --------------------------------------------------------------------------- relations and decoding


def _decode(doc: dict[str, Any], version: tuple[int, int]) -> Bundle:
    v, dims = _fields(doc, version[1] > FORMAT_VERSION[1])
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
    weights = v.get("encoder.weights", b"")
    if "encoder.weights" in v and (list(doc)[-2] != Key.ENCODER or list(doc[Key.ENCODER])[-1] != Key.WEIGHTS):
        raise _fail("encoder.weights", "must be the last entry of 'encoder', the last map before 'sha256'")
    check_tokenizer_json(v["encoder.tokenizer_json"])
    check_model(v["encoder.format"], v["encoder.model"], len(weights))
    encoder = EncoderSpec(**{k: v[f"encoder.{k}"] for k in (
        Key.FORMAT, Key.MODEL, Key.TOKENIZER_JSON, Key.MAX_LENGTH, Key.DIM, Key.TEXT_PREFIX, Key.OUTPUT,
        Key.CHECK_TEXT, Key.CHECK_EMBEDDING)}, inputs=tuple(v["encoder.inputs"]), facts=v.get("encoder.facts"),
        weights=weights)
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
