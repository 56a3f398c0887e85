"""Engine, sessions and the declarative Base.

`session_scope()` is the only place that commits: domain functions receive a session,
may flush, and never commit, so one unit of work is one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import psycopg
from psycopg.rows import namedtuple_row
from sqlalchemy import (
    ARRAY,
    Engine,
    Executable,
    MetaData,
    String,
    Uuid,
    bindparam,
    create_engine,
    event,
    func,
    select,
    text,
)
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

from memory.config import Settings, get_settings
from memory.db_liveness import install_liveness_check
from memory.db_url import resolve_database_url
from memory.errors import InvalidInputError, TransientError
from memory.runtime.priority import lower_backend_priority

log = logging.getLogger(__name__)

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


_ENGINES: dict[tuple[str, bool, bool], Engine] = {}
# Server-side limits for every connection this process opens (`limit_statements`).
_STATEMENT_LIMITS: dict[str, int] = {}
_SESSIONMAKERS: dict[tuple[str, bool, bool, bool], sessionmaker[Session]] = {}
# Connections of the pool for reads a request runs beside its own transaction
# (`memory.retrieval.aside`, which never holds more at once).
ASIDE_CONNECTIONS = 4
# Connections of each of the two other pools of a process.
POOL_CONNECTIONS = 15


def _engine_for(url: str, *, custom_plans: bool = False, aside: bool = False) -> Engine:
    """One pooled engine per URL, a second one for reads planned per execution, and a
    third, small one for reads run beside a request's own (custom plans too)."""
    custom_plans = custom_plans or aside
    key = (url, custom_plans, aside)
    if key in _ENGINES:
        return _ENGINES[key]
    # Every connection a pool opens is kept: an overflow connection (beyond pool_size) is
    # closed when handed back, and under 20 concurrent clients the next request opened
    # it again (86 new PostgreSQL sessions per 1,000 searches,
    # `benchmarks/results/capacity-2026-12-07.json`). The most a pool holds is unchanged;
    # it opens them only as needed.
    pool = {"pool_size": ASIDE_CONNECTIONS if aside else POOL_CONNECTIONS, "max_overflow": 0}
    pool_timeout = get_settings().api.pool_wait_ms / 1000
    engine = create_engine(
        url, pool_pre_ping=False, pool_recycle=1800, pool_timeout=pool_timeout, **pool
    )
    install_liveness_check(engine)

    ef_search = get_settings().retrieval.hnsw_ef_search

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        # Iterative HNSW scans keep filtered vector queries from starving (pgvector >= 0.8).
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SET hnsw.iterative_scan = relaxed_order")
            cursor.execute(f"SET hnsw.ef_search = {int(ef_search)}")
            # Set here, not as startup options, which connection poolers refuse.
            for name, value in _STATEMENT_LIMITS.items():
                cursor.execute(f"SET {name} = {int(value)}")
            if custom_plans:
                # psycopg prepares a statement after its 5th run on a connection, and
                # PostgreSQL may then switch to a generic plan, blind to the user, the
                # terms and the vector the read path's plans depend on (search p50 58 ->
                # 115 ms over HTTP at 100k notes). Other work keeps generic plans: a
                # simple statement re-planned each time cost 0.134 ms against 0.052.
                cursor.execute("SET plan_cache_mode = force_custom_plan")
        dbapi_connection.commit()
        # A worker below normal priority takes its database work down with it.
        changed = lower_backend_priority(
            dbapi_connection.info.backend_pid, dbapi_connection.pgconn.socket
        )
        if changed:
            log.debug("%s", changed)

    _ENGINES[key] = engine
    return engine


def limit_statements(*, statement_timeout_ms: int, lock_timeout_ms: int) -> None:
    """From now on, the server cancels any statement of this process's connections after
    `statement_timeout_ms` and any wait on a lock after `lock_timeout_ms` (for the API:
    a request never holds a connection past its budget). Pooled connections opened
    before are closed, so none is left without the limits."""
    limits = {"statement_timeout": int(statement_timeout_ms), "lock_timeout": int(lock_timeout_ms)}
    if limits != _STATEMENT_LIMITS:
        _STATEMENT_LIMITS.update(limits)
        dispose_engines(close=True)


def get_engine(settings: Settings | None = None, *, custom_plans: bool = False) -> Engine:
    return _engine_for(resolve_database_url(settings), custom_plans=custom_plans)


def dispose_engines(*, close: bool = False) -> None:
    """Drop pooled connections.

    After a fork pass close=False: the child must never reuse (or close) its parent's
    sockets, it just forgets them and opens its own.
    """
    for engine in _ENGINES.values():
        engine.dispose(close=close)
    _ENGINES.clear()
    _SESSIONMAKERS.clear()


def _sessionmaker_for(
    url: str, *, autocommit: bool = False, custom_plans: bool = False, aside: bool = False
) -> sessionmaker[Session]:
    key = (url, autocommit, custom_plans, aside)
    if key not in _SESSIONMAKERS:
        engine = _engine_for(url, custom_plans=custom_plans, aside=aside)
        if autocommit:
            engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        _SESSIONMAKERS[key] = sessionmaker(bind=engine, expire_on_commit=False)
    return _SESSIONMAKERS[key]


@contextmanager
def session_scope(
    settings: Settings | None = None,
    *,
    autocommit: bool = False,
    custom_plans: bool = False,
    aside: bool = False,
) -> Iterator[Session]:
    """One transaction: commit on success, roll back on any error.

    With `autocommit`, each statement commits on its own instead: only for a unit of work
    that is one writing statement (a capture's INSERT), where it saves the BEGIN and
    COMMIT round trips that every capture's acknowledgement otherwise waits for.
    With `custom_plans`, the connection (from a pool of its own) plans every execution for
    its parameter values: for the read path, whose best plan depends on them. With
    `aside`, likewise, from a pool of `ASIDE_CONNECTIONS`: for a read that runs beside a
    request's own transaction (`memory.retrieval.aside`).
    Connection failures surface as TransientError so callers (tasks) can retry them.
    """
    factory = _sessionmaker_for(
        resolve_database_url(settings),
        autocommit=autocommit,
        custom_plans=custom_plans,
        aside=aside,
    )
    session = factory()
    try:
        yield session
        session.commit()
    except (OperationalError, InterfaceError) as exc:
        _rollback_after(session, exc)
        raise TransientError(f"database unavailable: {exc.orig}") from exc
    except PoolTimeoutError as exc:
        _rollback_after(session, exc)
        raise TransientError(
            "database busy: no connection came free within "
            f"{get_settings().api.pool_wait_ms} ms (api.pool_wait_ms)"
        ) from exc
    except DBAPIError as exc:
        _rollback_after(session, exc)
        if exc.connection_invalidated:  # the connection broke mid-statement
            raise TransientError(f"database connection lost: {exc.orig}") from exc
        raise
    except BaseException as exc:
        _rollback_after(session, exc)
        raise
    finally:
        _close_quietly(session)


def _rollback_after(session: Session, error: BaseException) -> None:
    """Roll back after `error`; on a lost connection the rollback fails too, and that
    failure must not replace the error being raised (a 503 became a 500)."""
    try:
        session.rollback()
    except Exception:
        log.warning("rollback after %s failed", type(error).__name__, exc_info=True)


def _close_quietly(session: Session) -> None:
    try:
        session.close()
    except Exception:
        log.warning("closing a session failed", exc_info=True)


class CompiledStatement:
    """A statement of a hot path (the read path's, the write path's) compiled once to
    psycopg's SQL and run on the session's own connection with a dict of values: no
    SQLAlchemy cache key, bind or result processing per execution (a window-similarity
    read of 250 ids: 1.5-2.0 ms of CPU through the Core connection, 0.6-0.8 raw).

    Invariants: every value that changes between calls is a named `bindparam` supplied
    to `rows()`; any other bind is a constant of the statement's shape, kept from the
    compiled statement. So build each one in a cached function of shape arguments only
    (flags, counts, constants), never of a call's values. No expanding IN (use
    `= ANY(array)`), and vector values are passed as `VectorParam` (binary) or as text
    (`memory.notes.vectors.vector_text`), since SQLAlchemy's bind processors do not run.
    Rows are named tuples of the statement's column labels (or RETURNING's).
    """

    def __init__(self, statement: Executable) -> None:
        compiled = statement.compile(dialect=_PSYCOPG_DIALECT)
        self.sql = str(compiled)
        if "POSTCOMPILE" in self.sql:
            raise ValueError("a compiled statement cannot hold an expanding IN; use = ANY(array)")
        self.constants = {k: v for k, v in compiled.params.items() if v is not None}
        # uuid[] values go in binary: psycopg's text form quotes each element through a
        # regular expression (150 ids: 230 µs against 33 µs), on every read of the path.
        # The dialect's cast (`::UUID[]`) still lets ids given as strings compare.
        self.id_arrays = tuple(
            name for name, bind in compiled.binds.items() if _is_uuid_array(bind.type)
        )
        for name in self.id_arrays:
            self.sql = self.sql.replace(f"%({name})s", f"%({name})b")

    def rows(self, session: Session, params: dict[str, Any] | None = None) -> list[Any]:
        """The statement's rows in the session's transaction (its row-level security and
        settings apply), after writing pending changes as an ORM execute would; a database
        error surfaces as SQLAlchemy's, as through the ORM."""
        values = {**self.constants, **(params or {})}
        with self._cursor(session, values, many=False) as cursor:
            cursor.execute(self.sql, values)
            return cursor.fetchall()

    def run(self, session: Session, params: dict[str, Any]) -> None:
        """Execute a writing statement once, as `rows()` does; no rows are read back."""
        self.run_many(session, [params])

    def run_many(self, session: Session, params: list[dict[str, Any]]) -> None:
        """Execute the statement once per dict of values (psycopg's executemany: one
        pipeline, not one round trip each), as `rows()` does; no rows are returned."""
        values = [{**self.constants, **one} for one in params]
        with self._cursor(session, values, many=True) as cursor:
            cursor.executemany(self.sql, values)

    @contextmanager
    def _cursor(self, session: Session, values: Any, *, many: bool) -> Iterator[Any]:
        if session.autoflush:
            session.flush()
        connection = session.connection()
        try:
            with connection.connection.driver_connection.cursor(
                row_factory=namedtuple_row
            ) as cursor:
                # The engine's listeners (statement capture in tests and probes) see it too.
                for listener in connection.dispatch.before_cursor_execute:
                    listener(connection, cursor, self.sql, values, None, many)
                yield cursor
        except psycopg.Error as error:
            raise DBAPIError.instance(self.sql, values, error, psycopg.Error) from error


_PSYCOPG_DIALECT = PGDialect_psycopg()


def _is_uuid_array(kind: Any) -> bool:
    return isinstance(kind, ARRAY) and isinstance(kind.item_type, Uuid)


# The non-owner role the API's user-scoped transactions run as (created by migration 0002).
APP_ROLE = "muma_app"


def scope_session(session: Session, *, tenant_id: str, user_id: str) -> None:
    """Bind the rest of this session's transaction to one tenant and user.

    Invariant: until the transaction ends, the session runs as the non-owner role
    `muma_app`, so PostgreSQL's row-level security returns and accepts only rows of this
    tenant and user, whatever the SQL says (defence in depth under `visible_clause`).
    Both settings are transaction-local (`SET LOCAL`, `set_config(..., true)`): a pooled
    connection carries nothing into the next transaction.
    """
    if not tenant_id or not user_id:
        raise InvalidInputError("tenant_id and user_id are required to scope a session")
    _scope_statement().rows(session, {"scope_tenant_id": tenant_id, "scope_user_id": user_id})


@cache
def _scope_statement() -> CompiledStatement:
    # One round trip; set_config('role', ..., true) is SET LOCAL ROLE.
    return CompiledStatement(
        select(
            func.set_config("role", APP_ROLE, True),
            func.set_config("muma.tenant_id", bindparam("scope_tenant_id", type_=String), True),
            func.set_config("muma.user_id", bindparam("scope_user_id", type_=String), True),
        )
    )


@contextmanager
def scoped_session_for(
    tenant_id: str, user_id: str, settings: Settings | None = None
) -> Iterator[Session]:
    """`session_scope()` whose transaction is bound to one tenant and user (`scope_session`)."""
    with session_scope(settings) as session:
        scope_session(session, tenant_id=tenant_id, user_id=user_id)
        yield session


@contextmanager
def graph_scan_cap(session: Session, tuples: int) -> Iterator[None]:
    """Within the block, an HNSW iterative scan of this transaction visits at most `tuples`
    graph entries; afterwards the transaction's own value holds again.

    The graph walks outwards from the query, so a filter whose slice lies elsewhere (a
    domain the question is not about) is met late or never: visiting more entries costs
    time linearly and finds little, while the exact fallback ranks the slice in bounded time.
    """
    [row] = _SET_SCAN_TUPLES.rows(session, {"tuples": str(int(tuples))})
    previous = row.previous
    try:
        yield
    finally:
        _SET_SCAN_TUPLES.rows(session, {"tuples": previous})


def plan_generically(session: Session) -> None:
    """From here to the end of the transaction, a statement psycopg has prepared (its
    sixth run on a connection) keeps one generic plan instead of being planned again.

    For a read's statements after its routes, which fetch notes by id (the candidates'
    rows, their vectors, their sources): their best plan does not depend on the values,
    while the read path's connections force custom plans for the routes, whose plans do
    (`_engine_for`). Planned each time, the candidates' statement alone took 0.4-0.8 ms
    of a search (commit 1b6732b)."""
    _GENERIC_PLANS.rows(session, {})


_GENERIC_PLANS = CompiledStatement(
    text("SELECT set_config('plan_cache_mode', 'force_generic_plan', true)")
)


# The transaction's value first (an InitPlan runs before the set_config of its statement);
# NULL before pgvector's library is loaded in this backend, and NULL given back resets.
_SET_SCAN_TUPLES = CompiledStatement(
    text(
        "SELECT (SELECT current_setting('hnsw.max_scan_tuples', true)) AS previous,"
        " set_config('hnsw.max_scan_tuples', :tuples, true) AS now_set"
    )
)
