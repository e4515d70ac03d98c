"""A build says it would exceed the machine's memory before it embeds anything (exporter.memory_plan)."""

from __future__ import annotations

import numpy as np
import pytest

from exporter.memory_plan import BASE_BYTES, ENCODER_FACTOR, available_bytes, check_memory, line_count, planned_bytes
from exporter.options import BuildError
from runtime.bundle.schema import EncoderSpec

pytestmark = pytest.mark.exporter


def _encoder(weights_mib: int, dim: int = 768) -> EncoderSpec:
    return EncoderSpec(format="onnx", model=b"m" * 1000, tokenizer_json="{}", max_length=384, dim=dim, text_prefix="",
                       inputs=("input_ids",), output="sentence_embedding", check_text="x",
                       check_embedding=np.ones(dim, np.float32), weights=bytes(weights_mib << 20))


def test_lines_bound_the_records(tmp_path):
    f = tmp_path / "t.jsonl"
    for text, n in (("", 0), ("a\n", 1), ("a\nb", 2), ("a\nb\n\n", 3)):
        f.write_text(text)
        assert line_count(f) == n


def test_the_plan_counts_the_encoder_and_a_heads_embeddings(tmp_path):
    enc = _encoder(100)
    default = planned_bytes(enc, head_records=None)
    assert default == {"exporter": BASE_BYTES, "encoder": ENCODER_FACTOR * (1000 + (100 << 20))}
    head = planned_bytes(enc, head_records=1_000_000)
    assert head["head embeddings"] == 1_000_000 * (768 + 1) * 4


def test_a_head_build_that_would_not_fit_is_refused_before_embedding(tmp_path):
    train = tmp_path / "train.jsonl"
    train.write_text('{"text": "a", "label": "x"}\n' * 200_000)
    enc = _encoder(100)
    check_memory(enc, train, head=False, available=4 << 30)       # the default streams its records
    check_memory(enc, train, head=True, available=2 << 30)        # 200,000 x 769 floats, once: 0.6 GB
    with pytest.raises(BuildError) as info:
        check_memory(enc, train, head=True, available=3 << 29)
    message = str(info.value)
    assert "would need about" in message and "1.5 GiB available" in message and "200,000 records" in message
    assert "without --delta" in message and "nothing was embedded or written" in message
    with pytest.raises(BuildError, match="a smaller --encoder"):
        check_memory(enc, train, head=False, available=512 << 20)


def test_this_machine_says_how_much_memory_it_has():
    got = available_bytes()
    assert got is None or got > 0
