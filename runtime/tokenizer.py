"""WordPiece tokenization from the bundle's own tokenizer.json.

The `tokenizers` package alone (no transformers) reproduces the Hugging Face tokenizer
exactly. The shipped tokenizer.json of all-MiniLM-L6-v2 has padding to 128 and truncation at
128 baked in; both are overridden here, or every query would pay for 128 tokens and long
texts would be cut earlier than the model allows.
"""

from __future__ import annotations

from typing import Sequence

from tokenizers import Tokenizer

from runtime.errors import BundleError, InputError, is_panic


class TextTokenizer:
    """Turns texts into token-id lists, truncated to the encoder's ``max_length``.

    Example:
        >>> tok = TextTokenizer(bundle.encoder.tokenizer_json, 256)   # doctest: +SKIP
        >>> tok.encode(["Wake me at 7"])                               # doctest: +SKIP
        [[101, 5256, 2033, 2012, 1021, 102]]
    """

    def __init__(self, tokenizer_json: str, max_length: int, text_prefix: str = ""):
        try:
            tok = Tokenizer.from_str(tokenizer_json)
            tok.no_padding()
            tok.enable_truncation(max_length)
        except BaseException as exc:  # a bare Exception on bad JSON; a Rust panic is a BaseException
            if not (isinstance(exc, Exception) or is_panic(exc)):
                raise
            raise BundleError(f"the bundle's tokenizer cannot be loaded: {' '.join(str(exc).split())[:300]}") from None
        self._tok = tok
        self.max_length = max_length
        #: Prepended to every text (the bundle's encoder.text_prefix: e5's "query: ", often "").
        self.text_prefix = text_prefix

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids (with [CLS]/[SEP]) for each text, no padding.

        Raises InputError if the tokenizer fails, including a Rust panic (PanicException is a
        BaseException, which `except Exception` would let through and end a stream).
        """
        try:
            texts = [self.text_prefix + t for t in texts] if self.text_prefix else list(texts)
            return [e.ids for e in self._tok.encode_batch(texts, add_special_tokens=True)]
        except BaseException as exc:
            if not (isinstance(exc, Exception) or is_panic(exc)):
                raise
            raise InputError(f"the tokenizer failed on this text: {' '.join(str(exc).split())[:300]}") from None
