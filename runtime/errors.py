"""The runtime's error types: every refusal is a code, a path and a message.

Apps that embed the runtime need to tell "this bundle file is bad" apart from "this query is
bad" apart from bugs, so each has one documented type. Every refusal also carries ``code`` (one
of format/1/schema.json "errors", the same in every reader), ``path`` (the field it concerns,
as docs/bundle-format.md section 8 writes it) and a message a person can act on. Readers agree
on codes and paths; the English is this reader's own. A message may quote text from a bundle
or an engine: ``str(error)`` shows it escaped (runtime.text.escape), so printing an error never
prints a raw control character.
"""

from __future__ import annotations


class DpedgeError(Exception):
    """Base class of every error the runtime raises on purpose: ``code``, ``path``, message."""

    def __init__(self, code: str, path: str, message: str):
        super().__init__(message)
        self.code, self.path, self.message = code, path, message

    def __str__(self) -> str:
        from runtime.text import escape

        return escape(self.message)

    def within(self, prefix: str) -> "DpedgeError":
        """The same refusal with ``prefix`` (a file name) before its message."""
        return type(self)(self.code, self.path, f"{prefix}: {self.message}")


class BundleError(DpedgeError):
    """The bundle cannot be used: not a bundle, truncated, corrupted, wrong version, inconsistent,
    or its encoder cannot run here. Raised for every malformed input the reader can meet; never a
    KeyError, ValueError or msgpack exception from deep inside."""


class InputError(DpedgeError):
    """A query text cannot be classified (not a string, empty, too long, not valid Unicode), or
    the engine failed on it."""


def is_panic(exc: BaseException) -> bool:
    """A Rust panic surfaced by a native extension (pyo3's PanicException, which derives from
    BaseException so that `except Exception` does not swallow it): for the runtime, an engine
    failure like any other, reported in one line."""
    return type(exc).__name__ == "PanicException"


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An engine's message on one short line (it may quote names from the bundle: escaped where shown)."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
