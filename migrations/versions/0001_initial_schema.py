"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
import pgvector.sqlalchemy
from sqlalchemy.dialects import postgresql

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.create_table('agents',
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('agent_id', sa.String(length=128), nullable=False),
    sa.Column('display_name', sa.String(length=256), nullable=True),
    sa.Column('domains', sa.ARRAY(sa.Text()), nullable=False),
    sa.Column('can_see_private', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('tenant_id', 'agent_id', name=op.f('pk_agents'))
    )
    op.create_table('api_tokens',
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=True),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('user_id', sa.String(length=128), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("role IN ('agent', 'viewer', 'operator', 'admin')", name=op.f('ck_api_tokens_role')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_api_tokens_token_hash'))
    )
    op.create_table('dead_letters',
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=True),
    sa.Column('task_name', sa.String(length=128), nullable=False),
    sa.Column('args', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('kwargs', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('episode_id', sa.UUID(), nullable=True),
    sa.Column('error', sa.Text(), nullable=False),
    sa.Column('traceback', sa.Text(), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('first_failed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_failed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('requeued_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_dead_letters'))
    )
    op.create_index('ix_dead_letters_open', 'dead_letters', ['requeued_at', 'last_failed_at'], unique=False)
    op.create_table('episodes',
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('seq', sa.BigInteger(), sa.Identity(always=False), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('user_id', sa.String(length=128), nullable=False),
    sa.Column('agent_id', sa.String(length=128), nullable=False),
    sa.Column('session_id', sa.String(length=128), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('speaker', sa.String(length=128), nullable=True),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('occurred_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('metadata', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('options', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('source', sa.String(length=16), nullable=False),
    sa.Column('idempotency_key', sa.String(length=256), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('decision', sa.String(length=16), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('enqueued_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('processed_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("role IN ('user', 'assistant', 'tool', 'system')", name=op.f('ck_episodes_role')),
    sa.CheckConstraint("status IN ('queued', 'processing', 'done', 'failed')", name=op.f('ck_episodes_status')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_episodes')),
    sa.UniqueConstraint('seq', name=op.f('uq_episodes_seq'))
    )
    op.create_index('ix_episodes_status_updated', 'episodes', ['status', 'updated_at'], unique=False)
    op.create_index('ix_episodes_user_session_seq', 'episodes', ['tenant_id', 'user_id', 'session_id', 'seq'], unique=False)
    op.create_index('uq_episodes_tenant_idempotency', 'episodes', ['tenant_id', 'idempotency_key'], unique=True)
    op.create_table('events',
    sa.Column('id', sa.BigInteger(), sa.Identity(always=True), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('user_id', sa.String(length=128), nullable=True),
    sa.Column('actor', sa.String(length=160), nullable=False),
    sa.Column('action', sa.String(length=64), nullable=False),
    sa.Column('entity_type', sa.String(length=32), nullable=False),
    sa.Column('entity_id', sa.String(length=64), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('data', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_events'))
    )
    op.create_index('ix_events_scope', 'events', ['tenant_id', 'user_id', 'id'], unique=False)
    op.create_table('lexicon',
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('user_id', sa.String(length=128), nullable=False),
    sa.Column('field', sa.String(length=8), nullable=False),
    sa.Column('term', sa.Text(), nullable=False),
    sa.Column('doc_count', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('tenant_id', 'user_id', 'field', 'term', name=op.f('pk_lexicon'))
    )
    op.create_table('lexicon_totals',
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('user_id', sa.String(length=128), nullable=False),
    sa.Column('field', sa.String(length=8), nullable=False),
    sa.Column('doc_count', sa.Integer(), nullable=False),
    sa.Column('term_total', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('tenant_id', 'user_id', 'field', name=op.f('pk_lexicon_totals'))
    )
    op.create_table('notes',
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('lineage_id', sa.UUID(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('user_id', sa.String(length=128), nullable=False),
    sa.Column('agent_id', sa.String(length=128), nullable=False),
    sa.Column('session_id', sa.String(length=128), nullable=True),
    sa.Column('turn_seq', sa.BigInteger(), nullable=True),
    sa.Column('speaker', sa.String(length=128), nullable=True),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('summary', sa.Text(), nullable=True),
    sa.Column('context', sa.Text(), nullable=True),
    sa.Column('keywords', sa.ARRAY(sa.Text()), nullable=False),
    sa.Column('tags', sa.ARRAY(sa.Text()), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('domain', sa.String(length=64), nullable=False),
    sa.Column('visibility', sa.String(length=16), nullable=False),
    sa.Column('pinned', sa.Boolean(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('importance', sa.Float(), nullable=False),
    sa.Column('metadata', postgresql.JSONB(astext_type=sa.Text()), nullable=False),
    sa.Column('occurred_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('valid_from', sa.DateTime(timezone=True), nullable=False),
    sa.Column('valid_to', sa.DateTime(timezone=True), nullable=True),
    sa.Column('superseded_by', sa.UUID(), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('archived_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('access_times', sa.ARRAY(sa.DateTime(timezone=True)), nullable=False),
    sa.Column('access_count', sa.Integer(), nullable=False),
    sa.Column('first_access_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_access_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('half_life_hours', sa.Float(), nullable=False),
    sa.Column('index_text', sa.Text(), nullable=True),
    sa.Column('window_text', sa.Text(), nullable=True),
    sa.Column('embed_text', sa.Text(), nullable=True),
    sa.Column('index_terms', postgresql.TSVECTOR(), nullable=True),
    sa.Column('window_terms', postgresql.TSVECTOR(), nullable=True),
    sa.Column('term_count', sa.Integer(), nullable=False),
    sa.Column('window_term_count', sa.Integer(), nullable=False),
    sa.Column('embedding', pgvector.sqlalchemy.vector.VECTOR(dim=384), nullable=True),
    sa.Column('window_embedding', pgvector.sqlalchemy.vector.VECTOR(dim=384), nullable=True),
    sa.Column('embedding_model', sa.String(length=128), nullable=True),
    sa.CheckConstraint("kind IN ('stable', 'preference', 'episodic', 'ephemeral', 'decision', 'knowledge')", name=op.f('ck_notes_kind')),
    sa.CheckConstraint("status IN ('pending', 'active', 'archived', 'deleted')", name=op.f('ck_notes_status')),
    sa.CheckConstraint("visibility IN ('open', 'scoped', 'private', 'user-only')", name=op.f('ck_notes_visibility')),
    sa.CheckConstraint('importance >= 0 AND importance <= 1', name=op.f('ck_notes_importance')),
    sa.ForeignKeyConstraint(['superseded_by'], ['notes.id'], name=op.f('fk_notes_superseded_by_notes'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_notes'))
    )
    op.create_index('ix_notes_content_trgm', 'notes', ['content'], unique=False, postgresql_using='gin', postgresql_ops={'content': 'gin_trgm_ops'})
    op.create_index('ix_notes_embedding_hnsw', 'notes', ['embedding'], unique=False, postgresql_using='hnsw', postgresql_ops={'embedding': 'vector_cosine_ops'})
    op.create_index('ix_notes_window_embedding_hnsw', 'notes', ['window_embedding'], unique=False, postgresql_using='hnsw', postgresql_ops={'window_embedding': 'vector_cosine_ops'})
    op.create_index('ix_notes_expires', 'notes', ['expires_at'], unique=False, postgresql_where=sa.text('expires_at IS NOT NULL'))
    op.create_index('ix_notes_index_terms', 'notes', ['index_terms'], unique=False, postgresql_using='gin')
    op.create_index('ix_notes_lineage', 'notes', ['lineage_id', 'version'], unique=False)
    op.create_index('ix_notes_session_turn', 'notes', ['tenant_id', 'user_id', 'session_id', 'turn_seq'], unique=False)
    op.create_index('ix_notes_scope', 'notes', ['tenant_id', 'user_id', 'status'], unique=False)
    op.create_index('ix_notes_window_terms', 'notes', ['window_terms'], unique=False, postgresql_using='gin')
    # Sleep cycle (hard deletes): ON DELETE SET NULL finds the notes superseded by each
    # deleted note; without this index that is one full scan of notes per deleted note.
    op.create_index('ix_notes_superseded_by', 'notes', ['superseded_by'], unique=False, postgresql_where=sa.text('superseded_by IS NOT NULL'))
    # Write path: the embedding stage claims pending notes oldest first; without this
    # index that is one full scan of notes per batch.
    op.create_index('ix_notes_pending', 'notes', ['created_at'], unique=False, postgresql_where=sa.text("status = 'pending'"))
    op.create_table('tombstones',
    sa.Column('note_id', sa.UUID(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('user_id', sa.String(length=128), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('content_hash', sa.String(length=64), nullable=False),
    sa.Column('deleted_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('note_id', name=op.f('pk_tombstones'))
    )
    op.create_index('ix_tombstones_scope', 'tombstones', ['tenant_id', 'user_id'], unique=False)
    op.create_table('transactive_index',
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('user_id', sa.String(length=128), nullable=False),
    sa.Column('agent_id', sa.String(length=128), nullable=False),
    sa.Column('topic', sa.String(length=128), nullable=False),
    sa.Column('domain', sa.String(length=64), nullable=False),
    sa.Column('visibility', sa.String(length=16), nullable=False),
    sa.Column('note_count', sa.Integer(), nullable=False),
    sa.Column('last_write_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('tenant_id', 'user_id', 'agent_id', 'topic', name=op.f('pk_transactive_index'))
    )
    op.create_table('conflicts',
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('user_id', sa.String(length=128), nullable=False),
    sa.Column('note_a_id', sa.UUID(), nullable=False),
    sa.Column('note_b_id', sa.UUID(), nullable=False),
    sa.Column('agent_a_id', sa.String(length=128), nullable=False),
    sa.Column('agent_b_id', sa.String(length=128), nullable=False),
    sa.Column('similarity', sa.Float(), nullable=False),
    sa.Column('classification', sa.String(length=16), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('resolution', postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('resolved_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("classification IN ('compatible', 'contradictory', 'subsumes', 'ambiguous')", name=op.f('ck_conflicts_classification')),
    sa.CheckConstraint("status IN ('open', 'resolved')", name=op.f('ck_conflicts_status')),
    sa.CheckConstraint('note_a_id < note_b_id', name=op.f('ck_conflicts_ordered_pair')),
    sa.ForeignKeyConstraint(['note_a_id'], ['notes.id'], name=op.f('fk_conflicts_note_a_id_notes'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['note_b_id'], ['notes.id'], name=op.f('fk_conflicts_note_b_id_notes'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_conflicts')),
    sa.UniqueConstraint('note_a_id', 'note_b_id', name='uq_conflicts_pair')
    )
    op.create_index('ix_conflicts_scope', 'conflicts', ['tenant_id', 'user_id', 'status'], unique=False)
    # Sleep cycle (hard deletes): ON DELETE CASCADE from notes to conflicts.note_b_id.
    op.create_index('ix_conflicts_note_b', 'conflicts', ['note_b_id'], unique=False)
    op.create_table('links',
    sa.Column('id', sa.UUID(), nullable=False),
    sa.Column('tenant_id', sa.String(length=128), nullable=False),
    sa.Column('user_id', sa.String(length=128), nullable=False),
    sa.Column('source_id', sa.UUID(), nullable=False),
    sa.Column('target_id', sa.UUID(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('weight', sa.Float(), nullable=False),
    sa.Column('created_by', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("created_by IN ('pipeline', 'user', 'agent')", name=op.f('ck_links_created_by')),
    sa.CheckConstraint("kind IN ('related', 'derived_from', 'supersedes', 'contradicts', 'consolidates')", name=op.f('ck_links_kind')),
    sa.CheckConstraint('source_id <> target_id', name=op.f('ck_links_not_self')),
    sa.ForeignKeyConstraint(['source_id'], ['notes.id'], name=op.f('fk_links_source_id_notes'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['target_id'], ['notes.id'], name=op.f('fk_links_target_id_notes'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_links')),
    sa.UniqueConstraint('source_id', 'target_id', 'kind', name='uq_links_edge')
    )
    op.create_index('ix_links_target', 'links', ['target_id'], unique=False)
    op.create_table('note_sources',
    sa.Column('note_id', sa.UUID(), nullable=False),
    sa.Column('episode_id', sa.UUID(), nullable=False),
    sa.Column('relation', sa.String(length=16), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['episode_id'], ['episodes.id'], name=op.f('fk_note_sources_episode_id_episodes'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['note_id'], ['notes.id'], name=op.f('fk_note_sources_note_id_notes'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('note_id', 'episode_id', name=op.f('pk_note_sources'))
    )
    op.create_index('ix_note_sources_episode', 'note_sources', ['episode_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_note_sources_episode', table_name='note_sources')
    op.drop_table('note_sources')
    op.drop_index('ix_links_target', table_name='links')
    op.drop_table('links')
    op.drop_index('ix_conflicts_note_b', table_name='conflicts')
    op.drop_index('ix_conflicts_scope', table_name='conflicts')
    op.drop_table('conflicts')
    op.drop_table('transactive_index')
    op.drop_index('ix_tombstones_scope', table_name='tombstones')
    op.drop_table('tombstones')
    op.drop_index('ix_notes_pending', table_name='notes', postgresql_where=sa.text("status = 'pending'"))
    op.drop_index('ix_notes_superseded_by', table_name='notes', postgresql_where=sa.text('superseded_by IS NOT NULL'))
    op.drop_index('ix_notes_window_terms', table_name='notes', postgresql_using='gin')
    op.drop_index('ix_notes_scope', table_name='notes')
    op.drop_index('ix_notes_session_turn', table_name='notes')
    op.drop_index('ix_notes_lineage', table_name='notes')
    op.drop_index('ix_notes_index_terms', table_name='notes', postgresql_using='gin')
    op.drop_index('ix_notes_expires', table_name='notes', postgresql_where=sa.text('expires_at IS NOT NULL'))
    op.drop_index('ix_notes_window_embedding_hnsw', table_name='notes')
    op.drop_index('ix_notes_embedding_hnsw', table_name='notes', postgresql_using='hnsw', postgresql_ops={'embedding': 'vector_cosine_ops'})
    op.drop_index('ix_notes_content_trgm', table_name='notes', postgresql_using='gin', postgresql_ops={'content': 'gin_trgm_ops'})
    op.drop_table('notes')
    op.drop_table('lexicon_totals')
    op.drop_table('lexicon')
    op.drop_index('ix_events_scope', table_name='events')
    op.drop_table('events')
    op.drop_index('uq_episodes_tenant_idempotency', table_name='episodes')
    op.drop_index('ix_episodes_user_session_seq', table_name='episodes')
    op.drop_index('ix_episodes_status_updated', table_name='episodes')
    op.drop_table('episodes')
    op.drop_index('ix_dead_letters_open', table_name='dead_letters')
    op.drop_table('dead_letters')
    op.drop_table('api_tokens')
    op.drop_table('agents')
