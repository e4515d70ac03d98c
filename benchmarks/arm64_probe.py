"""What one machine computes for a few texts: the facts benchmarks/arm64_check.py compares.

    python arm64_probe.py --bundle NAME=PATH [--bundle ...] [--texts FILE] > probe.json

Run by arm64_check.py twice with the same arguments: on the host (x86_64) and inside the
emulated arm64 root with the dpedge wheel installed there. It imports only what a device has
(the installed `runtime` package, numpy; the standard library), so it must not import
anything from this repository. For each bundle it writes, as one JSON document on stdout:

- the engine the runtime chose and `Classifier.check_cosine` (the runtime's own load-time
  check: its embedding of the bundle's check text against the exporter's);
- for each text of --texts (one per line; usually the few texts whose answers differ between
  the machines): the embedding and the SimHash bucket of each table, so the driver can say
  how far the two machines' embeddings are apart and how many tables hashed differently;
- the machine, the Python version and the versions of the runtime's dependencies.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import platform
import sys

import numpy as np

from runtime import Classifier
from runtime.simhash import SimHasher

PACKAGES = ("dpedge", "numpy", "msgpack", "onnxruntime", "ai-edge-litert")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", action="append", required=True, metavar="NAME=PATH")
    ap.add_argument("--texts", help="file with one text per line to embed and hash (optional)")
    args = ap.parse_args()
    texts = []
    if args.texts:
        with open(args.texts, encoding="utf-8") as f:
            texts = [line.rstrip("\n") for line in f if line.strip()]
    versions = {}
    for pkg in PACKAGES:
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            versions[pkg] = None
    out = {"machine": platform.machine(), "python": platform.python_version(), "versions": versions,
           "runtime_file": sys.modules["runtime"].__file__, "bundles": {}}
    for spec in args.bundle:
        name, _, path = spec.partition("=")
        clf = Classifier.load(path, threads=1)
        entry = {"engine": clf.encoder.engine, "check_cosine": clf.check_cosine, "texts": {}}
        if texts:
            emb = clf.embed(texts)
            b = clf.bundle
            # A bundle without vote tables (the default) has no buckets to compare.
            buckets = (SimHasher(b.hyperplanes, b.offsets).buckets(emb) if b.hyperplanes is not None
                       else [None] * len(texts))
            for t, e, k in zip(texts, emb, buckets):
                entry["texts"][t] = {"embedding": [float(x) for x in e],
                                     "buckets": None if k is None else [int(x) for x in k]}
        out["bundles"][name] = entry
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
