"""Writes the generated sections of docs/bundle-format.md from format/1/schema.json.

    python format/tools/gen_spec.py          # rewrite the sections in place
    python format/tools/gen_spec.py --check  # exit 1 if they differ (the check tier runs this)

The specification's tables (fields, shape symbols, conditions, text kinds, relations, the
tokenizer family's shape, the operator sets, the error codes) are the contract's data printed as
Markdown between the markers ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``; the prose
around them is written by hand. It reads only the JSON, as any reader may.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "format" / "1" / "schema.json"
SPEC = ROOT / "docs" / "bundle-format.md"
_KINDS = {"map": "map", "str": "string", "int": "integer", "float": "float", "bool": "boolean", "bin": "bin",
          "version": "array [int, int]", "strings": "array of strings", "ndarray": "array record"}


def _num(x: float) -> str:
    """A bound exactly, as people read it (2^31 - 1, 1 000 000, 1e-06)."""
    for value, name in ((2**31 - 1, "2^31 - 1"), (2**31, "2^31"), ((2**31 - 1) * 10**6, "(2^31 - 1) / 1e-6"),
                        (2**30, "2^30"), (2**53 - 1, "2^53 - 1")):
        if x == value:
            return name
    if float(x).is_integer() and abs(x) < 1e15:
        n = int(x)
        return f"{n:,}".replace(",", " ") if n >= 100_000 else str(n)
    return f"{x:g}"


def _bounds(f: dict[str, Any]) -> str:
    parts = []
    if f["kind"] == "ndarray":
        parts.append(f"`{f['dtype']}` [{', '.join(f['shape'])}]")
    if f.get("choices"):
        parts.append(" or ".join(f"`{c}`" for c in f["choices"]))
    lo, hi = f.get("low"), f.get("high")
    if lo is not None or hi is not None:
        what = {"bin": "bytes ", "strings": "items "}.get(f["kind"], "")
        parts.append(f"{what}= {_num(lo)}" if lo is not None and lo == hi else
                     f"{what}{_num(lo) if lo is not None else ''}..{_num(hi) if hi is not None else ''}")
    if f.get("text"):
        parts.append(f["text"])
    if f.get("open"):
        parts.append("free keys; no bin, finite floats")
    return "; ".join(parts)


def _ranges(flat: list[int]) -> str:
    return ", ".join(f"{lo:04X}" if lo == hi else f"{lo:04X}-{hi:04X}" for lo, hi in zip(flat[0::2], flat[1::2]))


def _shape(node: dict[str, Any], definitions: dict[str, Any]) -> str:
    """One node of the tokenizer document's schema, in one line of compact notation."""
    if "ref" in node:
        return node["ref"]
    null = " or null" if node.get("nullable") else ""
    if "const" in node:
        return json.dumps(node["const"]) + null
    if "enum" in node:
        return " or ".join(map(json.dumps, node["enum"])) + null
    if "one_of" in node:
        return " or ".join(_shape(n, definitions) for n in node["one_of"]) + null
    if "tagged" in node:
        return " or ".join(f"(by {node['tagged']}) {_shape(n, definitions)}" for n in node["forms"].values()) + null
    kind = node["type"]
    if kind == "object":
        keys = ", ".join(f"{k}{'?' if v.get('optional') else ''}: {_shape(v, definitions)}" for k, v in node["keys"])
        return "{" + keys + "}" + null
    if kind == "map":
        lo, hi = node["key_length"]
        return f"{{{node.get('min_items', 0)}..{_num(node['max_items'])} keys of {lo}..{hi} chars: " \
               f"{_shape(node['values'], definitions)}}}" + null
    if kind == "array":
        return f"[{node.get('min_items', 0)}..{node['max_items']} x {_shape(node['items'], definitions)}]" + null
    if kind == "tuple":
        return "[" + ", ".join(_shape(n, definitions) for n in node["items"]) + "]" + null
    if kind == "string":
        return f"string {node.get('min_length', 0)}..{node['max_length']}" + null
    if kind == "integer":
        return f"integer {node['min']}..{_num(node['max'])}" + null
    return kind + null


def tables(s: dict[str, Any]) -> dict[str, str]:
    """The generated sections, by marker name."""
    rows = ["| field | type | present | shape, bounds, text | meaning |", "|---|---|---|---|---|"]
    shown: set[str] = set()
    for f in s["fields"]:
        path = f["path"]
        parts = path.split(".")
        if len(parts) == 3 and parts[0] == "releases":  # a row every release has alike is shown once
            same = [g for g in s["fields"] if g["path"] in {f"releases.{r}.{parts[2]}" for r in s["statistics"]}
                    and {**g, "path": ""} == {**f, "path": ""}]
            if len(same) == len(s["statistics"]):
                path = f"releases.*.{parts[2]}"
        if path in shown:
            continue
        shown.add(path)
        need = f["need"].replace("iff ", "iff *") + ("*" if f["need"].startswith("iff ") else "")
        need += "".join(f", {x}" for x in (f"since {f['since'][0]}.{f['since'][1]}" if "since" in f else "",
                                             "listed" if f.get("listed") else "") if x)
        rows.append(f"| `{path}` | {_KINDS[f['kind']]} | {need} | {_bounds(f)} | {f['doc']} |")
    dims = ["| symbol | defined by | bounds |", "|---|---|---|"]
    dims += [f"| {k} | {d['defined_by']} | {d['low']}..{_num(d['high'])} |" for k, d in s["dims"].items()]
    conditions = [f"- *{name}*: {c['doc']}" for name, c in s["conditions"].items()]
    text = [f"- *{name}*: at most {_num(k['max_chars'])} code points; then {', '.join(k['rules'])}"
            for name, k in s["text"]["kinds"].items()]
    text.append(f"- unprintable: {_ranges(s['text']['unprintable'])}")
    relations = [f"{i}. **{r['name']}**" + (f" (`{r['code']}` at `{r['path']}`)" if r["code"] else "") +
                 f": {r['statement']}" for i, r in enumerate(s["relations"], 1)]
    t = s["tokenizer"]
    tok = [f"- `{k}`: {_shape(v, t['definitions'])}" for k, v in t["document"]["keys"]]
    tok += [f"- *{name}*: {_shape(v, t['definitions'])}" for name, v in t["definitions"].items()]
    tok += [f"- relation *{r['name']}* (at `{r['path']}`): {r['statement']}" for r in t["relations"]]
    ops = [f"- ONNX, domains {', '.join(repr(d) for d in s['onnx']['domains'])}: "
           + ", ".join(f"{d + '.' if d else ''}{op}" for d, op in s["onnx"]["ops"])
           + f"; at most {_num(s['onnx']['max_nodes'])} nodes and initializers; a node's input left out (an empty "
           "name) only for " + ", ".join(f"{op} input {' or '.join(map(str, p))}" for _, op, p in s["onnx"]["optional_inputs"])]
    ops += [f"- family `{name}` ({f['doc']}): formats {', '.join(f['formats'])}; ONNX operators of its own: "
            + (", ".join(f"{d + '.' if d else ''}{op}" for d, op in f["onnx_ops"]) or "none")
            for name, f in s["families"].items()]
    ops += [
           f"- TFLite builtins (schema code): " + ", ".join(f"{k} ({v})" for k, v in s["tflite"]["ops"].items())
           + f"; at most {_num(s['tflite']['max_operators'])} operators (the bert family)",
           "- TFLite tensor indices (an operator's inputs and outputs, the subgraph's): one of the subgraph's "
           "tensors, or -1 (left out) only for " + ", ".join(f"{op} input {' or '.join(map(str, p))}"
                                                          for op, p in s["tflite"]["optional_inputs"].items()),
           "- TFLite fields refused when present (schema.fbs index): "
           + "; ".join(f"{kind} " + ", ".join(f"{name} ({i})" for name, i in fields.items())
                       for kind, fields in s["tflite"]["absent_fields"].items())]
    errors = [f"- `{c}`: {m}" for c, m in s["errors"].items()]
    return {"fields": "\n".join(rows), "dims": "\n".join(dims), "conditions": "\n".join(conditions),
            "text": "\n".join(text), "relations": "\n".join(relations), "tokenizer": "\n".join(tok),
            "operators": "\n".join(ops), "errors": "\n".join(errors)}


def render(doc: str) -> str:
    """``doc`` with every generated section replaced by its current text."""
    for name, body in tables(json.loads(SCHEMA.read_text(encoding="utf-8"))).items():
        pattern = re.compile(rf"(<!-- generated: {name} -->\n)(?:.*?\n)?(<!-- end: {name} -->)", re.S)
        if not pattern.search(doc):
            raise SystemExit(f"{SPEC}: no section '<!-- generated: {name} -->'")
        doc = pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), doc)
    return doc


def main(argv: list[str]) -> int:
    doc = SPEC.read_text(encoding="utf-8")
    new = render(doc)
    if "--check" in argv:
        if new != doc:
            print(f"{SPEC} differs from {SCHEMA}: run python format/tools/gen_spec.py", file=sys.stderr)
            return 1
        return 0
    SPEC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
