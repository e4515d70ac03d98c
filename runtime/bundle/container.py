"""The container: one msgpack map sealed by its last entry, read without trusting it.

A bundle is read in two passes over its bytes (a file, or bytes in memory): the digest, one
chunk at a time, so a corrupted file of any size is refused in constant memory; then the
document, header by header. The decoder is written here rather than taken from msgpack-python
because no msgpack library does three things a hostile file needs: it checks depth, declared
lengths and the value budget before it allocates (msgpack-python allocates a container's
declared length first: 5 KB of nested headers would cost 76 MiB); it refuses a repeated key
in any map; and it leaves binary values where they are (`Bin`: an offset and a length), so a
field the reader ignores is never read and a field it uses is read once, into its own buffer.

Example:
    >>> read_document(Source.of(b"\\x81\\xa1a\\xc4\\x02hi"))
    {'a': Bin(offset=5, length=2)}
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from typing import Any, BinaryIO

from runtime.bundle.schema import (BYTES_PER_VALUE, DIGEST_BYTES, DIGEST_TAIL, FORMAT_NAME, MAX_CONTAINER, MAX_DEPTH,
                                   PRE_RELEASE_NAME, TAIL_BYTES, VALUE_ALLOWANCE, Key)
from runtime.errors import BundleError

CORRUPTED = "checksum mismatch: the bundle is corrupted (its bytes changed after it was written)"
EXTENSION = "not a dpedge bundle: it holds a msgpack extension type, which no field may"
TOO_DEEP = f"not a dpedge bundle: containers nest deeper than {MAX_DEPTH}"
_INCOMPLETE = "not valid msgpack (ValueError: Unpack failed: incomplete input)"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Bin:
    """A binary value left in the source: ``length`` bytes at ``offset``."""

    offset: int
    length: int

    def __len__(self) -> int:
        return self.length


class Source:
    """Random access to a bundle's bytes, a file or bytes in memory, through a read-ahead window
    (a document is hundreds of small headers)."""

    def __init__(self, size: int, data: bytes | memoryview | None = None, f: BinaryIO | None = None):
        self.size, self._data, self._f = size, data, f
        self._window, self._at = b"", 0

    @classmethod
    def of(cls, data: bytes | memoryview) -> "Source":
        return cls(len(data), data=memoryview(data))

    def read(self, offset: int, n: int) -> bytes | memoryview:
        """Exactly ``n`` bytes at ``offset`` (a view when the source is in memory)."""
        if n < 0 or offset + n > self.size:
            raise BundleError("container.msgpack", "", _INCOMPLETE)
        if self._data is not None:
            return self._data[offset:offset + n]
        if not self._at <= offset <= offset + n <= self._at + len(self._window):
            if n > 64 * 1024:  # a big value: its own buffer, once
                return self._pread(offset, n)
            self._at, self._window = offset, self._pread(offset, min(64 * 1024, self.size - offset))
        start = offset - self._at
        return self._window[start:start + n]

    def _pread(self, offset: int, n: int) -> bytes:
        data = os.pread(self._f.fileno(), n, offset)
        if len(data) != n:
            raise BundleError("container.msgpack", "", "the bundle is truncated: the file changed or ended while it "
                                                       "was read")
        return data

    def bytes(self, b: Bin) -> bytes:
        return bytes(self.read(b.offset, b.length))

    def check_digest(self, name: str = FORMAT_NAME) -> bytes:
        """The file ends with the digest entry, and the digest is its bytes' (one chunk at a time);
        returns the digest. ``name`` is the magic expected (a bundle's, or an encoder pack's)."""
        if self.size < TAIL_BYTES or bytes(self.read(self.size - TAIL_BYTES, len(DIGEST_TAIL))) != DIGEST_TAIL:
            raise BundleError(*self._unsealed(name))
        h = hashlib.sha256()
        for at in range(0, self.size - TAIL_BYTES, _CHUNK):
            h.update(self.read(at, min(_CHUNK, self.size - TAIL_BYTES - at)) if self._data is not None
                     else self._pread(at, min(_CHUNK, self.size - TAIL_BYTES - at)))
        if h.digest() != bytes(self.read(self.size - DIGEST_BYTES, DIGEST_BYTES)):
            raise BundleError("container.digest", "", CORRUPTED)
        return h.digest()

    def _unsealed(self, name: str) -> tuple[str, str, str]:
        """Why a file without its digest entry is refused: a pre-release bundle, a truncated one,
        or not a bundle at all (read from its first entries)."""
        if not self.size or not (0x80 <= self.read(0, 1)[0] <= 0x8F or self.read(0, 1)[0] in (0xDE, 0xDF)):
            return "container.not_bundle", "", "not a dpedge bundle (it does not start with a msgpack map)"
        try:
            first = read_document(Source.of(bytes(self.read(0, min(self.size, 4096)))), first_entries=2)
        except BundleError:
            first = {}
        if list(first)[:1] != [Key.FORMAT]:
            return "container.not_bundle", "", "not a dpedge bundle (its first entry is not format: dpedge)"
        if first.get(Key.FORMAT) == PRE_RELEASE_NAME:
            v = first.get(Key.VERSION)
            shown = ".".join(map(str, v)) if isinstance(v, list) and all(type(x) is int for x in v) else "?"
            return ("container.pre_release", "", f"this bundle uses the pre-release format {shown}, which dpedge 1.x "
                    f"does not read: "
                    f"rebuild it with `python -m exporter build` (a new release of the data: its epsilon adds to the "
                    f"old bundle's if both are used)")
        if first.get(Key.FORMAT) == name:
            what = "bundle" if name == FORMAT_NAME else "encoder pack"
            return ("container.truncated", "", f"the {what} is truncated or corrupted: it does not end with its "
                                               f"'{Key.SHA256}' entry")
        return "container.not_bundle", "", "not a dpedge bundle (its first entry is not format: dpedge)"


_INTS = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q",
         0xCA: ">f", 0xCB: ">d"}
_LENGTHS = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4, 0xDC: 2, 0xDD: 4, 0xDE: 2, 0xDF: 4}
_PY_TYPE = {bool: "bool", int: "int", float: "float", type(None): "NoneType", list: "list", dict: "dict"}
_NONE = object()


def read_document(src: Source, first_entries: int = 0) -> dict[str, Any]:
    """The one msgpack map ``src`` holds, values decoded, binary values left as `Bin`
    (``first_entries`` > 0: only that many of the top map's entries, to identify a file)."""
    pos, left = 0, src.size // BYTES_PER_VALUE + VALUE_ALLOWANCE
    root: Any = _NONE
    stack: list[list[Any]] = []  # [container, entries left, pending key or _NONE]
    while root is _NONE:
        b = src.read(pos, 1)[0]
        pos += 1
        container = None
        if b <= 0x7F or b >= 0xE0:
            value: Any = b if b <= 0x7F else b - 0x100
        elif b <= 0x9F or b in (0xDC, 0xDD, 0xDE, 0xDF):
            size = _LENGTHS.get(b, 0)
            count = b & 0x0F if size == 0 else int.from_bytes(src.read(pos, size), "big")
            pos += size
            is_map = b <= 0x8F or b >= 0xDE
            if count > MAX_CONTAINER:
                raise BundleError("container.count", "", f"not valid msgpack (ValueError: {count} exceeds "
                                  f"max_{'map' if is_map else 'array'}_len({MAX_CONTAINER}))")
            left -= count + 1
            if left < 0:
                raise BundleError("container.count", "", f"not a dpedge bundle: it holds more msgpack values than "
                                                         f"{src.size} bytes may")
            if len(stack) >= MAX_DEPTH:
                raise BundleError("container.depth", "", TOO_DEEP)
            container = value = {} if is_map else []
        elif b <= 0xBF or b in (0xD9, 0xDA, 0xDB):
            size = _LENGTHS.get(b, 0)
            n = b & 0x1F if size == 0 else int.from_bytes(src.read(pos, size), "big")
            try:
                value = str(src.read(pos + size, n), "utf-8")
            except UnicodeDecodeError:
                raise BundleError("container.msgpack", "", "not valid msgpack (UnicodeDecodeError: a string is not "
                                                           "valid UTF-8)") from None
            pos += size + n
        elif b in (0xC4, 0xC5, 0xC6):
            size = _LENGTHS[b]
            n = int.from_bytes(src.read(pos, size), "big")
            src.read(pos + size + n - 1, 1) if n else None  # the bytes must be there
            value = Bin(pos + size, n)
            pos += size + n
        elif b in _INTS:
            fmt = _INTS[b]
            value = struct.unpack(fmt, src.read(pos, struct.calcsize(fmt)))[0]
            pos += struct.calcsize(fmt)
        elif b in (0xC0, 0xC2, 0xC3):
            value = {0xC0: None, 0xC2: False, 0xC3: True}[b]
        elif b == 0xC1:
            raise BundleError("container.msgpack", "", "not valid msgpack (FormatError: reserved byte 0xc1)")
        else:
            raise BundleError("container.extension", "", EXTENSION)
        if container is not None and count:
            stack.append([container, count * (2 if is_map else 1), _NONE])
            continue
        while True:  # place the value, closing every container it completes
            if not stack:
                root = value
                break
            frame = stack[-1]
            parent = frame[0]
            if isinstance(parent, dict):
                if frame[2] is _NONE:
                    if type(value) is not str:
                        if isinstance(value, Bin):  # msgpack-python's strict_map_key lets bin keys through
                            raise BundleError("container.key", "", f"a map has a key that is not a string: "
                                              f"{repr(src.bytes(value)[:40])}")
                        raise BundleError("container.key", "", f"not valid msgpack (ValueError: "
                                                               f"{_PY_TYPE.get(type(value), 'object')} is not "
                                          f"allowed for map key when strict_map_key=True)")
                    if value in parent:
                        raise BundleError("container.repeated_key", "", f"a map repeats the key {repr(value)[:80]}")
                    frame[2] = value
                else:
                    parent[frame[2]] = value
                    frame[2] = _NONE
            else:
                parent.append(value)
            frame[1] -= 1
            if first_entries and len(stack) == 1 and isinstance(parent, dict) and len(parent) >= first_entries \
                    and frame[2] is _NONE:
                return parent
            if frame[1]:
                break
            value = stack.pop()[0]
    if pos != src.size and not first_entries:
        raise BundleError("container.msgpack", "", "not valid msgpack (ExtraData: bytes after the document)")
    if not isinstance(root, dict):
        kind = {list: "array", str: "string", int: "integer", float: "float", bool: "boolean", Bin: "bin"}
        raise BundleError("container.not_bundle", "", f"not a dpedge bundle (its top level is "
                                                      f"{kind.get(type(root), 'nil')}, expected a map)")
    return root
