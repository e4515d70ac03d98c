"""Reading bundles: `load` a file, `unpack` bytes; anything that is not a valid 1.x bundle is refused.
Reading encoder packs (1.1): `load_pack`, `unpack_pack`; a statistics bundle, which names its
encoder pack instead of carrying an encoder, is read with the pack (``pack=``).

The reader interprets the format's table (format/1/schema.json, through runtime.bundle.schema)
rather than checking each field by hand, in the order docs/bundle-format.md section 8 makes
normative, so that every reader gives a file the same first refusal (code and path): the
container (runtime.bundle.container), the version, every field of the table in its order (its
presence, then its value: type, finiteness, bounds, text rules, choices; an array record's
dtype, shape and data; ``requires`` and ``encoder_pack`` are judged as soon as they are read),
unknown keys, the relations, the tokenizer family and the model family. Each refusal is one
`BundleError` with its code and path.

The container is hashed, then decoded with binary values left in place; each one the table
names is read once, into its own buffer (a view, for bytes already in memory), and no other is
read at all.
"""

from __future__ import annotations

import math
import os
import reprlib
import stat
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from runtime.bundle import wording
from runtime.bundle.accounting import ACCOUNTANT_RTOL, head_epsilon
from runtime.bundle.container import Bin, Source, read_document
from runtime.bundle.model_family import check_model
from runtime.bundle.schema import (CHECK_NORM, DEFAULT_FAMILY, DIMS, FIELDS, FIELDS_BY_PATH, FORMAT_NAME, FORMAT_VERSION,
                                   MAX_BUNDLE_BYTES, MAX_WORK, PACK_FIELDS, PACK_FORMAT_NAME, PRIVACY_RTOL,
                                   STATISTICS, TEXT_KINDS, Bundle, EncoderPack, EncoderSpec, Field, HeadRelease, Key,
                                   ReleaseFacts, Scoring, WeightsFile, _S)
from runtime.bundle.tokenizer_family import check_tokenizer_json
from runtime.errors import BundleError
from runtime.text import label_key, shows_something, u_plus, unassigned, unprintable


def load(file: str | os.PathLike[str], pack: EncoderPack | None = None) -> Bundle:
    """Read and validate a bundle file (BundleError, naming the file, for anything unusable).
    The file is hashed one chunk at a time, then read field by field: an ONNX model's weights
    stay in the file for the engine to map (``encoder.weights_file``). A statistics bundle is
    read with the encoder pack it names (``pack``, from `load_pack`), and only with it.

    Example:
        >>> load("models/quickstart.dpedge").privacy["epsilon"]            # doctest: +SKIP
        8.0
    """
    return _open(file, "bundle", lambda src, at: _read(src, at, pack))


def load_pack(file: str | os.PathLike[str], expect: Iterable[str] | None = None) -> EncoderPack:
    """Read and validate an encoder pack file (1.1), as `load` reads a bundle. ``expect``: the
    SHA-256 digests (hex) the application accepts; any other pack is refused (``pack.untrusted``)
    before it is parsed.

    Example:
        >>> load_pack("models/minilm.dpedge-encoder").sha256[:12]            # doctest: +SKIP
        '3f1c0e9a77d2'
    """
    return _open(file, "encoder pack", lambda src, at: _read_pack(src, at, expect))


def _open(file: str | os.PathLike[str], what: str, read: Callable[[Source, Any], Any]) -> Any:
    p = Path(file)
    try:
        st = p.stat()
        if stat.S_ISDIR(st.st_mode):
            raise BundleError("container.size", "", f"is a directory, not {what} file")
        if not stat.S_ISREG(st.st_mode):  # a device or a pipe has no size to check
            raise BundleError("container.size", "", f"is not a regular file, so it cannot be {what}")
        if st.st_size > MAX_BUNDLE_BYTES:
            raise BundleError("container.size", "", f"{st.st_size} bytes is larger than any {what} "
                                                    f"({MAX_BUNDLE_BYTES} max)")
        with open(p, "rb") as f:
            identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            return read(Source(st.st_size, f=f), (str(p.resolve()), identity))
    except FileNotFoundError:
        raise BundleError("container.size", "", f"{p}: no such {what} file") from None
    except BundleError as exc:
        raise exc.within(str(p)) from None
    except MemoryError:
        raise BundleError("container.size", "", f"{p}: does not fit in the memory this process may use") from None
    except OSError as exc:
        raise BundleError("container.size", "", f"{p}: cannot read {what}: {exc.strerror or exc}") from None


def unpack(data: bytes, pack: EncoderPack | None = None) -> Bundle:
    """Parse and validate bundle bytes (see `load`); arrays are views of ``data``.

    Example:
        >>> unpack(b"not a bundle")
        Traceback (most recent call last):
        ...
        runtime.errors.BundleError: not a dpedge bundle (it does not start with a msgpack map)
    """
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleError("container.size", "", f"{len(data)} bytes is larger than any bundle ({MAX_BUNDLE_BYTES} max)")
    return _read(Source.of(data), None, pack)


def unpack_pack(data: bytes, expect: Iterable[str] | None = None) -> EncoderPack:
    """Parse and validate encoder pack bytes (see `load_pack`)."""
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleError("container.size", "", f"{len(data)} bytes is larger than any encoder pack "
                                                f"({MAX_BUNDLE_BYTES} max)")
    return _read_pack(Source.of(data), None, expect)


def parse(data: bytes) -> dict[str, Any]:
    """The checked document of bundle bytes: sealed by its digest, one msgpack map within the
    container's bounds, binary values as `container.Bin` (for tools that edit bundles)."""
    src = Source.of(data)
    src.check_digest()
    return _document(src)


def _read(src: Source, file_at: tuple[str, tuple[int, int, int, int]] | None, pack: EncoderPack | None) -> Bundle:
    src.check_digest()
    doc = _document(src)
    version = _version(doc, FORMAT_NAME)
    _requires(doc, src)
    _named_pack(doc, src, pack)
    return _decode(doc, version, src, file_at, pack)


def _read_pack(src: Source, file_at: tuple[str, tuple[int, int, int, int]] | None,
               expect: Iterable[str] | None) -> EncoderPack:
    digest = src.check_digest(PACK_FORMAT_NAME)
    if expect is not None and digest.hex() not in {e.lower() for e in expect}:
        raise BundleError("pack.untrusted", "", f"encoder pack {digest.hex()[:16]}... is not one of the "
                                                f"{len(set(expect))} this application accepts")
    doc = _document(src)
    version = _version(doc, PACK_FORMAT_NAME)
    values, _ = _fields(doc, version, src, PACK_FIELDS)
    _encoder_relations(values, doc)
    encoder = _encoder(values, src, file_at)
    return EncoderPack(digest, encoder, {k: x for k, x in values.items() if k.split(".")[0] == Key.ENCODER})


def _document(src: Source) -> dict[str, Any]:
    doc = read_document(src)
    keys = list(doc)
    if keys[:2] != [Key.FORMAT, Key.VERSION] or keys[-1] != Key.SHA256:
        raise BundleError("container.layout", "", f"a bundle's map starts with '{Key.FORMAT}' and '{Key.VERSION}' and "
                                                  f"ends with '{Key.SHA256}', got {_show(keys[:2])} ... {_show(keys[-1])}")
    return doc


def _version(doc: dict[str, Any], name: str) -> tuple[int, int]:
    if doc[Key.FORMAT] != name:
        swapped = {FORMAT_NAME: "a bundle, not an encoder pack", PACK_FORMAT_NAME: "an encoder pack, not a bundle"}
        what = f"it is {swapped[doc[Key.FORMAT]]}" if isinstance(doc[Key.FORMAT], str) and doc[Key.FORMAT] in swapped else \
            f"field '{Key.FORMAT}' is {_show(doc[Key.FORMAT])}"
        raise BundleError("version.format", Key.FORMAT, f"not a dpedge {'bundle' if name == FORMAT_NAME else 'encoder pack'}: "
                                                        f"{what}, expected {name!r}")
    v = doc[Key.VERSION]
    if not (isinstance(v, list) and len(v) == 2 and all(type(x) is int and 0 <= x < 2**31 for x in v)):
        raise BundleError("version.malformed", Key.VERSION, f"field '{Key.VERSION}' must be [major, minor], got {_show(v)}")
    if v[0] != FORMAT_VERSION[0]:
        raise BundleError("version.major", Key.VERSION, f"bundle format version {v[0]}.{v[1]} is not 1.x, the only "
                                                        f"format dpedge reads")
    return v[0], v[1]


def _requires(doc: dict[str, Any], src: Source) -> None:
    """``requires`` is judged as soon as it is read (it is the table's third row): a newer
    bundle is refused for what this reader does not know before anything it lacks."""
    if Key.REQUIRES not in doc:
        return
    for i, r in enumerate(_value(FIELDS_BY_PATH[Key.REQUIRES], doc[Key.REQUIRES], {}, src)):
        if r not in FIELDS_BY_PATH:
            raise BundleError("version.requires", f"requires[{i}]", f"this bundle requires '{r}', which this dpedge "
                                                                    f"does not know: upgrade dpedge to read it")


def _listed(f: Field, doc: dict[str, Any]) -> None:
    """Relation "listed": a field whose absence would change an answer is in ``requires``."""
    if f.listed and f.path not in doc.get(Key.REQUIRES, []):
        raise BundleError("relation.requires", Key.REQUIRES, f"this bundle has '{f.path}', which must be listed in "
                                                             f"'{Key.REQUIRES}'")


def _named_pack(doc: dict[str, Any], src: Source, pack: EncoderPack | None) -> None:
    """A statistics bundle names its encoder pack (1.1); it is read with that pack alone, and a
    bundle with its own encoder with none."""
    if Key.ENCODER_PACK not in doc:
        if pack is not None:
            raise BundleError("pack.unexpected", Key.ENCODER_PACK, "this bundle carries its own encoder, but an "
                                                                    "encoder pack was given for it")
        return
    f = FIELDS_BY_PATH[Key.ENCODER_PACK]
    named = _value(f, doc[Key.ENCODER_PACK], {}, src)
    _listed(f, doc)
    if pack is None:
        raise BundleError("pack.missing", Key.ENCODER_PACK, f"this bundle is scored with encoder pack "
                                                            f"{bytes(named).hex()}, and none was given")
    if bytes(named) != pack.digest:
        raise BundleError("pack.mismatch", Key.ENCODER_PACK, f"this bundle names encoder pack {bytes(named).hex()}, "
                                                             f"not the one given ({pack.sha256})")


# --------------------------------------------------------------------------- the table


_KIND = {dict: "map", list: "array", Bin: "bin", bytes: "bin", str: "string", int: "integer", float: "float",
         bool: "boolean", type(None): "nil"}
_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxstring, _SHOW.maxother = 2, 6, 4, 60, 60


def _kind(v: Any) -> str:
    return _KIND.get(type(v), type(v).__name__)


def _show(v: Any) -> str:
    """A value from the file for an error message, short (escaped where the message is printed)."""
    return _SHOW.repr(v)


def _fail(code: str, where: Field | str, why: str) -> BundleError:
    path = where.path if isinstance(where, Field) else where
    return BundleError(code, path, f"field '{path}' {why}")


def has_path(doc: dict[str, Any], path: str) -> bool:
    """Whether ``doc`` holds the dotted ``path`` (every map on the way included)."""
    node: Any = doc
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _value_at(doc: dict[str, Any], path: str) -> Any:
    node: Any = doc
    for key in path.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _holds(rule: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    """A condition of format/1/schema.json as a test on the document."""
    if "present_any" in rule:
        return lambda d: any(has_path(d, p) for p in rule["present_any"])
    if "present_all" in rule:
        return lambda d: all(has_path(d, p) for p in rule["present_all"])
    if "present_none" in rule:
        return lambda d: not any(has_path(d, p) for p in rule["present_none"])
    path, value = rule["equals"]
    return lambda d: _value_at(d, path) == value


#: Each condition of schema.json as a test on a document (format/tools/cases.py builds the corpus with it too).
CONDITION_HOLDS = {name: _holds(rule) for name, rule in _S["conditions"].items()}


def _fields(doc: dict[str, Any], version: tuple[int, int], src: Source, rows: tuple[Field, ...] = FIELDS,
            pack: EncoderPack | None = None) -> tuple[dict[str, Any], dict[str, int]]:
    """Every field of ``rows`` (a bundle's table, or a pack's) checked in its order; returns the
    present ones by path (arrays decoded) and the shape symbols' values. With ``pack``, the
    encoder's values are the pack's, checked when it was read."""
    values: dict[str, Any] = {"": doc}
    dims = {"C": len(doc[Key.LABELS]) if isinstance(doc.get(Key.LABELS), list) else 0}
    if pack is not None:
        values.update(pack.values)
        dims["D"] = pack.encoder.dim
    for f in rows:
        if pack is not None and f.parent.split(".")[0] == Key.ENCODER:
            continue
        parent = values.get(f.parent)
        if parent is None:  # the parent map is absent
            continue
        if f.need.startswith("iff "):
            wanted = CONDITION_HOLDS[f.need[4:]](doc)
            if f.key in parent and not wanted:
                raise _fail("field.not_allowed", f, f"must be absent unless {_S['conditions'][f.need[4:]]['doc']}")
            if not wanted:
                continue
        if f.key not in parent:
            if f.need != "optional":
                raise BundleError("field.missing", f.path, f"missing field '{f.path}'")
            continue
        values[f.path] = _value(f, parent[f.key], dims, src)
        _listed(f, doc)
        if f.path == "encoder.dim":
            if dims.setdefault("D", values[f.path]) != values[f.path]:
                raise _fail("array.shape", f, f"is {values[f.path]}, but the arrays before it are {dims['D']}-d")
    for path, v in values.items():
        f = FIELDS_BY_PATH.get(path)
        if f is not None and (f.kind != "map" or f.open) or pack is not None and path.split(".")[0] == Key.ENCODER:
            continue
        known = {g.key for g in rows if g.parent == path}
        unknown = [k for k in v if k not in known]
        if unknown and path == Key.RELEASES:
            raise _fail("field.release", f"releases.{unknown[0]}", "is a release this reader cannot account for")
        if unknown and not version[1] > FORMAT_VERSION[1]:  # a newer minor's fields are ignored
            where = f"{path}.{unknown[0]}" if path else unknown[0]
            raise BundleError("field.unknown", where, f"unknown field '{where}' in a version "
                                                      f"{version[0]}.{version[1]} file")
    return values, dims


_TYPES = {"map": dict, "str": str, "int": int, "float": float, "bool": bool, "bin": Bin, "version": list,
          "strings": list}


def _value(f: Field, v: Any, dims: dict[str, int], src: Source) -> Any:
    """One field's value checked against its row of the table (arrays become numpy arrays, binary
    values are read from the source; the ONNX weights stay a `Bin` until the reader decides)."""
    if f.kind == "ndarray":
        return _array(f, v, dims, src)
    expected = _TYPES[f.kind]
    if type(v) is not expected:
        raise _fail("field.type", f, f"is {_kind(v)}, expected "
                                     f"{'an array of strings' if f.kind == 'strings' else _KIND[expected]}")
    if f.kind == "float" and not math.isfinite(v):
        raise _fail("field.not_finite", f, f"is {v}, not a finite number")
    if f.kind in ("int", "float"):
        _bounded(f, v, "field.range", "is")
    elif f.kind in ("str", "bin", "strings"):
        _bounded(f, len(v), "field.length", "has length")
    if f.kind == "bin" and f.path != "encoder.weights":
        return src.bytes(v)
    if f.open:
        _informational(f, v)
    if f.kind == "str":
        _text(f, f.path, v)
        if f.choices and v not in f.choices:
            raise _fail("field.choice", f, f"is {_show(v)}, expected one of {', '.join(map(repr, f.choices))}")
    if f.kind == "strings":
        for i, item in enumerate(v):
            if type(item) is not str:
                raise _fail("field.type", f"{f.path}[{i}]", f"is {_kind(item)}, expected string")
            _text(f, f"{f.path}[{i}]", item)
        if f.choices and (len(set(v)) != len(v) or not set(v) <= set(f.choices)):
            raise _fail("field.choice", f, f"must hold distinct names of {', '.join(f.choices)}, got {_show(v)}")
    return v


def _informational(f: Field, v: Any) -> None:
    """An open map holds nil, booleans, integers, finite floats, strings, arrays and maps only."""
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, Bin):
            raise _fail("field.type", f, "holds binary data, which informational fields may not")
        if isinstance(x, float) and not math.isfinite(x):
            raise _fail("field.not_finite", f, f"holds {x}, not a finite number")
        stack.extend(x.values() if isinstance(x, dict) else x if isinstance(x, list) else ())


def _bounded(f: Field, x: float, code: str, what: str) -> None:
    if (f.low is not None and x < f.low) or (f.high is not None and x > f.high):
        raise _fail(code, f, f"{what} {_show(x)}, expected {_num(f.low)} to {_num(f.high)}")


def _num(x: float | None) -> str:
    if x is None:
        return "any"
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def _text(f: Field, where: str, s: str) -> None:
    """The text kind's rules, in order: its length, then no unprintable code point, then (labels
    and descriptions) no unassigned one, then something shown."""
    if f.text is None:
        return
    most, rules = TEXT_KINDS[f.text]
    if len(s) > most:
        raise _fail("field.length", where, f"has {len(s)} characters, more than {most}")
    for rule in rules:
        if rule == "unprintable" and (bad := unprintable(s)) is not None:
            raise _fail("text.unprintable", where, f"holds {u_plus(bad)}, which is not printable")
        if rule == "unassigned" and (bad := unassigned(s)) is not None:
            raise _fail("text.unassigned", where, f"holds {u_plus(bad)}, which Unicode "
                                                  f"{_contract_unicode_version()} does not assign")
        if rule == "blank" and not shows_something(s):
            raise _fail("text.blank", where, "shows nothing (only white space, invisible or blank characters)")


def _contract_unicode_version() -> str:
    from runtime.contract import unicode

    return unicode()["unicode_version"]


def _array(f: Field, v: Any, dims: dict[str, int], src: Source) -> np.ndarray:
    if type(v) is not dict or set(v) != {Key.DTYPE, Key.SHAPE, Key.DATA}:
        got = sorted(v) if type(v) is dict else _kind(v)
        raise _fail("array.record", f, f"must be an array record (a map of exactly dtype, shape and data), got "
                                       f"{_show(got)}")
    dtype, shape, data = v[Key.DTYPE], v[Key.SHAPE], v[Key.DATA]
    if dtype != f.dtype:
        raise _fail("array.dtype", f"{f.path}.{Key.DTYPE}", f"is {_show(dtype)}, expected {f.dtype!r}")
    where = f"{f.path}.{Key.SHAPE}"
    if not (type(shape) is list and len(shape) == len(f.shape) and all(type(n) is int for n in shape)):
        raise _fail("array.shape", where, f"is {_show(shape)}, expected {len(f.shape)} integers "
                                          f"[{', '.join(f.shape)}]")
    for symbol, n in zip(f.shape, shape):
        power = symbol.startswith("2^")
        name = symbol[2:] if power else symbol
        if name not in dims:
            if power and not (n >= 2 and n & (n - 1) == 0):
                raise _fail("array.shape", where, f"is {shape}: its {symbol} axis is not a power of two")
            dims[name] = n.bit_length() - 1 if power else n
            _, low, high = DIMS[name]
            if not low <= dims[name] <= high:
                raise _fail("array.shape", where, f"is {shape}: {name} must be {low} to {high}")
        if n != (2 ** dims[name] if power else dims[name]):
            raise _fail("array.shape", where, f"is {shape}, but {symbol} is {2 ** dims[name] if power else dims[name]}")
    if type(data) is not Bin:
        raise _fail("array.data", f"{f.path}.{Key.DATA}", f"is {_kind(data)}, expected bin")
    itemsize = _S["dtypes"][f.dtype]
    if len(data) != math.prod(shape) * itemsize:
        raise _fail("array.data", f"{f.path}.{Key.DATA}", f"has {len(data)} bytes, but {f.dtype} {shape} needs "
                                                          f"{math.prod(shape) * itemsize}")
    # The data's one buffer (a view of bytes in memory; from a file, the bytes read once), never
    # copied again; the finiteness check is two reductions (NaN propagates through min and max),
    # so it allocates nothing of the array's size (np.isfinite(a) would: a byte per value).
    a = np.frombuffer(src.read(data.offset, data.length), dtype=np.dtype(f.dtype)).reshape(shape)
    if a.dtype.kind == "f" and a.size and not (np.isfinite(a.min()) and np.isfinite(a.max())):
        raise _fail("field.not_finite", f, "holds a value that is not finite")
    return a


# --------------------------------------------------------------------------- relations and decoding


def _relations(v: dict[str, Any], dims: dict[str, int], releases: dict[str, ReleaseFacts], doc: dict[str, Any]) -> None:
    """format/1/schema.json "relations", in order (requires is checked before)."""
    head = _head(v) if "releases.head" in v else None
    if Key.CLASS_SUMS not in releases and Key.VOTES not in releases and head is None:
        raise BundleError("relation.nothing", Key.RELEASES, "field 'releases' holds neither class_sums, votes nor head: "
                                                            "nothing to classify with")
    per_unit = v["privacy.max_records_per_unit"]
    if head is not None and (Key.CLASS_SUMS in releases or Key.VOTES in releases):
        raise _fail("relation.head", "releases.head", "must come with class_counts alone (and unit_count when K is "
                                                      "above 1)")
    if (Key.UNIT_COUNT in releases) != (head is not None and per_unit != 1):
        raise _fail("relation.unit_count", "releases.unit_count",
                    "must come with a person-level head (K above 1), and such a head with it" if head is not None
                    else "comes only with a person-level head")
    eps = v["privacy.epsilon"]
    total = 0.0
    for r in releases.values():  # in release order, left to right, the head last: every reader adds alike
        total += r.epsilon
    if head is not None:
        total += head.epsilon
    if not abs(total - eps) <= PRIVACY_RTOL * max(abs(total), abs(eps)):
        raise BundleError("relation.shares", "privacy.epsilon", f"the releases spend epsilon {total!r}, but field "
                                                                f"'privacy.epsilon' is {eps!r}: their shares must add "
                                                                f"up to it")
    delta = v["privacy.delta"]
    if head is None and delta != 0 or head is not None and not abs(delta - head.delta) <= PRIVACY_RTOL * max(
            abs(delta), abs(head.delta)):
        raise BundleError("relation.delta", "privacy.delta", f"is {delta!r}, but the releases' deltas add up to "
                                                             f"{0.0 if head is None else head.delta!r}")
    for r in releases.values():
        where = f"releases.{r.statistic}"
        need = r.sensitivity_l1 / r.epsilon
        if not abs(r.noise_scale - need) <= PRIVACY_RTOL * max(abs(r.noise_scale), abs(need)):
            raise _fail("relation.noise_scale", f"{where}.noise_scale",
                        f"is {r.noise_scale!r}, but sensitivity {r.sensitivity_l1} at epsilon {r.epsilon!r} needs "
                        f"{need!r}: the privacy facts contradict each other")
        one = {Key.CLASS_COUNTS: 1, Key.VOTES: dims.get("T", 0)}.get(r.statistic)
        if r.statistic == Key.CLASS_SUMS:
            one = round(float(r.grid) * r.clip_l1)  # half to even
            if one < 1:
                raise _fail("relation.clip", f"{where}.clip_l1", f"is {r.clip_l1!r}: less than one grid step of "
                                                                 f"1/{r.grid}")
        if r.statistic == Key.UNIT_COUNT:
            if r.sensitivity_l1 != 1:
                raise _fail("relation.sensitivity", f"{where}.sensitivity_l1",
                            f"is {r.sensitivity_l1}, but one unit moves a count of units by 1: the privacy facts "
                            f"contradict each other")
        elif r.sensitivity_l1 != per_unit * one:
            raise _fail("relation.sensitivity", f"{where}.sensitivity_l1",
                        f"is {r.sensitivity_l1}, but a {r.statistic} release with at most {per_unit} record(s) per unit "
                        f"has {per_unit} x {one}: the privacy facts contradict each other")
    if head is not None:
        _head_relations(head)
    wording.check(v["privacy.privacy_unit"], v["privacy.neighbour_relation"], per_unit)
    wording.check_composition(v.get("privacy.composition"), releases, head is not None,
                              v.get("privacy.batches", 1))
    labels = v[Key.LABELS]
    descriptions = v.get(Key.LABEL_DESCRIPTIONS)
    if descriptions is not None and len(descriptions) != len(labels):
        raise _fail("relation.descriptions", Key.LABEL_DESCRIPTIONS, f"has {len(descriptions)} entries for "
                                                                     f"{len(labels)} labels")
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):
        j = seen.setdefault(label_key(label), i)
        if j != i:
            raise BundleError("relation.labels", f"labels[{i}]", f"labels {j} and {i} ({_show(labels[j])} and "
                                                                  f"{_show(label)}) look alike (section 3)")
    if "k" in dims:
        if dims["k"] > dims["D"]:
            raise _fail("relation.subspace", "subspace.projection", f"has {dims['k']} rows, more than the embedding "
                                                                    f"size {dims['D']}")
        if dims["C"] * dims["k"] * dims["D"] > MAX_WORK:
            raise _fail("relation.work", "subspace.projection", f"makes C x k x D = {dims['C'] * dims['k'] * dims['D']}, "
                                                                f"more than {MAX_WORK}")


def _head_relations(h: HeadRelease) -> None:
    """The head's own relations, after the pure releases': its noise scale, clip and sensitivity,
    then the contract's bound on its epsilon (runtime.bundle.accounting)."""
    need = h.noise_multiplier * h.sensitivity_l2
    if not abs(h.noise_scale - need) <= PRIVACY_RTOL * max(abs(h.noise_scale), abs(need)):
        raise _fail("relation.noise_scale", "releases.head.noise_scale",
                    f"is {h.noise_scale!r}, but noise multiplier {h.noise_multiplier!r} at sensitivity "
                    f"{h.sensitivity_l2} needs {need!r}: the privacy facts contradict each other")
    one = round(float(h.grid) * h.clip_l2)  # half to even
    if one < 1:
        raise _fail("relation.clip", "releases.head.clip_l2", f"is {h.clip_l2!r}: less than one grid step of 1/{h.grid}")
    if h.sensitivity_l2 != one:
        raise _fail("relation.sensitivity", "releases.head.sensitivity_l2",
                    f"is {h.sensitivity_l2}, but a head clipped at {h.clip_l2!r} on a grid of {h.grid} has {one}: "
                    "the privacy facts contradict each other")
    bound = head_epsilon(h.noise_multiplier, h.sample_rate, h.steps, h.delta)
    if bound > h.epsilon * (1.0 + ACCOUNTANT_RTOL):
        raise _fail("relation.accountant", "releases.head.epsilon",
                    f"is {h.epsilon!r}, but {h.steps} steps at noise multiplier {h.noise_multiplier!r} and sample rate "
                    f"{h.sample_rate!r} are only ({bound!r}, {h.delta!r})-DP: the privacy facts contradict each other")


def _encoder_relations(v: dict[str, Any], doc: dict[str, Any]) -> None:
    """The relations of the encoder, in the file that holds it (a bundle, or an encoder pack)."""
    squares = 0.0
    for x in map(float, v["encoder.check_embedding"]):  # in index order (builtin sum() compensates on 3.12+)
        squares += x * x
    norm = math.sqrt(squares)
    if not CHECK_NORM[0] < norm < CHECK_NORM[1]:
        raise _fail("relation.check", "encoder.check_embedding", f"has norm {norm:.4g}, expected a unit vector")
    if "encoder.weights" in v and (list(doc)[-2] != Key.ENCODER or list(doc[Key.ENCODER])[-1] != Key.WEIGHTS):
        raise _fail("relation.weights", "encoder.weights", "must be the last entry of 'encoder', the last map before "
                                                           "'sha256'")


def _encoder(v: dict[str, Any], src: Source, file_at: tuple[str, tuple[int, int, int, int]] | None) -> EncoderSpec:
    """The checked encoder of a file: its tokenizer and model families, then its spec."""
    tokenizer = check_tokenizer_json(v["encoder.tokenizer_json"])
    w = v.get("encoder.weights", Bin(0, 0))
    family = v.get("encoder.family", DEFAULT_FAMILY)
    check_model(v["encoder.format"], v["encoder.model"], w.length, family)
    # The weights stay in a file for the engine to map (runtime.onnx_engine); from memory, a view.
    weights_file = None if file_at is None or not w.length else WeightsFile(file_at[0], w.offset, w.length, file_at[1])
    weights = src.read(w.offset, w.length) if weights_file is None else b""
    return EncoderSpec(**{k: v[f"encoder.{k}"] for k in (
        Key.FORMAT, Key.MODEL, Key.TOKENIZER_JSON, Key.MAX_LENGTH, Key.DIM, Key.TEXT_PREFIX, Key.OUTPUT,
        Key.CHECK_TEXT, Key.CHECK_EMBEDDING)}, inputs=tuple(v["encoder.inputs"]), facts=v.get("encoder.facts"),
        weights=weights, weights_file=weights_file, tokenizer=tokenizer, family=family)


def _decode(doc: dict[str, Any], version: tuple[int, int], src: Source,
            file_at: tuple[str, tuple[int, int, int, int]] | None, pack: EncoderPack | None) -> Bundle:
    v, dims = _fields(doc, version, src, FIELDS, pack)
    releases = {name: _release(v, name) for name in STATISTICS if f"releases.{name}" in v}
    _relations(v, dims, releases, doc)
    if pack is None:
        _encoder_relations(v, doc)
    encoder = pack.encoder if pack is not None else _encoder(v, src, file_at)
    scoring = None if Key.SCORING not in v else Scoring(**{k.split(".")[1]: v[k] for k in v if k.startswith("scoring.")})
    descriptions = v.get(Key.LABEL_DESCRIPTIONS)
    return Bundle(
        labels=tuple(v[Key.LABELS]), label_descriptions=None if descriptions is None else tuple(descriptions),
        privacy=v[Key.PRIVACY], releases=releases, encoder=encoder,
        class_counts=v.get("releases.class_counts.values"), class_sums=v.get("releases.class_sums.values"),
        unit_count=v.get("releases.unit_count.value"),
        origin=v.get("subspace.origin"), projection=v.get("subspace.projection"),
        votes=v.get("releases.votes.values"), hyperplanes=v.get("hashing.hyperplanes"),
        offsets=v.get("hashing.offsets"), seed=v.get("hashing.seed"), prior=v.get(Key.PRIOR), scoring=scoring,
        exporter=v.get(Key.EXPORTER), requires=None if Key.REQUIRES not in v else tuple(v[Key.REQUIRES]),
        version=version, encoder_pack=None if pack is None else pack.digest,
        head=_head(v) if "releases.head" in v else None)


def _head(v: dict[str, Any]) -> HeadRelease:
    p = "releases.head."
    return HeadRelease(**{k: v[p + k] for k in (
        "epsilon", "delta", "sensitivity_l2", "noise_scale", "noise_multiplier", "sample_rate", "steps", "grid",
        "clip_l2", "accountant", "mechanism", "origin", "weights", "bias")})


def _release(v: dict[str, Any], name: str) -> ReleaseFacts:
    p = f"releases.{name}."
    return ReleaseFacts(statistic=name, epsilon=v[p + Key.EPSILON], sensitivity_l1=v[p + Key.SENSITIVITY_L1],
                        noise_scale=v[p + Key.NOISE_SCALE], mechanism=v[p + Key.MECHANISM],
                        grid=v.get(p + Key.GRID), clip_l1=v.get(p + Key.CLIP_L1))
