"""`muma doctor`: what is configured and whether each part answers."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.table import Table

from memory.cli.common import console, require_store
from memory.clients.broker import UNREACHABLE_BROKER, broker_url
from memory.config import Settings, get_settings
from memory.ops.health import check_database, check_redis, check_workers
from tasks.app import app as celery_app


def _embedder_check() -> dict[str, Any]:
    from memory.clients.embedder import check_embedder

    return check_embedder(get_settings())


def _sparse_check() -> dict[str, Any]:
    """Optional: without the files searches still answer, a little less well."""
    from memory.clients.sparse_encoder import missing_encoder_reason

    sparse = get_settings().sparse
    reason = missing_encoder_reason()
    if reason is not None:  # switched off on purpose is fine; missing files are not
        return {"ok": not sparse.enabled, "detail": reason}
    return {"ok": True, "detail": f"splade-tiny ({sparse.compute}), weight {sparse.weight}"}


def _vector_space_check() -> dict[str, Any]:
    """Notes embedded by a model whose vectors the configured one's cannot be compared
    with (another embedding.provider): `muma reembed` moves them."""
    from memory.clients.embedder import get_embedder
    from memory.db import session_scope
    from memory.ops.reembed import count_foreign_space

    model_id = get_embedder(get_settings()).model_id
    with session_scope() as session:
        foreign = count_foreign_space(session=session, model_id=model_id)
    if foreign:
        return {
            "ok": False,
            "detail": f"{foreign:,} notes embedded by another model than {model_id}: "
            "stop the service and run `muma reembed`",
        }
    return {"ok": True, "detail": f"every note in {model_id}'s space"}


def _llm_check() -> dict[str, Any]:
    settings = get_settings()
    if not settings.llm.configured:
        return {"ok": True, "detail": "not configured (deterministic stages)"}
    from memory.clients.llm import check_llm

    return check_llm(settings)


@click.command()
def doctor() -> None:
    """Check configuration, database, Redis, workers, embedder, sparse encoder, the
    notes' vector space and LLM.

    Exits non-zero when a required part does not answer.

    \b
    Example:
      MUMA_HOME=/srv/muma muma doctor
    """
    settings = get_settings()
    require_store()
    rows = [
        ("home", {"ok": True, "detail": str(settings.home)}),
        ("database", check_database()),
        ("redis", check_redis()),
        ("workers", workers_check(settings)),
        ("embedder", _safe(_embedder_check)),
        ("sparse encoder", _safe(_sparse_check)),
        ("vector space", _safe(_vector_space_check)),
        ("llm", _safe(_llm_check)),
    ]
    table = Table("part", "ok", "detail")
    for name, result in rows:
        detail = str(result.get("detail") or result.get("error") or result.get("model_id") or "")
        table.add_row(name, "[green]yes[/]" if result.get("ok") else "[red]no[/]", detail)
    console.print(table)
    required = {"database", "redis", "embedder"}
    if not all(result.get("ok") for name, result in rows if name in required):
        sys.exit(1)


NO_BROKER = "no broker: start the service with `muma up`, or set MUMA_REDIS_URL / MUMA_BROKER_URL"


def workers_check(settings: Settings) -> dict[str, Any]:
    """A worker's ping, or why none can be asked (no `muma up` and no broker configured:
    pinging the placeholder broker only said "Error 111 connecting to 127.0.0.1:1")."""
    if broker_url(settings) == UNREACHABLE_BROKER:
        return {"ok": False, "detail": NO_BROKER}
    return check_workers(celery_app.control.ping)


def _safe(check) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    try:
        return check()
    except Exception as exc:  # doctor reports every failure instead of raising
        return {"ok": False, "detail": f"{type(exc).__name__}: {exc}"}
