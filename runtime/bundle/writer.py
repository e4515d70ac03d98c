"""Writing bundles: `pack` to bytes, `save` to a file atomically; and encoder packs (1.1):
`pack_encoder`, `save_pack`.

The document is one msgpack map whose keys follow runtime.bundle.schema.FIELDS, sealed by its
last entry: ``sha256``, the digest of every byte before it. Its version is the newest minor
of the fields it holds (a bundle with its own encoder stays 1.0, which every reader reads).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from runtime.bundle.reader import has_path
from runtime.bundle.schema import (DEFAULT_FAMILY, FIELDS, FORMAT_NAME, PACK_FIELDS, PACK_FORMAT_NAME, Bundle,
                                   EncoderSpec, Field, Key)


def array_record(a: np.ndarray, dtype: str) -> dict[str, Any]:
    """An array as the format stores it: explicit little-endian dtype, shape, C-order bytes.

    Example:
        >>> array_record(np.array([1, 2], np.int16), "<i2")
        {'dtype': '<i2', 'shape': [2], 'data': b'\\x01\\x00\\x02\\x00'}
    """
    a = np.ascontiguousarray(a, dtype=np.dtype(dtype))
    return {Key.DTYPE: dtype, Key.SHAPE: list(a.shape), Key.DATA: a.tobytes(order="C")}


def document(b: Bundle) -> dict[str, Any]:
    """The bundle's map without its digest, keys in the table's order (before encoding). A
    bundle that names an encoder pack holds the pack's digest instead of the encoder."""
    flat: dict[str, Any] = {
        "format": FORMAT_NAME, "labels": list(b.labels),
        "label_descriptions": None if b.label_descriptions is None else list(b.label_descriptions),
        "requires": None if b.requires is None else list(b.requires), "encoder_pack": b.encoder_pack,
        "privacy": dict(b.privacy), "releases": {},
        "hashing.seed": b.seed, "exporter": b.exporter,
        **({} if b.encoder_pack is not None else _encoder_values(b.encoder)),
        "releases.class_counts.values": b.class_counts, "releases.class_sums.values": b.class_sums,
        "releases.votes.values": b.votes, "releases.unit_count.value": b.unit_count, "subspace.origin": b.origin, "subspace.projection": b.projection,
        "hashing.hyperplanes": b.hyperplanes, "hashing.offsets": b.offsets, "prior": b.prior,
    }
    for name, r in b.releases.items():
        flat.update({f"releases.{name}.{k}": getattr(r, k) for k in (Key.EPSILON, Key.SENSITIVITY_L1,
                                                                     Key.NOISE_SCALE, Key.MECHANISM, Key.GRID,
                                                                     Key.CLIP_L1)})
    if b.head is not None:
        flat.update({f"releases.head.{k}": v for k, v in vars(b.head).items()})
    if b.scoring is not None:
        flat.update({f"scoring.{k}": v for k, v in vars(b.scoring).items()})
    return _document(flat, FIELDS)


def _encoder_values(e: EncoderSpec) -> dict[str, Any]:
    return {"encoder": {}, "encoder.facts": e.facts, "encoder.weights": encoder_weights(e) if e.format == "onnx" else None,
            # written for a family other than BERT's alone, so that a BERT encoder stays readable by 1.1 readers
            "encoder.family": None if e.family == DEFAULT_FAMILY else e.family,
            **{f"encoder.{k}": getattr(e, k) for k in (Key.FORMAT, Key.MODEL, Key.TOKENIZER_JSON, Key.MAX_LENGTH,
                                                      Key.DIM, Key.TEXT_PREFIX, Key.OUTPUT, Key.CHECK_TEXT)},
            "encoder.inputs": list(e.inputs), "encoder.check_embedding": e.check_embedding}


def _document(flat: dict[str, Any], rows: tuple[Field, ...], least_minor: int = 0) -> dict[str, Any]:
    """The map of ``flat`` (values by path) in the order of ``rows``, versioned by its newest field."""
    flat = {**flat, "version": [1, least_minor]}  # raised below to the newest field written
    doc: dict[str, Any] = {}
    for f in rows:
        value = flat.get(f.path)
        if f.kind == "map" and f.path not in flat:  # a section: present when any of its fields is
            value = {} if any(flat.get(g.path) is not None for g in FIELDS if g.parent == f.path) else None
        if value is None or f.path == Key.SHA256:
            continue
        node = doc
        for key in f.parent.split(".") if f.parent else ():
            node = node[key]
        if f.kind == "ndarray":
            value = array_record(value, f.dtype)
        elif f.kind in ("int", "float"):
            value = int(value) if f.kind == "int" else float(value)
        node[f.key] = dict(value) if f.kind == "map" and not f.open else value
    newest = [f.since[1] for f in rows if f.since is not None and has_path(doc, f.path)]
    doc["version"] = [1, max([least_minor, *newest])]
    listed = [f.path for f in rows if f.listed and has_path(doc, f.path)]
    missing = [path for path in listed if path not in doc.get(Key.REQUIRES, [])]
    if missing:  # relation "listed": a reader that does not know them must refuse, not ignore them
        requires = [*doc.get(Key.REQUIRES, []), *missing]
        items = [(k, v) for k, v in doc.items() if k != Key.REQUIRES]
        doc = dict(items[:2] + [(Key.REQUIRES, requires)] + items[2:])  # after format and version
    return doc


def encoder_weights(e: EncoderSpec) -> bytes:
    """The ONNX weights, from memory or from the file a reader left them in (a bundle that was
    loaded can be written again)."""
    if e.weights or e.weights_file is None:
        return bytes(e.weights)
    w = e.weights_file
    with open(w.path, "rb") as f:
        f.seek(w.offset)
        data = f.read(w.length)
    st = os.stat(w.path)
    if len(data) != w.length or (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != w.identity:
        raise OSError(f"{w.path}: the bundle file changed since it was read")
    return data


def pack(b: Bundle) -> bytes:
    """Serialize a bundle: its map, then the digest entry over every byte before it.

    Example:
        >>> unpack(pack(b)).labels == b.labels                  # doctest: +SKIP
        True
    """
    return _sealed(document(b))


def pack_encoder(e: EncoderSpec) -> bytes:
    """Serialize an encoder pack (1.1): ``format: dpedge-encoder``, the version, the encoder map
    (the bundle's rows, in their order), then the digest entry; the digest names the pack."""
    return _sealed(_document({"format": PACK_FORMAT_NAME, "version": None, **_encoder_values(e)}, PACK_FIELDS, least_minor=1))


def save_pack(e: EncoderSpec, path: str | os.PathLike[str]) -> tuple[Path, bytes]:
    """Write an encoder pack atomically; returns its path and digest."""
    data = pack_encoder(e)
    return write_atomic(Path(path), data), data[-32:]


def _sealed(doc: dict[str, Any]) -> bytes:
    packer = msgpack.Packer(use_bin_type=True)
    head = packer.pack_map_header(len(doc) + 1) + b"".join(packer.pack(k) + packer.pack(v) for k, v in doc.items())
    return head + packer.pack(Key.SHA256) + packer.pack(hashlib.sha256(head).digest())


def save(b: Bundle, path: str | os.PathLike[str]) -> Path:
    """Write a bundle atomically: a temp file in the same folder, fsync, then rename (an
    interrupted write leaves the previous file, or none, never half a bundle)."""
    return write_atomic(Path(path), pack(b))


def write_atomic(path: Path, data: bytes) -> Path:
    """Write bytes to ``path`` via temp file + fsync + rename (shared by every writer)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)  # mkstemp makes the file 0600; give it open()'s mode
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
