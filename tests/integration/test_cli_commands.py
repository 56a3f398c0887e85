"""The admin commands through click's runner against the real database, Redis and worker:
help, stats, search, forget, pin, dead-letters, reembed and bench, with bad input."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from memory.cli import bench as bench_module
from memory.cli.main import cli
from memory.clients.embedder import get_embedder
from memory.db import session_scope
from memory.notes.models import Note, Tombstone
from memory.ops.dead_letters import record_dead_letter
from memory.ops.models import AuditEvent, DeadLetter
from memory.ops.reembed import count_foreign_space, same_space
from tests.integration.test_transactive import write
from tests.support.helpers import wait_for_workers_idle

pytestmark = pytest.mark.integration

COMMANDS = (
    "up", "db", "tokens", "agents", "stats", "search", "export", "import", "consolidate",
    "decay", "conflicts", "forget", "archive", "restore", "pin", "dead-letters", "reembed",
    "backfill-sparse", "sync", "doctor", "bench",
)  # fmt: skip


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture()
def memories(
    api_client: TestClient, celery_worker: str, tokens: dict[str, str], user_id: str
) -> dict[str, str]:
    """Three notes of three agents: open, private and user-only."""
    agent = tokens["agent"]
    return {
        "sister": write(api_client, agent, user_id, "assistant-1",
                        "Alice's sister lives in Porto and works as a nurse.",
                        domain="family", visibility="open", kind="stable"),
        "budget": write(api_client, agent, user_id, "banker",
                        "Alice's grocery budget is 300 euros a month.",
                        domain="finance", visibility="private", tags=["groceries"]),
        "blood": write(api_client, agent, user_id, "doctor",
                       "Alice's blood type is A positive.",
                       domain="health", visibility="user-only"),
    }  # fmt: skip


def test_help_leads_to_every_command_with_an_example() -> None:
    top = run("--help")
    assert top.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in top.output, name
    for name in ("stats", "search", "export", "import", "forget", "archive", "restore", "pin",
                 "dead-letters",
                 "reembed", "backfill-sparse", "sync", "bench"):  # fmt: skip
        result = run(name, "--help")
        assert result.exit_code == 0 and "Example" in result.output, name
    for sub in ("list", "retry"):
        assert "Example" in run("dead-letters", sub, "--help").output, sub


def test_stats_counts_by_dimension_and_respects_the_agent_view(
    memories: dict[str, str], tenant_id: str, user_id: str
) -> None:
    result = run("stats", "--user", user_id, "--tenant", tenant_id, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    notes = data["notes"]
    assert notes["current"] == 3 and notes["by_status"]["active"] == 3
    assert notes["by_visibility"] == {"open": 1, "private": 1, "user-only": 1}
    assert notes["by_agent"] == {"assistant-1": 1, "banker": 1, "doctor": 1}
    assert sum(b["count"] for b in data["activation"]["histogram"]) == 3
    assert data["pipeline"]["episodes"]["done"] == 3
    assert data["pipeline"]["dead_letters"] == 0

    as_agent = run("stats", "--user", user_id, "--tenant", tenant_id, "--agent", "assistant-1",
                   "--json")  # fmt: skip
    assert json.loads(as_agent.output)["notes"]["current"] == 1  # only its own open note

    table = run("stats", "--user", user_id, "--tenant", tenant_id)
    assert table.exit_code == 0 and "base-level activation" in table.output
    assert "by visibility" in table.output


def test_unknown_user_is_one_clear_line(database_url: str, tenant_id: str) -> None:
    for command in (["stats"], ["search", "anything"], ["export", "-o", "/tmp/x.jsonl"]):
        result = CliRunner().invoke(cli, [*command, "--user", "nobody", "--tenant", tenant_id])
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert lines[-1].startswith("Error: unknown user 'nobody'"), result.output


def test_search_shows_scores_and_explanations(
    memories: dict[str, str], tenant_id: str, user_id: str
) -> None:
    result = run("search", "--user", user_id, "--tenant", tenant_id, "--json",
                 "where does the sister live")  # fmt: skip
    assert result.exit_code == 0, result.output
    results = json.loads(result.output)["results"]
    assert results[0]["id"] == memories["sister"]
    assert {"routes", "relevance", "base_level", "spreading", "noise", "retention"} <= set(
        results[0]["explanation"]
    )
    table = run("search", "--user", user_id, "--tenant", tenant_id, "sister Porto")
    assert table.exit_code == 0 and "score" in table.output and "Porto" in table.output

    as_agent = run("search", "--user", user_id, "--tenant", tenant_id, "--agent", "assistant-1",
                   "--json", "blood type")  # fmt: skip
    ids = {r["id"] for r in json.loads(as_agent.output)["results"]}
    assert memories["blood"] not in ids  # user-only: never shown to an agent


def test_forget_and_pin(memories: dict[str, str], tenant_id: str, user_id: str) -> None:
    pinned = run("pin", memories["budget"], "--user", user_id, "--tenant", tenant_id)
    assert pinned.exit_code == 0 and "pinned" in pinned.output
    with session_scope() as session:
        assert session.get(Note, uuid.UUID(memories["budget"])).pinned  # type: ignore[union-attr]
        audited = session.scalar(
            select(AuditEvent).where(
                AuditEvent.entity_id == memories["budget"], AuditEvent.action == "note.edited"
            )
        )
        assert audited is not None and audited.data["changes"]["pinned"]["new"] is True
    unpinned = run("pin", memories["budget"], "--user", user_id, "--tenant", tenant_id, "--unpin")
    assert unpinned.exit_code == 0 and "unpinned" in unpinned.output

    archived = run("archive", memories["budget"], "--user", user_id, "--tenant", tenant_id)
    assert archived.exit_code == 0 and "archived" in archived.output, archived.output
    restored = run("restore", memories["budget"], "--user", user_id, "--tenant", tenant_id)
    assert restored.exit_code == 0 and "restored" in restored.output, restored.output
    with session_scope() as session:
        assert session.get(Note, uuid.UUID(memories["budget"])).status == "active"  # type: ignore[union-attr]

    forgot = run("forget", memories["sister"], "--user", user_id, "--tenant", tenant_id,
                 "--reason", "moved")  # fmt: skip
    assert forgot.exit_code == 0 and "versions 1" in forgot.output, forgot.output
    with session_scope() as session:
        assert session.get(Note, uuid.UUID(memories["sister"])) is None  # erased
        stone = session.get(Tombstone, uuid.UUID(memories["sister"]))
        assert stone is not None and stone.actor == "cli" and stone.content_hash is None

    bad_id = CliRunner().invoke(cli, ["forget", "not-a-uuid", "--user", user_id,
                                      "--tenant", tenant_id])  # fmt: skip
    assert bad_id.exit_code == 2 and "not a memory id" in bad_id.output
    other_user = CliRunner().invoke(cli, ["pin", memories["budget"], "--user", "someone-else",
                                          "--tenant", tenant_id])  # fmt: skip
    assert other_user.exit_code == 2


def test_dead_letters_list_and_retry(celery_worker: str, tenant_id: str) -> None:
    with session_scope() as session:
        letter = record_dead_letter(
            session=session, task_name="tasks.maintenance.requeue_stuck_episodes", args=[],
            kwargs={}, error="RuntimeError: boom\ntrace", traceback=None, attempts=5,
            episode_id=None,
        )  # fmt: skip
        letter.tenant_id = tenant_id
        letter_id = str(letter.id)
    listed = run("dead-letters", "list", "--tenant", tenant_id, "--json")
    assert [row["id"] for row in json.loads(listed.output)] == [letter_id]
    assert "boom" in run("dead-letters", "list", "--tenant", tenant_id).output

    retried = run("dead-letters", "retry", letter_id)
    assert retried.exit_code == 0 and "requeued" in retried.output
    with session_scope() as session:
        assert session.get(DeadLetter, uuid.UUID(letter_id)).requeued_at is not None  # type: ignore[union-attr]
    assert json.loads(run("dead-letters", "list", "--tenant", tenant_id, "--json").output) == []
    assert len(json.loads(run("dead-letters", "list", "--tenant", tenant_id, "--all",
                              "--json").output)) == 1  # fmt: skip

    unknown = CliRunner().invoke(cli, ["dead-letters", "retry", str(uuid.uuid4())])
    assert unknown.exit_code == 2 and "no such dead letter" in unknown.output


def test_reembed_is_resumable_by_model_id(
    memories: dict[str, str], tenant_id: str, user_id: str
) -> None:
    # The notes' link and evolve stages still hold them a moment after they are written.
    wait_for_workers_idle()
    stale = [uuid.UUID(memories["sister"]), uuid.UUID(memories["budget"])]
    model_id = get_embedder().model_id
    with session_scope() as session:
        session.execute(update(Note).where(Note.id.in_(stale)).values(embedding_model="old-model"))
        # all-MiniLM-L6-v2 run in float is the same space as in int8: comparable, not foreign.
        other_run = next(iter(same_space(model_id) - {model_id}), model_id)
        session.execute(
            update(Note)
            .where(Note.id == uuid.UUID(memories["blood"]))
            .values(embedding_model=other_run)
        )
    with session_scope() as session:
        assert count_foreign_space(session=session, model_id=model_id, tenant_id=tenant_id) == 2
    dry = run("reembed", "--tenant", tenant_id, "--dry-run")
    assert dry.exit_code == 0 and dry.output.startswith("3 notes to re-embed")
    done = run("reembed", "--tenant", tenant_id, "--batch-size", "1")
    assert done.exit_code == 0 and "re-embedded 3 notes" in done.output, done.output
    with session_scope() as session:
        assert count_foreign_space(session=session, model_id=model_id, tenant_id=tenant_id) == 0
        models = set(session.scalars(select(Note.embedding_model).where(Note.id.in_(stale))))
    assert models == {model_id}
    again = run("reembed", "--tenant", tenant_id)
    assert again.output.startswith("0 notes to re-embed")


def test_bench_runs_a_module_and_reports_a_missing_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "benchmarks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "latency.py").write_text(
        "import sys\nsys.exit(3 if sys.argv[1:] == ['--runs', '2'] else 4)\n"
    )
    monkeypatch.setattr(bench_module, "_benchmarks_root", lambda: tmp_path)
    ran = CliRunner().invoke(cli, ["bench", "latency", "--runs", "2"])
    assert ran.exit_code == 3, ran.output  # the module's own exit code, arguments passed on
    missing = CliRunner().invoke(cli, ["bench", "ingest"])
    assert missing.exit_code == 2 and "not available" in missing.output
    unknown = CliRunner().invoke(cli, ["bench", "nope"])
    assert unknown.exit_code == 2 and "nope" in unknown.output
