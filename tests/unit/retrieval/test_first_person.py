"""The dense route reads a user's "I" as the name their own words are stored under."""

from __future__ import annotations

import pytest

from memory.retrieval.first_person import _dominant, dense_query, speaks_in_first_person


@pytest.mark.parametrize(
    ("query", "expected"),
    [("Tell me about my dog", True), ("What did I say about the database?", True),
     ("Which band do I like?", True), ("What did Caroline paint?", False),
     ("Where do we meet?", False), ("¿Cuál es el nombre de mi perro?", False)],
)  # fmt: skip
def test_only_an_english_first_person_is_resolved(query: str, expected: bool) -> None:
    assert speaks_in_first_person(query) is expected


def test_the_query_is_resolved_as_the_write_path_resolves_the_users_words() -> None:
    assert dense_query("What is my dog called?", "Alice") == "What is Alice's dog called?"
    assert dense_query("Which band do I like?", "Alice") == "Which band does Alice like?"
    assert dense_query("Tell me about my dog", None) == "Tell me about my dog"


def test_a_name_is_the_users_only_when_it_clearly_is() -> None:
    assert _dominant(["Alice"] * 9 + ["Bob"]) == "Alice"
    # Two people in one log (LoCoMo) or a group chat: nobody is "I".
    assert _dominant(["Caroline"] * 5 + ["Melanie"] * 5) is None
    assert _dominant([]) is None and _dominant([None, None]) is None
