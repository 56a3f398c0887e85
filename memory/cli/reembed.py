"""`muma reembed`: re-embed every note whose vector came from another model;
`muma backfill-sparse`: give every searchable note without a sparse vector its own."""

from __future__ import annotations

import click

from memory.cli.common import console, err_console, require_schema
from memory.cli.options import domain_errors, progress_bar
from memory.clients.embedder import get_embedder
from memory.clients.sparse_encoder import get_sparse_encoder, missing_encoder_reason
from memory.config import EmbeddingSettings, Settings, get_settings
from memory.db import session_scope
from memory.errors import ConfigError
from memory.notes.sparse_fill import count_missing_sparse, fill_sparse_vectors
from memory.ops.reembed import count_stale, reembed_batch


def _settings(provider: str | None, model: str | None) -> Settings:
    settings = get_settings()
    if not (provider or model):
        return settings
    fields = settings.embedding.model_dump()
    if provider and provider != fields["provider"] and not model:
        fields.pop("model")  # another provider without a model: that provider's own
    fields.update({k: v for k, v in (("provider", provider), ("model", model)) if v})
    return settings.model_copy(update={"embedding": EmbeddingSettings(**fields)})


@click.command(short_help="Re-embed notes after the embedding model changed.")
@click.option("--model", default=None, help="Embedding model (default: embedding.model).")
@click.option(
    "--provider",
    default=None,
    type=click.Choice(["onnx", "e5", "sentence-transformers", "openai", "hash"]),
    help="Embedding provider (default: embedding.provider).",
)
@click.option("--tenant", default=None, help="Only this tenant (default: every tenant).")
@click.option("--batch-size", default=64, show_default=True, type=click.IntRange(1, 4096))
@click.option("--dry-run", is_flag=True, help="Only count the notes to re-embed.")
@domain_errors
def reembed(
    model: str | None, provider: str | None, tenant: str | None, batch_size: int, dry_run: bool
) -> None:
    """Re-embed all notes made with another embedding model. Each batch is committed on
    its own, so an interrupted run resumes where it stopped when started again.

    Change embedding.model (or provider) in the configuration first, so the API and the
    workers embed new notes and queries with the same model.

    \b
    Examples:
      muma reembed --dry-run
      muma reembed --provider e5        # after setting embedding.provider to e5
      muma reembed --model all-MiniLM-L6-v2 --batch-size 128
    """
    require_schema()
    settings = _settings(provider, model)
    embedder = get_embedder(settings)
    configured = get_embedder(get_settings()).model_id if (model or provider) else None
    if configured is not None and configured != embedder.model_id:
        err_console.print(
            f"[yellow]warning:[/] the configuration still embeds with {configured}; "
            "set embedding.model so new notes and queries use the same model"
        )
    with session_scope() as session:
        total = count_stale(session=session, model_id=embedder.model_id, tenant_id=tenant)
    if dry_run or total == 0:
        console.print(f"{total} notes to re-embed with {embedder.model_id}")
        return
    done = 0
    with progress_bar() as bar:
        task = bar.add_task(f"re-embedding with {embedder.model_id}", total=total)
        while True:
            with session_scope() as session:
                n = reembed_batch(
                    session=session, embedder=embedder, limit=batch_size, tenant_id=tenant
                )
            if n == 0:
                break
            done += n
            bar.advance(task, n)
    with session_scope() as session:
        left = count_stale(session=session, model_id=embedder.model_id, tenant_id=tenant)
    console.print(f"re-embedded {done} notes with {embedder.model_id}")
    if left:
        console.print(f"{left} notes were busy in the pipeline; run `muma reembed` again")


@click.command("backfill-sparse", short_help="Give notes without a sparse vector theirs.")
@click.option("--tenant", default=None, help="Only this tenant (default: every tenant).")
@click.option("--batch-size", default=200, show_default=True, type=click.IntRange(1, 4096))
@click.option("--dry-run", is_flag=True, help="Only count the notes without one.")
@domain_errors
def backfill_sparse(tenant: str | None, batch_size: int, dry_run: bool) -> None:
    """Encode the learned sparse vector (SPLADE-tiny) of every searchable note that has
    none: notes written before the vectors existed, or while the model files were
    missing. Each batch is committed on its own; the daily task does the same slowly.

    \b
    Examples:
      muma backfill-sparse --dry-run
      muma backfill-sparse --tenant acme
    """
    require_schema()
    with session_scope() as session:
        total = count_missing_sparse(session=session, tenant_id=tenant)
    if dry_run or total == 0:
        console.print(f"{total} notes without a sparse vector")
        return
    settings = get_settings()
    encoder = get_sparse_encoder(settings)
    if encoder is None:
        raise ConfigError(missing_encoder_reason(settings) or "no sparse encoder", key="sparse")
    done, after = 0, None
    with progress_bar() as bar:
        task = bar.add_task("encoding sparse vectors", total=total)
        while True:
            with session_scope() as session:
                batch = fill_sparse_vectors(
                    session=session,
                    encoder=encoder,
                    limit=batch_size,
                    after_id=after,
                    tenant_id=tenant,
                )
            if batch.last_id is None:
                break
            done, after = done + batch.filled, batch.last_id
            bar.advance(task, batch.filled)
    console.print(f"encoded {done} sparse vectors")
