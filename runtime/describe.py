"""Describes a bundle for people: its labels, privacy facts, releases, encoder and sizes.

Shared by `python -m runtime.classify --info` and `python -m exporter inspect`, so a privacy
officer sees the same statement of the guarantee whichever side they look from. Reading a
bundle's facts does not start the encoder. Every text from the bundle passes
`runtime.text.escape` on its way out.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from runtime.bundle.container import Bin
from runtime.bundle import wording
from runtime.bundle.schema import Bundle, Key
from runtime.text import escape

#: The head's arrays (the rest of it is privacy facts `bundle_info` shows).
HEAD_ARRAYS = ("origin", "weights", "bias")
#: Privacy facts `format_info` lists one per line, in this order.
PRIVACY_LINES = (Key.EPSILON, Key.DELTA, Key.NEIGHBOUR_RELATION, Key.PRIVACY_UNIT, Key.MAX_RECORDS_PER_UNIT,
                 Key.NOISE_SOURCE, Key.NOISE_LIBRARY, Key.NOISE_LIBRARY_VERSION, Key.COMPOSITION,
                 Key.POST_PROCESSING, Key.PUBLIC_INPUTS)


def plain(v: Any, depth: int = 0) -> Any:
    """A JSON-ready, escaped copy of informational values from the bundle (any msgpack)."""
    if isinstance(v, str):
        return escape(v)
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)  # JSON has no NaN or infinity
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if depth >= 8:
        return "..."
    if isinstance(v, dict):
        return {escape(str(k)): plain(x, depth + 1) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x, depth + 1) for x in v]
    if isinstance(v, (bytes, Bin)):
        return f"<{len(v)} bytes>"
    return escape(repr(v)[:100])


def _num(v: Any) -> str:
    """A float to 10 significant digits (1.6, not 1.5999999999999996).

    Example:
        >>> _num(1.5999999999999996), _num(20.000000000000004), _num(8), _num("n/a")
        ('1.6', '20.0', '8', 'n/a')
    """
    if not isinstance(v, float):
        return str(v)
    text = f"{v:.10g}"
    return text + ".0" if text.lstrip("-").isdigit() else text


def bundle_info(b: Bundle, path: Path | None = None) -> dict[str, Any]:
    """A JSON-ready description of the bundle; sizes are in bytes."""
    e = b.encoder
    weights = e.weights_file.length if e.weights_file else len(e.weights)
    # A statistics bundle's encoder is in its pack, not in the file.
    sizes = {"encoder" if b.encoder_pack is None else "encoder_pack": len(e.model) + weights + len(e.tokenizer_json.encode())}
    for name, a in (("class_statistics", (b.class_counts, b.class_sums, b.origin, b.projection)),
                    ("vote_tables", (b.votes, b.hyperplanes, b.offsets)), ("prior", (b.prior,))):
        if a[0] is not None:
            sizes[name] = sum(x.nbytes for x in a if x is not None)
    if b.head is not None:
        sizes["head"] = sum(x.nbytes for x in (b.head.origin, b.head.weights, b.head.bias))
    if path is not None:
        sizes["file"] = path.stat().st_size
    releases = {name: plain({k: v for k, v in vars(r).items() if v is not None}) for name, r in b.releases.items()}
    if b.head is not None:
        releases[Key.HEAD] = plain({k: v for k, v in vars(b.head).items() if k not in HEAD_ARRAYS})
    return {
        "bundle": None if path is None else escape(str(path)),
        "format_version": ".".join(map(str, b.version)),
        "labels": list(b.labels),
        "label_descriptions": None if b.label_descriptions is None else list(b.label_descriptions),
        "privacy": plain(b.privacy),
        "releases": releases,
        "hashing": None if b.hyperplanes is None else {"tables": b.tables, "bits": b.bits, "seed": b.seed,
                                                       "offsets": b.offsets is not None},
        "subspace_dim": None if b.projection is None else int(b.projection.shape[0]),
        "scoring": None if b.scoring is None else dict(vars(b.scoring)),
        # The informational facts first: a checked field of the same name (a bundle's facts are free) wins.
        "encoder": {**plain(e.facts or {}), "format": e.format, "family": e.family, "dim": e.dim,
                    "max_length": e.max_length, "text_prefix": e.text_prefix,
                    "pack_sha256": None if b.encoder_pack is None else b.encoder_pack.hex()},
        "exporter": plain(b.exporter),
        "components": [n for n, there in (("centroids", b.class_sums is not None), ("votes", b.votes is not None),
                                          ("prior", b.prior is not None), ("head", b.head is not None)) if there],
        "sizes_bytes": sizes,
    }


def privacy_summary(b: Bundle) -> str:
    """One line: the guarantee in the bundle's own words (numbers to 10 significant digits). A
    bundle with a head says what delta is in the contract's words and never "pure"."""
    parts = ", ".join(f"{name} eps {r.epsilon:.10g} (scale {r.noise_scale:.10g})" for name, r in b.releases.items())
    person = b.privacy[Key.PRIVACY_UNIT] != wording.privacy_unit(None)  # the reader checked the words against K
    unit = wording.privacy_unit(b.records_per_unit if person else None)
    batches = f" in each of {b.batches} disjoint batches, summed" if b.batches > 1 else ""
    h = b.head
    if h is None:
        return (f"epsilon = {b.epsilon:.10g}, delta = 0 (pure DP) per {unit}, spent on "
                f"{parts}{batches}; discrete Laplace noise")
    return (f"epsilon = {b.epsilon:.10g}, delta = {b.delta:.10g} ({wording.DELTA_SUMMARY}) per {unit}, spent on "
            f"{parts}, head eps {h.epsilon:.10g} delta "
            f"{h.delta:.10g} (DP-SGD, {h.steps} steps, sample rate {h.sample_rate:.10g}, noise multiplier "
            f"{h.noise_multiplier:.10g}); discrete Laplace and Gaussian noise")


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def format_sizes(sizes: dict[str, int]) -> str:
    """The sizes line of `format_info`: the file's total and its parts, and a statistics
    bundle's encoder apart from them: it is in the pack, a separate file shipped once, so it is
    neither in the file's total nor one of its parts.

    Example:
        >>> format_sizes({"encoder": 23_000_000, "prior": 10_000, "file": 23_020_000})
        '21.95 MiB total: encoder 21.93 MiB, prior 0.01 MiB'
        >>> format_sizes({"encoder_pack": 23_000_000, "prior": 10_000, "file": 20_000})
        '0.02 MiB in this file: prior 0.01 MiB; the encoder, 21.93 MiB, is in its encoder pack (a separate file)'
    """
    parts = ", ".join(f"{k} {_mib(v)}" for k, v in sizes.items() if k not in ("file", "encoder_pack"))
    if "encoder_pack" not in sizes:
        return f"{_mib(sizes['file'])} total: {parts}" if "file" in sizes else parts
    text = f"{_mib(sizes['file'])} in this file: {parts}; " if "file" in sizes else f"{parts}; "
    return text + f"the encoder, {_mib(sizes['encoder_pack'])}, is in its encoder pack (a separate file)"


def format_info(info: dict[str, Any], summary: str) -> str:
    """Human-readable text of `bundle_info` (``summary``: `privacy_summary`)."""
    p, enc, sizes = info["privacy"], info["encoder"], info["sizes_bytes"]
    lines = [f"bundle      {info['bundle']}"] if info["bundle"] else []
    lines.append(f"format      {info['format_version']}")
    lines.append(f"labels      {len(info['labels'])}")
    descriptions = info["label_descriptions"] or [""] * len(info["labels"])
    width = max(len(label) for label in info["labels"])
    for label, d in zip(info["labels"], descriptions):
        lines.append(f"  {label:<{width}}  {d}".rstrip())
    lines.append("privacy")
    lines.append(f"  guarantee             {summary}")
    if p.get(Key.DELTA):  # an approximate guarantee: what delta is, in the contract's words
        lines.append(f"  what delta is         {wording.DELTA_STATEMENT}")
    for key in PRIVACY_LINES:
        if key in p:
            value = "; ".join(map(str, p[key])) if isinstance(p[key], list) else _num(p[key])
            lines.append(f"  {key:<21} {value}")
    for i, (name, r) in enumerate(info["releases"].items()):
        if name == Key.HEAD:
            lines.append(f"  release {i + 1}             head: epsilon {_num(r[Key.EPSILON])}, delta {_num(r[Key.DELTA])}, "
                         f"L2 sensitivity {r['sensitivity_l2']}, noise scale {_num(r[Key.NOISE_SCALE])} (noise "
                         f"multiplier {_num(r['noise_multiplier'])}), {r['steps']} steps at sample rate "
                         f"{_num(r['sample_rate'])}, clip L2 {_num(r['clip_l2'])} on a grid of 1/{r[Key.GRID]}; "
                         f"{r[Key.MECHANISM]}; accountant: {r['accountant']}")
            continue
        clip = (f", clip L1 {_num(r[Key.CLIP_L1])} on a grid of 1/{r[Key.GRID]} in a {info['subspace_dim']}-d "
                f"public subspace" if Key.CLIP_L1 in r else "")
        lines.append(f"  release {i + 1}             {name}: epsilon {_num(r[Key.EPSILON])}, L1 sensitivity "
                     f"{r[Key.SENSITIVITY_L1]}, noise scale {_num(r[Key.NOISE_SCALE])}{clip}; {r[Key.MECHANISM]}")
    if info["scoring"]:
        lines.append("scoring     " + ", ".join(f"{k} {_num(v)}" for k, v in info["scoring"].items()))
    h = info["hashing"]
    lines.append("hashing     none (no vote tables)" if h is None else
                 f"hashing     SimHash, {h['tables']} tables x {h['bits']} bits, seed {h['seed']}")
    lines.append(f"encoder     {enc.get('name', '?')} ({enc['format']}, {enc['family']} family, "
                 f"{enc.get('quantization', '?')}), "
                 f"{enc['dim']}-d, max {enc['max_length']} tokens"
                 + (f", text prefix {enc['text_prefix']!r}" if enc["text_prefix"] else ""))
    if enc.get("pack_sha256"):
        lines.append(f"  encoder pack          {enc['pack_sha256']} (not in this file)")
    if "engine" in info:
        lines.append(f"  runs on               {info['engine']}")
    fid = enc.get("fidelity")
    if isinstance(fid, dict) and all(isinstance(fid.get(k), (int, float)) for k in ("mean_cosine", "min_cosine")):
        lines.append(f"  fidelity vs fp32      mean cosine {fid['mean_cosine']:.4f}, min {fid['min_cosine']:.4f} "
                     f"over {fid.get('texts', '?')} texts")
    lines.append(f"size        {format_sizes(sizes)}")
    ex = info["exporter"] if isinstance(info["exporter"], dict) else {}
    lines.append(f"exporter    {ex.get(Key.NAME, '?')} {ex.get(Key.VERSION, '?')}, created {ex.get(Key.CREATED, '?')}")
    return "\n".join(lines)
