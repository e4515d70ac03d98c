"""The dpedge bundle format 1: one msgpack file with everything a device needs, or (1.1) a
statistics bundle and the encoder pack it names.

The format sits behind four functions, `pack`/`unpack` (bytes) and `save`/`load` (files), and
their encoder-pack twins (`pack_encoder`/`unpack_pack`, `save_pack`/`load_pack`), so the
exporter and every reader share one definition: `schema` is the format as data (every key,
type, shape, bound and relation), `writer` writes it, `reader` interprets it.
docs/bundle-format.md is the specification, its field tables generated from `schema`.

Example:
    >>> from runtime import bundle
    >>> b = bundle.load("models/quickstart.dpedge")      # doctest: +SKIP
    >>> b.labels[:2], b.epsilon                            # doctest: +SKIP
    (('alarm_timer', 'weather'), 8.0)
    >>> pack = bundle.load_pack("models/minilm.dpedge-encoder")           # doctest: +SKIP
    >>> bundle.load("models/weekly.dpedge", pack=pack).encoder_pack == pack.digest   # doctest: +SKIP
    True
"""

from runtime.bundle.reader import load, load_pack, unpack, unpack_pack
from runtime.bundle.schema import (FORMAT_NAME, FORMAT_VERSION, Bundle, EncoderPack, EncoderSpec, Key, ReleaseFacts,
                                   Scoring, WeightsFile)

#: The writer's functions, imported on first use (PEP 562): a device that only reads bundles does
#: not load the writer and the temporary-file machinery behind its atomic writes.
_WRITER = ("pack", "pack_encoder", "save", "save_pack", "write_atomic")


def __getattr__(name: str):
    if name in _WRITER:
        from runtime.bundle import writer
        return getattr(writer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "Bundle", "EncoderPack", "EncoderSpec", "Key", "ReleaseFacts", "Scoring",
           "WeightsFile", "load", "load_pack", "pack", "pack_encoder", "save", "save_pack", "unpack", "unpack_pack",
           "write_atomic"]
