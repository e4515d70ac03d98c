"""Dataset and label readers: streamed, and every problem names file and line."""

import json

import pytest

from exporter.dataset import DatasetError, ReadStats, read_labels, read_records
from conftest import DATA


@pytest.fixture
def labels(tmp_path):
    p = tmp_path / "labels.txt"
    p.write_text("billing\tQuestions about invoices and payments.\nbug\tSomething in the app is broken.\n"
                 "account\tLogin, password and profile questions.\n", encoding="utf-8")
    return read_labels(p)


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_label_file_with_and_without_descriptions(tmp_path, labels):
    assert labels.names == ("billing", "bug", "account")
    assert labels.descriptions[1] == "Something in the app is broken."
    plain = tmp_path / "plain.txt"
    plain.write_text("\ufeffa\nb\n\n\n", encoding="utf-8")  # BOM and trailing blank lines are fine
    assert read_labels(plain).names == ("a", "b") and read_labels(plain).descriptions is None
    assert read_labels(DATA / "labels.txt").names[0] == "alarm_timer"


@pytest.mark.parametrize("text,message", [
    ("a\na\n", "labels.txt:2: duplicate label 'a'"),
    ("a\n\nb\n", "labels.txt:2: blank line between labels"),
    ("only\n", "at least two labels"),
    ("a\tdesc\nb\n", "'b' has none"),
    ("\tdesc\nb\n", "labels.txt:1: empty label name"),
])
def test_bad_label_files(tmp_path, text, message):
    p = tmp_path / "labels.txt"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        read_labels(p)


def test_jsonl_records_with_label_index_and_line(tmp_path, labels):
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": "I was charged twice", "label": "billing"}, "",
                                           {"text": "app crashes on start", "label": "bug", "extra": 1}])
    recs = list(read_records(p, labels))
    assert [(r.text, r.label, r.line) for r in recs] == [("I was charged twice", 0, 1), ("app crashes on start", 1, 3)]


def test_csv_and_tsv_with_configurable_columns(tmp_path, labels):
    p = tmp_path / "d.csv"
    p.write_text('id,body,category\n1,"Refund, please",billing\n2,"multi\nline text",bug\n3,reset my password,account\n',
                 encoding="utf-8")
    recs = list(read_records(p, labels, text_field="body", label_field="category"))
    assert [(r.text, r.label, r.line) for r in recs] == [("Refund, please", 0, 2), ("multi\nline text", 1, 3),
                                                         ("reset my password", 2, 5)]
    t = tmp_path / "d.tsv"
    t.write_text("text\tlabel\nwrong total on invoice\tbilling\n", encoding="utf-8")
    assert [r.label for r in read_records(t, labels)] == [0]
    with pytest.raises(DatasetError, match="d.csv:1: no column 'text' in the header"):
        list(read_records(p, labels))


def test_unknown_label_is_an_error_naming_file_and_line_or_skipped_with_a_count(tmp_path, labels):
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": "ok", "label": "bug"}, {"text": "hmm", "label": "spam"},
                                           {"text": "x", "label": "spam"}, {"text": "fine", "label": "account"}])
    with pytest.raises(DatasetError, match=r"d.jsonl:2: the label \(field 'label'\) is not in the label list") as err:
        list(read_records(p, labels))
    assert "spam" not in str(err.value)  # the label value is private data
    stats = ReadStats()
    assert [r.line for r in read_records(p, labels, skip_unknown_labels=True, stats=stats)] == [1, 4]
    assert stats.skipped_unknown_label == 2 and stats.distinct_unknown_labels == "1" and stats.records == 2
    assert "spam" not in repr(stats)


def test_empty_text_is_an_error_or_skipped_with_a_count(tmp_path, labels):
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": "  ", "label": "bug"}, {"text": "real", "label": "bug"}])
    with pytest.raises(DatasetError, match=r"d.jsonl:1: the text \(field 'text'\): empty text"):
        list(read_records(p, labels))
    stats = ReadStats()
    assert len(list(read_records(p, labels, skip_empty_texts=True, stats=stats))) == 1
    assert stats.skipped_empty_texts == 1


@pytest.mark.parametrize("line,message", [
    ('{"text": "unterminated', "d.jsonl:2: not valid JSON"),
    ('["text", "bug"]', "d.jsonl:2: expected a JSON object, got list"),
    ('{"label": "bug"}', "d.jsonl:2: missing field 'text'"),
    ('{"text": 5, "label": "bug"}', r"d.jsonl:2: the text \(field 'text'\) must be a string, got int"),
    ('{"text": "t", "label": ["bug"]}', r"d.jsonl:2: the label \(field 'label'\) must be a string, got list"),
])
def test_malformed_jsonl_lines(tmp_path, labels, line, message):
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": "good", "label": "bug"}, line])
    with pytest.raises(DatasetError, match=message):
        list(read_records(p, labels))


def test_invalid_utf8_and_bad_csv_rows(tmp_path, labels):
    p = tmp_path / "d.jsonl"
    p.write_bytes(b'{"text": "ok", "label": "bug"}\n{"text": "caf\xe9", "label": "bug"}\n')
    with pytest.raises(DatasetError, match="d.jsonl:2: not valid UTF-8"):
        list(read_records(p, labels))
    c = tmp_path / "d.csv"
    c.write_text("text,label\nfine,bug\ntoo,many,columns\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="d.csv:3: 3 columns, the header has 2"):
        list(read_records(c, labels))


def test_reading_is_streamed(tmp_path, labels):
    """The first record arrives before the reader has looked at a broken line further down."""
    p = write_jsonl(tmp_path / "d.jsonl", [{"text": "first", "label": "bug"}] + ["{broken"] * 3)
    it = read_records(p, labels)
    assert next(it).text == "first"
    with pytest.raises(DatasetError, match=":2:"):
        next(it)


def test_unknown_extension_needs_format(tmp_path, labels):
    p = tmp_path / "d.txt"
    p.write_text("x\n")
    with pytest.raises(DatasetError, match="pass --format"):
        list(read_records(p, labels))
    with pytest.raises(DatasetError, match="cannot open"):
        list(read_records(tmp_path / "missing.jsonl", labels))
