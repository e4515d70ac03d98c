"""Streaming readers for labelled datasets (JSONL and CSV) and the public label list.

Records are yielded one at a time, so a dataset of any size is read in constant memory.
Every problem names the file and line, because a user with a million-line export needs to
find the one bad record, not guess; and the field and what is wrong with it, but never the
record's text, label or unit: those are the private data, and an error message ends up in
terminals, logs and bug reports (the label list and the header are public and are named).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterable, Iterator

from runtime.classifier import check_text
from runtime.errors import InputError

FORMATS = ("jsonl", "csv", "tsv")

#: Distinct unknown label values ReadStats counts. Records with further values are still
#: skipped and counted in `skipped_unknown_label`; the cap keeps a label column of free text
#: from making the reader's memory grow with the file.
MAX_COUNTED_UNKNOWN_LABELS = 1000


class DatasetError(ValueError):
    """A dataset or label file cannot be used as it is; the message names file and line."""

    def __init__(self, path: os.PathLike[str] | str, line: int | None, message: str):
        self.path, self.line = Path(path), line
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class LabelSet:
    """The public, fixed list of classes (order = class index) and optional descriptions."""

    names: tuple[str, ...]
    descriptions: tuple[str, ...] | None = None

    @cached_property
    def _index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int | None:
        """Class index of a label name, or None if it is not in the list."""
        return self._index.get(name)


def _decoded_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line, UTF-8 (a leading BOM is dropped), newline kept."""
    try:
        f = path.open("rb")
    except OSError as exc:
        raise DatasetError(path, None, f"cannot open: {exc.strerror or exc}") from None
    with f:
        for n, raw in enumerate(f, start=1):
            yield n, decode_line(path, n, raw)


def decode_line(path: Path, n: int, raw: bytes) -> str:
    """Line ``n`` as text: UTF-8, with a leading BOM dropped from line 1 (shared with the Ray engine)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(path, n, f"not valid UTF-8 (byte {exc.start} of the line)") from None
    return text[1:] if n == 1 and text.startswith("\ufeff") else text


def read_labels(path: os.PathLike[str] | str) -> LabelSet:
    """Read ``labels.txt``: one label per line, optionally ``label<TAB>public description``.

    Blank lines at the end are ignored; a blank line between labels, a duplicate label or
    fewer than two labels is an error.

    Example:
        >>> read_labels("data/assistant/labels.txt").names[:2]        # doctest: +SKIP
        ('alarm_timer', 'weather')
    """
    p = Path(path)
    names: list[str] = []
    descriptions: list[str] = []
    blank_at: int | None = None
    for n, line in _decoded_lines(p):
        line = line.rstrip("\r\n")
        if not line.strip():
            blank_at = blank_at or n
            continue
        if blank_at is not None:
            raise DatasetError(p, blank_at, "blank line between labels")
        name, _, description = line.partition("\t")
        name = name.strip()
        if not name:
            raise DatasetError(p, n, "empty label name")
        if name in names:
            raise DatasetError(p, n, f"duplicate label {name!r} (first on line {names.index(name) + 1})")
        names.append(name)
        descriptions.append(description.strip())
    if len(names) < 2:
        raise DatasetError(p, None, f"needs at least two labels, found {len(names)}")
    has_descriptions = any(descriptions)
    if has_descriptions and not all(descriptions):
        missing = names[descriptions.index("")]
        raise DatasetError(p, None, f"some labels have descriptions but {missing!r} has none: give all or none")
    return LabelSet(tuple(names), tuple(descriptions) if has_descriptions else None)


@dataclass(frozen=True)
class Record:
    text: str
    label: int
    line: int
    unit: str | None = None  # the privacy unit (e.g. a user id) when a unit column is given


def label_digest(label: str) -> str:
    """A short digest that tells distinct label values apart without keeping them."""
    return hashlib.blake2b(label.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


@dataclass
class ReadStats:
    """What the reader kept and skipped (printed for the data owner; never released).

    Unknown label values are private data: only their digests are kept, to count the distinct
    values, so no report can show them.
    """

    records: int = 0
    skipped_unknown_label: int = 0
    skipped_empty_texts: int = 0
    blank_lines: int = 0
    #: `label_digest`s of the distinct unknown label values, at most MAX_COUNTED_UNKNOWN_LABELS (not
    #: secret: a guessed label can be checked against them; they keep the values out of reports).
    unknown_label_digests: set[str] = field(default_factory=set)

    def add_unknown_labels(self, digests: Iterable[str]) -> None:
        """Count distinct unknown label values (by `label_digest`), up to the cap."""
        for d in digests:
            if len(self.unknown_label_digests) >= MAX_COUNTED_UNKNOWN_LABELS:
                return
            self.unknown_label_digests.add(d)

    @property
    def distinct_unknown_labels(self) -> str:
        """How many distinct unknown label values were seen: a number, or "at least N" past the cap."""
        n = len(self.unknown_label_digests)
        return f"at least {n}" if n >= MAX_COUNTED_UNKNOWN_LABELS else str(n)


def detect_format(path: Path) -> str:
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("jsonl", "ndjson", "json"):
        return "jsonl"
    if suffix in ("csv", "tsv"):
        return suffix
    raise DatasetError(path, None, f"cannot tell the format from the extension {path.suffix!r}; pass --format jsonl|csv|tsv")


def parse_jsonl_line(path: Path, n: int, line: str, fields: tuple[str, ...], stats: ReadStats) -> list[object] | None:
    """The requested fields of JSONL line ``n`` (None for a blank line, which is counted)."""
    if not line.strip():
        stats.blank_lines += 1
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DatasetError(path, n, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise DatasetError(path, n, f"expected a JSON object, got {type(obj).__name__}")
    for key in fields:
        if key not in obj:
            raise DatasetError(path, n, f"missing field {key!r} (fields: {', '.join(map(str, obj))})")
    return [obj[key] for key in fields]


def _jsonl_rows(path: Path, fields: tuple[str, ...], stats: ReadStats) -> Iterator[tuple[int, list[object]]]:
    for n, line in _decoded_lines(path):
        values = parse_jsonl_line(path, n, line, fields, stats)
        if values is not None:
            yield n, values


def _csv_rows(path: Path, fields: tuple[str, ...], delimiter: str, stats: ReadStats) -> Iterator[tuple[int, list[object]]]:
    lines = _decoded_lines(path)
    line_no = 0

    def feed() -> Iterator[str]:
        nonlocal line_no
        for n, text in lines:
            line_no = n
            yield text

    reader = csv.reader(feed(), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise DatasetError(path, None, "empty file: expected a header row") from None
    except csv.Error as exc:
        raise DatasetError(path, line_no, f"malformed CSV header ({exc})") from None
    header = [h.strip() for h in header]
    for key in fields:
        if key not in header:
            raise DatasetError(path, 1, f"no column {key!r} in the header (columns: {', '.join(header)})")
    columns = [header.index(key) for key in fields]
    while True:
        start = line_no + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DatasetError(path, start, f"malformed CSV ({exc})") from None
        if not row or (len(row) == 1 and not row[0].strip()):
            stats.blank_lines += 1
            continue
        if len(row) != len(header):
            raise DatasetError(path, start, f"{len(row)} columns, the header has {len(header)}")
        yield start, [row[i] for i in columns]


def read_records(
    path: os.PathLike[str] | str,
    labels: LabelSet,
    *,
    fmt: str | None = None,
    text_field: str = "text",
    label_field: str = "label",
    skip_unknown_labels: bool = False,
    skip_empty_texts: bool = False,
    unit_field: str | None = None,
    stats: ReadStats | None = None,
) -> Iterator[Record]:
    """Yield records with their class index, streaming.

    A label not in ``labels`` or an empty/oversized text is an error naming file and line,
    unless the matching skip flag is set; skips are counted in ``stats``. With ``unit_field``
    each record also carries its privacy unit (a string; an integer is read as its text), and
    a missing or empty unit is an error.

    Example:
        >>> labels = read_labels("data/assistant/labels.txt")          # doctest: +SKIP
        >>> next(read_records("data/assistant/train.jsonl", labels))    # doctest: +SKIP
        Record(text='Find the route with the fewest stops.', label=4, line=1)
    """
    p = Path(path)
    fmt = fmt or detect_format(p)
    if fmt not in FORMATS:
        raise DatasetError(p, None, f"unknown format {fmt!r} (use one of {', '.join(FORMATS)})")
    stats = stats if stats is not None else ReadStats()
    fields = (text_field, label_field) + ((unit_field,) if unit_field else ())
    rows: Iterable[tuple[int, list[object]]]
    if fmt == "jsonl":
        rows = _jsonl_rows(p, fields, stats)
    else:
        rows = _csv_rows(p, fields, "," if fmt == "csv" else "\t", stats)
    for n, values in rows:
        record = validate_row(p, n, values, labels, fields=fields, skip_unknown_labels=skip_unknown_labels,
                              skip_empty_texts=skip_empty_texts, stats=stats)
        if record is not None:
            yield record


def validate_row(path: Path, n: int, values: list[object], labels: LabelSet, *, fields: tuple[str, ...],
                 skip_unknown_labels: bool, skip_empty_texts: bool, stats: ReadStats) -> Record | None:
    """Check one row's [text, label(, unit)], read from ``fields`` (text field, label field(,
    unit field)), as read_records does: the Record, or None if skipped. A refusal names the
    field and what is wrong, never the value.

    Shared with the Ray engine (exporter.ray_engine), so both paths accept, skip and refuse
    exactly the same records with the same messages.
    """
    p = path
    text, label = values[0], values[1]
    text_field, label_field = fields[0], fields[1]
    unit = _unit(p, n, values[2], fields[2]) if len(fields) > 2 else None
    if isinstance(label, int) and not isinstance(label, bool):
        label = str(label)
    if not isinstance(label, str):
        raise DatasetError(p, n, f"the label (field {label_field!r}) must be a string, got {type(label).__name__}")
    label = label.strip()
    index = labels.index(label)
    if index is None:
        if not skip_unknown_labels:
            raise DatasetError(p, n, f"the label (field {label_field!r}) is not in the label list "
                                     f"(pass --skip-unknown-labels to skip such records)")
        stats.skipped_unknown_label += 1
        stats.add_unknown_labels([label_digest(label)])
        return None
    if not isinstance(text, str):
        raise DatasetError(p, n, f"the text (field {text_field!r}) must be a string, got {type(text).__name__}")
    try:
        check_text(text)
        if not text.strip():  # the query rule (no token) needs the tokenizer; white space is the common case
            raise InputError("query.empty", "", "empty text")
    except InputError as exc:
        if not skip_empty_texts:
            raise DatasetError(p, n, f"the text (field {text_field!r}): {exc} "
                                     f"(pass --skip-empty-texts to skip such records)") from None
        stats.skipped_empty_texts += 1
        return None
    stats.records += 1
    return Record(text, index, n, unit)


def _unit(path: Path, n: int, value: object, field: str) -> str:
    """The record's unit id, white space around it stripped (so " ana" and "ana" are one
    person) and an integer read as its text (so 7 and "7" are one person)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        got = "a blank string" if isinstance(value, str) else type(value).__name__
        raise DatasetError(path, n, f"the unit column {field!r} must be a non-empty string or integer, got {got}")
    return value.strip()


def count_lines(path: os.PathLike[str] | str) -> int:
    """Number of lines, read in blocks: an upper bound on records, for the progress bar.

    A last line without a newline counts, so the bar ends at its total.
    """
    n, last = 0, b"\n"
    with Path(path).open("rb") as f:
        while block := f.read(1 << 20):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")
