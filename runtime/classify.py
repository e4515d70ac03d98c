"""Command line: classify texts offline with a dpedge bundle.

    python -m runtime.classify [--bundle B] [--json] [--top-k K] [--threads N] [TEXT ...]
    python -m runtime.classify --info [--bundle B] [--json]

Texts come from the arguments, or one per line on stdin. Stdin is processed in small batches
as it arrives, so a long stream runs in bounded memory; a line that cannot be classified
(empty, not UTF-8, too long) is reported and skipped without losing the lines after it, and
the exit status is then 1. Exit status 2 means the bundle or the arguments are unusable.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Iterable, Iterator, TextIO

from runtime.classifier import Classifier, Prediction, check_text, default_bundle_path
from runtime.describe import format_info, privacy_summary
from runtime.errors import BundleError, InputError

STDIN_BATCH = 32


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m runtime.classify",
        description="Classify texts offline with a differentially private dpedge bundle.",
        epilog="Without --bundle, uses $DPEDGE_BUNDLE or models/quickstart.dpedge (built by `make quickstart`).",
    )
    ap.add_argument("texts", nargs="*", metavar="TEXT", help="texts to classify (default: one per line on stdin)")
    ap.add_argument("--bundle", help="bundle file (.dpedge)")
    ap.add_argument("--json", action="store_true", help="JSON lines: text, label, scores per label")
    ap.add_argument("--top-k", type=int, default=1, metavar="K", help="show the K best labels with scores (default 1)")
    ap.add_argument("--threads", type=int, default=None, metavar="N", help="encoder threads (default: all cores)")
    ap.add_argument("--info", action="store_true", help="show labels, privacy facts and sizes, then exit")
    return ap


def _stdin_texts(stream: Iterable[bytes]) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, text or None, error or None) for each stdin line, decoded strictly."""
    for n, raw in enumerate(stream, start=1):
        line = raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw
        try:
            yield n, line.decode("utf-8"), None
        except UnicodeDecodeError as exc:
            yield n, None, f"not valid UTF-8 (byte {exc.start})"


def _format(pred: Prediction, text: str, k: int) -> str:
    shown = text if len(text) <= 200 else text[:197] + "..."
    if k <= 1:
        return f"{pred.label}\t{shown}"
    width = max(len(label) for label in pred.scores)
    rows = [f"  {label:<{width}}  {score:10.1f}" for label, score in pred.top(k)]
    return "\n".join([shown, *rows])


def _emit(out: TextIO, pred: Prediction, text: str, args: argparse.Namespace) -> None:
    if args.json:
        record = {"text": text, "label": pred.label, "scores": pred.scores}
        if args.top_k > 1:
            record["top"] = [label for label, _ in pred.top(args.top_k)]
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
    else:
        out.write(_format(pred, text, args.top_k) + "\n")


def _report(err: TextIO, where: str, message: str) -> None:
    err.write(f"skipped {where}: {message}\n")


def _classify_lines(clf: Classifier, items: Iterator[tuple[int, str | None, str | None]],
                    args: argparse.Namespace, out: TextIO, err: TextIO, where: str) -> int:
    failures = 0
    batch: list[tuple[int, str]] = []

    def flush() -> None:
        if batch:
            for (_, text), pred in zip(batch, clf.predict([t for _, t in batch])):
                _emit(out, pred, text, args)
            out.flush()
            batch.clear()

    for n, text, problem in items:
        if problem is None:
            try:
                batch.append((n, check_text(text)))
            except InputError as exc:
                problem = str(exc)
        if problem is not None:
            flush()  # keep output in input order around the skipped line
            _report(err, f"{where} {n}", problem)
            failures += 1
        elif len(batch) >= STDIN_BATCH:
            flush()
    flush()
    return failures


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out, err = sys.stdout, sys.stderr
    if args.top_k < 1:
        err.write("error: --top-k must be at least 1\n")
        return 2
    path = args.bundle or default_bundle_path()
    try:
        clf = Classifier.load(path, threads=args.threads)
    except BundleError as exc:
        hint = "" if args.bundle else " (build the default bundle with `make quickstart`, or pass --bundle)"
        err.write(f"error: {exc}{hint}\n")
        return 2
    if args.info:
        info = clf.info()
        out.write((json.dumps(info, ensure_ascii=False, indent=2) if args.json else format_info(info)) + "\n")
        return 0
    if not args.json:
        err.write(f"# {path}: {len(clf.labels)} labels; {privacy_summary(clf.privacy)}\n")
    if args.texts:
        items = ((i, t, None) for i, t in enumerate(args.texts, start=1))
        failures = _classify_lines(clf, items, args, out, err, "argument")
    else:
        failures = _classify_lines(clf, _stdin_texts(sys.stdin.buffer), args, out, err, "line")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
