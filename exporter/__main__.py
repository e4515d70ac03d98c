"""Command line of the exporter (server side).

    python -m exporter build --train FILE --labels FILE --epsilon E [--tables T --bits H
                             --encoder DIR --encoder-format onnx|tflite --out BUNDLE
                             --engine local|ray --ray-address ADDRESS ...]
    python -m exporter build ... --encoder-pack PACK        # a statistics bundle naming PACK
    python -m exporter build ... --delta 1e-5               # opt-in (epsilon, delta): a DP-SGD head
    python -m exporter inspect BUNDLE [--encoder-pack PACK] [--json]
    python -m exporter encoder [--encoder NAME|FOLDER] [--encoder-format onnx|tflite] [--pack OUT]
    python -m exporter encoders
    python -m exporter evaluate --bundle B --test FILE [--plot [PNG]] [--json]

Exit status 0 on success, 2 on bad input or settings (the message names what to fix).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from exporter.build import BuildReport, build
from exporter.options import (DEFAULT_BITS, DEFAULT_MAX_TABLE_MIB, DEFAULT_TABLES, ENGINES, HASHINGS, BuildError,
                              BuildOptions)
from exporter.dataset import FORMATS, DatasetError
from exporter.privacy import MAX_EXACT_VALUE
from exporter.encoder_export import ENCODER_FORMATS, EncoderExportError, export_encoder
from runtime import bundle as bundle_format
from runtime.classify import option_hint
from runtime.describe import bundle_info, format_info, privacy_summary
from runtime.errors import BundleError, InputError
from exporter import encoders
from exporter.evaluate import NOTICE, PlotUnavailable, evaluate, format_report, plot, plot_path


#: The value of --plot given without a file name: the plot goes beside the bundle (plot_path).
BESIDE_BUNDLE = object()


def _add_encoder_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--encoder-format", choices=ENCODER_FORMATS, default=None,
                   help="onnx (onnxruntime; default) or tflite (LiteRT, for phones and Raspberry Pi; needs "
                        "pip install 'dpedge[export,tflite]'; the phone tier only)")


def _add_encoder_pack(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--encoder-pack", type=Path, default=None, metavar="PACK", help=what)


def _add_build(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="build a DP bundle from a labelled dataset",
                       description="Embed a labelled dataset, release noisy class statistics (and vote tables, "
                                   "if asked) within one epsilon, and write one bundle file.")
    p.add_argument("--train", required=True, type=Path, help="labelled records: .jsonl, .csv or .tsv")
    p.add_argument("--labels", required=True, type=Path,
                   help="public label list: one label a line, optionally label<TAB>description")
    p.add_argument("--epsilon", required=True, type=float,
                   help="total privacy budget (pure epsilon-DP unless you opt in to --delta)")
    p.add_argument("--delta", type=float, default=None, metavar="D",
                   help="OPT-IN, off by default: make the bundle (epsilon, delta)-DP instead of pure epsilon-DP: the "
                        "noisy class counts and a linear softmax head trained by DP-SGD on the embeddings "
                        "(Gaussian noise; docs/head.md); delta is an additive slack in the definition (not a probability "
                        "that the bound fails), so D must be at most 1e-3 and below 1/N (N: the noisy record count), e.g. 1e-5 or less; "
                        "one record is the unit (no --unit-column), local engine only")
    p.add_argument("--hashing", choices=HASHINGS, default="aligned",
                   help="aligned (default): release noisy class counts and class sums in a public subspace, plus "
                        "vote tables hashed along the noisy class directions if --votes-share > 0; "
                        "random: the paper's random hyperplanes and vote tables only")
    p.add_argument("--votes-share", type=float, default=0.0,
                   help="with aligned hashing, the share of epsilon for vote tables (default 0: none; measured to "
                        "cost accuracy, docs/accuracy.md)")
    p.add_argument("--basis-dim", type=int, default=None,
                   help="dimension of the class sums' public subspace (default: chosen from epsilon and the noisy "
                        "record count)")
    p.add_argument("--clip-l1", type=float, default=None,
                   help="L1 clip of each projected embedding (default: the public clip of the chosen dimension)")
    p.add_argument("--tables", type=int, default=None,
                   help=f"SimHash tables T, when the bundle has vote tables (default {DEFAULT_TABLES})")
    p.add_argument("--bits", type=int, default=None,
                   help=f"hyperplanes per table H (default: aligned 4..8 from the noisy record count, about 100 "
                        f"records per bucket; random {DEFAULT_BITS})")
    p.add_argument("--public-directions", type=int, default=0,
                   help="with vote tables: public basis directions hashed besides the class directions (default 0)")
    p.add_argument("--encoder", default=None, metavar="NAME|FOLDER",
                   help="a known encoder (python -m exporter encoders), a sentence-transformers folder, or a folder "
                        "`python -m exporter encoder` exported (used as it is) (default: all-MiniLM-L6-v2, the phone tier; "
                        "all-mpnet-base-v2: the laptop and Raspberry Pi tier); a folder "
                        "is your statement that the model was trained without the private records, and the bundle "
                        "says so")
    _add_encoder_format(p)
    p.add_argument("--planned-records", type=int, default=None, metavar="N",
                   help="choose the class sums' subspace for N records instead of the released noisy count: for the "
                        "first bundle of an --extend series, the total you plan to add up (a public plan, never "
                        "the data's own count)")
    p.add_argument("--extend", type=Path, default=None, metavar="OLD",
                   help="release these records (none of them, or with --unit-column none of their persons, in an "
                        "earlier batch: your promise) with OLD's public choices, and write the sum of both releases: "
                        "each record keeps epsilon (parallel composition; format 1.1)")
    _add_encoder_pack(p, "an encoder pack (python -m exporter encoder --pack): embed with its encoder and write a "
                         "statistics bundle of kilobytes that names the pack instead of carrying the encoder (format "
                         "1.1; readers load it with the pack)")
    p.add_argument("--out", type=Path, default=Path("models/bundle.dpedge"), help="bundle to write")
    p.add_argument("--seed", type=int, default=None,
                   help="hyperplane seed, for bundles with vote tables; others have no hyperplanes (default: random, "
                        "recorded in the bundle)")
    p.add_argument("--format", dest="fmt", choices=FORMATS, default=None, help="dataset format (default: from extension)")
    p.add_argument("--text-field", default="text", help="JSON key or CSV column of the text (default: text)")
    p.add_argument("--label-field", default="label", help="JSON key or CSV column of the label (default: label)")
    p.add_argument("--skip-unknown-labels", action="store_true", help="skip (and count) records whose label is not listed")
    p.add_argument("--skip-empty-texts", action="store_true", help="skip (and count) records whose text is empty (or oversized)")
    p.add_argument("--unit-column", default=None, metavar="COL",
                   help="privacy unit: the JSON key or CSV column naming the person (e.g. user_id; ids are compared "
                        "after stripping surrounding white space, and an integer id equals its text); the guarantee "
                        "then covers each person, not only each record (needs --max-records-per-unit)")
    p.add_argument("--max-records-per-unit", type=int, default=None, metavar="K",
                   help="keep at most K records per person, chosen at random; every release's L1 sensitivity, and "
                        "so its noise scale, is multiplied by K: class counts K, class sums K x round(100 x B) "
                        "(B: the L1 clip), vote tables K x T")
    p.add_argument("--max-table-mib", type=float, default=None,
                   help=f"refuse vote tables larger than this (default {DEFAULT_MAX_TABLE_MIB:g} MiB)")
    p.add_argument("--models-dir", type=Path, default=Path("models"), help="where the exported encoder is cached")
    p.add_argument("--workers", type=int, default=None, help="texts embedded in parallel (default: one per core)")
    p.add_argument("--engine", choices=ENGINES, default="local",
                   help="local (this process; default) or ray (Ray Data, JSONL only; needs pip install "
                        "'dpedge[ray]'; see docs/ray.md)")
    p.add_argument("--ray-address", default=None, metavar="ADDRESS",
                   help="with --engine ray: 'auto' or 'ray://HEAD:10001' joins an existing cluster "
                        "(default: start a local Ray instance)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _print_report(r: BuildReport) -> None:
    s = r.stats
    print(f"wrote {r.out} ({r.bundle_bytes / 2**20:.1f} MiB)")
    print(f"  privacy: {r.summary}")
    if r.privacy.get("delta"):
        print(f"  note: (epsilon, delta)-DP, opted in with --delta {r.privacy['delta']:g}: not pure epsilon-DP")
    dropped = r.units.records_dropped if r.units else 0
    print(f"  records counted: {s.records - dropped}" + (f", skipped (unknown label): {s.skipped_unknown_label}"
                                              if s.skipped_unknown_label else "")
          + (f", skipped (empty text): {s.skipped_empty_texts}" if s.skipped_empty_texts else ""))
    if r.units:
        print(f"  privacy units: {r.units.units}; {r.units.units_over_bound} had more than "
              f"{r.privacy['max_records_per_unit']} records, {dropped} records left out")
    if s.skipped_unknown_label:  # counts only: the label values are private data
        print(f"  unknown labels: {s.skipped_unknown_label} records, {s.distinct_unknown_labels} distinct values "
              f"(not shown: they are data)")
    if r.clipped_cells:
        print(f"  note: {r.clipped_cells} noisy cells exceeded int16 and were clipped")
    for statistic, n in r.clamped_values.items():
        print(f"  note: {statistic}: {n} exact values were beyond +-{MAX_EXACT_VALUE:,} and were clamped to it "
              f"before the noise (the sensitivity is unchanged)")
    print("  seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in r.seconds.items()))
    print("  (record counts above are for you; the bundle contains only the noisy releases)")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m exporter", description="dpedge exporter: build DP bundles.")
    sub = ap.add_subparsers(dest="command", required=True)
    _add_build(sub)
    ins = sub.add_parser("inspect", help="show a bundle's labels, privacy facts and sizes")
    ins.add_argument("bundle", type=Path)
    _add_encoder_pack(ins, "the encoder pack a statistics bundle names")
    ins.add_argument("--json", action="store_true")
    enc = sub.add_parser("encoder", help="export (or verify the cached export of) the int8 encoder")
    enc.add_argument("--encoder", default=None, metavar="NAME|FOLDER",
                     help="a known encoder (python -m exporter encoders) or a sentence-transformers folder")
    _add_encoder_format(enc)
    enc.add_argument("--models-dir", type=Path, default=Path("models"))
    enc.add_argument("--force", action="store_true", help="export again even if cached")
    enc.add_argument("--pack", type=Path, default=None, metavar="OUT",
                     help="also write the encoder as an encoder pack (.dpedge-encoder) for statistics bundles")
    sub.add_parser("encoders", help="list the known encoders: languages, size, licence, where the weights come from")
    ev = sub.add_parser("evaluate", help="accuracy of a bundle on your own labelled test file (private figures)",
                        description="Classify a labelled test file with the runtime and report accuracy, macro-F1, "
                                    "per-class precision and recall, the confusion matrix and the scores' "
                                    "reliability. " + NOTICE)
    ev.add_argument("--bundle", required=True, type=Path)
    _add_encoder_pack(ev, "the encoder pack a statistics bundle names")
    ev.add_argument("--test", required=True, type=Path, help="labelled records: .jsonl, .csv or .tsv")
    ev.add_argument("--plot", type=Path, nargs="?", const=BESIDE_BUNDLE, default=None, metavar="PNG",
                    help="write the confusion matrix and reliability plot to PNG (without PNG: beside the bundle, "
                         "BUNDLE-evaluation.png, e.g. models/quickstart-evaluation.png)")
    ev.add_argument("--json", action="store_true", help="print the figures as one JSON document")
    ev.add_argument("--format", dest="fmt", choices=FORMATS, default=None, help="default: from the extension")
    ev.add_argument("--text-field", default="text")
    ev.add_argument("--label-field", default="label")
    ev.add_argument("--threads", type=int, default=None, help="encoder threads (default: all cores)")
    return ap


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line's settings, as main() runs them (tests read the README's commands with it)."""
    args = _parser().parse_args(argv)
    if getattr(args, "plot", None) is BESIDE_BUNDLE:
        args.plot = plot_path(args.bundle)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        if args.command == "build":
            opts = BuildOptions(
                train=args.train, labels=args.labels, epsilon=args.epsilon, out=args.out, tables=args.tables,
                bits=args.bits, seed=args.seed, encoder_source=args.encoder,
                encoder_format=args.encoder_format or "onnx", encoder_pack=args.encoder_pack, models_dir=args.models_dir,
                fmt=args.fmt, text_field=args.text_field, label_field=args.label_field,
                skip_unknown_labels=args.skip_unknown_labels, skip_empty_texts=args.skip_empty_texts,
                max_table_mib=args.max_table_mib, workers=args.workers, progress=not args.quiet,
                unit_field=args.unit_column, max_records_per_unit=args.max_records_per_unit,
                engine=args.engine, ray_address=args.ray_address, hashing=args.hashing,
                votes_share=args.votes_share, basis_dim=args.basis_dim, clip_l1=args.clip_l1,
                public_directions=args.public_directions, extend=args.extend,
                planned_records=args.planned_records, delta=args.delta,
            )
            if args.encoder_pack is not None and args.encoder_format is not None:
                raise BuildError("--encoder-pack gives the encoder (its model and format): leave out --encoder-format")
            try:
                _print_report(build(opts))
            except KeyboardInterrupt:
                print("interrupted: nothing was written", file=sys.stderr)
                return 130
        elif args.command == "inspect":
            pack = None if args.encoder_pack is None else bundle_format.load_pack(args.encoder_pack)
            b = bundle_format.load(args.bundle, pack=pack)
            info = bundle_info(b, args.bundle)
            print(json.dumps(info, indent=2, ensure_ascii=False) if args.json else format_info(info, privacy_summary(b)))
        elif args.command == "encoders":
            print(encoders.table())
        elif args.command == "evaluate":
            result = evaluate(args.bundle, args.test, fmt=args.fmt, text_field=args.text_field,
                              label_field=args.label_field, threads=args.threads, encoder=args.encoder_pack)
            if result.records == 0:
                print(f"error: {args.test}: no record has a label the bundle knows", file=sys.stderr)
                return 2
            if args.plot:
                plot(result, args.plot)
            print(json.dumps(result.to_json(), indent=1, ensure_ascii=False) if args.json
                  else format_report(result, args.bundle, args.test))
            if args.plot and not args.json:
                print(f"\nwrote {args.plot}")
        else:
            exported = export_encoder(args.encoder, args.models_dir, encoder_format=args.encoder_format or "onnx",
                                      force=args.force)
            fid = exported.facts["fidelity"]
            print(f"encoder {exported.directory}: {exported.facts['quantization']}; fidelity vs fp32: mean cosine "
                  f"{fid['mean_cosine']:.4f}, min {fid['min_cosine']:.4f} over {fid['texts']} texts")
            if args.pack is not None:
                out, digest = bundle_format.save_pack(exported.to_bundle_encoder(), args.pack)
                print(f"wrote encoder pack {out} ({out.stat().st_size / 2**20:.1f} MiB), sha256 {digest.hex()}")
    except BundleError as exc:  # the same hint as python -m runtime.classify (a pack the bundle names)
        print(f"error: {exc}{option_hint(exc)}", file=sys.stderr)
        return 2
    except (BuildError, DatasetError, EncoderExportError, InputError, PlotUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
