"""Deterministic fact extraction: fillers go, information and speakers stay."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.episodes.extraction import (
    CHUNK_CHARS,
    ExtractedFact,
    chunk_units,
    extract_facts,
    is_filler,
    resolve_first_person,
)
from memory.retrieval.text import analyse, tokenize

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def facts(
    content: str,
    *,
    role: str = "user",
    speaker: str | None = "Caroline",
    metadata: dict[str, Any] | None = None,
    max_facts: int = 1,
) -> list[ExtractedFact]:
    return extract_facts(
        content,
        role=role,
        speaker=speaker,
        occurred_at=WHEN,
        metadata=metadata or {},
        max_facts_per_episode=max_facts,
    )


@pytest.mark.parametrize(
    "sentence",
    ["Hey Mel!", "Good to see you!", "Thanks, Maria!", "Wow, that's cool, Caroline!", "lol",
     "ok", "Haha", "Good morning!", "Bye for now.", "Yeah, John!", "\U0001f60a", "Sounds great!"],
)  # fmt: skip
def test_fillers_are_recognised(sentence: str) -> None:
    assert is_filler(sentence)


@pytest.mark.parametrize(
    "sentence",
    ["I went to a LGBTQ support group yesterday.", "Wow, love that painting!",
     "Sure, Paris in June.", "Where is the pottery class?", "No, I sold the car."],
)  # fmt: skip
def test_content_sentences_are_not_fillers(sentence: str) -> None:
    assert not is_filler(sentence)


def test_one_fact_per_turn_with_fillers_stripped_and_speaker_resolved() -> None:
    [fact] = facts(
        "Hey Mel! Good to see you! I went to a LGBTQ support group yesterday. It was powerful."
    )
    assert fact.text == "Caroline went to a LGBTQ support group yesterday. It was powerful."
    assert fact.original.startswith("Hey Mel!")
    assert fact.speaker == "Caroline"
    assert fact.occurred_at == WHEN


def test_turn_of_only_fillers_with_a_content_word_is_kept_whole() -> None:
    [fact] = facts("Hey Mel!")
    assert fact.text == "Hey Mel!"


def test_turn_without_any_content_word_yields_nothing() -> None:
    assert facts("Thanks!") == []
    assert facts("You too! \U0001f60a") == []
    assert facts("") == []


def test_image_caption_is_part_of_the_fact() -> None:
    meta = {
        "img_url": ["https://i.redd.it/x.jpg"],
        "blip_caption": "a photo of a sunset",
        "query": "q",
    }
    [fact] = facts("Look at this!", metadata=meta)
    assert fact.text.endswith("[image: a photo of a sunset]")
    assert fact.image_caption == "a photo of a sunset"
    [only_image] = facts("", metadata=meta)
    assert only_image.text == "[image: a photo of a sunset]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I love hiking and my dog loves it too.",
            "Melanie loves hiking and Melanie's dog loves it too.",
        ),
        ("I'm swamped with the kids & work.", "Melanie is swamped with the kids & work."),
        (
            "I've been there. I'll go again. I'd like that.",
            "Melanie has been there. Melanie will go again. Melanie would like that.",
        ),
        ("Do I look ok? I really enjoy it.", "Does Melanie look ok? Melanie really enjoys it."),
        ("Should I go? I went there.", "Should Melanie go? Melanie went there."),
        ("John and I love it.", "John and Melanie love it."),
        ("It helps me relax.", "It helps Melanie relax."),
        ('I told him "I am tired" yesterday.', 'Melanie told him "I am tired" yesterday.'),
        ("We love you and your dog.", "We love you and your dog."),
        ("i think i like it", "Melanie thinks Melanie likes it"),
        ("I try, I watch, I go.", "Melanie tries, Melanie watches, Melanie goes."),
    ],
)
def test_first_person_resolution(text: str, expected: str) -> None:
    assert resolve_first_person(text, "Melanie") == expected


def test_resolution_keeps_every_content_term() -> None:
    text = "I love painting sunsets with my kids; my favorite is the lake."
    resolved = resolve_first_person(text, "Melanie")
    assert set(analyse(text)) <= set(analyse(resolved))
    assert "melani" in analyse(resolved)


def test_no_resolution_without_a_speaker_or_for_tool_output() -> None:
    assert facts("I love hiking.", speaker=None)[0].text == "I love hiking."
    assert facts("I love hiking.", role="tool", speaker="search")[0].text == "I love hiking."


def test_tool_output_keeps_fillers() -> None:
    assert facts("OK", role="tool", speaker=None)[0].text == "OK"
    assert facts("...", role="tool", speaker=None) == []


def test_long_multi_topic_content_is_split_when_allowed() -> None:
    paragraph = " ".join(
        f"Topic {i} has detail number {i * 7} about subject{i}." for i in range(60)
    )
    parts = facts(paragraph, role="tool", speaker=None, max_facts=5)
    assert 2 <= len(parts) <= 5
    assert [p.part for p in parts] == list(range(len(parts)))
    assert tokenize(" ".join(p.text for p in parts)) == tokenize(paragraph)
    assert all(p.occurred_at == WHEN for p in parts)


def test_long_content_is_one_fact_by_default() -> None:
    paragraph = "The deployment of service alpha failed at step three. " * 30
    assert len(facts(paragraph, role="tool", speaker=None)) == 1


def test_chunks_respect_the_size_when_the_budget_allows() -> None:
    sentences = [f"Sentence number {i} talks about item {i}." for i in range(80)]
    chunks = chunk_units([(0, s) for s in sentences], 50)
    assert len(chunks) > 1 and all(len(c) <= CHUNK_CHARS for c in chunks)
    assert " ".join(chunks) == " ".join(sentences)


def test_line_breaks_survive_cleaning() -> None:
    [fact] = facts("Hi!\nShopping list:\n- eggs\n- milk. Thanks!", role="user", speaker=None)
    assert fact.text == "Shopping list:\n- eggs\n- milk."
    [tool] = facts("col1 col2\nrow 1\nrow 2", role="tool", speaker=None)
    assert tool.text == "col1 col2\nrow 1\nrow 2"


def test_short_content_is_never_split() -> None:
    assert len(facts("I adopted a dog. Her name is Luna.", max_facts=5)) == 1


def test_max_facts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        facts("I love hiking.", max_facts=0)


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["alpha", "beta42", "gamma.", "delta!", "\n", "INC-7"]), max_size=400
    ),
    limit=st.integers(1, 8),
)
def test_splitting_never_drops_a_token(words: list[str], limit: int) -> None:
    content = " ".join(words)
    parts = facts(content, role="tool", speaker=None, max_facts=limit)
    assert len(parts) <= limit
    assert tokenize(" ".join(p.text for p in parts)) == tokenize(content)


def test_an_assistants_words_are_kept_as_said() -> None:
    said = "I do not know your dog's name. What is my favourite colour, you asked?"
    [fact] = extract_facts(
        said, role="assistant", speaker="main", occurred_at=NOW_FOR_ASSISTANT, metadata={}
    )
    assert fact.text == said


NOW_FOR_ASSISTANT = datetime(2026, 12, 6, tzinfo=UTC)


CODE_REPLY = """Here is the fix for the parser:

```python
def parse(line):

    for i, part in enumerate(line.split()):
        yield {
            "index": i,
        }
```

Thanks!"""


def test_code_blocks_are_stored_as_written() -> None:
    [fact] = facts(CODE_REPLY, role="assistant", speaker=None)
    # Lines of only punctuation, indentation and blank lines inside the block survive.
    assert fact.text == CODE_REPLY.removesuffix("\n\nThanks!").replace("\n\n```", "\n```")


def test_first_person_resolution_leaves_code_alone() -> None:
    text = "I wrote `for i in x` and this:\n```\nfor i in range(3):\n    print(i)\n```"
    [fact] = facts(text, role="user", speaker="Ann")
    assert fact.text.startswith("Ann wrote `for i in x` and this:")
    assert "for i in range(3):\n    print(i)" in fact.text


def _reply_with_code(paragraphs: int) -> str:
    parts = []
    for n in range(paragraphs):
        parts.append(f"Step {n}: the service {n} restarts when its health check fails twice.")
        body = "\n".join(f"    check_{n}_{k}()" for k in range(12))
        parts.append(f"```python\ndef step_{n}():\n{body}\n```")
    return "\n\n".join(parts)


def test_passages_end_at_paragraphs_and_keep_code_blocks_whole() -> None:
    reply = _reply_with_code(8)
    passages = [f.text for f in facts(reply, role="assistant", speaker=None, max_facts=6)]
    assert len(passages) > 1
    for passage in passages:
        assert passage.count("```") % 2 == 0, passage  # no block cut in two
    blocks = [b for b in reply.split("\n\n") if b.startswith("```")]
    joined = "\n".join(passages)
    assert all(block in joined for block in blocks)
