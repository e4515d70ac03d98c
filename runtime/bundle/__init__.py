"""The dpedge bundle format 1.0: one msgpack file with everything a device needs.

The format sits behind four functions, `pack`/`unpack` (bytes) and `save`/`load` (files), so
the exporter and every reader share one definition: `schema` is the format as data (every key,
type, shape, bound and relation), `writer` writes it, `reader` interprets it.
docs/bundle-format.md is the specification, its field tables generated from `schema`.

Example:
    >>> from runtime import bundle
    >>> b = bundle.load("models/quickstart.dpedge")      # doctest: +SKIP
    >>> b.labels[:2], b.epsilon                            # doctest: +SKIP
    (('alarm_timer', 'weather'), 8.0)
"""

from runtime.bundle.reader import load, unpack
from runtime.bundle.schema import (FORMAT_NAME, FORMAT_VERSION, Bundle, EncoderSpec, Key, ReleaseFacts, Scoring,
                                   WeightsFile)
from runtime.bundle.writer import pack, save, write_atomic

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "Bundle", "EncoderSpec", "Key", "ReleaseFacts", "Scoring", "WeightsFile",
           "load", "pack", "save", "unpack", "write_atomic"]
