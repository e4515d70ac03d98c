"""Describes a bundle for people: its labels, privacy facts, hashing, encoder and sizes.

Shared by `python -m runtime.classify --info` and `python -m exporter inspect`, so a privacy
officer sees the same statement of the guarantee whichever side they look from. Reading a
bundle's facts does not start the encoder.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from runtime.bundle.stream import LazyBin
from runtime.bundle.schema import Bundle, ExporterKey, Lsh, Privacy, Release, Scoring

#: Privacy facts `format_info` lists one per line, in this order.
PRIVACY_LINES = (Privacy.EPSILON, Privacy.DELTA, Privacy.SENSITIVITY_L1, Privacy.NOISE_SCALE,
                 Privacy.NEIGHBOUR_RELATION, Privacy.PRIVACY_UNIT, Privacy.NOISE_SOURCE, Privacy.NOISE_LIBRARY,
                 Privacy.NOISE_LIBRARY_VERSION, Privacy.POST_PROCESSING, Privacy.RELEASED_STATISTICS,
                 Privacy.PUBLIC_INPUTS, Privacy.COMPOSITION)


def safe_text(text: str) -> str:
    r"""Free text from a bundle as it may reach a terminal: every character that is not
    printable (control characters such as ESC, BEL, CR and the C1 range, format characters
    such as the bidirectional overrides, line and paragraph separators) is shown as its escape,
    so a bundle cannot send terminal escape sequences, retitle the window or spoof lines.

    Example:
        >>> safe_text("dpedge\x1b]0;pwned\x07 \u202eok\r")
        'dpedge\\x1b]0;pwned\\x07 \\u202eok\\r'
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def _plain(v: Any, depth: int = 0) -> Any:
    """A JSON-ready copy of free-form metadata from the bundle (privacy, lsh, encoder facts,
    exporter): the reader accepts any msgpack there, so bytes, timestamps, odd keys and deep
    nesting become short text instead of crashing `--info` or `json.dumps`, and text is made
    safe for a terminal (`safe_text`), in JSON too (JSON leaves DEL and C1 characters raw)."""
    if isinstance(v, str):
        return safe_text(v)
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)  # JSON has no NaN or infinity: --info --json stays JSON
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if depth >= 8:
        return "..."
    if isinstance(v, dict):
        return {safe_text(k) if isinstance(k, str) else repr(k): _plain(x, depth + 1) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x, depth + 1) for x in v]
    if isinstance(v, (bytes, LazyBin)):
        return f"<{len(v)} bytes>"
    return safe_text(repr(v)[:100])


def _num(v: Any) -> str:
    """A float as people read it, to 10 significant digits (1.6, not 1.5999999999999996; 20.0,
    not 20.000000000000004); anything else as it is.

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
    sizes = {"encoder": len(b.encoder.model) + len(b.encoder.tokenizer_json.encode())}
    if b.votes is not None:
        sizes["votes"] = b.votes.nbytes
        sizes["hyperplanes"] = b.hyperplanes.nbytes + (0 if b.offsets is None else b.offsets.nbytes)
    if b.class_stats is not None:
        cs = b.class_stats
        sizes["class_stats"] = cs.origin.nbytes + cs.projection.nbytes + cs.sums.nbytes + cs.counts.nbytes
    if b.prior is not None:
        sizes["prior"] = b.prior.nbytes
    if path is not None:
        arrays = sum(sizes.values())
        sizes["file"] = path.stat().st_size
        sizes["metadata"] = max(0, sizes["file"] - arrays)
    return {
        "bundle": None if path is None else str(path),
        "labels": list(b.labels),
        "label_descriptions": None if b.label_descriptions is None else list(b.label_descriptions),
        "privacy": _plain(b.privacy),
        "lsh": None if b.lsh is None else {**_plain(b.lsh), Lsh.TABLES: b.tables, Lsh.BITS: b.bits},
        "encoder": {
            "format": b.encoder.format, "dim": b.encoder.dim, "max_length": b.encoder.max_length,
            "pooling": safe_text(b.encoder.pooling), "normalized": b.encoder.normalized, **_plain(b.encoder.facts),
        },
        "exporter": _plain(b.exporter),
        "scoring": _plain(b.scoring) if b.scoring else None,
        "components": [name for name, present in (("centroids", b.class_stats is not None), ("votes", b.votes is not None),
                                                  ("prior", b.prior is not None)) if present],
        "sizes_bytes": sizes,
    }


def _releases(privacy: dict[str, Any]) -> list[dict[str, Any]]:
    releases = privacy.get(Privacy.RELEASES)
    return [r for r in releases if isinstance(r, dict)] if isinstance(releases, list) else []


def privacy_summary(privacy: dict[str, Any]) -> str:
    """One line: the guarantee in the bundle's own words (numbers to 10 significant digits)."""
    g = lambda key, m=privacy: f"{float(m.get(key, 0)):.10g}"  # noqa: E731
    head = (f"epsilon = {g(Privacy.EPSILON)}, delta = {g(Privacy.DELTA)} (pure DP) per "
            f"{safe_text(str(privacy[Privacy.PRIVACY_UNIT]))}")
    releases = _releases(privacy)
    if releases:
        parts = ", ".join(f"{safe_text(str(r.get(Release.STATISTIC, '?')))} eps {g(Release.EPSILON, r)} (scale {g(Release.NOISE_SCALE, r)})"
                          for r in releases)
        return f"{head}, spent on {parts}; discrete Laplace noise"
    return f"{head}; discrete Laplace noise, scale {g(Privacy.NOISE_SCALE)}, on every cell"


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def format_info(info: dict[str, Any]) -> str:
    """Human-readable text of `bundle_info`."""
    p, lsh, enc, sizes = info["privacy"], info["lsh"], info["encoder"], info["sizes_bytes"]
    lines = []
    if info["bundle"]:
        lines.append(f"bundle      {info['bundle']}")
    lines.append(f"labels      {len(info['labels'])}")
    descriptions = info["label_descriptions"] or [""] * len(info["labels"])
    width = max(len(label) for label in info["labels"])
    for label, d in zip(info["labels"], descriptions):
        lines.append(f"  {label:<{width}}  {d}".rstrip())
    lines.append("privacy")
    lines.append(f"  guarantee             {privacy_summary(p)}")
    lines.append(f"  mechanism             {p[Privacy.MECHANISM]}")
    for key in PRIVACY_LINES:
        if key in p:
            value = ", ".join(map(str, p[key])) if isinstance(p[key], list) else _num(p[key])
            lines.append(f"  {key:<21} {value}")
    for i, r in enumerate(_releases(p)):
        clip = (f", clip L1 {_num(r[Release.CLIP_L1])} in a {r.get(Release.DIM, '?')}-d public subspace"
                if Release.CLIP_L1 in r else "")
        lines.append(f"  release {i + 1}             {r.get(Release.STATISTIC, '?')}: epsilon "
                     f"{_num(r.get(Release.EPSILON, '?'))}, L1 sensitivity {_num(r.get(Release.SENSITIVITY_L1, '?'))}, "
                     f"noise scale {_num(r.get(Release.NOISE_SCALE, '?'))}{clip}; {r.get(Release.MECHANISM, '?')}")
    if info.get("scoring"):
        sc = info["scoring"]
        lines.append("scoring     blend: " + ", ".join(f"{k} {_num(v)}" for k, v in sc.items() if k != Scoring.RULE))
    if lsh is None:
        lines.append("hashing     none (no vote tables: the class statistics and the prior score)")
    else:
        lines.append(f"hashing     SimHash, {lsh[Lsh.TABLES]} tables x {lsh[Lsh.BITS]} bits, "
                     f"{lsh.get(Lsh.DISTRIBUTION, '?')} hyperplanes, seed {lsh.get(Lsh.SEED, '?')}")
    lines.append(f"encoder     {enc.get('name', '?')} ({enc['format']}, {enc.get('quantization', '?')}), "
                 f"{enc['dim']}-d, max {enc['max_length']} tokens")
    if "backend" in info:
        lines.append(f"  runs on               {info['backend']}")
    fid = enc.get("fidelity")
    if isinstance(fid, dict) and all(isinstance(fid.get(k), (int, float)) for k in ("mean_cosine", "min_cosine")):
        lines.append(f"  fidelity vs fp32      mean cosine {fid['mean_cosine']:.4f}, min {fid['min_cosine']:.4f} "
                     f"over {fid.get('texts', '?')} texts")
    size_parts = ", ".join(f"{k} {_mib(v)}" for k, v in sizes.items() if k != "file")
    total = f"{_mib(sizes['file'])} total: " if "file" in sizes else ""
    lines.append(f"size        {total}{size_parts}")
    ex = info["exporter"]
    lines.append(f"exporter    {ex.get(ExporterKey.NAME, '?')} {ex.get(ExporterKey.VERSION, '?')}, created "
                 f"{ex.get(ExporterKey.CREATED, '?')}")
    return "\n".join(lines)
