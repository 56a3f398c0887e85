"""The ask of a long prompt: trailing paragraphs within the budget, never the pasted text."""

from __future__ import annotations

import pytest

from memory.retrieval.focus import focus_query, text_tail

LOG = "\n".join(f"2026-12-03 10:{i:02d}:00 GET /v1/items 200 OK in {i} ms" for i in range(60))


def test_a_text_that_fits_is_its_own_focus() -> None:
    assert focus_query("  What is my dog called?\n", 512) == "What is my dog called?"
    short = "Hi!\n\nI'm going to Porto.\n\nWhat should I pack?"
    assert focus_query(short, 512) == short


def test_pasted_text_before_the_last_paragraph_is_left_out() -> None:
    prompt = f"Here is the log:\n\n{LOG}\n\nWhy did the deploy to staging fail yesterday?"
    assert focus_query(prompt, 512) == "Why did the deploy to staging fail yesterday?"


def test_windows_line_breaks_separate_paragraphs_too() -> None:
    prompt = LOG.replace("\n", "\r\n") + "\r\n\r\nWhy did the deploy to staging fail yesterday?"
    assert focus_query(prompt, 512) == "Why did the deploy to staging fail yesterday?"


def test_earlier_paragraphs_that_fit_are_kept_whole() -> None:
    prompt = f"{LOG}\n\nWe moved the API to Frankfurt.\n\nWhich region did we pick before?"
    assert focus_query(prompt, 512) == (
        "We moved the API to Frankfurt.\n\nWhich region did we pick before?"
    )


def test_a_last_paragraph_without_content_words_takes_the_end_of_the_one_before() -> None:
    prompt = f"{LOG}\n\nWhy?"
    focus = focus_query(prompt, 200)
    assert focus.endswith("\n\nWhy?") and len(focus) <= 200
    assert focus.split("\n\n")[0] == text_tail(LOG, 200 - len("Why?") - len("\n\n"))


def test_one_long_paragraph_gives_its_tail_from_a_words_start() -> None:
    prompt = "word " * 300 + "so where does my sister live?"
    focus = focus_query(prompt, 100)
    assert focus.endswith("so where does my sister live?") and len(focus) <= 100
    assert focus.startswith("word ")


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("where does Alice live?", 100, "where does Alice live?"),
        ("where does Alice live?", 9, "live?"),  # the cut falls inside "Alice"
        ("where does Alice live?", 11, "Alice live?"),  # the cut falls on a space
        ("sha " + "a" * 40, 10, "a" * 10),  # one token longer than the cap
    ],
)
def test_text_tail(text: str, limit: int, expected: str) -> None:
    assert text_tail(text, limit) == expected


@pytest.mark.parametrize("limit", [16, 64, 512])
def test_the_focus_never_exceeds_its_budget_nor_is_empty(limit: int) -> None:
    for prompt in (LOG, f"{LOG}\n\n?", "x" * 5000, f"a\n\n{'b' * 3000}\n\nc d e f"):
        focus = focus_query(prompt, limit)
        assert focus and len(focus) <= limit, (prompt[:40], focus)
