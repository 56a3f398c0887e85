"""Conflict heuristics: negation, dates, numbers, opposite words, values, subsumption."""

from __future__ import annotations

import difflib
import random

import pytest

from memory.conflicts.detect import MAX_SLOT_TOKENS, _single_swap, classify, dates, numbers


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


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # Small talk from a LoCoMo conversation, once flagged "one statement negates the
        # other" (63 such pairs in its first conversation, none a contradiction).
        ("We'll make some awesome memories!", "Life's all about creating memories. Great!"),
        ("Been a busy week since we talked.", "Long time no talk. Lots has been going on!"),
        ("Can't wait to see you soon. Take it easy.", "Looking forward to seeing you! See ya!"),
        ("Keep going for your dreams and don't quit!", "Keep going!"),
        ("Hey John, Maria is here for you!", "Hey John, Maria hasn't talked to you in a while."),
        ("Take care, John, bye!", "Take care, see ya!"),
        ("When are you opening the studio?", "Jon is not opening the studio yet."),
    ],
)  # fmt: skip
def test_small_talk_and_questions_contradict_nothing(a: str, b: str) -> None:
    assert classify(a, b).classification != "contradictory"
    assert classify(b, a).classification != "contradictory"


def test_a_contradiction_names_its_claim() -> None:
    verdict = classify("Ann eats meat.", "Ann doesn't eat meat anymore.")
    assert verdict.reason == "one statement negates the other (eat, meat)"
    assert "cat" in classify("Ann has two cats.", "Ann has 3 cats.").reason
    # In a longer note, the one sentence that says the claim decides.
    long = classify("Thanks! Ann eats meat. See you soon!", "Ann doesn't eat meat anymore.")
    assert long.classification == "contradictory"


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


def _difflib_swap(a: list[str], b: list[str]) -> tuple[list[str], list[str], str] | None:
    """The reference: difflib's opcodes, exactly one short "replace"."""
    matcher = difflib.SequenceMatcher(a=[w.lower() for w in a], b=[w.lower() for w in b])
    edits = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if len(edits) != 1 or edits[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = edits[0]
    if i2 - i1 > MAX_SLOT_TOKENS or j2 - j1 > MAX_SLOT_TOKENS:
        return None
    return a[i1:i2], b[j1:j2], a[i1 - 1].lower() if i1 > 0 else ""


def test_the_single_swap_equals_difflibs_single_replace() -> None:
    """On texts without a repeated word (alignment is then unambiguous); with repeats,
    the prefix/suffix alignment is kept where difflib may match a repeat elsewhere."""
    rng = random.Random(5)
    words = ["Ann", "likes", "the", "red", "car", "in", "Rome", "Milan", "blue", "a"]
    checked = 0
    for _ in range(20000):
        a = rng.sample(words, rng.randint(1, 8))
        b = list(a)
        for _ in range(rng.randint(0, 3)):  # a few edits: replace, insert or delete a word
            unused = [w for w in words if w not in b]
            edit = rng.choice(["replace", "insert", "delete"])
            if edit == "replace" and b and unused:
                b[rng.randrange(len(b))] = rng.choice(unused)
            elif edit == "insert" and unused:
                b.insert(rng.randrange(len(b) + 1), rng.choice(unused))
            elif edit == "delete" and len(b) > 1:
                b.pop(rng.randrange(len(b)))
        if abs(len(a) - len(b)) > MAX_SLOT_TOKENS:
            continue
        assert _single_swap(a, b) == _difflib_swap(a, b), (a, b)
        checked += _difflib_swap(a, b) is not None
    assert checked > 1000
    assert _single_swap(["Ann", "likes", "cats"], ["ann", "likes", "dogs"]) == (
        ["cats"],
        ["dogs"],
        "likes",
    )
