"""`muma search --user U [--agent A] "query"`: the read path, with its explanations.

An operator's look does not count as a use: access history is not recorded, so
searching from the terminal never changes what the agents will recall.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.table import Table

from memory.access.policy import Viewer
from memory.cli.common import console, require_schema
from memory.cli.options import (
    agent_option,
    domain_errors,
    json_option,
    tenant_of,
    tenant_option,
    user_option,
    viewer_for,
)
from memory.clients.embedder import embed_query
from memory.clients.redis import get_redis
from memory.clients.sparse_encoder import encode_sparse_query
from memory.config import get_settings
from memory.db import session_scope
from memory.retrieval.first_person import dense_query, speaks_in_first_person, user_name
from memory.retrieval.focus import focus_query
from memory.retrieval.service import SearchHit, search_notes
from memory.working.recall import recall_working_items

PREVIEW_CHARS = 70
ROUTE_LABELS = {
    "dense": "vec",
    "dense_window": "vec-w",
    "bm25": "lex",
    "bm25_window": "lex-w",
    "verbatim": "exact",
    "links": "link",
}


def _row(rank: int, hit: SearchHit) -> dict[str, Any]:
    note = hit.note
    return {
        "rank": rank,
        "id": str(note.id),
        "score": round(hit.score, 4),
        "content": note.content,
        "kind": note.kind,
        "domain": note.domain,
        "visibility": note.visibility,
        "agent_id": note.agent_id,
        "occurred_at": note.occurred_at.isoformat(),
        "explanation": hit.explanation(),
    }


def _not_blank(query: str) -> str:
    # As the API: a query of only whitespace has nothing to rank by.
    if not query.strip():
        raise click.BadParameter("must not be blank", param_hint="QUERY")
    return query


def _num(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


@click.command(short_help="Search a user's memories, with explanations.")
@user_option
@agent_option
@tenant_option
@click.option("--top-k", default=10, show_default=True, type=click.IntRange(1, 50))
@click.option(
    "--session",
    "session_id",
    default=None,
    help="Also list this session's working-memory items that match, as the API does.",
)
@json_option
@click.argument("query", callback=lambda _ctx, _param, value: _not_blank(value))
@domain_errors
def search(
    user_id: str,
    agent_id: str | None,
    tenant: str | None,
    top_k: int,
    session_id: str | None,
    as_json: bool,
    query: str,
) -> None:
    """Search a user's memories: score, then the explanation (routes, relevance R,
    base level B, spreading S, noise ε, retention).

    \b
    Examples:
      muma search --user alice "where does my sister live"
      muma search --user alice --agent coach --top-k 5 --json "running plan"
      muma search --user alice --session s1 "which port"
    """
    require_schema()
    settings = get_settings()
    ask = focus_query(query, settings.retrieval.query_focus_chars)  # as the API ranks
    with session_scope() as session:
        viewer = viewer_for(
            session=session, tenant_id=tenant_of(tenant), user_id=user_id, agent_id=agent_id
        )
        name = (
            user_name(session=session, tenant_id=viewer.tenant_id, user_id=viewer.user_id)
            if settings.retrieval.resolve_first_person and speaks_in_first_person(ask)
            else None
        )
        vector = embed_query(dense_query(ask, name), settings)
        hits = search_notes(
            session=session,
            viewer=viewer,
            query=ask,
            vector=vector,
            top_k=top_k,
            settings=settings,
            sparse=encode_sparse_query(ask, settings),
            asker=name,
        )
        rows = [_row(rank, hit) for rank, hit in enumerate(hits, start=1)]
    working = _working_rows(viewer, session_id, ask)
    if as_json:
        click.echo(json.dumps({"query": query, "results": rows, "working": working}, indent=2))
        return
    _print_table(rows)
    if session_id:
        _print_working(session_id, working)


def _working_rows(viewer: Viewer, session_id: str | None, query: str) -> list[dict[str, Any]]:
    """The session's matching working items, as the API lists them."""
    hits = recall_working_items(
        client=get_redis(),
        tenant_id=viewer.tenant_id,
        user_id=viewer.user_id,
        session_id=session_id,
        query=query,
        limit=get_settings().working.recall_top_k,
    )
    return [hit.to_json() for hit in hits]


def _print_working(session_id: str, items: list[dict[str, Any]]) -> None:
    if not items:
        console.print(f"no working-memory item of session {session_id} matched")
        return
    console.print(f"working memory of session {session_id} (relevance, terms matched):")
    for item in items:
        content = " ".join(item["content"].split())
        why = item["explanation"]
        console.print(
            f"  {why['routes']['working']}. {_num(why['relevance'])} "
            f"[dim]{' '.join(why['matched_terms'])}[/] {content[: PREVIEW_CHARS * 2]}"
        )


def _print_table(rows: list[dict[str, Any]]) -> None:
    if not rows:
        console.print("no memories matched")
        return
    table = Table("#", "score", expand=True)
    table.add_column("memory", ratio=2, min_width=24)
    for name in ("R", "B", "S", "ε", "ret."):
        table.add_column(name, justify="right")
    table.add_column("routes", ratio=1, min_width=14)
    for row in rows:
        why = row["explanation"]
        content = row["content"].replace("\n", " ")
        table.add_row(
            str(row["rank"]),
            f"{row['score']:.3f}",
            f"{content[:PREVIEW_CHARS]}{'…' if len(content) > PREVIEW_CHARS else ''} "
            f"[dim]{row['kind']} {row['id'][:8]}[/]",
            _num(why["relevance"]),
            _num(why["base_level"]),
            _num(why["spreading"]),
            _num(why["noise"]),
            _num(why["retention"]),
            " ".join(f"{ROUTE_LABELS.get(k, k)}:{v}" for k, v in why["routes"].items()),
        )
    console.print(table)
    console.print(
        "[dim]R relevance, B base level, S spreading, ε noise, ret. retention; "
        "routes: name:rank (vec embedding, lex BM25, -w with neighbours, link 1 hop)[/]"
    )
