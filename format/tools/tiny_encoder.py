"""Makes the conformance corpus's tiny encoders: a one-layer BERT and a one-layer MPNet (32-d, a
400-token vocabulary), randomly initialised from a fixed seed, exported by the exporter's own route.

    python format/tools/tiny_encoder.py          # needs the export extra (torch, optimum); tflite too

Why a tiny encoder of our own: the corpus (format/1/corpus/) is committed, so its bundles must
be kilobytes, yet every reader must run a real encoder of the family through its real engine to
prove it tokenizes, embeds and scores as the others do. A random BERT is a public model (no
data touched it) with every operator the exported MiniLM uses (the int8 MatMulNBits and
Gather, LayerNormalization, Softmax, Erf...); a random MPNet has every one the exported
all-mpnet-base-v2 uses (its relative position buckets' Log, Range, CumSum...). Their vocabulary
is the project's own: the special tokens (BERT's; for MPNet also <s>, <pad>, </s>, <unk>, <mask>,
as all-mpnet-base-v2's tokenizer.json has them, <unk> matched in the normalized text and <mask>
stripping white space on its left), punctuation, digits, letters and their continuations (so
any Latin word has pieces), and the 300 commonest words of data/assistant. The embedding table
is drawn wide (initializer range 1.0) so that texts differ enough for their labels to differ.

It writes build/tiny-encoder/onnx/ (model.onnx, weights.bin, tokenizer.json, encoder.json),
build/tiny-encoder/mpnet/ (the same for MPNet) and, with TensorFlow installed,
build/tiny-encoder/tflite/ (model.tflite, tokenizer.json, encoder.json): exported encoders that
`python -m exporter build --encoder FOLDER` uses as they are. `make_corpus.py --encoders build/tiny-encoder` builds the corpus from them; without it,
make_corpus takes the encoders out of the corpus's own bundles, so only the corpus is committed.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "build" / "tiny-encoder"
SEED = 20261127
DIM = 32
MAX_LENGTH = 32
WORDS = 300


#: MPNet's special tokens before BERT's, and its mask token last, as in all-mpnet-base-v2's vocabulary.
MPNET_FIRST, MPNET_LAST = ["<s>", "<pad>", "</s>", "<unk>"], "<mask>"


def vocabulary(family: str = "bert") -> list[str]:
    """The tiny encoder's WordPiece vocabulary, in id order."""
    specials = (MPNET_FIRST if family == "mpnet" else []) + ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    singles = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + [str(d) for d in range(10)] + \
        [chr(c) for c in range(ord("a"), ord("z") + 1)] + ["é", "ü", "ñ", "ç", "天", "気", "—", "€"]
    pieces = [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + ["##s", "##ing", "##ed", "##er", "##ly"]
    counts: collections.Counter[str] = collections.Counter()
    for line in (ROOT / "data" / "assistant" / "train.jsonl").read_text(encoding="utf-8").splitlines():
        counts.update(w for w in re.findall(r"[a-z]+", json.loads(line)["text"].lower()) if len(w) >= 2)
    words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:WORDS]]
    out: list[str] = []
    for token in specials + singles + list(dict.fromkeys(pieces)) + words + ([MPNET_LAST] if family == "mpnet" else []):
        if token not in out:
            out.append(token)
    return out


def tokenizer_json(vocab: list[str], family: str = "bert") -> dict:
    """A tokenizer.json of the family (docs/bundle-format.md section 6) over ``vocab``: BERT's
    shape, or all-mpnet-base-v2's (its added tokens, RobertaProcessing)."""
    ids = {t: i for i, t in enumerate(vocab)}

    def special(t: str, normalized: bool = False, lstrip: bool = False) -> dict:
        return {"id": ids[t], "content": t, "single_word": False, "lstrip": lstrip, "rstrip": False,
                "normalized": normalized, "special": True}
    cls, sep = ({"SpecialToken": {"id": t, "type_id": 0}} for t in ("[CLS]", "[SEP]"))
    if family == "mpnet":
        added = [special("<s>"), special("<pad>"), special("</s>"), special("<unk>", normalized=True),
                 special("[UNK]"), special(MPNET_LAST, lstrip=True)]
        post = {"type": "RobertaProcessing", "sep": ["</s>", ids["</s>"]], "cls": ["<s>", ids["<s>"]],
                "trim_offsets": True, "add_prefix_space": False}
    else:
        added = [special(t) for t in vocab[:5]]
        post = {"type": "TemplateProcessing",
                "single": [cls, {"Sequence": {"id": "A", "type_id": 0}}, sep],
                "pair": [cls, {"Sequence": {"id": "A", "type_id": 0}}, sep, {"Sequence": {"id": "B", "type_id": 1}},
                         {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                "special_tokens": {t: {"id": t, "ids": [ids[t]], "tokens": [t]} for t in ("[CLS]", "[SEP]")}}
    pad = "<pad>" if family == "mpnet" else "[PAD]"
    return {
        "version": "1.0",
        "truncation": {"max_length": 128, "strategy": "LongestFirst", "stride": 0},
        "padding": {"strategy": {"Fixed": 128}, "direction": "Right", "pad_to_multiple_of": None, "pad_id": ids[pad],
                    "pad_type_id": 0, "pad_token": pad},
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": post,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": ids},
    }


def source_folder(out: Path, family: str = "bert") -> Path:
    """The sentence-transformers folder of the tiny model of ``family`` (random weights from SEED)."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast, MPNetConfig, MPNetModel, MPNetTokenizerFast

    vocab = vocabulary(family)
    tokenizer = tokenizer_json(vocab, family)
    hf = out / f"hf-{family}"
    hf.mkdir(parents=True)
    (hf / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (hf / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False), encoding="utf-8")
    fast = MPNetTokenizerFast if family == "mpnet" else BertTokenizerFast
    fast(vocab_file=str(hf / "vocab.txt"), tokenizer_file=str(hf / "tokenizer.json"), do_lower_case=True).save_pretrained(hf)
    torch.manual_seed(SEED)
    shape = dict(vocab_size=len(vocab), hidden_size=DIM, num_hidden_layers=1, num_attention_heads=2,
                 intermediate_size=2 * DIM, max_position_embeddings=64, initializer_range=1.0)
    if family == "mpnet":  # all-mpnet-base-v2's: 32 relative position buckets, <pad> as the padding id
        model = MPNetModel(MPNetConfig(**shape, relative_attention_num_buckets=32, pad_token_id=1, bos_token_id=0,
                                       eos_token_id=2)).eval()
    else:
        model = BertModel(BertConfig(**shape)).eval()
    with torch.no_grad():  # no two parameters alike (zero biases, unit norms), or the export ties them by Identity
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    model.save_pretrained(hf)
    transformer = models.Transformer(str(hf), max_seq_length=MAX_LENGTH)
    st = SentenceTransformer(modules=[transformer, models.Pooling(DIM, "mean"), models.Normalize()], device="cpu")
    folder = out / f"tiny-{family}"
    st.save(str(folder))
    # The folder's tokenizer.json is rewritten by transformers; the family's own shape goes back in,
    # and the pooling configuration in the classic form the exporter reads (all-MiniLM-L6-v2's).
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False), encoding="utf-8")
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": DIM, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}, indent=2), encoding="utf-8")
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": MAX_LENGTH, "do_lower_case": False}),
                                                      encoding="utf-8")
    return folder


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    from exporter.encoder_export import export_encoder

    with tempfile.TemporaryDirectory() as tmp:
        folders = {family: source_folder(Path(tmp), family) for family in ("bert", "mpnet")}
        onnx = ("model.onnx", "weights.bin")
        for name, family, fmt, files in (("onnx", "bert", "onnx", onnx), ("tflite", "bert", "tflite", ("model.tflite",)),
                                         ("mpnet", "mpnet", "onnx", onnx)):
            if fmt == "tflite":
                try:
                    import tensorflow  # noqa: F401
                except ImportError:
                    print("TensorFlow is not installed: no TFLite tiny encoder (pip install -e '.[tflite]')")
                    continue
            exported = export_encoder(folders[family], Path(tmp) / "models", encoder_format=fmt, force=True)
            dest = OUT / name
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            for name in (*files, "tokenizer.json", "encoder.json"):
                shutil.copyfile(exported.directory / name, dest / name)
            facts = exported.facts
            print(f"{dest}: {sum(f.stat().st_size for f in dest.iterdir())} bytes, fidelity "
                  f"{facts['fidelity']['mean_cosine']:.4f} (min {facts['fidelity']['min_cosine']:.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
