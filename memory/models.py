"""Imports every model so Base.metadata is complete (Alembic and tests use this)."""

from memory.access.models import Agent, ApiToken
from memory.commons.models import TransactiveEntry
from memory.conflicts.models import Conflict
from memory.db import Base
from memory.episodes.models import Episode
from memory.erasure.models import Erasure
from memory.journal.models import JournalInjection
from memory.links.models import Contribution, Link
from memory.notes.models import LexiconTerm, LexiconTotal, Note, NoteSource, Tombstone
from memory.ops.models import AuditEvent, DeadLetter

__all__ = [
    "Agent",
    "ApiToken",
    "AuditEvent",
    "Base",
    "Conflict",
    "Contribution",
    "DeadLetter",
    "Episode",
    "Erasure",
    "JournalInjection",
    "LexiconTerm",
    "LexiconTotal",
    "Link",
    "Note",
    "NoteSource",
    "Tombstone",
    "TransactiveEntry",
]
