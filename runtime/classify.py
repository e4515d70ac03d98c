"""Command line: classify texts offline with a dpedge bundle.

    python -m runtime.classify [--bundle B] [--json] [--top-k K] [--threads N] [--engine NAME] [TEXT ...]
    python -m runtime.classify --info [--bundle B] [--json]

Texts come from the arguments, or one per line on stdin, answered line by line as they
arrive: a long stream runs in constant memory and a person typing sees each answer at once.
A line that cannot be classified (empty, not UTF-8, too long) is reported and skipped
without losing the lines after it, and the exit status is then 1. Exit status 2 means the
bundle or the arguments are unusable (including an inference engine that cannot run the
bundle's encoder, or runs it wrongly: the message names what to install).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Iterable, Iterator, TextIO

from runtime import bundle as bundle_format
from runtime.classifier import PACK_ENV, Classifier, Prediction, check_text, default_bundle_path
from runtime.describe import bundle_info, format_info, privacy_summary
from runtime.limits import QUERY_RUN_SECONDS, TIME_SCALE
from runtime.encoder import ENGINE_CHOICES, choose_engine
from runtime.errors import BundleError, InputError
from runtime.guard import ProcessGuard, resident_bytes
from runtime.scoring import MODES
from runtime.text import say

#: The process's memory budget (see runtime.guard): while loading, what it used before plus
#: LOAD_BYTES_PER_FILE_BYTE times the file's size plus the headroom (the exporter's bundles
#: grow the process by about 4.5 times their size with onnxruntime, 2.6 with LiteRT, engine
#: libraries included); afterwards, at least what loading left plus the headroom (a
#: 256-token query needs under 16 MiB). The headroom grows with the cores (engine threads).
LOAD_BYTES_PER_FILE_BYTE = 4.5
HEADROOM_BYTES = 48 * 2**20 + 2**20 * (os.cpu_count() or 1)
#: Deadlines of the guard's stages: onnxruntime stops its own runs earlier (LOAD_RUN_SECONDS,
#: QUERY_RUN_SECONDS) and skips the text; these catch an engine that cannot be stopped.
LOAD_SECONDS = 30.0 * TIME_SCALE
LINE_SECONDS = 2 * QUERY_RUN_SECONDS
#: What one character of a query may cost while it is tokenized: a 1,000,000-character line of
#: CJK ideographs takes `tokenizers` 621 MiB (each becomes a word), of letters about 100 MiB.
QUERY_BYTES_PER_CHAR = 1024
#: What a command line adds to a refusal its options can mend, by the refusal's code: the one
#: wording of this command and `python -m exporter` (build, inspect and evaluate take the same
#: --encoder-pack PACK).
OPTION_HINTS = {"pack.missing": "give it with --encoder-pack PACK"}


def option_hint(exc: BundleError) -> str:
    """`` (give it with --encoder-pack PACK)`` for a refusal an option mends, else "".

    Example:
        >>> option_hint(BundleError("pack.missing", "encoder_pack", "none was given"))
        ' (give it with --encoder-pack PACK)'
        >>> option_hint(BundleError("file.truncated", "", "too short"))
        ''
    """
    hint = OPTION_HINTS.get(exc.code)
    return f" ({hint})" if hint else ""


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter at the terminal's width as shutil.get_terminal_size finds it ($COLUMNS,
    else standard output's terminal, else 80), read here: argparse's default imports shutil for it,
    and with it bz2, lzma and zlib, about 4 ms of every start (argparse makes a formatter for each
    add_argument, not only for help)."""

    def __init__(self, prog: str) -> None:
        try:
            columns = int(os.environ.get("COLUMNS", "0")) or os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
        super().__init__(prog, width=(columns or 80) - 2)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m runtime.classify",
        formatter_class=_Formatter,
        description="Classify texts offline with a differentially private dpedge bundle.",
        epilog="Without --bundle, uses $DPEDGE_BUNDLE or models/quickstart.dpedge (built by `make quickstart`).",
    )
    ap.add_argument("texts", nargs="*", metavar="TEXT", help="texts to classify (default: one per line on stdin)")
    ap.add_argument("--bundle", help="bundle file (.dpedge)")
    ap.add_argument("--encoder-pack", metavar="PACK",
                    help="the encoder pack a statistics bundle names (.dpedge-encoder; default: $DPEDGE_ENCODER_PACK, "
                         "else none: the bundle carries its encoder)")
    ap.add_argument("--json", action="store_true",
                    help="JSON lines: text, label, scores per label (a distribution: they sum to 1)")
    ap.add_argument("--top-k", type=int, default=1, metavar="K",
                    help="show the K best labels with their scores, each label's share of 1 (default 1)")
    ap.add_argument("--threads", type=int, default=None, metavar="N", help="encoder threads (default: all cores)")
    ap.add_argument("--backend", dest="engine", choices=ENGINE_CHOICES, default=argparse.SUPPRESS,
                    help=argparse.SUPPRESS)  # its former name
    ap.add_argument("--engine", choices=ENGINE_CHOICES, default="auto",
                    help="inference engine (default auto: onnxruntime for ONNX bundles, LiteRT then "
                         "tflite-runtime for TFLite bundles, whichever is installed)")
    ap.add_argument("--score", choices=MODES, default="blend",
                    help="blend (default: votes, centroids and label-description prior, as the bundle says) "
                         "or one component alone")
    ap.add_argument("--info", action="store_true", help="show labels, privacy facts and sizes, then exit")
    ap.add_argument("--memory-budget", type=int, default=None, metavar="MIB",
                    help="end with exit status 2 if the process grows past MIB MiB (default: from the bundle's size; "
                         "0: no budget)")
    return ap


def _stdin_texts(stream: Iterable[bytes]) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, text or None, error or None) for each stdin line, decoded strictly."""
    for n, raw in enumerate(stream, start=1):
        try:
            yield n, raw.rstrip(b"\r\n").decode("utf-8"), None
        except UnicodeDecodeError as exc:
            yield n, None, f"not valid UTF-8 (byte {exc.start})"


def _utf8(out: TextIO) -> bool:
    return (getattr(out, "encoding", None) or "").lower().replace("-", "").replace("_", "") == "utf8"


def _emit(out: TextIO, pred: Prediction, text: str, args: argparse.Namespace) -> None:
    if args.json:
        record = {"text": text, "label": pred.label, "scores": pred.scores}
        if args.top_k > 1:
            record["top"] = [label for label, _ in pred.top(args.top_k)]
        try:
            # allow_nan=False: bare NaN or Infinity is not JSON; such a line is skipped instead.
            line = json.dumps(record, ensure_ascii=not _utf8(out), allow_nan=False)
        except ValueError:
            raise InputError("query.embedding", "", "the scores are not finite numbers, so there is no answer to "
                                                    "write") from None
        say(out, line, json=True)
    else:
        shown = text if len(text) <= 200 else text[:197] + "..."
        if args.top_k <= 1:
            say(out, pred.label, shown)
            return
        say(out, shown)
        width = max(len(label) for label in pred.scores)
        for label, score in pred.top(args.top_k):
            say(out, f"  {label:<{width}}  {score:.3f}")


def _classify_lines(clf: Classifier, items: Iterable[tuple[int, str | None, str | None]],
                    args: argparse.Namespace, where: str, guard: ProcessGuard | None) -> int:
    """Classify line by line (the encoder runs one text per call anyway); returns failures."""
    failures = 0
    for n, text, problem in items:
        if problem is None:
            try:
                if guard is not None:
                    guard.stage(f"classifying {where} {n}", LINE_SECONDS,
                                None if guard.fixed else guard.base + QUERY_BYTES_PER_CHAR * len(text))
                _emit(sys.stdout, clf.classify([check_text(text)])[0], text, args)
                continue
            except InputError as exc:
                problem = str(exc)
            finally:
                if guard is not None:
                    # Freed memory is not always returned to the system: the next line's budget
                    # starts from what this one left.
                    if not guard.fixed:
                        guard.base = max(guard.base, resident_bytes() + HEADROOM_BYTES)
                    guard.stage("waiting for input", limit_bytes=guard.base)
        say(sys.stderr, f"skipped {where} {n}: {problem}")
        failures += 1
    return failures


def _start_guard(path: Path, budget_mib: int | None, pack: Path | None = None) -> ProcessGuard | None:
    """The process guard for loading ``path`` and its ``pack`` (None with --memory-budget 0)."""
    if budget_mib == 0:
        return None
    if budget_mib is not None:
        guard = ProcessGuard.start(budget_mib * 2**20, "loading the bundle", LOAD_SECONDS, prefix=f"{path}: ")
        guard.fixed = True
        return guard
    else:
        size = sum(_size(p) for p in (path, pack) if p is not None)
        limit = int(resident_bytes() + LOAD_BYTES_PER_FILE_BYTE * size + HEADROOM_BYTES)
    return ProcessGuard.start(limit, "loading the bundle", LOAD_SECONDS, prefix=f"{path}: ")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        status = _main(args)
        sys.stdout.flush()  # here, so that a reader gone away is seen below, not at exit
        return status
    except BrokenPipeError:
        # The reader of stdout went away (`... | head -1`, `--info | head`): stop quietly, as
        # other tools do. stdout goes to /dev/null so that the interpreter's final flush cannot
        # fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        if _GUARDS:
            _GUARDS.pop().stop()


#: The running guard, stopped when main() returns (main may run inside another program: a test).
_GUARDS: list[ProcessGuard] = []


def _main(args: argparse.Namespace) -> int:
    if args.top_k < 1:
        say(sys.stderr, "error: --top-k must be at least 1")
        return 2
    path = Path(args.bundle) if args.bundle else default_bundle_path()
    pack_path = args.encoder_pack or os.environ.get(PACK_ENV) or None
    pack_path = None if pack_path is None else Path(pack_path)
    guard = _start_guard(path, args.memory_budget, pack_path)
    if guard is not None:
        _GUARDS.append(guard)
    try:
        if args.info:  # facts only: no need to start the encoder
            b = bundle_format.load(path, pack=None if pack_path is None else bundle_format.load_pack(pack_path))
            info = bundle_info(b, path)
            try:
                info["engine"] = choose_engine(b.encoder.format, args.engine).name
            except BundleError as exc:
                info["engine"] = f"none ({exc})"
            if args.json:
                say(sys.stdout, json.dumps(info, ensure_ascii=False, indent=2, allow_nan=False), json=True)
            else:
                for line in format_info(info, privacy_summary(b)).split("\n"):
                    say(sys.stdout, line)
            return 0
        clf = Classifier.load(path, encoder=pack_path, engine=args.engine, threads=args.threads, score=args.score)
    except InputError as exc:
        say(sys.stderr, f"error: {exc}")
        return 2
    except BundleError as exc:
        hint = option_hint(exc) or ("" if args.bundle else
                                    " (build the default bundle with `make quickstart`, or pass --bundle)")
        say(sys.stderr, f"error: {exc}{hint}")
        return 2
    if hasattr(sys.stdout, "reconfigure"):
        # A character the output encoding cannot show (an emoji under a Latin-1 locale) is
        # escaped rather than stopping the stream; JSON is then written as ASCII (see _emit).
        sys.stdout.reconfigure(errors="backslashreplace")
    if guard is not None:
        if not guard.fixed:
            guard.base = max(guard.limit, resident_bytes() + HEADROOM_BYTES)
        guard.stage("waiting for input", limit_bytes=guard.base)
    if not args.json:
        say(sys.stderr, f"# {path}: {len(clf.labels)} labels, {clf.bundle.encoder.format} encoder on "
                        f"{clf.encoder.engine}; {privacy_summary(clf.bundle)}")
    try:
        if args.texts:
            failures = _classify_lines(clf, ((i, t, None) for i, t in enumerate(args.texts, start=1)), args,
                                       "argument", guard)
        else:
            failures = _classify_lines(clf, _stdin_texts(sys.stdin.buffer), args, "line", guard)
    except BundleError as exc:  # e.g. a worker thread's engine that cannot be built
        say(sys.stderr, f"error: {exc}")
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    status = main()
    # End without the interpreter's teardown: freeing the engine's session, the vocabulary and
    # every module costs a one-text process about a tenth of its CPU, and the system frees it all
    # anyway. main() has flushed stdout (or sent it to /dev/null), and nothing this command runs
    # registers work for exit (its threads are daemons; a worker pool's threads are idle).
    sys.stderr.flush()
    os._exit(status)
