"""The pure parts of benchmarks/arm64_check.py: reading apt's mirror, picking the texts, and the
comparison and verdict rules.

CI runs the script itself once, after the test suite (.ci/run), against a real emulated
arm64 root; that needs root, QEMU and minutes, so it is not repeated here. These tests keep
the rules that decide pass or fail from drifting, on the real CLI's record shape.
"""

import sys

import pytest

from conftest import ROOT, SHARED

sys.path.insert(0, str(ROOT / "benchmarks"))
import arm64_check as ac  # noqa: E402


DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
"""


def test_mirror_is_the_stanza_that_serves_bookworm_itself():
    assert ac.mirror_from_deb822(DEB822) == "http://deb.debian.org/debian"
    security_only = DEB822.split("\n\n")[1]
    assert ac.mirror_from_deb822(security_only) is None  # bookworm-security is not the suite to bootstrap
    assert ac.mirror_from_deb822("Types: deb-src\nURIs: http://x/debian\nSuites: bookworm\n") is None


def record(text, scores):
    """One line of `python -m runtime.classify --json`."""
    return {"text": text, "label": max(scores, key=scores.get), "scores": scores}


def test_compare_counts_labels_and_score_differences():
    x86 = [record("a", {"p": 0.9, "q": 0.1}), record("b", {"p": 0.50, "q": 0.49}), record("c", {"p": 0.2, "q": 0.8})]
    arm = [record("a", {"p": 0.9, "q": 0.1}), record("b", {"p": 0.48, "q": 0.51}), record("c", {"p": 0.2, "q": 0.5})]
    c = ac.compare(x86, arm, tolerance=0.25)
    assert (c.texts, c.labels_identical) == (3, 2)
    assert c.max_score_diff == pytest.approx(0.3) and c.p50_score_diff == pytest.approx(0.02)
    (flip,) = c.differing_labels
    assert (flip["text"], flip["x86_label"], flip["arm64_label"]) == ("b", "p", "q")
    assert flip["x86_margin"] == pytest.approx(0.01)  # a near-tie on x86
    assert [r["text"] for r in c.beyond_tolerance] == ["c"]


def test_compare_refuses_misaligned_answers():
    with pytest.raises(ac.CheckError, match="answered 1 texts and arm64 2"):
        ac.compare([record("a", {"p": 1.0, "q": 0.0})], [record("a", {"p": 1.0, "q": 0.0})] * 2, 0.25)
    with pytest.raises(ac.CheckError, match="another text"):
        ac.compare([record("a", {"p": 1.0, "q": 0.0})], [record("b", {"p": 1.0, "q": 0.0})], 0.25)


def test_verdict_passes_rounding_and_fails_what_is_not():
    x86 = [record(str(i), {"p": 0.7, "q": 0.3}) for i in range(49)] + [record("tie", {"p": 0.501, "q": 0.499})]
    arm = [record(str(i), {"p": 0.7, "q": 0.3}) for i in range(49)] + [record("tie", {"p": 0.499, "q": 0.501})]
    c = ac.compare(x86, arm, ac.SCORE_TOLERANCE)
    c.differing_labels[0]["embedding_cosine"] = 0.9995  # the same function with other rounding
    assert ac.verdict(c, check_cosine=0.9994) == []
    assert "check cosine" in ac.verdict(c, check_cosine=0.97)[0]
    c.differing_labels[0]["embedding_cosine"] = 0.95  # another function: a broken kernel
    assert "embedding cosine 0.95" in ac.verdict(c, check_cosine=0.9994)[0]
    many = ac.compare(x86[:10], [record(r["text"], {"p": r["scores"]["q"], "q": r["scores"]["p"]}) for r in x86[:10]],
                      ac.SCORE_TOLERANCE)
    assert any("labels identical for only 0/10" in p for p in ac.verdict(many, check_cosine=0.9994))


@pytest.mark.skipif(not (SHARED / "trec" / "test.jsonl").exists(), reason="needs ../shared/data/trec")
def test_texts_are_spread_over_the_test_split_one_line_each():
    every = ac.read_texts(SHARED / "trec", None)
    some = ac.read_texts(SHARED / "trec", 100)
    assert len(every) == 500 and len(some) == 100 and some[0] == every[0] and set(some) <= set(every)
    assert all("\n" not in t and t == " ".join(t.split()) for t in every)
