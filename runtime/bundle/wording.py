"""How a bundle words its privacy unit and neighbour relation: derived from K, never free.

A reader shows who a bundle protects; a bundle that said "one person (all of their records)"
while its numbers are record-level would make a reader repeat a guarantee the release does not
give. So the words are a function of ``privacy.max_records_per_unit`` (K) and the unit's kind
(format/1/schema.json "wording"): the exporter writes them with `privacy_unit` and
`neighbour_relation`, and a reader refuses a bundle whose words are not these (`check`,
relation ``wording``). The composition is derived the same way, from the releases, the head and
the batches (`composition`, relation ``composition``): a bundle with a head cannot call itself
pure in its own words. What delta means is worded once too (`DELTA_SUMMARY`, `DELTA_STATEMENT`):
delta is the additive slack in the definition, never "the probability that the bound fails".

Example:
    >>> privacy_unit(3), neighbour_relation(3, "'user_id'")
    ('one person, up to 3 records', "add or remove one person (all their records, at most 3; persons identified by the column 'user_id')")
    >>> privacy_unit(None), neighbour_relation(None)
    ('one record', 'add or remove one record')
"""

from __future__ import annotations

from typing import Iterable

from runtime.bundle.schema import STATISTICS, WORDING
from runtime.errors import BundleError


def _k(template: str, k: int) -> str:
    return template.replace("{K}", str(k))


def privacy_unit(k: int | None) -> str:
    """The unit: one record (``k`` None), or one person with up to ``k`` records."""
    return WORDING["record"]["privacy_unit"] if k is None else _k(WORDING["person"]["privacy_unit"], k)


def neighbour_relation(k: int | None, column: str = "") -> str:
    """The neighbour relation; ``column`` names how persons are identified (as the exporter
    quotes the unit column)."""
    if k is None:
        return WORDING["record"]["neighbour_relation"]
    person = WORDING["person"]
    return _k(person["neighbour_relation_prefix"], k) + column + person["neighbour_relation_suffix"]


#: What delta is, in the contract's words (format/1/schema.json "wording" "delta"): a short form for
#: one-line summaries and the statement of the definition. Every reader shows these, never its own.
DELTA_SUMMARY: str = WORDING["delta"]["summary"]
DELTA_STATEMENT: str = WORDING["delta"]["statement"]


def check(unit: str, relation: str, k: int) -> None:
    """Refuse (``relation.wording``) words that are not those of K: record words need K = 1;
    person words must state this K and name how persons are identified."""
    person = WORDING["person"]
    if unit == privacy_unit(None):
        if k != 1:
            raise BundleError("relation.wording", "privacy.privacy_unit",
                              f"field 'privacy.privacy_unit' says one record, but field 'privacy.max_records_per_unit' "
                              f"is {k}: the privacy facts contradict each other")
        if relation != neighbour_relation(None):
            raise BundleError("relation.wording", "privacy.neighbour_relation",
                              f"field 'privacy.neighbour_relation' must be {neighbour_relation(None)!r} for a unit of "
                              f"one record: the privacy facts contradict each other")
        return
    if unit != privacy_unit(k):
        raise BundleError("relation.wording", "privacy.privacy_unit",
                          f"field 'privacy.privacy_unit' must be {privacy_unit(None)!r} or {privacy_unit(k)!r} with "
                          f"{k} record(s) per unit: the privacy facts contradict each other")
    prefix, suffix = _k(person["neighbour_relation_prefix"], k), person["neighbour_relation_suffix"]
    if not (relation.startswith(prefix) and relation.endswith(suffix) and len(relation) > len(prefix) + len(suffix)):
        raise BundleError("relation.wording", "privacy.neighbour_relation",
                          f"field 'privacy.neighbour_relation' must read {prefix}...{suffix} for {k} record(s) per "
                          f"person: the privacy facts contradict each other")


def composition(releases: Iterable[str], head: bool, batches: int = 1) -> str:
    """How the releases compose, in the contract's words: the pure releases named in
    ``releases``, in the contract's `statistics` order whatever order they come in (sequential),
    then the head when there is one; with B > 1 batches, parallel over them.

    Example:
        >>> composition(["class_counts", "class_sums"], head=False)
        'sequential: class_counts, then class_sums; their epsilons add up to epsilon'
    """
    words, named = WORDING["composition"], set(releases)
    names = [s for s in STATISTICS if s in named]
    within = words["head" if head else "pure"].replace("{releases}", words["separator"].join(names))
    if batches > 1:
        return words["batches"].replace("{batches}", str(batches)).replace("{within}", within)
    return within


def check_composition(text: str | None, releases: Iterable[str], head: bool, batches: int) -> None:
    """Refuse (``relation.composition``) a composition that is not the contract's words for
    these releases: free words could state a guarantee the numbers contradict."""
    if text is not None and text != composition(releases, head, batches):
        raise BundleError("relation.composition", "privacy.composition",
                          f"field 'privacy.composition' must be {composition(releases, head, batches)!r}: the "
                          f"privacy facts contradict each other")
