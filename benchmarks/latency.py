"""Read-path latency at scale (issue 4): /v1/search and /v1/context over HTTP.

Synthetic users (default 9 x 100k + 10 x 10k notes = 1M notes in one database) are
generated and bulk-loaded once into a kept MUMA_HOME (benchmarks/latency_data.py,
latency_load.py); a re-run with the same --home and spec skips straight to measuring.
Embedded stack: PostgreSQL + pgvector, Redis, the API under uvicorn with the service's
defaults (no workers or beat: the read path needs neither; the accesses each read records
wait in the queue with no worker to apply them, so a re-run reads the same notes).
`--env KEY=VALUE` runs with another setting: a labelled variant, never the headline.

Measured per user size, sequentially, after a warm-up, in shuffled order: /v1/search
top_k 10, /v1/context (default 150 ms budget, and uncapped), filtered searches (kinds,
domains, since) and whether they return a full top_k; in the same run the floor (a bare
pgvector HNSW top 10 through psycopg), the query embedding cost, per-piece timings of
the read path in process and EXPLAIN (ANALYZE, BUFFERS) of every statement it sends.

    .venv/bin/python -m benchmarks.latency --home /tmp/muma-latency
    .venv/bin/python -m benchmarks.latency --home /tmp/muma-dev --large 2 --small 0 \\
        --large-size 20000 --queries 50
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg

from benchmarks.common import print_table, shared_memory_mb, write_results
from benchmarks.latency_data import build_phrase_space, make_profile, questions
from benchmarks.latency_load import (
    build_indexes,
    check_columns,
    drop_indexes,
    load_user,
    read_progress,
    register_encoded,
    write_progress,
)
from benchmarks.latency_probe import (
    db_facts,
    explain_search,
    floor,
    profile_pieces,
    recheck_short_filtered,
    search_filters,
)
from benchmarks.latency_report import Sample, piece_rows, report, whatif_rows
from benchmarks.latency_whatif import what_if
from benchmarks.latency_workload import (
    FILTERS,
    WARMUP_MIXES,
    build_requests,
    filter_bodies,
    request_path,
    size_label,
)
from benchmarks.stack import BenchStack


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--home", type=Path, default=Path(tempfile.gettempdir()) / "muma-latency")
    p.add_argument("--large", type=int, default=9, help="users with --large-size notes")
    p.add_argument("--large-size", type=int, default=100_000)
    p.add_argument("--small", type=int, default=10, help="users with --small-size notes")
    p.add_argument("--small-size", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--queries", type=int, default=200, help="measured searches per size")
    p.add_argument("--measure-users", type=int, default=3, help="users queried per size")
    p.add_argument(
        "--warmup",
        type=int,
        default=10,
        help="requests per measured user before measuring (texts never measured); "
        "~150 bring a freshly started PostgreSQL near its steady state for a 100k user",
    )
    p.add_argument(
        "--warmup-mix",
        choices=WARMUP_MIXES,
        default="measured",
        help="the warm-up's requests: the measured kinds in their proportions (default), "
        "or unfiltered searches only (the warm-up before 2c48abc)",
    )
    p.add_argument("--index-memory", default="3GB", help="maintenance_work_mem for builds")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the API, e.g. MUMA_RETRIEVAL__READ_AHEAD=false",
    )
    p.add_argument(
        "--drop-caches",
        action="store_true",
        help="empty the OS page cache before PostgreSQL starts (root): a cold restart",
    )
    p.add_argument("--load-only", action="store_true")
    p.add_argument(
        "--probe-only", action="store_true", help="only the in-process profile (no HTTP)"
    )
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    malformed = [item for item in args.env if "=" not in item or not item.split("=", 1)[0]]
    if malformed:
        p.error(f"--env wants KEY=VALUE, got {malformed[0]!r}")
    return args


def drop_page_cache() -> None:
    """Write dirty pages out, then empty the OS page cache (Linux, root only)."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as exc:
        message = f"--drop-caches: cannot empty the page cache ({exc}); run as root"
        raise SystemExit(message) from exc


def user_plan(args: argparse.Namespace) -> dict[str, int]:
    large = {f"u{size_label(args.large_size)}-{i:02d}": args.large_size for i in range(args.large)}
    small = {f"u{size_label(args.small_size)}-{i:02d}": args.small_size for i in range(args.small)}
    return {**large, **small}


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {message}", flush=True)


# --------------------------------------------------------------------------- data


def ensure_data(stack: BenchStack, plan: dict[str, int], args: argparse.Namespace) -> dict:
    """Generate and load whatever this home lacks; build indexes once; return the record."""
    progress = read_progress(stack.home)
    spec = {"seed": args.seed, "users": plan}
    if progress.get("spec") not in (None, spec):
        raise SystemExit(f"{stack.home} holds another spec {progress['spec']}; use another --home")
    progress.setdefault("spec", spec)
    progress.setdefault("users", {})
    progress.setdefault("end", datetime.now(UTC).replace(microsecond=0).isoformat())
    end = datetime.fromisoformat(progress["end"])
    with psycopg.connect(stack.database_url) as conn:
        conn.execute(
            "INSERT INTO agents (tenant_id, agent_id, display_name, domains, "
            "can_see_private, created_at, updated_at) VALUES ('bench', 'main', "
            "'main', ARRAY['work','tech','personal','general'], false, now(), now()) "
            "ON CONFLICT DO NOTHING"
        )
        conn.commit()
        if "indexes" not in progress:
            _load_missing(conn, plan, progress, end, stack.home)
            log("building indexes (HNSW last)")
            progress["indexes"] = build_indexes(conn, memory=args.index_memory, log=log)
            progress.pop("graphs", None)
            write_progress(stack.home, progress)
    # "graphs" since the domain graphs (58f39da; a home with only "user_graphs" lacks them).
    if "graphs" not in progress:
        progress["graphs"] = build_user_graphs()
        write_progress(stack.home, progress)
    return progress


def build_user_graphs() -> dict[str, float]:
    """What the maintenance queue's `build_user_graphs` does in the product (memory.notes.
    graphs): a graph of its own for each large user that shares its partition, and for
    each large domain or kind slice of a user's vectors."""
    from memory.config import get_settings
    from memory.db import session_scope
    from memory.notes.graphs import update_user_graphs

    started = time.perf_counter()
    retrieval = get_settings().retrieval
    with session_scope(autocommit=True) as session:
        plan = update_user_graphs(
            session=session,
            min_notes=retrieval.dedicated_graph_notes,
            slice_min_notes=retrieval.domain_graph_notes,
            slice_max_share=retrieval.domain_graph_max_share,
        )
    if plan is None:
        raise SystemExit("another run is building user graphs; run the benchmark again later")
    for graph in plan.create:
        of = graph.user_id + ("" if graph.slice is None else "'s {} {}".format(*graph.slice))
        log(f"  a graph of its own for {of} ({graph.partition}, {graph.notes:,} vectors)")
    seconds = time.perf_counter() - started
    log(f"  {len(plan.create)} user and slice graphs built in {seconds:.0f}s")
    return {"built": len(plan.create), "kept": len(plan.keep), "seconds": round(seconds, 1)}


def _load_missing(
    conn: psycopg.Connection, plan: dict[str, int], progress: dict, end: datetime, home: Path
) -> None:
    from memory.clients.embedder import get_embedder
    from memory.clients.sparse_encoder import get_sparse_encoder

    missing = [u for u in plan if u not in progress["users"]]
    if not missing:
        return
    check_columns()
    embedder = get_embedder()
    sparse = get_sparse_encoder()
    if sparse is None:
        raise SystemExit("no sparse encoder: run `make install` (the notes' sparse vectors)")
    started = time.perf_counter()
    space = build_phrase_space(embedder.embed, sparse.encode)
    log(f"embedded the phrase space in {time.perf_counter() - started:.1f}s")
    drop_indexes(conn)
    register_encoded(conn)
    total = sum(plan.values())
    done = sum(plan[u] for u in progress["users"])
    for user_id in missing:
        profile = make_profile(user_id, plan[user_id], progress["spec"]["seed"])
        t = load_user(conn, profile, space, model_id=embedder.model_id, end=end)
        progress["users"][user_id] = t
        write_progress(home, progress)
        done += plan[user_id]
        rate = plan[user_id] / (t["generate_s"] + t["copy_s"])
        log(
            f"{user_id}: {plan[user_id]:,} notes, generate {t['generate_s']:.0f}s, copy "
            f"{t['copy_s']:.0f}s ({rate:,.0f} notes/s); {done:,}/{total:,}, "
            f"ETA {(total - done) / rate / 60:.0f} min"
        )


# --------------------------------------------------------------------------- workload


def run_http(stack: BenchStack, samples: list[Sample]) -> None:
    """Send each request in order, sequentially; fill in client/server ms and counts."""
    headers = {"Authorization": f"Bearer {stack.token}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as client:
        for done, s in enumerate(samples, start=1):
            if done % 200 == 0:
                log(f"  {done}/{len(samples)} requests")
            path = request_path(s.kind)
            started = time.perf_counter()
            response = client.post(path, json=s.body)
            s.client_ms = (time.perf_counter() - started) * 1000
            response.raise_for_status()
            body = response.json()
            s.server_ms = float(body["took_ms"])
            results = body.get("results", body.get("memories", []))
            s.count = len(results)
            s.below_threshold = sum(
                r["explanation"].get("threshold_passed") is False for r in results
            )
            s.timed_out = bool(body.get("timed_out", False))


def measure(
    stack: BenchStack, plan: dict[str, int], args: argparse.Namespace, end: datetime
) -> dict[str, Any]:
    from memory.clients.embedder import get_embedder

    warm, measured = build_requests(plan, args, end)
    load_before = os.getloadavg()
    log(f"warm-up: {len(warm)} requests ({args.warmup_mix} mix)")
    run_http(stack, warm)
    log(f"measuring {len(measured)} requests over HTTP")
    shared_before = shared_memory_mb()
    run_http(stack, measured)
    shared = {"before_http": shared_before, "after_http": shared_memory_mb()}
    load_http = os.getloadavg()
    embedder = get_embedder()
    searches = [s for s in measured if s.kind == "search"]
    embed_ms, vectors = [], []
    for s in searches:
        started = time.perf_counter()
        vectors.append(embedder.embed_one(s.text))
        embed_ms.append((time.perf_counter() - started) * 1000)
    log("floor: bare HNSW queries")
    floors = {}
    for label in sorted({s.size for s in searches}):
        work = [(s.user_id, v) for s, v in zip(searches, vectors, strict=True) if s.size == label]
        floor(stack.database_url, work[:10])  # warm-up
        floors[label] = floor(stack.database_url, work)
    log("filtered searches short of top_k: again without the retrieval threshold")
    recheck_short_filtered(measured)
    log("in-process profile and EXPLAIN")
    probes = _probe(plan, args, end)
    return {
        "samples": measured,
        "warmup": len(warm),
        "warmup_mix": args.warmup_mix,
        "embed_ms": embed_ms,
        "floor": floors,
        "probe": probes,
        "sizes": db_facts(stack.database_url),
        "load": {"before_http": load_before, "after_http": load_http, "end": os.getloadavg()},
        "shared_memory_mb": shared,
    }


def _probe(plan: dict[str, int], args: argparse.Namespace, end: datetime) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for size in sorted(set(plan.values())):
        users = [u for u, s in plan.items() if s == size][: args.measure_users]
        profiles = {u: make_profile(u, size, args.seed) for u in users}
        work = [
            (u, q)
            for u in users
            for q in questions(profiles[u], max(1, 60 // len(users)), prompts=False, salt="probe")
        ]
        for name in FILTERS:
            # The filtered searches' pieces, with the same filters as over HTTP.
            bodies = {u: filter_bodies(p, end)[name] for u, p in profiles.items()}
            filters = {u: search_filters(body) for u, body in bodies.items()}
            out[f"{size_label(size)} filter_{name}"] = {
                "pieces": profile_pieces(work[::2], filters)
            }
        pieces = profile_pieces(work)
        # /v1/context's search: its pool of 40, sources for 40 and the block.
        out[f"{size_label(size)} context"] = {"pieces": profile_pieces(work, context=True)}
        plans = explain_search(
            users[0],
            questions(make_profile(users[0], size, args.seed), 1, prompts=False, salt="explain")[0],
        )
        variants = what_if(
            users[0],
            questions(make_profile(users[0], size, args.seed), 20, prompts=False, salt="whatif"),
        )
        out[size_label(size)] = {"pieces": pieces, "explain": plans, "what_if": variants}
    return out


def main() -> None:
    args = parse_args()
    plan = user_plan(args)
    log(f"{len(plan)} users, {sum(plan.values()):,} notes; home {args.home}")
    env = dict(item.split("=", 1) for item in args.env)
    if args.drop_caches:
        drop_page_cache()
        log("emptied the OS page cache")
    with BenchStack(env=env, workers=0, beat=False, home=args.home, keep=True) as stack:
        started = time.perf_counter()
        progress = ensure_data(stack, plan, args)
        log(f"data ready in {time.perf_counter() - started:.0f}s")
        if args.load_only:
            return
        end = datetime.fromisoformat(progress["end"])
        if args.probe_only:
            probe = _probe(plan, args, end)
            print_table("In process: where a search spends its time", piece_rows(probe))
            print_table("In process: product pieces against cheaper variants", whatif_rows(probe))
            return
        results = measure(stack, plan, args, end)
        summary = report(results, progress, plan)
        summary["run"] = {"env": args.env, "drop_caches": args.drop_caches}
    print(f"results: {write_results('latency', summary, args.json)}")


if __name__ == "__main__":
    main()
