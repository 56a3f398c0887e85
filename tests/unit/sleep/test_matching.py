"""Which knowledge note a cluster continues: re-runs update, never duplicate."""

from __future__ import annotations

import uuid

import numpy as np

from memory.consolidation.knowledge import Cluster, SourceNote
from memory.consolidation.known import KnownNote
from memory.consolidation.matching import Match, access_class, match_existing
from memory.types import utcnow

KEY = access_class(visibility="open", domain="general", agent_id="a", model="m", per_domain=False)


def source(n: int, lineage: int | None = None) -> SourceNote:
    note_id = uuid.UUID(int=n)
    lineage_id = uuid.UUID(int=n if lineage is None else lineage)
    return SourceNote(note_id, lineage_id, "a", "open", "general", f"fact {n}", [], 0.5, utcnow(),
                      "m")  # fmt: skip


def cluster(*ns: int) -> tuple[tuple[str, ...], Cluster]:
    return KEY, Cluster([source(n) for n in ns], np.ones((len(ns), 2)))


def knowledge(*ns: int, visibility: str = "open") -> KnownNote:
    ids = frozenset(uuid.UUID(int=n) for n in ns)
    note_id = uuid.uuid4()
    return KnownNote(
        id=note_id, lineage_id=note_id, version=1, tenant_id="t", user_id="u", agent_id="a",
        visibility=visibility, domain="general", embedding_model="m", pinned=False,
        content="k", index_text=None, window_text=None, index_terms=None, window_terms=None,
        term_count=0, window_term_count=0, access_times=[], access_count=0,
        first_access_at=None, half_life_hours=672.0, source_ids=ids, lineages=ids,
    )  # fmt: skip


def matches(clusters: list, known: list[KnownNote], min_new: int = 3) -> list[Match]:
    return match_existing(clusters, known, per_domain=False, min_new=min_new)


def actions(clusters: list, known: list[KnownNote], min_new: int = 3) -> list[str]:
    return [m.action for m in matches(clusters, known, min_new)]


def test_unchanged_store_matches_everything_unchanged() -> None:
    k = knowledge(1, 2, 3, 4)
    [match] = matches([cluster(1, 2, 3, 4)], [k])
    assert match.action == "unchanged" and match.note is k


def test_lost_members_or_a_part_of_an_old_cluster_change_nothing() -> None:
    known = [knowledge(1, 2, 3, 4, 5, 6)]
    assert actions([cluster(1, 2, 3)], known) == ["unchanged"]
    assert actions([cluster(1, 2, 3), cluster(4, 5, 6)], known) == ["unchanged", "unchanged"]


def test_a_cluster_spanning_two_earlier_clusters_changes_nothing() -> None:
    """Partitions shift between nights: notes learned in two notes are not learned again."""
    known = [knowledge(1, 2, 3), knowledge(4, 5, 6)]
    assert actions([cluster(1, 2, 3, 4, 5, 6)], known) == ["unchanged"]
    assert actions([cluster(1, 2, 3, 4, 5, 6, 7)], known) == ["unchanged"]  # 7 alone waits


def test_gaining_members_updates_the_best_overlapping_note() -> None:
    k1, k2 = knowledge(1, 2, 3, 4), knowledge(10, 11, 12)
    [match] = matches([cluster(1, 2, 3, 4, 5)], [k1, k2])
    assert match.action == "updated" and match.note is k1


def test_a_revised_source_updates_its_knowledge_note() -> None:
    k = knowledge(1, 2, 3)
    revised = (KEY, Cluster([source(1), source(2), source(33, lineage=3)], np.ones((3, 2))))
    [match] = matches([revised], [k])
    assert match.action == "updated" and match.note is k


def test_each_note_is_continued_by_one_cluster_at_most() -> None:
    k = knowledge(1, 2, 3, 4)
    found = matches([cluster(1, 2, 3, 7), cluster(1, 2, 3, 4, 8)], [k])
    assert [m.action for m in found] == ["unchanged", "updated"]  # 4/5 beats 3/5
    assert found[1].note is k


def test_a_few_new_notes_next_to_old_knowledge_wait_many_become_a_new_note() -> None:
    known = [knowledge(1, 2, 3, 4, 5, 6, 7, 8)]
    assert actions([cluster(1, 2, 20, 21)], known) == ["unchanged"]  # 2 new < 3
    assert actions([cluster(1, 20, 21, 22)], known) == ["created"]  # 3 new
    assert actions([cluster(30, 31, 32)], []) == ["created"]


def test_other_audiences_never_match() -> None:
    known = [knowledge(1, 2, 3, visibility="private")]
    assert actions([cluster(1, 2, 3)], known) == ["created"]
