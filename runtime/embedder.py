"""Texts to embeddings: the bundle's tokenizer and encoder, always used together.

The exporter embeds training records through this same class on the very model a bundle
ships, and the runtime embeds queries through it, so a text typed on a device is tokenized,
truncated and encoded exactly as the exporter did and lands in the same buckets.

Example:
    >>> emb = Embedder(bundle.encoder, threads=1)               # doctest: +SKIP
    >>> emb.embed(["wake me at six"]).shape                      # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from runtime.bundle.schema import EncoderSpec
from runtime.bundle.tokenizer_family import check_tokenizer_json
from runtime.encoder import TextEncoder
from runtime.tokenizer import TextTokenizer


class Embedder:
    """Unit-vector embeddings of texts, shape (n, dim), float32.

    ``engine``, ``threads``, ``workers`` and ``shared_arena`` are `TextEncoder`'s (engine,
    threads per text, texts embedded at once, whether the engine's memory comes from the
    process's shared capped arena: False only for an encoder the caller trusts, as the
    exporter's own); none of them changes the result.
    """

    def __init__(self, encoder: EncoderSpec, *, engine: str = "auto", threads: int | None = None, workers: int = 1,
                 shared_arena: bool = True):
        self.encoder = TextEncoder(encoder, engine=engine, threads=threads, workers=workers, shared_arena=shared_arena)
        doc = encoder.tokenizer if encoder.tokenizer is not None else check_tokenizer_json(encoder.tokenizer_json)
        self.tokenizer = TextTokenizer(doc, encoder.max_length, encoder.text_prefix)

    @property
    def engine(self) -> str:
        return self.encoder.engine

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One embedding per text, in input order."""
        return self.encoder.embed(self.tokenizer.encode(texts))

    def embed_one(self, text: str) -> np.ndarray:
        """The embedding of one text, shape (dim,)."""
        return self.encoder.embed_one(self.tokenizer.encode([text])[0])

    def verify(self) -> float:
        """Cosine between this engine's embedding of the bundle's check text and the exporter's;
        raises BundleError below CHECK_MIN_COSINE, or when the encoder fails."""
        return self.encoder.verify(self.tokenizer.encode_one(self.encoder.check_text))
