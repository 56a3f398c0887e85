"""The shared lexical analyser: write-time and query-time terms must agree."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.retrieval.text import (
    STOPWORDS,
    analyse,
    content_tokens,
    date_terms,
    split_sentences,
    stem,
    tokenize,
    verbatim_tokens,
)


def test_tokenize_lowercases_and_is_unicode_aware() -> None:
    assert tokenize("Café in São Paulo, 東京!") == ["café", "in", "são", "paulo", "東京"]


def test_tokenize_keeps_ids_whole_and_also_their_parts() -> None:
    tokens = tokenize("Ticket INC-4471 and build a1b2c3 on v2.3")
    assert "inc-4471" in tokens and "inc" in tokens and "4471" in tokens
    assert "a1b2c3" in tokens
    assert "v2.3" in tokens


def test_tokenize_keeps_emails_and_splits_plain_hyphenated_words() -> None:
    tokens = tokenize("Mail bob.smith@example.com about self-care.")
    assert "bob.smith@example.com" in tokens and "example" in tokens
    assert "self" in tokens and "care" in tokens and "self-care" not in tokens


def test_tokenize_numbers() -> None:
    assert tokenize("It cost $1,200 at 1:56 pm, 3.5 stars.") == [
        "it", "cost", "1200", "at", "1:56", "pm", "3.5", "stars",
    ]  # fmt: skip


def test_tokenize_folds_typographic_apostrophes() -> None:
    assert tokenize("Melanie\u2019s dog") == tokenize("Melanie's dog")


def test_stopwords_cover_question_words_but_not_months() -> None:
    assert 150 <= len(STOPWORDS) <= 320
    for word in ("what", "when", "where", "who", "why", "how", "which", "did", "the", "i'm"):
        assert word in STOPWORDS
    for word in ("may", "june", "paint", "like", "love", "favorite"):
        assert word not in STOPWORDS


def test_stem_strips_possessives_and_leaves_ids_alone() -> None:
    assert stem("melanie's") == stem("melanie") == "melani"
    assert stem("running") == "run"
    assert stem("goes") == stem("go")
    assert stem("inc-4471") == "inc-4471"
    assert stem("2023") == "2023"


def test_stem_is_cached() -> None:
    stem("cacheprobe")
    hits = stem.cache_info().hits
    stem("cacheprobe")
    assert stem.cache_info().hits == hits + 1


def test_analyse_removes_stopwords_stems_and_keeps_numbers() -> None:
    assert analyse("When did Melanie's kids paint a sunrise in 2023?") == [
        "melani", "kid", "paint", "sunris", "2023",
    ]  # fmt: skip


def test_analyse_keeps_term_frequencies_and_order() -> None:
    assert analyse("dogs and dogs and cats") == ["dog", "dog", "cat"]


def test_query_terms_match_index_terms_across_word_forms() -> None:
    note = analyse("Melanie: Melanie loves painting sunsets with her kids 8 May 2023")
    query = analyse("What does Melanie love to paint?")
    assert set(query) <= set(note)


def test_content_tokens_drop_function_words_only() -> None:
    assert content_tokens("Thanks! You too!") == []
    assert content_tokens("Where is the pottery class?") == ["pottery", "class"]


def test_verbatim_tokens_find_ids_codes_and_emails_in_original_casing() -> None:
    text = "INC-4471 a1b2c3 bob@example.com LGBTQ iPhone get_settings 2023 OK I 12 x INC-4471"
    assert verbatim_tokens(text) == [
        "INC-4471", "a1b2c3", "bob@example.com", "LGBTQ", "iPhone", "get_settings", "2023",
    ]  # fmt: skip


def test_verbatim_tokens_ignore_ordinary_words() -> None:
    assert verbatim_tokens("I went hiking with my dog Max yesterday.") == []


def test_date_terms_spell_out_day_month_year_and_weekday() -> None:
    terms = date_terms(datetime(2023, 5, 8, 13, 56))
    assert terms.startswith("8 May 2023")
    assert "May 2023" in terms and "Monday" in terms
    assert analyse(terms)[:3] == ["8", "may", "2023"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Hey Mel! Good to see you! How are you?",
            ["Hey Mel!", "Good to see you!", "How are you?"],
        ),
        (
            "Dr. Smith prescribed 2.5 mg, e.g. daily. Ok.",
            ["Dr. Smith prescribed 2.5 mg, e.g. daily.", "Ok."],
        ),
        (
            "See https://x.com/a.b. Then mail bob@x.org. Done",
            ["See https://x.com/a.b.", "Then mail bob@x.org.", "Done"],
        ),
        (
            "I was thinking... maybe not. Wait... Then he left",
            ["I was thinking... maybe not.", "Wait...", "Then he left"],
        ),
        (
            "I love it \U0001f60d Can't wait!! Really?!",
            ["I love it \U0001f60d", "Can't wait!!", "Really?!"],
        ),
        (
            "Line one\nLine two. J. K. Rowling wrote it",
            ["Line one", "Line two.", "J. K. Rowling wrote it"],
        ),
        ("We bought eggs, milk, etc. and left", ["We bought eggs, milk, etc. and left"]),
        ("   ", []),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@given(st.text(alphabet=st.sampled_from(list("ab .!?\n\u2026:/@-'1")), max_size=80))
def test_split_sentences_never_loses_a_token(text: str) -> None:
    joined = " ".join(split_sentences(text))
    assert sorted(tokenize(joined)) == sorted(tokenize(text))


def test_a_token_too_long_to_index_is_left_out() -> None:
    from memory.retrieval.text import MAX_TOKEN_CHARS, tokenize

    blob = "x" * (MAX_TOKEN_CHARS + 1)
    assert tokenize(f"error {blob} at line 3") == ["error", "at", "line", "3"]
    assert tokenize("a" * MAX_TOKEN_CHARS) == ["a" * MAX_TOKEN_CHARS]


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("我喜欢喝茶。", ["我喜", "喜欢", "欢喝", "喝茶"]),
        ("东京", ["东京"]),
        ("茶", ["茶"]),
        ("iPhone手机很好", ["iphone", "手机", "机很", "很好"]),
        ("猫はモチ、犬はポチ", ["猫は", "はモ", "モチ", "犬は", "はポ", "ポチ"]),
        ("ข้าวผัด", ["ข้", "้า", "าว", "วผ", "ผั", "ัด"]),
    ],
)
def test_scripts_without_spaces_are_tokenized_as_character_bigrams(
    text: str, tokens: list[str]
) -> None:
    assert tokenize(text) == tokens


def test_a_query_shares_bigrams_with_the_sentence_that_holds_its_words() -> None:
    stored = set(analyse("我妹妹住在杭州，她是一名牙医。"))  # noqa: RUF001
    assert {"妹妹", "杭州", "牙医"} <= stored
    assert set(analyse("牙医")) <= stored


def test_only_ascii_words_are_stemmed_as_english() -> None:
    assert analyse("running dogs") == ["run", "dog"]
    assert stem("niños") == "niños" and stem("hände") == "hände"
    assert analyse("Книги и собаки") == ["книги", "и", "собаки"]


@given(st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x4E40), max_size=12))
def test_every_character_of_a_cjk_run_is_in_some_bigram(text: str) -> None:
    assert set(text) == set("".join(tokenize(text)))
