"""`muma db upgrade|downgrade|current|rebuild-derived|user-graphs`."""

from __future__ import annotations

import click

from memory.cli.common import console
from memory.ops.migrations import (
    current_revision,
    downgrade_database,
    head_revision,
    rebuild_derived,
    upgrade_database,
)


@click.group()
def db() -> None:
    """Database schema migrations (Alembic).

    \b
    Example:
      muma db upgrade
    """


@db.command()
@click.argument("revision", default="head")
def upgrade(revision: str) -> None:
    """Upgrade the schema to REVISION (default: head), then rebuild what an earlier
    version derived under rules since tightened (see `muma db rebuild-derived`).

    \b
    Example:
      muma db upgrade
    """
    upgrade_database(revision)
    console.print(f"schema at {current_revision()}")
    if revision == "head":
        rebuild_derived(console.print)


@db.command("rebuild-derived")
@click.option("--dry-run", is_flag=True, help="count the notes to rebuild, change nothing")
def rebuild_derived_command(dry_run: bool) -> None:
    """Rebuild windows, evolved keywords, tags and context of notes derived under an
    earlier rule, so that none holds content its readers may not read.

    \b
    `muma db upgrade` and `muma up` run it after the migrations; the maintenance queue
    finishes what is left. Resumable: an interrupted run keeps every finished batch.
    Example:
      muma db rebuild-derived --dry-run
    """
    if dry_run:
        from memory.db import session_scope
        from memory.notes.rederive import count_stale_derived

        with session_scope() as session:
            console.print(f"{count_stale_derived(session=session):,} notes to rebuild")
        return
    if rebuild_derived(console.print) == 0:
        console.print("nothing to rebuild")


@db.command()
@click.argument("revision", default="-1")
def downgrade(revision: str) -> None:
    """Downgrade the schema to REVISION (default: one step; 'base' removes everything).

    \b
    Example:
      muma db downgrade 0017
    """
    downgrade_database(revision)
    console.print(f"schema at {current_revision() or 'base'}")


@db.command()
def current() -> None:
    """Show the current and the latest schema revision.

    \b
    Example:
      muma db current
    """
    console.print(f"current: {current_revision() or 'base'}  head: {head_revision()}")


@db.command("user-graphs")
@click.option("--min-notes", type=click.IntRange(min=1), help="default: the setting")
@click.option("--dry-run", is_flag=True, help="print the plan, change nothing")
def user_graphs(min_notes: int | None, dry_run: bool) -> None:
    """Give large users that share a partition of note_vectors an HNSW graph of their own,
    and large domain and kind slices of a user's vectors one too.

    \b
    The maintenance queue does this every retrieval.dedicated_graph_interval_minutes;
    run it by hand after a bulk import. A build takes about a minute per 100k vectors.
    Slices (domains and kinds): retrieval.domain_graph_notes and
    retrieval.domain_graph_max_share.
    Example:
      muma db user-graphs --dry-run
    """
    from memory.config import get_settings
    from memory.db import session_scope
    from memory.notes.graphs import plan_user_graphs, update_user_graphs

    retrieval = get_settings().retrieval
    threshold = min_notes or retrieval.dedicated_graph_notes
    slice_notes, slice_share = retrieval.domain_graph_notes, retrieval.domain_graph_max_share
    with session_scope(autocommit=True) as session:
        if dry_run:
            plan = plan_user_graphs(
                session=session,
                min_notes=threshold,
                slice_min_notes=slice_notes,
                slice_max_share=slice_share,
            )
        else:
            found = update_user_graphs(
                session=session,
                min_notes=threshold,
                slice_min_notes=slice_notes,
                slice_max_share=slice_share,
            )
            if found is None:
                raise click.ClickException("another run is building user graphs; try again later")
            plan = found
    for graph in plan.create:
        of = "" if graph.slice is None else f" {graph.slice[0]} {graph.slice[1]!r}"
        console.print(
            f"{'build' if dry_run else 'built'} {graph.name} on {graph.partition}"
            f" for {graph.tenant_id}/{graph.user_id}{of} ({graph.notes:,} vectors)"
        )
    for name in plan.drop:
        console.print(f"{'drop' if dry_run else 'dropped'} {name}")
    console.print(
        f"{'would build' if dry_run else 'built'} {len(plan.create)},"
        f" {'would drop' if dry_run else 'dropped'} {len(plan.drop)}, kept {len(plan.keep)}"
        f" (users with at least {threshold:,} vectors in a shared partition; domains and kinds with"
        f" at least {retrieval.domain_graph_notes:,} of a user's vectors)"
    )
