"""A filtered dense search's graph scan against ranking its slice exactly, in SQL alone.

On a loaded `benchmarks.latency` home, for the kinds and domains filters of the latency
benchmark (two kinds; the domain of the user's most frequent topic) and a few 100k users'
questions: the partition's HNSW scan with the filter in the mirror, under each
`hnsw.max_scan_tuples` given, asked for the dense route's pool of 200 (time, rows, how
many queries came up short of the route's 100, and how much of the slice's exact top 20
it found), next to the exact ranking of the slice (`(embedding <=> q) + 0`, top 400).
This is how `retrieval.filtered_scan_tuples` was chosen (commit 151f653,
`benchmarks/results/latency-filters-s12.json`).

    .venv/bin/python -m benchmarks.latency_filters --home /tmp/muma-latency
    .venv/bin/python -m benchmarks.latency_filters --home /tmp/muma-latency --caps 2000,4000
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from benchmarks.common import Row, fmt, print_table, summarise, write_results
from benchmarks.latency_data import make_profile, questions
from benchmarks.latency_load import read_progress
from benchmarks.latency_workload import filter_bodies
from benchmarks.stack import BenchStack

ROUTE_LIMIT = 100
POOL = 200
SCOPE = "tenant_id = 'bench' AND user_id = %(user)s AND active"
FILTERS = {
    "kinds": ("kind = ANY(%(values)s)", lambda body: body["kinds"]),
    "domains": ("domain = ANY(%(values)s)", lambda body: body["domains"]),
}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--home", type=Path, required=True, help="a loaded benchmarks.latency home")
    p.add_argument("--users", default="u100k-00,u100k-01,u100k-02")
    p.add_argument("--size", type=int, default=100_000, help="the users' note count")
    p.add_argument("--queries", type=int, default=10, help="questions per user")
    p.add_argument("--caps", default="1000,2000,4000,8000,20000", help="max_scan_tuples")
    p.add_argument("--ef-search", default="40", help="hnsw.ef_search values")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", type=Path)
    return p.parse_args()


def _timed(conn: psycopg.Connection, sql: str, params: dict[str, Any]) -> tuple[float, list]:
    started = time.perf_counter()
    rows = [row[0] for row in conn.execute(sql, params).fetchall()]  # type: ignore[arg-type]
    return (time.perf_counter() - started) * 1000, rows


def measure(
    conn: psycopg.Connection, work: list[dict[str, Any]], caps: list[int], efs: list[int]
) -> dict:
    """{filter: {variant: {ms, rows, short, top20}}} over the work items."""
    out: dict[str, dict[str, Any]] = {}
    for name, (condition, _) in FILTERS.items():
        graph = f"SELECT note_id FROM note_vectors WHERE {SCOPE} AND {condition}"
        graph += f" ORDER BY embedding <=> %(vector)s LIMIT {POOL}"
        exact = f"SELECT note_id FROM note_vectors WHERE {SCOPE} AND {condition}"
        exact += f" ORDER BY (embedding <=> %(vector)s) + 0 LIMIT {POOL * 2}"
        samples: dict[str, dict[str, list[float]]] = {}
        for item in work:
            params = {**item, "values": item[name]}
            ms, truth = _timed(conn, exact, params)
            _add(samples, "exact", ms, len(truth), 1.0)
            for cap in caps:
                for ef in efs:
                    conn.execute(f"SET hnsw.max_scan_tuples = {int(cap)}")
                    conn.execute(f"SET hnsw.ef_search = {int(ef)}")
                    ms, found = _timed(conn, graph, params)
                    variant = f"graph {cap}" + (f" ef {ef}" if len(efs) > 1 else "")
                    _add(samples, variant, ms, len(found), _share(found, truth[:20]))
        out[name] = {
            variant: {
                "ms": summarise(s["ms"]),
                "rows_min": min(s["rows"]),
                "rows_mean": float(np.mean(s["rows"])),
                "short": sum(r < ROUTE_LIMIT for r in s["rows"]),
                "top20": float(np.mean(s["top20"])),
                "n": len(s["rows"]),
            }
            for variant, s in samples.items()
        }
    return out


def _add(samples: dict, variant: str, ms: float, rows: int, top20: float) -> None:
    entry = samples.setdefault(variant, {"ms": [], "rows": [], "top20": []})
    entry["ms"].append(ms)
    entry["rows"].append(rows)
    entry["top20"].append(top20)


def _share(found: list, best: list) -> float:
    return len(set(found) & set(best)) / len(best) if best else 1.0


def main() -> None:
    args = parse_args()
    caps = [int(c) for c in args.caps.split(",")]
    with BenchStack(workers=0, beat=False, home=args.home, keep=True) as stack:
        from memory.clients.embedder import get_embedder

        end = datetime.fromisoformat(read_progress(stack.home)["end"])
        embedder = get_embedder()
        work = []
        for user in args.users.split(","):
            profile = make_profile(user, args.size, args.seed)
            bodies = filter_bodies(profile, end)
            for q in questions(profile, args.queries, prompts=False, salt="dprobe"):
                work.append(
                    {
                        "user": user,
                        "vector": embedder.embed_one(q),
                        **{name: pick(bodies[name]) for name, (_, pick) in FILTERS.items()},
                    }
                )
        with psycopg.connect(stack.database_url) as conn:
            register_vector(conn)
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
            results = measure(conn, work, caps, [int(e) for e in args.ef_search.split(",")])
    rows = [
        Row(
            f"{name} {variant}",
            f"{fmt(r['ms']['mean'])} / {fmt(r['ms']['p95'])} ms; rows {r['rows_min']} / "
            f"{r['rows_mean']:.0f}; short {r['short']}/{r['n']}; top 20 {r['top20']:.2f}",
        )
        for name, variants in results.items()
        for variant, r in variants.items()
    ]
    print_table("Filtered dense scan: mean / p95; rows min / mean; short of 100; top 20", rows)
    print(f"results: {write_results('latency-filters', {'filters': results}, args.json)}")


if __name__ == "__main__":
    main()
