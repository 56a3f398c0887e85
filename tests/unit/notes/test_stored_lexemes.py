"""The lexemes of a stored tsvector are read back as they were written, whatever they
hold: the BM25 statistics are moved by what a note stores, not by re-analysing it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory.notes.lexicon import stored_lexemes, tsvector_literal


def test_postgresql_output_is_read() -> None:
    stored = "'4471':3 'bank':1,5 'o''neil':2 'x\\\\y':4 '喝茶':6"
    assert stored_lexemes(stored) == {"4471", "bank", "o'neil", "x\\y", "喝茶"}
    assert stored_lexemes(None) == set() and stored_lexemes("") == set()


@given(st.lists(st.text(min_size=1, max_size=8).filter(lambda t: "\x00" not in t), max_size=20))
def test_a_literal_reads_back_as_its_terms(terms: list[str]) -> None:
    assert stored_lexemes(tsvector_literal(terms)) == set(terms)
