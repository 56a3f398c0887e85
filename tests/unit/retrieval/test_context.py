"""The context block: format, budget (never exceeded), and empty when nothing fits."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from types import SimpleNamespace

from memory.retrieval.context import (
    CLOSE,
    FRAME,
    OPEN,
    ContextBlock,
    build_context,
    memory_line,
    working_line,
)
from memory.retrieval.mmr import estimate_tokens
from memory.retrieval.service import SearchHit
from memory.working.recall import WorkingHit
from memory.working.service import WorkingItem, content_hash


def _hit(content: str, day: int = 8) -> SearchHit:
    note = SimpleNamespace(
        id=uuid.uuid4(),
        content=content,
        occurred_at=datetime(2023, 5, day, 13, 56, tzinfo=UTC),
        origin="user",
        origin_ref=None,
        speaker=None,
        agent_id="a",
        trust="high",
        review=None,
    )
    return SearchHit(note=note, score=1.0, relevance=1.0, activation=None)  # type: ignore[arg-type]


def test_line_carries_the_date_and_collapses_whitespace() -> None:
    assert memory_line(_hit("Caroline went to   the\nsupport group.")) == (
        "- [8 May 2023, user] Caroline went to the support group."
    )


def test_block_never_exceeds_the_budget() -> None:
    hits = [
        _hit(f"Memory number {i} about a fairly ordinary thing that happened.") for i in range(50)
    ]
    for budget in (10, 25, 60, 200, 1000):
        built = build_context(hits, budget)
        block, kept, tokens = built.text, built.notes, built.tokens
        assert tokens <= budget
        if block:
            assert block.startswith(OPEN) and block.endswith(CLOSE)
            assert (
                estimate_tokens(OPEN)
                + estimate_tokens(FRAME)
                + estimate_tokens(CLOSE)
                + sum(estimate_tokens(memory_line(h)) for h in kept)
                == tokens
            )
            assert [h.note.content for h in kept] == [h.note.content for h in hits[: len(kept)]]


def test_nothing_fits_gives_an_empty_block() -> None:
    assert build_context([_hit("x " * 200)], 20) == ContextBlock()
    assert build_context([], 1000) == ContextBlock()


def _working(content: str, rank: int = 1) -> WorkingHit:
    when = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    item = WorkingItem(content_hash(content), content, 1.0, "a", "tool", None, {}, 1, when, when)
    return WorkingHit(item, rank, 1.0, ("x",))


def test_working_items_come_first_within_their_share() -> None:
    working = [_working(f"Tool result {i}: the build log says test {i} failed.", i) for i in (1, 2)]
    hits = [_hit(f"Memory {i} about the build.") for i in range(30)]
    built = build_context(hits, 200, working, working_share=0.4)
    lines = built.text.splitlines()
    assert lines[1] == FRAME
    assert lines[2] == "- [this session, tool] Tool result 1: the build log says test 1 failed."
    assert built.working == working and len(built.notes) > 0
    assert built.tokens <= 200
    assert sum(estimate_tokens(working_line(w)) for w in built.working) <= 0.4 * 200
    # A share too small for any item leaves the whole budget to the notes.
    narrow = build_context(hits, 200, working, working_share=0.05)
    assert narrow.working == [] and narrow.notes == build_context(hits, 200).notes


def test_a_memory_repeating_a_working_item_is_left_out() -> None:
    promoted = _hit("The  deploy script lives in ops/deploy.sh")
    other = _hit("Staging runs on Fridays.")
    built = build_context(
        [promoted, other], 1000, [_working("the deploy script lives in ops/deploy.sh")]
    )
    assert built.notes == [other]
    assert built.text.count("deploy.sh") == 1
    # Working items alone make a block.
    assert build_context([], 1000, [_working("Only this.")]).text.endswith(CLOSE)


def test_a_long_item_is_shown_as_an_excerpt_within_the_share() -> None:
    long_result = "read_file(app.log) → " + " ".join(f"line{i} ok" for i in range(400))
    working = [_working(long_result, 1), _working("Second item about the log.", 2)]
    built = build_context([_hit("A memory about logs.")], 1000, working, working_share=0.4)
    [line] = [x for x in built.text.splitlines() if x.startswith("- [this session")]
    assert line.startswith(
        "- [this session, tool] read_file(app.log) → line0 ok"
    ) and line.endswith("…")
    frame = estimate_tokens(OPEN) + estimate_tokens(FRAME) + estimate_tokens(CLOSE)
    share = int((1000 - frame) * 0.4)
    assert share - 2 <= estimate_tokens(line) <= share  # the share, filled
    # The excerpt took what was left of the share: the second item is not shown.
    assert built.working == working[:1] and built.tokens <= 1000
    assert len(built.notes) == 1


def test_an_excerpt_is_the_longest_prefix_that_fits() -> None:
    hit = _working("alpha beta gamma delta epsilon zeta eta theta iota kappa " * 5)
    for limit in (12, 20, 33):
        line = working_line(hit, limit)
        assert line.endswith("…") and estimate_tokens(line) <= limit
        # The next longer prefix (past any spaces, which the excerpt strips) does not fit.
        whole, prefix = working_line(hit), line[:-1]
        end = len(prefix) + 1
        while whole[:end].rstrip() == prefix:
            end += 1
        assert estimate_tokens(f"{whole[:end].rstrip()}…") > limit
    assert working_line(hit, 10_000) == working_line(hit)
