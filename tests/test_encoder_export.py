"""The int8 encoder: exported once with pooling and normalisation inside, gated on fidelity."""

import json
import shutil

import numpy as np
import pytest

from exporter.encoder_export import MIN_MEAN_COSINE, EncoderExportError, export_encoder
from exporter.fidelity_texts import FIDELITY_TEXTS
from runtime.encoder import TextEncoder
from runtime.tokenizer import TextTokenizer

pytestmark = pytest.mark.export


def test_exported_encoder_facts_and_fidelity(exported_encoder):
    f = exported_encoder.facts
    assert f["fidelity"]["mean_cosine"] >= MIN_MEAN_COSINE == 0.99
    assert f["fidelity"]["texts"] == len(FIDELITY_TEXTS) >= 50
    assert f["dim"] == 384 and f["max_length"] == 256 and f["output"] == "sentence_embedding"
    assert (exported_encoder.directory / "model.onnx").stat().st_size < 30 * 2**20  # int8, not the 90 MB fp32
    assert json.loads((exported_encoder.directory / "encoder.json").read_text())["source_sha256"] == f["source_sha256"]


def test_second_export_reuses_the_cache(exported_encoder, tmp_path):
    again = export_encoder(models_dir=exported_encoder.directory.parents[1])
    assert again.directory == exported_encoder.directory and again.facts == exported_encoder.facts


def test_an_incomplete_cache_is_exported_again(exported_encoder, tmp_path, capfd):
    broken = tmp_path / "encoders" / exported_encoder.directory.name
    shutil.copytree(exported_encoder.directory, broken)
    (broken / "model.onnx").unlink()  # e.g. a copy interrupted half way
    again = export_encoder(models_dir=tmp_path)
    assert again.directory == broken and (broken / "model.onnx").is_file()
    assert again.facts["fidelity"]["mean_cosine"] >= MIN_MEAN_COSINE
    # The converters' advice (transformers, optimum, onnxruntime.quantization,
    # sentence-transformers) is silenced at its source: the export printed none of it.
    said = capfd.readouterr()
    chatter = [line for line in (said.out + said.err).splitlines()
               if any(w in line for w in ("[WARNING]", "[INFO]", "deprecated", "accelerate", "Warning:"))]
    assert chatter == []


def test_tokenizer_overrides_the_baked_in_padding_and_truncation(exported_encoder):
    tok = TextTokenizer((exported_encoder.directory / "tokenizer.json").read_text(), 256)
    short, long_ = tok.encode(["hi", "word " * 400])
    assert short == [101, 7632, 102]  # no padding to 128
    assert len(long_) == 256 and long_[-1] == 102  # truncated at the model's 256, not 128


def test_graph_pools_and_normalises(exported_encoder):
    spec = exported_encoder.to_bundle_encoder()
    emb = TextEncoder(spec).embed(TextTokenizer(spec.tokenizer_json, 256).encode(["OK", "a longer sentence here"]))
    assert emb.shape == (2, 384) and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)


def test_export_refuses_an_encoder_below_the_fidelity_threshold(tmp_path):
    """A threshold no int8 model can meet stands in for a bad quantization: clear error, nothing written."""
    with pytest.raises(EncoderExportError, match=r"not faithful enough: mean cosine 0\.99\d+ .* below 0\.99999"):
        export_encoder(models_dir=tmp_path, min_mean_cosine=0.99999)
    assert list((tmp_path / "encoders").iterdir()) == []


def test_export_refuses_a_folder_that_is_not_a_sentence_transformer(tmp_path):
    (tmp_path / "model").mkdir()
    with pytest.raises(EncoderExportError, match="not a sentence-transformers model folder"):
        export_encoder(tmp_path / "model", models_dir=tmp_path)



@pytest.mark.parametrize("family", ["bert", "mpnet"])
def test_basic_optimized_graph_embeds_as_the_quantized_one_bit_for_bit(family, tmp_path):
    """The shipped graph is onnxruntime's basic optimization of the quantized one, applied at
    export. Run as a reader runs a bundle's encoder, both give the same embeddings bit for bit,
    for texts of every length up to the limit; the shipped one has fewer nodes and no operator
    outside its family. The corpus's tiny encoders of both families (optimum's export, the same
    operators as the real ones)."""
    import dataclasses
    import sys

    import onnx

    from conftest import ROOT
    from exporter.encoder_export import _basic_optimized, _export_fp32, _quantized, externalize
    from runtime.bundle.model_family import check_model
    from runtime.bundle.schema import FAMILY_ONNX_OPS, EncoderSpec

    sys.path.insert(0, str(ROOT / "format" / "tools"))
    import tiny_encoder

    folder = tiny_encoder.source_folder(tmp_path, family)
    plain_path = tmp_path / "plain.onnx"
    _quantized(_export_fp32(folder, tmp_path / "fp32"), plain_path)
    plain_model, shipped_model = onnx.load(str(plain_path)), _basic_optimized(plain_path)
    assert len(shipped_model.graph.node) < 0.75 * len(plain_model.graph.node)
    assert {(n.domain, n.op_type) for n in shipped_model.graph.node} <= FAMILY_ONNX_OPS[family]
    assert not any(n.op_type == "Constant" for n in shipped_model.graph.node)

    (plain, plain_weights), (shipped, shipped_weights) = externalize(plain_model), externalize(shipped_model)
    check_model("onnx", shipped, len(shipped_weights), family)
    tokenizer_json = (folder / "tokenizer.json").read_text(encoding="utf-8")
    max_length = tiny_encoder.MAX_LENGTH
    spec = EncoderSpec(format="onnx", model=plain, weights=plain_weights, tokenizer_json=tokenizer_json,
                       max_length=max_length, dim=tiny_encoder.DIM, text_prefix="",
                       inputs=tuple(i.name for i in plain_model.graph.input), output="sentence_embedding",
                       check_text="", check_embedding=np.zeros(tiny_encoder.DIM, np.float32), family=family)
    ids = TextTokenizer(tokenizer_json, max_length).encode(list(FIDELITY_TEXTS) + ["x", "word " * 400])
    assert max(len(i) for i in ids) == max_length
    a = TextEncoder(spec, threads=1).embed(ids)
    b = TextEncoder(dataclasses.replace(spec, model=shipped, weights=shipped_weights), threads=1).embed(ids)
    assert a.dtype == b.dtype == np.float32 and a.tobytes() == b.tobytes()


def test_the_shipped_encoder_is_basic_optimized(exported_encoder):
    import onnx

    graph = onnx.load_model_from_string(exported_encoder.to_bundle_encoder().model).graph
    assert len(graph.node) < 400 and not any(n.op_type == "Constant" for n in graph.node)  # 571 before
