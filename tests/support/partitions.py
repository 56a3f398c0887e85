"""Users placed in the hash partitions of note_vectors, note_terms and
note_window_vectors (64 each, by (tenant_id, user_id)): for tests of per-partition
structures. Users are of tenant 't', as `BARE_NOTE`s are."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.orm import Session

from tests.support.helpers import BARE_NOTE, UNIT_VECTOR, insert_bare_note

PARTITIONS = 64


def partition_of(session: Session, user: str) -> int:
    """The index of the partition that holds tenant 't' and `user`."""
    for i in range(PARTITIONS):
        found = session.execute(
            text(
                "SELECT satisfies_hash_partition('note_vectors'::regclass, :m, :i,"
                " CAST('t' AS varchar), CAST(:u AS varchar))"
            ),
            {"m": PARTITIONS, "i": i, "u": user},
        ).scalar_one()
        if found:
            return i
    raise AssertionError("no partition")


def neighbours(session: Session) -> tuple[str, str, str]:
    """Two users of tenant 't' hashed to one partition, and one alone in another."""
    seen: dict[int, str] = {}
    for n in range(1000):
        user = f"u{n}"
        part = partition_of(session, user)
        if part in seen:
            alone = next(f"v{k}" for k in range(1000) if partition_of(session, f"v{k}") != part)
            return seen[part], user, alone
        seen[part] = user
    raise AssertionError("no two users share a partition")


def add_bare_notes(
    session: Session, user: str, count: int, domain: str = "general", kind: str = "stable"
) -> None:
    """`count` bare notes of tenant 't', `user`, `domain` and `kind`, each with the unit
    vector."""
    for _ in range(count):
        values = {
            **BARE_NOTE,
            "id": uuid.uuid4(),
            "u": user,
            "v": UNIT_VECTOR,
            "domain": domain,
            "kind": kind,
        }
        session.execute(insert_bare_note(), values)
