"""Rules that know English only leave other languages exactly as said."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.episodes.extraction import extract_facts
from memory.language import looks_english, text_language
from memory.retrieval.text import normalise

WHEN = datetime(2026, 1, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "I love Paris",
        "My dog is Biscuit",
        "I'm off to Lisbon",
        "Me too!",
        "I adopted a beagle called Biscuit in 2021.",
    ],
)
def test_english(text: str) -> None:
    assert looks_english(text)


@pytest.mark.parametrize(
    "text",
    [
        "así que nunca me sugieras recetas con cacahuete",
        "ne me propose jamais de recettes avec des arachides",
        "Ich habe einen Hund namens Biscuit",
        "Io amo la pizza con i funghi",
        "我对花生过敏\uff0c所以不要给我推荐花生食谱",
        "私はピーナッツアレルギーです",
        "Мой пёс любит гулять в парке",
    ],
)
def test_not_english(text: str) -> None:
    assert not looks_english(text)


@pytest.mark.parametrize(
    "text",
    [
        "Soy alérgica al cacahuete, así que nunca me sugieras recetas con cacahuete.",
        "Je suis allergique, alors ne me propose jamais de recettes avec des arachides.",
        "Ich bin allergisch gegen Erdnüsse, schlag mir nie Rezepte damit vor.",
        "我对花生过敏\uff0c所以不要给我推荐花生食谱。",
        "Я живу в Москве и работаю врачом.",
    ],
)
def test_first_person_resolution_leaves_other_languages_as_said(text: str) -> None:
    [fact] = extract_facts(text, role="user", speaker="Alice", occurred_at=WHEN, metadata={})
    assert fact.text == normalise(text)  # NFKC (a full-width comma is ","), no word changed


def test_english_is_still_resolved() -> None:
    [fact] = extract_facts(
        "I love my dog.", role="user", speaker="Alice", occurred_at=WHEN, metadata={}
    )
    assert fact.text == "Alice loves Alice's dog."


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Sam: 我的妹妹克拉拉在波尔图当护士。 (7 May 2023)", "zh"),
        ("妹のクララはポルトで看護師として働いています。", "ja"),
        ("Моя сестра Клара работает медсестрой в Porto.", "ru"),
        ("Meine Schwester arbeitet in Porto und ist nicht verheiratet.", "de"),
        ("así que nunca me sugieras recetas", "es"),
        ("ne me propose jamais de recettes", "fr"),
        ("I love Paris", "en"),
        ("Biscuit!", "en"),
        ("안녕하세요", None),  # no rule knows Korean: the embedder centres it on the mean
        ("1234 !!", None),
    ],
)
def test_text_language_by_script_then_function_words(text: str, language: str | None) -> None:
    assert text_language(text) == language
