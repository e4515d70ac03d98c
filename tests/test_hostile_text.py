"""Hostile and odd query texts, through the CLI (a real process reading stdin) and the Python API.

Every line is either classified or refused with "skipped line N: <why>" on stderr; a bad line
never stops the stream, answers stay in input order, and the exit status is 1 when something
was skipped. A text with no token (only white space, controls, invisible characters or
combining marks) is refused as the contract says (query.empty), in every reader alike. (tests/test_cli.py covers the basics: an empty line, one invalid UTF-8 line, a
last line without a newline, streaming.)
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from runtime import Classifier, InputError
from runtime.classifier import MAX_TEXT_CHARS
from runtime.text import escape

OK, SKIP = "ok", "skip"

#: (raw stdin line without its newline, expected outcome, phrase of the skip message)
LINES: list[tuple[bytes, str, str]] = [
    (b"set an alarm for 7 am", OK, ""),
    (b"", SKIP, "nothing to classify"),
    (b"   \t  ", SKIP, "nothing to classify"),
    ("\u3000\u00a0\u2028\u2003".encode(), SKIP, "nothing to classify"),            # Unicode spaces only
    (b"\xff\xfe not utf-8", SKIP, "not valid UTF-8 (byte 0)"),
    ("what's the weather in Zürich".encode(), OK, ""),
    (b"caf\xc3", SKIP, "not valid UTF-8 (byte 3)"),                               # cut multi-byte char
    (b"\xed\xa0\x80 encoded surrogate", SKIP, "not valid UTF-8 (byte 0)"),
    (b"\xc0\xaf overlong slash", SKIP, "not valid UTF-8 (byte 0)"),
    (b"play\x00some\x00music", OK, ""),                                           # NUL bytes
    (b"\x00\x00\x00", SKIP, "nothing to classify"),                                # only NULs: no tokens
    (b"\x1b[31mred alert\x1b[0m turn on the lights", OK, ""),                      # ANSI escapes
    (b"bell\x07 backspace\x08 delete\x7f", OK, ""),
    (b"form\x0cfeed vertical\x0btab \x1c\x1d\x1e separators", OK, ""),           # str.splitlines() breaks
    ("next\u0085line and\u2028line separator".encode(), OK, ""),                 # ... these; stdin must not
    (b"a lone\rcarriage return", OK, ""),
    ("\u202eevil\u202c right-to-left override".encode(), OK, ""),
    ("שלום, מה מזג האוויר מחר?".encode(), OK, ""),                               # Hebrew (RTL)
    ("ما هو الطقس غدا في القاهرة".encode(), OK, ""),                              # Arabic (RTL)
    (("e" + "\u0301" * 60 + " zalgo").encode(), OK, ""),                           # stacked combining marks
    ("\u0301\u0308\u0327".encode(), SKIP, "nothing to classify"),                # combining marks only
    ("\u200b\u200b\u200d".encode(), SKIP, "nothing to classify"),                # zero-width, not spaces
    ("😀🎉👍🏽 👨‍👩‍👧‍👦 🇫🇷".encode(), OK, ""),  # emoji only
    ("call mom 📞 now".encode(), OK, ""),
    ("\ufeffbyte order mark at the start".encode(), OK, ""),
    ("\ue000\uffff\U0010fffd private use and noncharacters".encode(), OK, ""),
    (b"w" * MAX_TEXT_CHARS, OK, ""),                                               # 1 MB: at the limit
    (b"w" * (MAX_TEXT_CHARS + 1), SKIP,
     f"text has {MAX_TEXT_CHARS + 1} characters, over the limit of {MAX_TEXT_CHARS}"),
    ("é".encode() * MAX_TEXT_CHARS, OK, ""),                                       # 2 MB, 1M characters
    (b"crlf ending\r", OK, ""),                                                    # \r\n line end
    (b"the last line, without a newline", OK, ""),
]


def stdin_bytes() -> bytes:
    return b"\n".join(raw for raw, _, _ in LINES)  # no newline after the last line


def expected_text(raw: bytes) -> str:
    return raw.rstrip(b"\r\n").decode("utf-8")


def run(bundle, *args, stdin: bytes | None = None, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in ("DPEDGE_BUNDLE", "PYTHONIOENCODING")}
    env.update({"HF_HUB_OFFLINE": "1", **(env_extra or {})})
    return subprocess.run([sys.executable, "-m", "runtime.classify", "--bundle", str(bundle), *args], input=stdin,
                          capture_output=True, cwd=ROOT, env=env, timeout=600)


def check_skips(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr[-3000:]
    skipped = [line for line in stderr.splitlines() if line.startswith("skipped ")]
    wanted = [(n, phrase) for n, (_, outcome, phrase) in enumerate(LINES, start=1) if outcome == SKIP]
    assert len(skipped) == len(wanted), skipped
    for line, (n, phrase) in zip(skipped, wanted):
        assert line.startswith(f"skipped line {n}: ") and phrase in line, (line, n, phrase)


@pytest.fixture(scope="module")
def json_run(dp_bundle):
    return run(dp_bundle, "--json", stdin=stdin_bytes())


def test_stdin_json_every_good_line_answered_in_order(json_run):
    r = json_run
    assert r.returncode == 1  # some lines were skipped
    check_skips(r.stderr.decode())
    out = [json.loads(line) for line in r.stdout.decode("utf-8").split("\n") if line]
    good = [expected_text(raw) for raw, outcome, _ in LINES if outcome == OK]
    assert [o["text"] for o in out] == good  # exact round trip, NULs and control characters included
    assert all(o["label"] == max(o["scores"], key=o["scores"].get) for o in out)


def test_stdin_human_output(dp_bundle, json_run):
    r = run(dp_bundle, stdin=stdin_bytes())
    assert r.returncode == 1
    check_skips(r.stderr.decode())
    lines = r.stdout.decode("utf-8").split("\n")  # not splitlines(): texts hold \x0b, \x1c, \u2028...
    assert lines[-1] == ""
    good = [expected_text(raw) for raw, outcome, _ in LINES if outcome == OK]
    answers = lines[:-1]
    assert len(answers) == len(good)
    labels_json = [json.loads(x)["label"] for x in json_run.stdout.decode().split("\n") if x]
    for line, text, label in zip(answers, good, labels_json):
        shown = text if len(text) <= 200 else text[:197] + "..."
        assert line == f"{label}\t{escape(shown)}"  # control and bidirectional characters shown escaped


@pytest.mark.parametrize("last,phrase", [(b"caf\xc3", "not valid UTF-8 (byte 3)"), (b" \t", "nothing to classify"),
                                         (b"x" * (MAX_TEXT_CHARS + 1), "over the limit")],
                         ids=["utf8", "blank", "long"])
def test_bad_last_line_without_newline(dp_bundle, last, phrase):
    r = run(dp_bundle, "--json", stdin=b"first line\n" + last)
    assert r.returncode == 1, r.stderr.decode()
    assert json.loads(r.stdout)["text"] == "first line"
    assert "skipped line 2: " in r.stderr.decode() and phrase in r.stderr.decode()


def test_arguments_with_invalid_utf8_and_empty_texts(dp_bundle):
    """Invalid bytes in an argument arrive as lone surrogates; they used to crash the tokenizer
    (TypeError) and end the run. Now they are skipped like a bad stdin line."""
    r = subprocess.run([sys.executable, "-m", "runtime.classify", "--bundle", str(dp_bundle), "--json",
                        "first", b"caf\xe9 au lait", "", "   ", "last"],
                       capture_output=True, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err, err
    assert [json.loads(x)["text"] for x in r.stdout.decode().splitlines()] == ["first", "last"]
    assert "skipped argument 2: not valid UTF-8 (lone surrogate U+DCE9 at character 3" in err
    assert "skipped argument 3: there is nothing to classify" in err
    assert "skipped argument 4: there is nothing to classify" in err


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_output_encoding_that_cannot_show_the_text(dp_bundle, encoding):
    """Under a locale whose encoding lacks a character (an emoji under Latin-1), printing it used
    to raise UnicodeEncodeError and end the run. Now human output escapes it and JSON is ASCII."""
    stdin = "café ☕ order\n😀 emoji\nplain ascii\n".encode()
    env = {"PYTHONIOENCODING": encoding}
    r = run(dp_bundle, stdin=stdin, env_extra=env)
    assert r.returncode == 0 and "Traceback" not in r.stderr.decode(), r.stderr.decode()
    lines = r.stdout.decode(encoding).splitlines()
    assert len(lines) == 3 and lines[2].endswith("\tplain ascii")
    assert lines[1].endswith("\t\\U0001f600 emoji")
    r = run(dp_bundle, "--json", stdin=stdin, env_extra=env)
    assert r.returncode == 0, r.stderr.decode()
    assert [json.loads(x)["text"] for x in r.stdout.decode("ascii").splitlines()] == \
        ["café ☕ order", "😀 emoji", "plain ascii"]


def test_reader_closing_the_pipe_early(dp_bundle, tmp_path):
    """`classify < texts | head -1`: the CLI stops quietly when its reader goes away (it printed a
    BrokenPipeError traceback before)."""
    src = tmp_path / "many.txt"
    src.write_text("".join(f"line number {i}\n" for i in range(3000)))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    with src.open("rb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "runtime.classify", "--bundle", str(dp_bundle)], stdin=f,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env)
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=300) == 1
    assert first.endswith(b"\tline number 0\n")
    assert "Traceback" not in err and "Broken" not in err, err


def test_reader_closing_the_pipe_before_info(dp_bundle):
    """`classify --info | head -5`: the same quiet stop on the --info path (it printed a
    BrokenPipeError traceback before), whichever write or the final flush meets the closed pipe."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "runtime.classify", "--bundle", str(dp_bundle), "--info"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    proc.stdout.close()  # gone before the CLI writes anything
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 1
    assert "Traceback" not in err and "Broken" not in err, err


# ----------------------------------------------------------------------------- Python API


@pytest.fixture(scope="module")
def clf(dp_bundle):
    return Classifier.load(dp_bundle, threads=1)


@pytest.mark.parametrize("raw,outcome,phrase", LINES, ids=[f"line{n}" for n in range(1, len(LINES) + 1)])
def test_api_same_texts(clf, raw, outcome, phrase):
    try:
        text = expected_text(raw)
    except UnicodeDecodeError:
        pytest.skip("invalid UTF-8 is a property of bytes; the API takes str (see test_api_refusals)")
    if outcome == OK:
        (p,) = clf.classify([text])
        assert p.label in clf.labels and set(p.scores) == set(clf.labels)
    else:
        with pytest.raises(InputError, match=phrase.replace("(", r"\(").replace(")", r"\)")):
            clf.classify([text])


@pytest.mark.parametrize("text,code", [
    ("\ud800 lone surrogate", "query.unicode"),
    ("ok \udce9", "query.unicode"),
    (None, "query.type"),
    (b"bytes", "query.type"),
    (42, "query.type"),
    ("\u3000", "query.empty"),
    ("\u200b\u2060", "query.empty"),
    ("😀" * (MAX_TEXT_CHARS + 1), "query.too_long"),
])
def test_api_refusals(clf, text, code):
    with pytest.raises(InputError) as info:
        clf.classify([text])
    assert info.value.code == code and info.value.path == ""


def test_api_batch_names_the_bad_text(clf):
    with pytest.raises(InputError, match="text 2: there is nothing to classify") as info:
        clf.classify(["fine", "also fine", " \t "])
    assert info.value.code == "query.empty"
    assert clf.classify([]) == []
    assert clf.classify(["😀" * MAX_TEXT_CHARS])[0].label in clf.labels  # 1M characters, 4 MB of UTF-8
