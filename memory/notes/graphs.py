"""Dedicated HNSW graphs: for large users that share a partition of note_vectors, and
for large domain and kind slices of a user's vectors.

note_vectors is hash-partitioned by (tenant, user) into 64 partitions with one HNSW graph
each (migration 0004). A user whose partition also holds other users' vectors pays for
them: pgvector walks the partition's graph and drops other users' entries after the
fact, so a query that lands in a neighbour's region wades through thousands of its
entries. On the latency benchmark, a 100k-note user sharing its partition with another
had a dense route p95 of 94-140 ms over three passes (worst 257 ms; 4,664 entries
filtered out in one query) against 13-55 ms for users alone in theirs; with a graph of
its own, 26 ms (commit 0066427). A partial HNSW index on the
partition, WHERE tenant_id = t AND user_id = u, is that graph: the read path's custom
plans (`plan_cache_mode = force_custom_plan`) see the values and choose it, for
filtered searches too.

A search filtered to one domain walks the user's graph outwards from the query and keeps
only entries of that domain; when the domain is not what the question is about, the walk
meets the slice late or never and the read path ranks the slice exactly instead (39.5 ms
mean, p95 54 for a 100k user's 21,600-note slice). A partial graph WHERE tenant, user and
domain are the slice's answers from the slice alone: 4.3 ms mean, p95 5.5, built in 4.6 s
(commit 58f39da). `domain = ANY(ARRAY[d])` with one constant implies
the predicate, so a search filtered to one domain uses it; to several, the user's graph.
Kind slices get graphs the same way: a kinds filter asks each kind's slice for its own
pool (`memory.retrieval.routes`), so two kinds' pool of 200 took 2.7 ms mean against 8.9
from the user's graph (commit ef5fc18).

Invariants: a user has one exactly when it holds at least `min_notes` vectors and its
partition holds other users' vectors too; a (user, domain) slice has one exactly when it
holds at least `slice_min_notes` vectors and at most `slice_max_share` of the user's
(in a larger share the user's graph meets the slice soon enough), and so does a (user,
kind) slice. Index names are hashes of (tenant, user) and, for a slice, of its domain (or
`k` and its kind) after the user's name, so planning twice plans nothing new and a
user's slices are found by the user's name;
an index left invalid by an interrupted build is dropped and built again. Builds and
drops run CONCURRENTLY (writes go on meanwhile), so they need a connection in
autocommit mode.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.orm import Session

PREFIX = "ix_note_vectors_user_"
# One run at a time (the hourly task, the CLI): a pg_try_advisory_lock key of its own.
LOCK_KEY = 0x6D756D61_67726170  # "muma" "grap"


@dataclass(frozen=True)
class UserGraph:
    """A dedicated graph: its index name, partition, and whose vectors it holds (those
    of one domain or one kind when `domain` or `kind` is set)."""

    name: str
    partition: str
    tenant_id: str
    user_id: str
    notes: int
    domain: str | None = None
    kind: str | None = None

    @property
    def slice(self) -> tuple[str, str] | None:
        """(column, value) of the slice this graph holds, None for a whole user's."""
        if self.domain is not None:
            return ("domain", self.domain)
        return None if self.kind is None else ("kind", self.kind)


@dataclass
class GraphPlan:
    create: list[UserGraph] = field(default_factory=list)
    drop: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)


def graph_name(tenant_id: str, user_id: str) -> str:
    digest = hashlib.sha256(f"{tenant_id}\x00{user_id}".encode()).hexdigest()[:20]
    return PREFIX + digest


def domain_graph_name(tenant_id: str, user_id: str, domain: str) -> str:
    """The user's graph name, then `_` and a hash of the domain (50 characters)."""
    digest = hashlib.sha256(domain.encode()).hexdigest()[:8]
    return f"{graph_name(tenant_id, user_id)}_{digest}"


# The columns a user's notes are sliced by, each slice large enough getting a graph.
SLICE_COLUMNS = ("domain", "kind")


def slice_graph_name(tenant_id: str, user_id: str, column: str, value: str) -> str:
    """The graph name of the user's slice where `column` (one of SLICE_COLUMNS) = value."""
    if column == "kind":
        return kind_graph_name(tenant_id, user_id, value)
    return domain_graph_name(tenant_id, user_id, value)


def kind_graph_name(tenant_id: str, user_id: str, kind: str) -> str:
    """The user's graph name, then `_k` and a hash of the kind (50 characters; `k` is
    not a hex digit, so it never equals a domain's)."""
    digest = hashlib.sha256(kind.encode()).hexdigest()[:7]
    return f"{graph_name(tenant_id, user_id)}_k{digest}"


# Per user: an index-only scan of the partitions' (tenant_id, user_id, ...) btrees, not
# the vectors' heap (1M vectors: ~1k pages against 219k with the partition in the key).
_OWNERS = text("SELECT tenant_id, user_id, count(*) AS n FROM note_vectors GROUP BY 1, 2")
# Per (user, domain) and (user, kind), from the partitions' btrees on those columns.
_SLICES = {
    column: text(
        f"SELECT tenant_id, user_id, {column}, count(*) AS n FROM note_vectors GROUP BY 1, 2, 3"
    )
    for column in SLICE_COLUMNS
}
_PARTITION = text(
    "SELECT tableoid::regclass::text FROM note_vectors"
    " WHERE tenant_id = :tenant_id AND user_id = :user_id LIMIT 1"
)
# Whether anyone else's vectors share the partition: two btree probes around the user.
_OTHERS = (
    "SELECT EXISTS (SELECT 1 FROM {part} WHERE (tenant_id, user_id) < (:tenant_id, :user_id))"
    " OR EXISTS (SELECT 1 FROM {part} WHERE (tenant_id, user_id) > (:tenant_id, :user_id))"
)
_EXISTING = text(
    "SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i"
    " JOIN pg_class c ON c.oid = i.indexrelid"
    " WHERE c.relname LIKE :prefix AND c.relkind = 'i'"
)


def plan_user_graphs(
    *,
    session: Session,
    min_notes: int,
    slice_min_notes: int | None = None,
    slice_max_share: float = 0.5,
) -> GraphPlan:
    """Which dedicated graphs to build and which to drop, from the vectors' owners now;
    slices' graphs only when `slice_min_notes` is given."""
    owners = {(t, u): int(n) for t, u, n in session.execute(_OWNERS)}
    smallest = min_notes if slice_min_notes is None else min(min_notes, slice_min_notes)
    wanted: dict[str, UserGraph] = {}
    partitions: dict[tuple[str, str], str] = {}
    for (tenant_id, user_id), count in owners.items():
        if count < smallest:
            continue
        who = {"tenant_id": tenant_id, "user_id": user_id}
        # `part` is a regclass's text (a partition's name, quoted as needed).
        part = partitions[tenant_id, user_id] = session.execute(_PARTITION, who).scalar_one()
        others = text(_OTHERS.format(part=part))
        if count >= min_notes and session.execute(others, who).scalar_one():
            name = graph_name(tenant_id, user_id)
            wanted[name] = UserGraph(name, part, tenant_id, user_id, count)
    if slice_min_notes is not None:
        for column, slices in _SLICES.items():
            for tenant_id, user_id, value, count in session.execute(slices):
                total = owners.get((tenant_id, user_id), 0)
                if count < slice_min_notes or count > slice_max_share * total:
                    continue
                part = partitions.get((tenant_id, user_id))
                if part is None:  # grew between the two counts: its turn comes next run
                    continue
                graph = _slice_graph(part, tenant_id, user_id, count, column, value)
                wanted[graph.name] = graph
    existing = {row.name: row.valid for row in session.execute(_EXISTING, {"prefix": PREFIX + "%"})}
    plan = GraphPlan()
    for name, valid in sorted(existing.items()):
        (plan.keep if valid and name in wanted else plan.drop).append(name)
    plan.create = [g for name, g in sorted(wanted.items()) if name not in plan.keep]
    return plan


def _slice_graph(
    part: str, tenant_id: str, user_id: str, count: int, column: str, value: str
) -> UserGraph:
    name = slice_graph_name(tenant_id, user_id, column, value)
    slice_ = {"kind": value} if column == "kind" else {"domain": value}
    return UserGraph(name, part, tenant_id, user_id, count, **slice_)


def apply_user_graphs(*, session: Session, plan: GraphPlan) -> None:
    """Drop, then build, as the plan says; `session` must be in autocommit mode.

    The statements go to the driver as they are (DDL takes no parameters): index names
    are hex digests, partitions come from `regclass` (quoted as needed), and the tenant
    and user are quoted as literals by psycopg."""
    from psycopg import sql

    connection = session.connection()
    driver = connection.connection.driver_connection
    for name in plan.drop:
        connection.exec_driver_sql(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
    for graph in plan.create:
        tenant, user = (sql.Literal(v).as_string(driver) for v in (graph.tenant_id, graph.user_id))
        where = f"tenant_id = {tenant} AND user_id = {user}"
        if graph.slice is not None:
            column, value = graph.slice
            where += f" AND {column} = {sql.Literal(value).as_string(driver)}"
        connection.exec_driver_sql(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {graph.name} ON {graph.partition}"
            f" USING hnsw (embedding vector_cosine_ops) WHERE {where}"
        )


def update_user_graphs(
    *,
    session: Session,
    min_notes: int,
    slice_min_notes: int | None = None,
    slice_max_share: float = 0.5,
) -> GraphPlan | None:
    """Plan and apply under an advisory lock; None when another run holds it (two
    CONCURRENTLY builds of one index would collide). `session` in autocommit mode."""
    lock = {"key": LOCK_KEY}
    if not session.execute(text("SELECT pg_try_advisory_lock(:key)"), lock).scalar_one():
        return None
    try:
        plan = plan_user_graphs(
            session=session,
            min_notes=min_notes,
            slice_min_notes=slice_min_notes,
            slice_max_share=slice_max_share,
        )
        apply_user_graphs(session=session, plan=plan)
        return plan
    finally:
        session.execute(text("SELECT pg_advisory_unlock(:key)"), lock)
