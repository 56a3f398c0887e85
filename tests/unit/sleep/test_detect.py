"""Conflict heuristics: negation, dates, numbers, opposite words, values, subsumption."""

from __future__ import annotations

import pytest

from memory.conflicts.detect import classify, dates, numbers


@pytest.mark.parametrize(
    ("a", "b", "expected", "why"),
    [
        ("Ann eats meat.", "Ann doesn't eat meat anymore.", "contradictory", "negates"),
        ("Ann eats meat.", "Ann no longer eats meat.", "contradictory", "negates"),
        ("Ann's exam is on May 3rd.", "Ann's exam is on 5 June.", "contradictory", "dates"),
        ("Ann started in 2019.", "Ann started in 2021.", "contradictory", "dates"),
        ("Ann has two cats.", "Ann has 3 cats.", "contradictory", "numbers"),
        ("Ann loves opera.", "Ann hates opera.", "contradictory", "opposite"),
        ("Ann lives in Rome.", "Ann lives in Milan.", "contradictory", "values"),
        ("Ann drives a red car.", "Ann drives a green car.", "contradictory", "values"),
        ("Ann has a cat.", "Ann has a cat named Tom, a tabby.", "subsumes", "contains"),
        ("Ann likes cats.", "Ann likes dogs.", "ambiguous", "detail"),
        ("Ann loves opera.", "Ann really enjoys opera.", "compatible", "sentiment"),
        ("Ann plays chess on Fridays.", "On Fridays Ann plays chess with Leo.", "subsumes", ""),
        ("Ann lives in Rome.", "Ben lives in Milan.", "compatible", "different subjects"),
        ("Ann is married.", "Ann has two sons.", "compatible", "no shared subject"),
    ],
)
def test_heuristic_classes(a: str, b: str, expected: str, why: str) -> None:
    verdict = classify(a, b)
    assert verdict.classification == expected
    assert why in verdict.reason


def test_speakers_decide_the_subject_first() -> None:
    verdict = classify("I live in Rome.", "I live in Milan.", speaker_a="Ann", speaker_b="Ben")
    assert not verdict.related and verdict.classification == "compatible"
    same = classify("I live in Rome.", "I live in Milan.", speaker_a="Ann", speaker_b="ann")
    assert same.related and same.classification == "contradictory"


def test_subsumes_names_the_broader_side() -> None:
    assert classify("Ann has a cat named Tom.", "Ann has a cat.").broader == "a"
    assert classify("Ann has a cat.", "Ann has a cat named Tom.").broader == "b"


def test_dates_are_not_counted_as_numbers() -> None:
    assert dates("on 3 May 2024, a Friday") == {"may 3", "2024", "friday"}
    assert numbers("on 3 May 2024 she bought two bikes") == {"2"}
