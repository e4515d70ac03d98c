"""The dpedge bundle format: one msgpack file with everything a device needs.

The whole format sits behind four functions, `pack`/`unpack` (bytes) and `save`/`load`
(files), so the exporter and every reader share one definition: `schema` names every field
and bound once, `writer` writes, `reader` validates. docs/bundle-format.md is the normative
description, written for the phone ports; this package is the reference implementation.

The file is a msgpack map ``{"format", "version", "checksum", "payload"}`` whose payload is
itself a msgpack document stored as one binary field, so the SHA-256 checksum covers exactly
the bytes that are parsed. Arrays are stored as ``{"dtype", "shape", "data"}`` with an
explicit little-endian dtype and C-order raw bytes.

Versions: 1.1 added the "tflite" encoder format and ``encoder.check``; 1.2 added
``privacy.max_records_per_unit``; 2.0 added aligned hashing and blended scoring
(``lsh.offsets``, ``class_stats``, ``prior``, ``scoring``, ``privacy.releases``), which a 1.x
reader would hash wrongly, hence the major version; 2.1 added the Gaussian centroid rule and
the prior's records-per-class term to ``scoring``. Bundles that use no format-2 field are
still written as 1.2.

Example:
    >>> from runtime import bundle
    >>> b = bundle.load("models/quickstart.dpedge")      # doctest: +SKIP
    >>> b.votes.shape                                   # doctest: +SKIP
    (32, 16, 7)
"""

from runtime.bundle.reader import load, unpack
from runtime.bundle.schema import (CHECK_MIN_COSINE, ENCODER_FORMATS, FLOAT_DTYPE, FORMAT_NAME, FORMAT_VERSION,
                                   FORMAT_VERSION_PLAIN, HYPERPLANES_DTYPE, MAX_BITS, MAX_BUNDLE_BYTES, MAX_TABLES,
                                   SUPPORTED_MAJORS, VOTES_DTYPE, Bundle, ClassStats, Encoder)
from runtime.bundle.writer import pack, save, write_atomic

__all__ = ["CHECK_MIN_COSINE", "ENCODER_FORMATS", "FLOAT_DTYPE", "FORMAT_NAME", "FORMAT_VERSION", "FORMAT_VERSION_PLAIN",
           "HYPERPLANES_DTYPE", "MAX_BITS", "MAX_BUNDLE_BYTES", "MAX_TABLES", "SUPPORTED_MAJORS", "VOTES_DTYPE",
           "Bundle", "ClassStats", "Encoder", "load", "pack", "save", "unpack", "write_atomic"]
