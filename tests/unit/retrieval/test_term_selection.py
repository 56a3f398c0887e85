"""Which query terms select BM25 candidates: rarest first, bounded in matched notes."""

from memory.retrieval.bm25 import MATCH_MAX_NOTES, _selecting_terms


def test_rare_terms_select_until_the_note_budget_is_spent() -> None:
    counts = {"inc-4471": 3, "interview": 1500, "ben": 1900, "absent": 0}
    # 3 + 1500 fit; adding ben (1900) would match more than MATCH_MAX_NOTES notes.
    assert _selecting_terms(counts, n_docs=100_000) == ["inc-4471", "interview"]


def test_the_rarest_term_selects_even_beyond_the_budget() -> None:
    counts = {"ben": MATCH_MAX_NOTES * 2, "say": MATCH_MAX_NOTES * 3}
    assert _selecting_terms(counts, n_docs=100_000) == ["ben"]


def test_common_terms_select_only_when_no_term_is_selective() -> None:
    # In a small store every term is below the budget; terms in more than 8 % of the
    # notes (here 80 of 600) still do not select while a rarer one exists.
    assert _selecting_terms({"caroline": 80, "adoption": 4, "agency": 6}, n_docs=600) == [
        "adoption",
        "agency",
    ]
    assert _selecting_terms({"caroline": 80, "say": 90, "go": 120}, n_docs=600) == [
        "caroline",
        "say",
    ]


def test_no_known_term_selects_nothing() -> None:
    assert _selecting_terms({"zzz": 0}, n_docs=600) == []
