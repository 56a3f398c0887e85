"""The public multilingual sample (issue 51): its shape, its episodes and its scoring."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.multilingual import episodes
from benchmarks.multilingual_data import (
    DATA,
    LANGUAGES,
    load,
    score,
    split_spans,
    validate,
)
from memory.api.schemas import EpisodeBatch


@pytest.fixture(scope="module")
def sample() -> dict:
    return load(DATA)


def test_the_sample_has_the_seven_languages_with_parallel_questions(sample: dict) -> None:
    assert set(LANGUAGES) == {"en", "zh", "ja", "de", "es", "fr", "ru"}
    assert sorted(sample["users"]) == sorted(LANGUAGES)
    english = [q["id"] for q in sample["users"]["en"]["questions"]]
    assert len(english) >= 12 and len(set(english)) == len(english)
    for lang in LANGUAGES:
        user = sample["users"][lang]
        assert lang in user["user_id"]
        assert [q["id"] for q in user["questions"]] == english
        assert 12 <= len(user["memories"]) <= 40


def test_every_evidence_id_is_a_memory_of_that_language(sample: dict) -> None:
    for lang, user in sample["users"].items():
        known = {m["id"] for m in user["memories"]}
        assert all(m["id"].startswith(f"{lang}-") for m in user["memories"])
        for q in [*user["questions"], *user.get("cross_questions", [])]:
            assert q["evidence"] and set(q["evidence"]) <= known, (lang, q["id"])
        evidence = {e for q in user["questions"] for e in q["evidence"]}
        assert known - evidence, f"{lang}: no sentence is left as a distractor"


def test_english_questions_are_asked_of_every_other_language(sample: dict) -> None:
    english = {q["id"]: q["question"] for q in sample["users"]["en"]["questions"]}
    for lang in LANGUAGES[1:]:
        user = sample["users"][lang]
        native = {q["id"]: q for q in user["questions"]}
        assert [q["id"] for q in user["cross_questions"]] == list(english)
        for q in user["cross_questions"]:
            assert q["question"] == english[q["id"]]
            assert q["evidence"] == native[q["id"]]["evidence"]
            assert native[q["id"]]["question"] != q["question"]  # asked in another language


def test_the_committed_file_stays_small() -> None:
    assert DATA.stat().st_size < 512 * 1024


def test_validate_rejects_evidence_of_another_language(sample: dict, tmp_path: Path) -> None:
    broken = json.loads(json.dumps(sample))
    broken["users"]["de"]["questions"][0]["evidence"] = ["en-construction-1"]
    with pytest.raises(ValueError, match="evidence"):
        validate(broken)


def test_sentences_split_at_their_language_s_full_stops() -> None:
    text = "\ufeffJacksonville is in the U.S. state of Florida. It grew in 1968. 5 is prime."
    assert [text[s:e] for s, e in split_spans(text, "en")] == [
        "Jacksonville is in the U.S. state of Florida.",
        "It grew in 1968.",
        "5 is prime.",
    ]
    japanese = "素数は自然数である。 合成数と呼ばれる。"
    assert [japanese[s:e] for s, e in split_spans(japanese, "ja")] == [
        "素数は自然数である。",
        "合成数と呼ばれる。",
    ]


def test_score_counts_evidence_in_the_top_k_and_in_the_block() -> None:
    evidence = [["a"], ["b", "c"]]
    ranked = [
        [{"x"}, {"a"}],  # the evidence second: R@1 0, R@5 1
        [{"b"}, {"y"}, {"z"}],  # half the evidence first
    ]
    blocks = [[{"a"}, {"x"}], []]  # one block half evidence, one empty
    got = score(evidence, ranked, blocks)
    assert got["R@1"] == pytest.approx((0 + 0.5) / 2)
    assert got["R@5"] == pytest.approx((1 + 0.5) / 2)
    assert got["R@10"] == got["R@5"]
    assert got["context_recall"] == pytest.approx((1 + 0) / 2)
    assert got["context_precision"] == pytest.approx(0.5)  # over non-empty blocks only
    assert got["empty_blocks"] == 1


def test_episodes_are_valid_captures_tagged_with_their_memory(sample: dict) -> None:
    items = episodes(sample, list(LANGUAGES))
    assert len(items) == sum(len(u["memories"]) for u in sample["users"].values())
    EpisodeBatch.model_validate({"episodes": items})
    assert len({e["idempotency_key"] for e in items}) == len(items)
    ja = [e for e in items if e["user_id"] == sample["users"]["ja"]["user_id"]]
    assert {e["metadata"]["language"] for e in ja} == {"ja"}
    assert [e["metadata"]["memory"] for e in ja] == [
        m["id"] for m in sample["users"]["ja"]["memories"]
    ]
