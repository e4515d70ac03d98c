"""Hostile bundle contents: the declared encoder families, bounded resources, one-line engine
failures, safe terminal output, consistent privacy facts, no files written.

The fast subset of benchmarks/hostile_bundles.py runs the real CLI on crafted format-1.0
bundles; the full run (95 families, TensorFlow-converted TFLite models and 2 GiB files
included) prints the table. Everything here runs the real tokenizer, onnxruntime and LiteRT;
nothing is mocked.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bundle_strategies as bs
from conftest import ROOT

sys.path.insert(0, str(ROOT))
from benchmarks import hostile_bundles as hb  # noqa: E402
from runtime import BundleError, Classifier, InputError  # noqa: E402
from runtime import bundle as fmt  # noqa: E402
from runtime.bundle import model_family, schema  # noqa: E402
from runtime.bundle.tokenizer_family import check_tokenizer_json  # noqa: E402
from runtime.embedder import Embedder  # noqa: E402
from runtime.tokenizer import TextTokenizer  # noqa: E402

ENCODERS = ROOT / "models" / "encoders"


# --------------------------------------------------------------------------- the families match the exporter


#: Operators only the exporter's models before its basic optimizations use.
BEFORE_BASIC_OPTIMIZATIONS = {("", "Constant"), ("", "ConstantOfShape")}


def test_onnx_family_is_exactly_the_exported_models_operators(dp_bundle):
    """ONNX_OPS was read from the exporter's int8 model: a re-export that uses another operator
    (or stops using one) must update the family and the format document together. The export's
    basic optimizations (exporter/encoder_export.py) turn the model's Constant and
    ConstantOfShape nodes into initializers; encoders exported before them keep those nodes, so
    the family keeps the two operators."""
    onnx = pytest.importorskip("onnx")
    enc = fmt.unpack(dp_bundle.read_bytes()).encoder
    model = onnx.load_from_string(enc.model)
    used = {(n.domain, n.op_type) for n in model.graph.node}
    assert used.isdisjoint(BEFORE_BASIC_OPTIMIZATIONS)
    assert used | BEFORE_BASIC_OPTIMIZATIONS == set(schema.ONNX_OPS)
    assert {o.domain for o in model.opset_import} <= set(schema.ONNX_DOMAINS)
    assert len(model_family.check_onnx(enc.model, len(enc.weights))) > 100  # its initializers' external data


def test_tflite_family_is_exactly_the_exported_models_operators(tflite_bundle):
    schema_py = pytest.importorskip("ai_edge_litert.schema_py_generated")
    data = fmt.load(tflite_bundle).encoder.model
    m = schema_py.Model.GetRootAs(data, 0)
    names = {v: k for k, v in vars(schema_py.BuiltinOperator).items() if not k.startswith("_")}
    used = {names[max(m.OperatorCodes(i).BuiltinCode(), m.OperatorCodes(i).DeprecatedBuiltinCode())]
            for i in range(m.OperatorCodesLength())}
    assert used == set(schema.TFLITE_OPS)
    assert all(getattr(schema_py.BuiltinOperator, name) == code for name, code in schema.TFLITE_OPS.items())
    model_family.check_tflite(data)


def test_tflite_fields_and_indices_the_family_refuses_are_litert_schemas(tflite_bundle):
    """Each field of schema.json's tflite "absent_fields", set through LiteRT's own object API on
    the exported model, is refused by that name (so the walker's field indices are schema.fbs's);
    an operator's tensor index left out (-1) or past the tensors is refused, while the exported
    model's FULLY_CONNECTED leave their bias out (-1) and pass."""
    s = pytest.importorskip("ai_edge_litert.schema_py_generated")
    pytest.importorskip("flatbuffers")
    model = fmt.load(tflite_bundle).encoder.model
    model_family.check_tflite(model)
    values = {"is_variable": True, "sparsity": s.SparsityParametersT(), "variant_tensors": [],
              "custom_options": [1], "mutating_variable_inputs": [True], "intermediates": [0],
              "large_custom_options_offset": 16, "large_custom_options_size": 16}
    assert {n for fields in schema.TFLITE_ABSENT_FIELDS.values() for n in fields} == set(values)
    for kind, fields in schema.TFLITE_ABSENT_FIELDS.items():
        for name in fields:
            attribute = "".join(w if i == 0 else w.capitalize() for i, w in enumerate(name.split("_")))

            def change(m, _s, kind=kind, attribute=attribute, value=values[name]):
                sg = m.subgraphs[0]
                setattr(sg.tensors[0] if kind == "Tensor" else sg.operators[0], attribute, value)
            with pytest.raises(BundleError, match=f"{kind} tables has the field {name},"):
                model_family.check_tflite(hb.tflite_rewrite(model, change))
    with pytest.raises(BundleError, match="MUL's input 1 is left out"):
        model_family.check_tflite(hb.tflite_rewrite(model, hb._tflite_input_left_out))

    def output_past(m, _s):
        m.subgraphs[0].operators[0].outputs = [len(m.subgraphs[0].tensors)]
    with pytest.raises(BundleError, match="output 0 names tensor"):
        model_family.check_tflite(hb.tflite_rewrite(model, output_past))


def test_protobuf_field_numbers_are_onnx_protos():
    """The walker's field numbers are onnx.proto's (compared with the onnx package's descriptors)."""
    onnx = pytest.importorskip("onnx")
    num = lambda msg, name: msg.DESCRIPTOR.fields_by_name[name].number  # noqa: E731
    mf = model_family
    assert (mf._MODEL_GRAPH, mf._MODEL_OPSET, mf._MODEL_TRAINING, mf._MODEL_FUNCTIONS) == tuple(
        num(onnx.ModelProto, n) for n in ("graph", "opset_import", "training_info", "functions"))
    assert (mf._GRAPH_NODE, mf._GRAPH_INITIALIZER, mf._GRAPH_SPARSE) == tuple(
        num(onnx.GraphProto, n) for n in ("node", "initializer", "sparse_initializer"))
    assert (mf._NODE_OP_TYPE, mf._NODE_ATTRIBUTE, mf._NODE_DOMAIN) == tuple(
        num(onnx.NodeProto, n) for n in ("op_type", "attribute", "domain"))
    assert (mf._ATTR_T, mf._ATTR_G, mf._ATTR_TENSORS, mf._ATTR_GRAPHS, mf._ATTR_SPARSE, mf._ATTR_SPARSES) == tuple(
        num(onnx.AttributeProto, n) for n in ("t", "g", "tensors", "graphs", "sparse_tensor", "sparse_tensors"))
    assert (mf._TENSOR_RAW_DATA, mf._TENSOR_EXTERNAL_DATA, mf._TENSOR_DATA_LOCATION) == tuple(
        num(onnx.TensorProto, n) for n in ("raw_data", "external_data", "data_location"))
    assert mf._EXTERNAL == onnx.TensorProto.EXTERNAL and mf._OPSET_DOMAIN == num(onnx.OperatorSetIdProto, "domain")


def test_exporters_tokenizer_is_in_the_family(dp_bundle):
    check_tokenizer_json(fmt.load(dp_bundle).encoder.tokenizer_json)


# --------------------------------------------------------------------------- the CLI on crafted bundles


@pytest.fixture(scope="module")
def fast_results(dp_bundle, tflite_bundle, random_bundle, tmp_path_factory):
    pytest.importorskip("onnx")
    pytest.importorskip("flatbuffers")
    bases = {"onnx": dp_bundle, "tflite": tflite_bundle, "random": random_bundle}
    return hb.run(bases, fast=True, work=tmp_path_factory.mktemp("hostile"), log=lambda line: None)


def test_fast_hostile_families_meet_the_goal(fast_results):
    """Each family of the fast subset: its expected outcome, one line, no file written, at most
    2x a legitimate bundle's peak RSS and 5 s to load."""
    assert len(fast_results) >= 25
    missed = [f"{r.family}: {r.outcome} (exit {r.exit}), {r.ratio:.2f}x, {r.load_s:.2f} s, wrote {r.wrote}: {r.detail}"
              for r in fast_results if not r.ok]
    assert not missed, "\n".join(missed)


def test_the_fast_subset_covers_every_kind_of_family():
    """The test suite's subset keeps at least one family of each kind, the reviewer's five among them."""
    fast = {f.name for f in hb.families({}, {"jazz": 1}) if f.fast}
    for prefix in ("tokenizer-", "check-text-", "onnx-", "tflite-", "labels-", "exporter-", "privacy-sensitivity-",
                   "privacy-every-fact", "optional-", "release-", "repeated-key-", "array-", "msgpack-",
                   "onnx-node-names-escape"):
        assert any(name.startswith(prefix) for name in fast), prefix


def _cli(args: list[str], env_extra: dict[str, str] | None = None, stdin: bytes = b"", cwd: Path | None = None,
         home: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "ORT_DISABLE_TELEMETRY")}
    env.update({"PYTHONPATH": str(ROOT), **(env_extra or {})})
    if home is not None:
        env.update({"HOME": str(home), "TMPDIR": str(home / "tmp"), "XDG_CACHE_HOME": ""})
        (home / "tmp").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "runtime.classify", *args], input=stdin, capture_output=True,
                          cwd=cwd or ROOT, env=env, timeout=120)


@pytest.mark.parametrize("which", ["dp_bundle", "tflite_bundle"])
def test_classifying_writes_no_file_under_a_fresh_home(which, request, tmp_path):
    """onnxruntime's telemetry (a device id and an event database under ~/.cache) is off, and
    nothing else is written: a fresh HOME, TMPDIR and working folder stay empty. CI, which
    would also silence onnxruntime, is removed from the environment."""
    bundle = request.getfixturevalue(which)
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    r = _cli(["--bundle", str(bundle), "--json"], stdin=b"wake me up at seven\nplay jazz\n", cwd=cwd, home=home)
    assert r.returncode == 0, r.stderr.decode()
    assert len(r.stdout.splitlines()) == 2
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == [], written


def test_memory_budget_ends_the_run_with_one_line(dp_bundle):
    r = _cli(["--bundle", str(dp_bundle), "--memory-budget", "40", "hello"])
    lines = r.stderr.decode().splitlines()
    assert r.returncode == 2 and not r.stdout
    assert len(lines) == 1 and "exceeded its memory budget of 40 MiB" in lines[0], lines


# --------------------------------------------------------------------------- engines: one line, never a traceback


def test_nan_embeddings_never_reach_json(dp_bundle, tmp_path):
    pytest.importorskip("onnx")
    base = hb.Base.read(dp_bundle)
    token = TextTokenizer(fmt.load(dp_bundle).encoder.tokenizer_json, 256).encode(["jazz"])[0][1]
    path = tmp_path / "nan.dpedge"
    path.write_bytes(hb.with_model(lambda: hb.onnx_nan_on_token(token))(base))
    clf = Classifier.load(path)
    with pytest.raises(InputError, match="non-finite embedding"):
        clf.classify(["play jazz"])
    assert clf.classify(["wake me up"])[0].label in clf.labels
    r = _cli(["--bundle", str(path), "--json"], stdin=b"play jazz\nwake me up\n")
    assert r.returncode == 1 and "NaN" not in r.stdout.decode()
    assert [json.loads(line)["text"] for line in r.stdout.decode().splitlines()] == ["wake me up"]


def test_a_tflite_run_that_fails_is_one_line(tmp_path):
    """The corpus's TFLite encoder with one operator reading another tensor than the input ids:
    LiteRT allocates it, then fails in the check text's run; the CLI refuses in one line (the
    run's error path once raised a NameError, a traceback)."""
    pytest.importorskip("ai_edge_litert")
    base = hb.Base.read(ROOT / "format" / "1" / "corpus" / "accept" / "tflite.dpedge")
    corpus_model = hb._litert_schema().Model.GetRootAs(base.doc[schema.Key.ENCODER][schema.Key.MODEL], 0)
    assert list(corpus_model.Subgraphs(0).Operators(3).InputsAsNumpy()) == [0]  # the corpus's model as expected

    def reads_another(m, _s):
        m.subgraphs[0].operators[3].inputs = [38]
    path = tmp_path / "runs-wrong.dpedge"
    path.write_bytes(hb.with_model(lambda model: hb.tflite_rewrite(model, reads_another), crafted=False)(base))
    r = _cli(["--bundle", str(path), "wake me up"])
    err = [line for line in r.stderr.decode().splitlines() if line.strip() and line not in hb.LITERT_NOTICES]
    assert r.returncode == 2 and not r.stdout, err
    assert len(err) == 1 and err[0].startswith("error: ") and "fails at load" in err[0], err


def test_engine_messages_quoting_escape_sequences_are_escaped(dp_bundle, tmp_path):
    """onnxruntime's error quotes the model's node input name, which holds OSC and CSI
    sequences: the CLI prints it escaped, one line, no raw control character."""
    pytest.importorskip("onnx")
    path = tmp_path / "names.dpedge"
    path.write_bytes(hb.with_model(hb.onnx_escaped_names)(hb.Base.read(dp_bundle)))
    r = _cli(["--bundle", str(path), "wake me up"])
    err = r.stderr.decode()
    assert r.returncode == 2 and len(err.splitlines()) == 1, err
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31mmissing" in err  # the name, quoted by onnxruntime, escaped
    assert not any(c in err for c in "\x1b\x07\x9b\r"), repr(err)


def test_info_escapes_free_text_and_labels_are_refused(dp_bundle, tmp_path):
    base = hb.Base.read(dp_bundle)
    path = tmp_path / "escapes.dpedge"
    path.write_bytes(hb.edited(hb.set_path("exporter.name", "dpedge\x1b]0;pwned\x07\r\x9b2J"))(base))
    for args in (["--info"], ["--info", "--json"]):
        r = _cli(["--bundle", str(path), *args])
        out = r.stdout.decode()
        assert r.returncode == 0 and not any(c in out for c in "\x1b\x07\r\x9b"), out
        assert "x1b]0;pwned" in out  # shown escaped (JSON escapes the backslash once more)
    path.write_bytes(hb.edited(hb._labels(0, "alarm\x1b[2J"))(base))
    with pytest.raises(BundleError, match=r"field 'labels\[0\]' holds U\+001B, which is not printable"):
        fmt.load(path)


# --------------------------------------------------------------------------- the reader's refusals of the families


def _refused(base: hb.Base, change, code: str, path: str) -> None:
    with pytest.raises(BundleError) as info:
        fmt.unpack(hb.edited(change)(base))
    assert (info.value.code, info.value.path) == (code, path), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("change,code,path", [
    (hb._epsilon_claim(1.0), "relation.noise_scale", "releases.class_counts.noise_scale"),
    (hb.set_path("releases.class_sums.noise_scale", 0.0), "relation.noise_scale", "releases.class_sums.noise_scale"),
    (hb.set_path("releases.class_sums.noise_scale", -5.0), "field.range", "releases.class_sums.noise_scale"),
    (hb._overspent, "relation.shares", "privacy.epsilon"),
    (hb._sums_sensitivity(**hb._WRAP, stated=2), "relation.sensitivity", "releases.class_sums.sensitivity_l1"),
    (hb._sums_sensitivity(**hb._WRAP, stated=2**32 + 2), "field.range", "releases.class_sums.sensitivity_l1"),
    (hb._epsilon_claim(1e-7), "field.range", "privacy.epsilon"),
    (hb.set_path("encoder.check_text", "x" * 1001), "field.length", "encoder.check_text"),
    (hb.set_path("encoder.output", "out\x1b"), "text.unprintable", "encoder.output"),
    (hb._labels(1, "a\u202eb"), "text.unprintable", "labels[1]"),
    (hb._labels(1, lambda ls: ls[0] + "\u200b"), "relation.labels", "labels[1]"),
    (hb._labels(1, hb._nfkc_twin), "relation.labels", "labels[1]"),
    (hb._labels(2, "w\u0435ather"), "relation.labels", "labels[2]"),
    (hb._labels(1, "\u2800\u2800"), "text.blank", "labels[1]"),
    (hb._labels(1, "new\u0378"), "text.unassigned", "labels[1]"),
    (hb._descriptions(0, "x\u2028y"), "text.unprintable", "label_descriptions[0]"),
    (hb._labels(2, "l" * 201), "field.length", "labels[2]"),
    (hb.set_path("label_descriptions", []), "relation.descriptions", "label_descriptions"),
    (hb.set_path("encoder.facts", "int8"), "field.type", "encoder.facts"),
    (lambda d: d.__delitem__("scoring"), "field.missing", "scoring"),
    (hb._unknown_release, "field.release", "releases.histogram"),
    (hb._counts_without_sums, "field.not_allowed", "releases.class_counts"),
    (hb._repeated("privacy", "epsilon", 1.0), "container.repeated_key", ""),
    (hb._repeated("", "labels", ["a", "b"]), "container.repeated_key", ""),
    (hb._repeated("encoder", "weights", b""), "container.repeated_key", ""),
    (hb.set_path("subspace.projection.shape", [4096, 4096]), "array.shape", "subspace.projection.shape"),
    (hb.set_path("privacy.privacy_unit", "one person (all of their records)"), "relation.wording",
     "privacy.privacy_unit"),
])
def test_reader_refusals(dp_bundle, change, code, path):
    _refused(hb.Base.read(dp_bundle), change, code, path)


@pytest.mark.parametrize("change,code,path", [
    (hb.set_path("releases.votes.noise_scale", 0.5), "relation.noise_scale", "releases.votes.noise_scale"),
    (hb.set_path("hashing.offsets", None), "array.record", "hashing.offsets"),
    (hb.set_path("hashing.seed", -1), "field.range", "hashing.seed"),
    (hb.set_path("releases.votes.values.shape", [32, 2**24, 7]), "array.data", "releases.votes.values.data"),
])
def test_reader_refusals_of_a_votes_only_bundle(random_bundle, change, code, path):
    _refused(hb.Base.read(random_bundle), change, code, path)


def test_every_privacy_fact_at_its_bound_loads_and_classifies_finitely(dp_bundle, tmp_path):
    path = tmp_path / "bounds.dpedge"
    path.write_bytes(hb.edited(hb._every_fact_at_its_bound)(hb.Base.read(dp_bundle)))
    b = fmt.load(path)
    assert b.records_per_unit == schema.MAX_RECORDS_PER_UNIT and b.epsilon == 2 * schema.EPSILON_MIN
    scores = Classifier.load(path).classify(["wake me up at seven", "play some jazz"])
    assert all(np.isfinite(list(p.scores.values())).all() for p in scores)


@pytest.mark.parametrize("change,pointer", [
    (hb._replace_chain, "/normalizer/clean_text"),
    (hb._split_regex, "/pre_tokenizer/pattern"),
    (hb._bpe, "/model/max_input_chars_per_word"),
    (lambda d: d["model"]["vocab"].__setitem__("x" * 10_000, len(d["model"]["vocab"])), "/model/vocab/" + "x" * 10_000),
    (hb._model_field("max_input_chars_per_word", 10**9), "/model/max_input_chars_per_word"),
    (hb._model_field("unk_token", "[NOPE]"), "/model/unk_token"),
    (lambda d: d.__setitem__("normalizer", {"type": "Precompiled"}), "/normalizer/clean_text"),
    (hb._template(10_000), "/post_processor/single"),
    (lambda d: d["model"]["vocab"].__setitem__("wake", 10**9), "/model/vocab/wake"),
    (hb._padding, "/padding/strategy"),
    (hb._added_token, "/added_tokens/5/content"),
    (lambda d: d.update(x=1), "/x"),
    (lambda d: d.update(normalizer={**d["normalizer"], "lowercase": "yes"}), "/normalizer/lowercase"),
])
def test_tokenizer_family_refusals(dp_bundle, change, pointer):
    doc = json.loads(fmt.load(dp_bundle).encoder.tokenizer_json)
    change(doc)
    with pytest.raises(BundleError) as info:
        check_tokenizer_json(json.dumps(doc))
    assert (info.value.code, info.value.path) == ("tokenizer.family", "encoder.tokenizer_json" + pointer), str(info.value)


def test_vocabulary_size_is_bounded(dp_bundle):
    """250,001 short tokens (compact JSON, well under the character bound) are one too many."""
    doc = json.loads(bs.shrink_tokenizer(fmt.load(dp_bundle).encoder.tokenizer_json))
    vocab = doc["model"]["vocab"]
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    i = 0
    while len(vocab) < schema.MAX_VOCAB_SIZE + 1:
        n, token = i, ""
        while True:
            token += alphabet[n % 62]
            n //= 62
            if not n:
                break
        vocab.setdefault(token, len(vocab))
        i += 1
    text = json.dumps(doc, separators=(",", ":"))
    assert len(text) <= schema.MAX_TOKENIZER_JSON_CHARS
    with pytest.raises(BundleError) as info:
        check_tokenizer_json(text)
    assert (info.value.code, info.value.path) == ("tokenizer.family", "encoder.tokenizer_json/model/vocab")
    del vocab[token]
    check_tokenizer_json(json.dumps(doc, separators=(",", ":")))


def test_tokenizer_json_text_refusals(dp_bundle):
    text = fmt.load(dp_bundle).encoder.tokenizer_json
    over = schema.MAX_TOKENIZER_JSON_CHARS + 1
    for bad, code in [("{", "tokenizer.json"), ("[" * 100_000 + "]" * 100_000, "tokenizer.json"),
                      (text[:-1] + ', "model": 1}', "tokenizer.json"), ('{"x": NaN}', "tokenizer.json"),
                      ('{"x": -0}', "tokenizer.json"), ('{"x": "\\udc00"}', "tokenizer.json")]:
        with pytest.raises(BundleError) as info:
            check_tokenizer_json(bad)
        assert info.value.code == code, bad[:40]
    with pytest.raises(BundleError) as info:
        fmt.unpack(hb.edited(hb.set_path("encoder.tokenizer_json", "x" * over))(hb.Base.read(dp_bundle)))
    assert (info.value.code, info.value.path) == ("field.length", "encoder.tokenizer_json")


# --------------------------------------------------------------------------- fuzzing the engines' inputs


_REAL_TOKENIZER: list[str] = []


def _real_tokenizer_text() -> str:
    """The exporter's tokenizer.json (read once; not a fixture, so a failing example stays short)."""
    if not _REAL_TOKENIZER:
        path = next(ENCODERS.glob("*/tokenizer.json"), None)
        if path is None:
            pytest.skip("no exported encoder in models/encoders")
        _REAL_TOKENIZER.append(path.read_text(encoding="utf-8"))
    return _REAL_TOKENIZER[0]


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), texts=st.lists(st.text(max_size=300), min_size=1, max_size=3))
def test_fuzz_tokenizer_documents_with_the_runtime_tokenizer(exported_encoder, seed, texts):
    """Random edits of the real tokenizer.json (kinds, booleans, numbers, strings, deleted and
    added keys, swapped components): the family check accepts or refuses with BundleError; an
    accepted document makes a tokenizer that encodes random texts into ids of its vocabulary,
    raising nothing."""
    rng = random.Random(seed)
    doc = json.loads(_real_tokenizer_text())
    # The first 2,000 tokens (the special ones among them), renumbered: fast, still a real WordPiece.
    vocab = {t: i for i, t in enumerate(list(doc["model"]["vocab"])[:2000])}
    doc["model"]["vocab"] = vocab
    keep = {t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t in vocab}
    doc["added_tokens"] = [{**a, "id": vocab[a["content"]]} for a in doc["added_tokens"] if a["content"] in keep]
    for name in ("[CLS]", "[SEP]"):
        doc["post_processor"]["special_tokens"][name]["ids"] = [vocab[name]]
    for _ in range(rng.randint(0, 3)):
        _mutate(rng, doc)
    text = json.dumps(doc)
    try:
        check_tokenizer_json(text)
    except BundleError as exc:
        assert "\n" not in str(exc)
        return
    tok = TextTokenizer(text, 64)
    for t in texts:
        ids = tok.encode([t])[0]
        assert 2 <= len(ids) <= 64 and all(0 <= i < len(vocab) for i in ids)


def _mutate(rng: random.Random, doc: dict) -> None:
    """One random change somewhere in a JSON document."""
    node, key = doc, None
    for _ in range(rng.randint(1, 4)):
        if isinstance(node, dict) and node:
            key = rng.choice(list(node))
        elif isinstance(node, list) and node:
            key = rng.randrange(len(node))
        else:
            break
        if rng.random() < 0.5 or not isinstance(node[key], (dict, list)):
            break
        node, key = node[key], None
    if key is None:
        return
    choice = rng.randrange(6)
    values = [None, True, False, 0, -1, 10**9, 1.5, "", "[UNK]", "Sequence", {"type": "Replace"}, [], {}, "x" * 200]
    if choice == 0 and isinstance(node, dict):
        del node[key]
    elif choice == 1 and isinstance(node, dict):
        node[rng.choice(["type", "x", "pattern", "normalizers", "vocab"])] = rng.choice(values)
    else:
        node[key] = rng.choice(values)


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_fuzz_onnx_models_with_the_real_engine(dp_bundle, seed):
    """Crafted in-family ONNX graphs with bytes flipped, cut or spliced: the family check and
    onnxruntime (the real session, under the runtime's arena cap and watchdog) refuse them
    with one-line BundleErrors, or the encoder answers each probe with a finite vector or an
    InputError."""
    pytest.importorskip("onnx")
    rng = random.Random(seed)
    model = bytearray(rng.choice([hb.onnx_unit(extra="attention_mask"), hb.onnx_gather_table(40_000),
                                  hb.onnx_expand_on_token(2000, 2**12)]))
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(3)
        at = rng.randrange(len(model))
        if op == 0:
            model[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            del model[at:at + rng.randint(1, 8)]
        else:
            model[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    # The crafted graphs output UNIT: that is their check embedding; no external data.
    enc = dataclasses.replace(fmt.load(dp_bundle).encoder, model=bytes(model), inputs=("input_ids", "attention_mask"),
                              weights=b"", weights_file=None,
                              check_embedding=np.frombuffer(struct.pack(f"<{hb.DIM}f", *hb.UNIT), np.float32))
    try:
        model_family.check_onnx(enc.model, 0)
        emb = Embedder(enc, threads=1)
        emb.verify()
    except BundleError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 1000
        return
    for text in ("wake me up", "x " * 300, "jazz 2000"):
        try:
            v = emb.embed_one(text)
        except InputError as exc:
            assert "\n" not in str(exc)
            continue
        assert v.shape == (384,) and np.isfinite(v).all()


@pytest.mark.parametrize("model", [hb.onnx_expand_constant, hb.onnx_matmul_square], ids=["expand", "matmul-square"])
def test_a_graph_over_the_arena_at_load_is_engine_budget(dp_bundle, tmp_path, model):
    """A model whose tensors exceed the engine's memory budget when it first runs (the check
    text, at load) is refused with `engine.budget`, the contract's code for exactly this (and
    the web's), not `engine.load`."""
    pytest.importorskip("onnx")
    path = tmp_path / "over.dpedge"
    path.write_bytes(hb.with_model(model)(hb.Base.read(dp_bundle)))
    with pytest.raises(BundleError) as info:
        Classifier.load(path, threads=1)
    assert (info.value.code, info.value.path) == ("engine.budget", "encoder.model"), str(info.value)
