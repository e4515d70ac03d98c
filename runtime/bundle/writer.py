"""Writing bundles: `pack` to bytes, `save` to a file atomically.

The payload is serialized first and stored as one binary field of the outer map, so the
SHA-256 checksum covers exactly the bytes a reader parses. Field names come from
`runtime.bundle.schema`, shared with the reader.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from runtime.bundle.schema import (CHECKSUM_ALGORITHM, FLOAT_DTYPE, FORMAT_NAME, FORMAT_VERSION, FORMAT_VERSION_PLAIN,
                                   VOTES_DTYPE, Array, Bundle, ClassStatsKey, EncoderKey, Lsh, Outer, Payload,
                                   PriorKey)

PRIOR_SOURCE = "the label descriptions (public text), embedded by the bundle's encoder"


def array_record(a: np.ndarray, dtype: np.dtype) -> dict[str, Any]:
    """An array as the format stores it: explicit dtype, shape, C-order bytes.

    Example:
        >>> array_record(np.array([1, 2], np.int16), np.dtype("<i2"))
        {'dtype': '<i2', 'shape': [2], 'data': b'\\x01\\x00\\x02\\x00'}
    """
    a = np.ascontiguousarray(a, dtype=dtype)
    return {Array.DTYPE: dtype.str, Array.SHAPE: list(a.shape), Array.DATA: a.tobytes(order="C")}


def payload_map(b: Bundle) -> dict[str, Any]:
    """The payload as a msgpack-ready map (before serialization)."""
    e = b.encoder
    encoder: dict[str, Any] = {
        EncoderKey.FORMAT: e.format,
        EncoderKey.MODEL: bytes(e.model),
        EncoderKey.TOKENIZER_JSON: e.tokenizer_json,
        EncoderKey.MAX_LENGTH: e.max_length,
        EncoderKey.DIM: e.dim,
        EncoderKey.POOLING: e.pooling,
        EncoderKey.NORMALIZED: e.normalized,
        EncoderKey.INPUTS: list(e.inputs),
        EncoderKey.OUTPUT: e.output,
        EncoderKey.FACTS: e.facts,
    }
    if e.check_text is not None:
        encoder[EncoderKey.CHECK] = {EncoderKey.CHECK_TEXT: e.check_text,
                                     EncoderKey.CHECK_EMBEDDING: array_record(e.check_embedding, FLOAT_DTYPE)}
    payload: dict[str, Any] = {
        Payload.LABELS: list(b.labels),
        Payload.LABEL_DESCRIPTIONS: None if b.label_descriptions is None else list(b.label_descriptions),
        Payload.PRIVACY: b.privacy,
    }
    if b.votes is not None:
        lsh = {**b.lsh, Lsh.HYPERPLANES: array_record(b.hyperplanes, FLOAT_DTYPE)}
        if b.offsets is not None:
            lsh[Lsh.OFFSETS] = array_record(b.offsets, FLOAT_DTYPE)
        payload[Payload.LSH] = lsh
        payload[Payload.VOTES] = array_record(b.votes, VOTES_DTYPE)
    payload[Payload.ENCODER] = encoder
    payload[Payload.EXPORTER] = b.exporter
    if b.class_stats is not None:
        cs = b.class_stats
        payload[Payload.CLASS_STATS] = {ClassStatsKey.ORIGIN: array_record(cs.origin, FLOAT_DTYPE),
                                        ClassStatsKey.PROJECTION: array_record(cs.projection, FLOAT_DTYPE),
                                        ClassStatsKey.SUMS: array_record(cs.sums, FLOAT_DTYPE),
                                        ClassStatsKey.COUNTS: array_record(cs.counts, FLOAT_DTYPE)}
    if b.prior is not None:
        payload[Payload.PRIOR] = {PriorKey.EMBEDDINGS: array_record(b.prior, FLOAT_DTYPE),
                                  PriorKey.SOURCE: PRIOR_SOURCE}
    if b.scoring is not None:
        payload[Payload.SCORING] = b.scoring
    return payload


def pack(b: Bundle) -> bytes:
    """Serialize a bundle to bytes: format 4.0 if it uses anything beyond plain vote tables,
    else 1.2.

    Example:
        >>> data = pack(b)                                   # doctest: +SKIP
        >>> unpack(data).labels == b.labels                  # doctest: +SKIP
        True
    """
    body = msgpack.packb(payload_map(b), use_bin_type=True)
    outer = {
        Outer.FORMAT: FORMAT_NAME,
        Outer.VERSION: list(FORMAT_VERSION if b.uses_class_stats_format else FORMAT_VERSION_PLAIN),
        Outer.CHECKSUM: {Outer.ALGORITHM: CHECKSUM_ALGORITHM, Outer.DIGEST: hashlib.sha256(body).digest()},
        Outer.PAYLOAD: body,
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
