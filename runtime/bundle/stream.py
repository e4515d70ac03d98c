"""Reading a msgpack document from a file in one pass, so a bundle costs about its size in memory.

msgpack's parser copies every binary field out of the buffer it parses, and the payload is
itself a binary field of the outer map: reading a file whole and parsing it twice held up to
three copies of the encoder at once (a 2 GiB file cost 4.1 GiB). Here a document is walked
header by header from the file: binary fields longer than `LAZY_BIN_BYTES` (the model, the
vote tables, the hyperplanes) are skipped by offset and later read straight into their own
buffers, everything else (a few hundred small values and the tokenizer's text) is copied into
a small *skeleton* document that msgpack parses, with a placeholder extension where each big
field was. The SHA-256 of a region is computed over exactly the bytes that become the values,
so the checksum still covers what is parsed, and a corrupted file is refused after one
streaming pass that holds one chunk at a time.

The walk enforces what the parser did before (the same messages): at most 1024 nested
containers, a value budget proportional to the size (`BYTES_PER_VALUE`), no extension types
but the timestamp, and now a bound on any one string (`schema.MAX_STRING_BYTES`).
"""

from __future__ import annotations

import hashlib
import io
import struct
from dataclasses import dataclass
from typing import Any, BinaryIO

import msgpack

from runtime.bundle.schema import MAX_STRING_BYTES
from runtime.errors import BundleError

#: Binary fields longer than this are read into their own buffer instead of the skeleton (the
#: skeleton then holds the small values and the tokenizer's text only).
LAZY_BIN_BYTES = 4096
#: A bundle holds a few hundred msgpack values besides megabytes of binary fields. Each value
#: becomes a Python object of up to about 100 bytes however small its msgpack form (an empty
#: map is one byte, a 64-byte dict), so a document is refused as soon as it holds more than one
#: value per this many bytes (plus a small allowance): a crafted file cannot make the parser
#: use many times its own size in memory.
BYTES_PER_VALUE = 64
VALUE_ALLOWANCE = 4096
#: Containers nested deeper than this are refused (msgpack-python's parser stack).
MAX_DEPTH = 1024
#: The extension code the skeleton uses for a placeholder (the walk refuses every extension
#: in the input but the timestamp, -1, so it cannot collide).
_PLACEHOLDER = 42
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Span:
    """A binary field left out of the skeleton: where its bytes are in the source."""

    offset: int
    length: int


class _Source:
    """Sequential reads with a position, over a file or a bytes-like object."""

    def __init__(self, f: BinaryIO, start: int, end: int):
        self.f, self.pos, self.end = f, start, end
        f.seek(start)

    def read(self, n: int, what: str) -> bytes:
        if n > self.end - self.pos:
            raise BundleError(f"{what} is truncated ({self.end} bytes): the file was cut short")
        data = self.f.read(n)
        if len(data) != n:
            raise BundleError(f"{what} is truncated: the file changed or ended while it was read")
        self.pos += n
        return data

    def skip(self, n: int, what: str) -> None:
        if n > self.end - self.pos:
            raise BundleError(f"{what} is truncated ({self.end} bytes): the file was cut short")
        self.pos += n
        self.f.seek(self.pos)


# header byte -> (kind, size of the length/value that follows); kinds: "fix" (no more bytes),
# "raw" (fixed-size scalar), "str"/"bin" (length then bytes), "ext" (length, type, bytes),
# "fixext" (type and a fixed size), "array"/"map" (count).
def _header(b: int) -> tuple[str, int]:
    if b <= 0x7F or b >= 0xE0:
        return "fix", 0
    if 0x80 <= b <= 0x8F:
        return "fixmap", b & 0x0F
    if 0x90 <= b <= 0x9F:
        return "fixarray", b & 0x0F
    if 0xA0 <= b <= 0xBF:
        return "fixstr", b & 0x1F
    return _HEADERS.get(b, ("invalid", 0))


_HEADERS = {
    0xC0: ("fix", 0), 0xC2: ("fix", 0), 0xC3: ("fix", 0),
    0xC4: ("bin", 1), 0xC5: ("bin", 2), 0xC6: ("bin", 4),
    0xC7: ("ext", 1), 0xC8: ("ext", 2), 0xC9: ("ext", 4),
    0xCA: ("raw", 4), 0xCB: ("raw", 8),
    0xCC: ("raw", 1), 0xCD: ("raw", 2), 0xCE: ("raw", 4), 0xCF: ("raw", 8),
    0xD0: ("raw", 1), 0xD1: ("raw", 2), 0xD2: ("raw", 4), 0xD3: ("raw", 8),
    0xD4: ("fixext", 1), 0xD5: ("fixext", 2), 0xD6: ("fixext", 4), 0xD7: ("fixext", 8), 0xD8: ("fixext", 16),
    0xD9: ("str", 1), 0xDA: ("str", 2), 0xDB: ("str", 4),
    0xDC: ("array", 2), 0xDD: ("array", 4), 0xDE: ("map", 2), 0xDF: ("map", 4),
}
_UINT = {1: ">B", 2: ">H", 4: ">I"}


class Document:
    """One msgpack value split from a source: the skeleton and the left-out binary fields."""

    def __init__(self, skeleton: bytes, spans: list[Span], pieces: list[bytes | Span], trailing: int):
        self.skeleton, self.spans, self._pieces = skeleton, spans, pieces
        #: Bytes after the value (an error the caller reports once it knows the value's type).
        self.trailing = trailing

    def digest(self, values: dict[int, bytes], f: BinaryIO) -> bytes:
        """SHA-256 of the whole region, from the copied pieces and the spans' bytes in order (a
        span that was not read is hashed from ``f``, one chunk at a time)."""
        h = hashlib.sha256()
        for piece in self._pieces:
            if not isinstance(piece, Span):
                h.update(piece)
            elif piece.offset in values:
                h.update(values[piece.offset])
            else:
                hash_range(h, f, piece.offset, piece.length)
        return h.digest()


def hash_range(h: Any, f: BinaryIO, start: int, length: int) -> None:
    """Feed ``f[start:start + length]`` to hash ``h`` through one reused 1 MiB buffer (about
    2 GB/s; reading into new bytes objects each time was four times slower)."""
    buf = bytearray(min(length, _CHUNK))
    view = memoryview(buf)
    f.seek(start)
    left = length
    while left:
        n = f.readinto(view[:min(left, len(buf))])
        if not n:
            raise BundleError("bundle is truncated: the file changed or ended while it was read")
        h.update(view[:n])
        left -= n


def split(f: BinaryIO, start: int, end: int, what: str, lazy_min: int = LAZY_BIN_BYTES) -> Document:
    """Walk one msgpack value at the start of ``f[start:end]`` (``trailing`` counts what follows);
    binary fields longer than ``lazy_min`` bytes are left in the source as spans."""
    src = _Source(f, start, end)
    limit = (end - start) // BYTES_PER_VALUE + VALUE_ALLOWANCE
    left = limit
    # The skeleton's parts and the hashed pieces share their bytes objects: only a span differs
    # (a placeholder in the skeleton, its header and bytes in the hash).
    parts: list[bytes] = []
    pieces: list[bytes | Span] = []
    spans: list[Span] = []

    def keep(chunk: bytes) -> None:
        parts.append(chunk)
        pieces.append(chunk)

    pending = [1]  # values still to read at each open container level (the top: one value)
    while pending:
        if pending[-1] == 0:
            pending.pop()
            continue
        pending[-1] -= 1
        head = src.read(1, what)
        kind, size = _header(head[0])
        if kind == "invalid":
            raise BundleError(f"{what} is not valid msgpack (FormatError: reserved byte 0x{head[0]:02x} at byte "
                              f"{src.pos - 1 - start})")
        if kind == "fix":
            keep(head)
            continue
        if kind == "raw":
            keep(head + src.read(size, what))
            continue
        if kind in ("fixmap", "fixarray", "fixstr", "fixext"):
            count, extra = size, b""
        else:
            extra = src.read(size, what)
            count = struct.unpack(_UINT[size], extra)[0]
        if kind in ("map", "array", "fixmap", "fixarray"):
            left -= count + 1
            if left < 0 or count > limit:
                raise BundleError(f"{what} is not a dpedge bundle: it holds more than {limit} msgpack values "
                                  f"for its {end - start} bytes")
            if len(pending) > MAX_DEPTH:
                raise BundleError(f"{what} is not valid msgpack: it nests deeper than the parser allows")
            keep(head + extra)
            pending.append(count * 2 if kind.endswith("map") else count)
            continue
        if kind in ("ext", "fixext"):
            code = src.read(1, what)
            if code != b"\xff":  # -1, the timestamp, is the only extension a reader decodes
                raise BundleError(f"unexpected msgpack extension type {struct.unpack('b', code)[0]}")
            keep(head + extra + code + src.read(count, what))
            continue
        if kind in ("str", "fixstr") and count > MAX_STRING_BYTES:
            raise BundleError(f"{what} holds a string of {count} bytes, longer than any field allows "
                              f"({MAX_STRING_BYTES})")
        if kind == "bin" and count > lazy_min:
            span = Span(src.pos, count)
            src.skip(count, what)
            spans.append(span)
            pieces += [head + extra, span]
            # fixext 4 of the placeholder type: the span's index (msgpack.packb would allocate
            # its 256 KiB buffer for these 6 bytes).
            parts.append(struct.pack(">BbI", 0xD6, _PLACEHOLDER, len(spans) - 1))
            continue
        keep(head + extra + src.read(count, what))
    return Document(b"".join(parts), spans, pieces, end - src.pos)


class LazyBin:
    """A binary field left in the file: replaced by its bytes where the reader uses it
    (`fill`), kept as this placeholder in fields it ignores (unknown fields are never read
    into memory, so a 2 GiB unknown field costs one streaming hash, not 2 GiB)."""

    __slots__ = ("span",)

    def __init__(self, span: Span):
        self.span = span

    def __len__(self) -> int:
        return self.span.length

    def __repr__(self) -> str:
        return f"<{self.span.length} bytes, not read>"


def find_lazy(obj: Any, depth: int) -> list[tuple[tuple[Any, ...], LazyBin]]:
    """The LazyBins of a parsed skeleton at most ``depth`` keys deep, with their paths (deeper
    ones are never wanted, and paths of a deeply nested document would cost depth x size)."""
    found: list[tuple[tuple[Any, ...], LazyBin]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), obj)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, LazyBin):
            found.append((where, v))
        elif len(where) >= depth:
            continue
        elif isinstance(v, dict):
            stack.extend(((*where, k), x) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend(((*where, i), x) for i, x in enumerate(v))
    return found


def parse_skeleton(doc: Document, what: str) -> Any:
    """msgpack-parse a skeleton; placeholders become LazyBin."""

    def ext(code: int, data: bytes) -> Any:
        if code != _PLACEHOLDER or len(data) != 4:
            raise BundleError(f"unexpected msgpack extension type {code}")
        return LazyBin(doc.spans[struct.unpack(">I", data)[0]])

    try:
        return msgpack.unpackb(doc.skeleton, raw=False, use_list=True, strict_map_key=True, ext_hook=ext)
    except BundleError:
        raise
    except Exception as exc:  # msgpack's ValueError (non-string keys), UnicodeDecodeError
        raise BundleError(f"{what} is not valid msgpack ({type(exc).__name__}: {exc})") from None


def read_spans(f: BinaryIO, spans: list[Span], what: str) -> dict[int, bytes]:
    """Each span's bytes, read once into its own buffer (offset -> bytes)."""
    out = {}
    for span in spans:
        f.seek(span.offset)
        data = f.read(span.length)
        if len(data) != span.length:
            raise BundleError(f"{what} is truncated: the file changed or ended while it was read")
        out[span.offset] = data
    return out


def fill(obj: Any, values: dict[int, bytes]) -> Any:
    """The parsed skeleton with each LazyBin that was read replaced by its bytes (in place)."""
    if isinstance(obj, LazyBin):
        return values.get(obj.span.offset, obj)
    stack = [obj]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, LazyBin):
                    v[k] = values.get(x.span.offset, x)
                elif isinstance(x, (dict, list)):
                    stack.append(x)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                if isinstance(x, LazyBin):
                    v[i] = values.get(x.span.offset, x)
                elif isinstance(x, (dict, list)):
                    stack.append(x)
    return obj


def open_bytes(data: bytes | bytearray | memoryview) -> BinaryIO:
    """A seekable reader over bytes (for `runtime.bundle.unpack`), without copying them."""
    return io.BytesIO(data)
