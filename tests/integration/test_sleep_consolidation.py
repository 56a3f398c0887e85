"""Consolidation on a synthetic memory set with known topics (real ONNX embeddings)."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from memory.cli.main import cli
from memory.clients.embedder import get_embedder
from memory.clients.llm import LlmClient
from memory.config import Settings, load_settings
from memory.consolidation.service import ConsolidationReport, consolidate_user
from memory.db import session_scope
from memory.links.models import Link
from memory.notes.models import Note
from tests.integration.sleep_notes import active_current_count, add_notes, indexed_count
from tests.support.fake_openai import FakeOpenAI
from tests.support.helpers import bearer
from tests.unit.sleep.topics import TOPICS

pytestmark = pytest.mark.integration

T0 = datetime(2025, 4, 1, tzinfo=UTC)
NOISE = [
    "Alice's cousin called about the weekend.",
    "Alice lost her umbrella on the train.",
    "Alice watched a documentary about whales.",
    "Alice renewed her passport.",
    "Alice's neighbour has a new car.",
    "Alice went to the dentist.",
]


def seed(
    tenant_id: str, user_id: str, settings: Settings, texts: list[str], **extra: Any
) -> dict[uuid.UUID, str]:
    vectors = get_embedder().embed(texts)
    specs = [
        {"content": t, "created_at": T0 + timedelta(minutes=i), "embedding": v, **extra}
        for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
    ]
    ids = add_notes(tenant_id, user_id, settings, specs)
    return dict(zip(ids, texts, strict=True))


def run(tenant_id: str, user_id: str, settings: Settings, **kw: Any) -> ConsolidationReport:
    with session_scope() as session:
        return consolidate_user(session=session, tenant_id=tenant_id, user_id=user_id,
                                now=T0 + timedelta(days=1), settings=settings, **kw)  # fmt: skip


def knowledge(tenant_id: str, user_id: str) -> dict[uuid.UUID, tuple[Note, set[uuid.UUID]]]:
    """Current knowledge notes and the ids of the notes each consolidates."""
    with session_scope() as session:
        notes = session.scalars(select(Note).where(
            Note.tenant_id == tenant_id, Note.user_id == user_id, Note.kind == "knowledge",
            Note.valid_to.is_(None))).all()  # fmt: skip
        out = {}
        for note in notes:
            targets = session.scalars(select(Link.target_id).where(
                Link.source_id == note.id, Link.kind == "consolidates")).all()  # fmt: skip
            out[note.id] = (note, set(targets))
        return out


def topic_texts() -> list[str]:
    return [t for texts in TOPICS.values() for t in texts]


def test_topic_clusters_become_knowledge_notes_and_a_rerun_duplicates_nothing(
    database_url: str, tenant_id: str, user_id: str, api_client: TestClient
) -> None:
    settings = load_settings()
    ids = seed(tenant_id, user_id, settings, topic_texts() + NOISE)
    topic_of = {t: name for name, texts in TOPICS.items() for t in texts}
    first = run(tenant_id, user_id, settings)
    made = knowledge(tenant_id, user_id)
    assert first.counts()["created"] == len(made) >= 4
    clustered = [ids[s] for _, sources in made.values() for s in sources]
    majority = sum(
        Counter(topic_of.get(ids[s], "noise") for s in sources).most_common(1)[0][1]
        for _, sources in made.values()
    )
    purity = majority / len(clustered)
    coverage = sum(1 for t in clustered if t in topic_of) / len(topic_of)
    print(f"\nconsolidation: {len(made)} clusters, purity {purity:.3f}, coverage {coverage:.3f}")
    assert purity >= 0.9
    for note, sources in made.values():
        assert note.status == "active" and note.embedding is not None and note.term_count > 0
        assert note.sparse_embedding is not None  # searched like any note, sparse channel too
        assert note.metadata_["consolidation"]["method"] == "extractive"
        assert len(sources) == note.metadata_["consolidation"]["sources"] >= 3
        assert any(ids[s].split(".")[0] in note.content for s in sources)  # central sentences
    # Sources stay; knowledge notes are counted in the BM25 statistics.
    assert active_current_count(tenant_id, user_id) == len(ids) + len(made)
    assert indexed_count(tenant_id, user_id) == len(ids) + len(made)

    second = run(tenant_id, user_id, settings)
    assert second.counts()["unchanged"] == len(made)
    assert second.counts()["created"] == second.counts()["updated"] == 0
    assert set(knowledge(tenant_id, user_id)) == set(made)

    admin = bearer(api_client_token(tenant_id))
    hit = api_client.post("/v1/search", headers=admin, json={
        "user_id": user_id, "query": "marathon training and running", "kinds": ["knowledge"],
        "dry_run": True})  # fmt: skip
    assert hit.status_code == 200, hit.text
    assert hit.json()["results"], "the read path finds knowledge notes"


def api_client_token(tenant_id: str) -> str:
    from tests.conftest import make_token

    return make_token("admin", tenant_id)


def test_a_changed_cluster_updates_its_knowledge_note_as_a_new_version(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    settings = load_settings()
    seed(tenant_id, user_id, settings, TOPICS["garden"] + TOPICS["guitar"])
    run(tenant_id, user_id, settings)
    before = knowledge(tenant_id, user_id)
    seed(tenant_id, user_id, settings, [
        "Alice sowed carrot seeds in the garden beds.",
        "Alice mulched the garden beds with straw.",
    ])  # fmt: skip
    report = run(tenant_id, user_id, settings)
    after = knowledge(tenant_id, user_id)
    assert report.counts()["updated"] >= 1 and report.counts()["created"] == 0
    assert len(after) == len(before)
    with session_scope() as session:
        for change in (c for c in report.changes if c.action == "updated"):
            new, old = session.get(Note, change.note_id), session.get(Note, change.previous_id)
            assert new is not None and old is not None
            assert new.lineage_id == old.lineage_id and new.version == old.version + 1
            assert old.valid_to is not None and old.superseded_by == new.id
            assert session.scalar(select(func.count()).where(
                Link.source_id == new.id, Link.target_id == old.id,
                Link.kind == "supersedes")) == 1  # fmt: skip
    assert indexed_count(tenant_id, user_id) == active_current_count(tenant_id, user_id)

    # A source archived by decay takes nothing away from what was learned.
    _, sources = next(iter(knowledge(tenant_id, user_id).values()))
    with session_scope() as session:
        session.get(Note, next(iter(sources))).status = "archived"  # type: ignore[union-attr]
    counts = run(tenant_id, user_id, settings).counts()
    assert counts["updated"] == counts["created"] == 0


def seed_two_domains(tenant_id: str, user_id: str, settings: Settings) -> None:
    """Three topics, each split half in domain "sport", half in domain "health"."""
    for domain, half in (("sport", slice(0, 4)), ("health", slice(4, 8))):
        texts = [t for name in ("running", "cooking", "guitar") for t in TOPICS[name][half]]
        seed(tenant_id, user_id, settings, texts, domain=domain)


def test_min_cluster_size_and_cluster_per_domain_change_the_clusters(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    settings = load_settings()
    seed_two_domains(tenant_id, user_id, settings)
    assert run(tenant_id, user_id, load_settings(sleep={"min_cluster_size": 9})).clusters == 0
    run(tenant_id, user_id, settings)
    mixed = [n for n, s in knowledge(tenant_id, user_id).values() if len(domains_of(s)) > 1]
    assert mixed, "without cluster_per_domain a topic cluster spans both domains"

    other = f"{user_id}-pd"
    seed_two_domains(tenant_id, other, settings)
    run(tenant_id, other, load_settings(sleep={"cluster_per_domain": True}))
    per_domain = knowledge(tenant_id, other)
    assert per_domain and all(len(domains_of(s)) == 1 for _, s in per_domain.values())


def test_knowledge_notes_never_widen_the_audience_of_their_sources(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    settings = load_settings()
    seed(tenant_id, user_id, settings, TOPICS["running"] + TOPICS["cooking"])
    seed(tenant_id, user_id, settings, TOPICS["guitar"] + TOPICS["garden"],
         visibility="private", agent_id="a-9")  # fmt: skip
    seed(tenant_id, user_id, settings, TOPICS["work"], visibility="scoped", domain="work")
    run(tenant_id, user_id, settings)
    made = knowledge(tenant_id, user_id)
    with session_scope() as session:
        for note, sources in made.values():
            rows = session.execute(select(Note.visibility, Note.agent_id, Note.domain)
                                   .where(Note.id.in_(sources))).all()  # fmt: skip
            [(visibility, agent, domain)] = {
                (r.visibility, r.agent_id if r.visibility == "private" else "",
                 r.domain if r.visibility == "scoped" else "") for r in rows
            }  # fmt: skip
            assert note.visibility == visibility
            assert not agent or note.agent_id == agent
            assert not domain or note.domain == domain
    assert {n.visibility for n, _ in made.values()} >= {"open", "private"}


def domains_of(note_ids: set[uuid.UUID]) -> set[str]:
    with session_scope() as session:
        return set(session.scalars(select(Note.domain).where(Note.id.in_(note_ids))))


def test_llm_summary_when_configured_and_extractive_when_it_fails(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    settings = load_settings()
    seed(tenant_id, user_id, settings, TOPICS["cooking"] + TOPICS["guitar"])
    with FakeOpenAI() as server:
        server.chat = lambda request: (
            '{"summary": "Alice is learning to cook: bread, soups, curries.", '
            '"keywords": ["cooking", "recipes"]}'
        )
        llm = LlmClient(base_url=server.base_url, api_key="sk-test", model="m", timeout=5)
        run(tenant_id, user_id, settings, llm=llm)
        prompts = [r["messages"][-1]["content"] for r in server.chat_requests]
    made = list(knowledge(tenant_id, user_id).values())
    assert made and all(n.content.startswith("Alice is learning to cook") for n, _ in made)
    assert made[0][0].keywords == ["cooking", "recipes"]
    assert any("sourdough" in p or "guitar" in p for p in prompts)

    other = f"{user_id}-x"
    seed(tenant_id, other, settings, TOPICS["cooking"] + TOPICS["guitar"])
    with FakeOpenAI() as server:
        server.chat = lambda request: "not json at all"
        llm = LlmClient(base_url=server.base_url, api_key="sk-test", model="m", timeout=5)
        run(tenant_id, other, settings, llm=llm)
    fallback = list(knowledge(tenant_id, other).values())
    assert fallback and fallback[0][0].metadata_["consolidation"]["method"] == "extractive"


def test_dry_run_writes_nothing(database_url: str, tenant_id: str, user_id: str) -> None:
    settings = load_settings()
    seed(tenant_id, user_id, settings, TOPICS["work"] + TOPICS["garden"])
    report = run(tenant_id, user_id, settings, dry_run=True)
    assert report.counts()["created"] >= 1 and all(c.note_id is None for c in report.changes)
    assert knowledge(tenant_id, user_id) == {}
    assert indexed_count(tenant_id, user_id) == 16


def test_cli_consolidate_previews_then_runs_at_the_given_time(
    database_url: str, tenant_id: str, user_id: str
) -> None:
    settings = load_settings()
    seed(tenant_id, user_id, settings, TOPICS["running"] + TOPICS["guitar"])
    runner = CliRunner()
    scope = ["consolidate", "--user", user_id, "--tenant", tenant_id]
    at = (T0 + timedelta(days=2)).isoformat()
    dry = runner.invoke(cli, [*scope, "--dry-run", "--now", at])
    assert dry.exit_code == 0, dry.output
    assert "would create 2, update 0, unchanged 0" in dry.output
    assert knowledge(tenant_id, user_id) == {}
    done = runner.invoke(cli, [*scope, "--now", at, "--json"])
    assert done.exit_code == 0, done.output
    payload = json.loads(done.output)
    assert payload["counts"]["created"] == 2 and not payload["dry_run"]
    made = knowledge(tenant_id, user_id)
    assert len(made) == 2
    assert {n.created_at for n, _ in made.values()} == {T0 + timedelta(days=2)}  # --now
    again = runner.invoke(cli, [*scope, "--now", at])
    assert again.exit_code == 0 and "created 0, updated 0, unchanged 2" in again.output
    bad = runner.invoke(cli, [*scope, "--now", "yesterday"])
    assert bad.exit_code != 0 and "--now" in bad.output
