"""The runtime's error types.

Apps that embed the runtime need to tell "this bundle file is bad" apart from "this query
is bad" apart from bugs, so each has one documented type and a message a person can act on.
"""


class DpedgeError(Exception):
    """Base class of every error the runtime raises on purpose."""


class BundleError(DpedgeError):
    """The bundle cannot be used: not a bundle, truncated, corrupted, wrong version, or
    inconsistent. Raised for every malformed input the reader can meet; never a KeyError,
    ValueError or msgpack exception from deep inside."""


class InputError(DpedgeError):
    """A query text cannot be classified (empty, whitespace only, or over the size limit)."""


def is_panic(exc: BaseException) -> bool:
    """A Rust panic surfaced by a native extension (pyo3's PanicException, which derives from
    BaseException so that `except Exception` does not swallow it): for the runtime, an engine
    failure like any other, reported in one line."""
    return type(exc).__name__ == "PanicException"
