"""The contract's files: format/1/schema.json (the format as data) and format/1/unicode.json
(the Unicode tables), read once.

The Python runtime interprets these files as the Java and TypeScript readers do; none of the
three restates them. They are found beside the source (a checkout or an editable install:
format/1/ at the top of the repository) or as the installed package ``dpedge_format`` (a wheel:
pyproject.toml maps format/ to it).

Example:
    >>> schema()["format"], unicode()["unicode_version"]
    ('dpedge', '18.0.0')
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

#: The major version whose files this runtime reads.
MAJOR = "1"


@functools.cache
def folder() -> Path:
    """format/1: beside the source, else the installed ``dpedge_format`` package."""
    here = Path(__file__).resolve().parents[1] / "format" / MAJOR
    if (here / "schema.json").is_file():
        return here
    spec = importlib.util.find_spec("dpedge_format")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / MAJOR
        if (candidate / "schema.json").is_file():
            return candidate
    raise ImportError("the dpedge format files (format/1/schema.json) are not installed: reinstall dpedge")


def _read(name: str) -> dict[str, Any]:
    return json.loads((folder() / name).read_text(encoding="utf-8"))


@functools.cache
def schema() -> dict[str, Any]:
    """format/1/schema.json."""
    return _read("schema.json")


@functools.cache
def unicode() -> dict[str, Any]:
    """format/1/unicode.json."""
    return _read("unicode.json")
