"""Tables and the JSON summary of the latency benchmark (benchmarks/latency.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.common import Row, fmt, markdown_table, print_table, summarise

TARGET_MS = 50.0
GROWTH = 2.0
KINDS = ("search", "context", "context_uncapped", "filter_kinds", "filter_domains", "filter_since")


@dataclass
class Sample:
    """One HTTP request of the workload and what came back."""

    size: str
    kind: str
    user_id: str
    text: str
    body: dict[str, Any]
    client_ms: float = 0.0
    server_ms: float = 0.0
    count: int = 0
    timed_out: bool = False
    # A filtered search short of top_k, run again in process without the ACT-R retrieval
    # threshold: full means the routes found enough and the threshold held the rest back.
    full_without_threshold: bool | None = None
    # Results flagged `threshold_passed: false`: a filtered search fills top_k with them.
    below_threshold: int = 0


def _triple(stats: dict[str, float]) -> str:
    return " / ".join(fmt(stats[k]) for k in ("p50", "p95", "p99"))


def _kind_stats(samples: list[Sample]) -> dict[str, Any]:
    return {
        "client_ms": summarise([s.client_ms for s in samples]),
        "server_ms": summarise([s.server_ms for s in samples]),
        "n": len(samples),
        "full_top_k": sum(s.count >= 10 for s in samples),
        "timed_out": sum(s.timed_out for s in samples),
        "mean_results": sum(s.count for s in samples) / max(len(samples), 1),
        "short": sum(s.full_without_threshold is not None for s in samples),
        "short_full_without_threshold": sum(bool(s.full_without_threshold) for s in samples),
        "filled_below_threshold": sum(s.below_threshold > 0 for s in samples),
    }


def size_rows(label: str, stats: dict[str, Any], floor: dict[str, Any], large: bool) -> list[Row]:
    rows = []
    for kind in KINDS:
        st = stats.get(kind)
        if not st:
            continue
        value = _triple(st["client_ms"])
        target, passed = "", None
        if (kind in ("search", "context") or kind.startswith("filter")) and large:
            target, passed = f"p95 ≤ {TARGET_MS:.0f}", st["client_ms"]["p95"] <= TARGET_MS
        rows.append(Row(f"{label} {kind} p50/p95/p99 ms", value, target, passed))
        if kind == "context":
            rows.append(
                Row(
                    f"{label} context timed out (150 ms)",
                    f"{st['timed_out']}/{st['n']}",
                    "0",
                    st["timed_out"] == 0,
                )
            )
        if kind.startswith("filter"):
            rows.append(
                Row(
                    f"{label} {kind} full top_k",
                    f"{st['full_top_k']}/{st['n']}",
                    "all",
                    st["full_top_k"] == st["n"],
                )
            )
            if st.get("filled_below_threshold"):
                rows.append(
                    Row(
                        f"{label} {kind} answers filled below the retrieval threshold",
                        f"{st['filled_below_threshold']}/{st['n']}",
                    )
                )
            if st["short"]:
                rows.append(
                    Row(
                        f"{label} {kind} short answers full without the retrieval threshold",
                        f"{st['short_full_without_threshold']}/{st['short']}",
                    )
                )
    rows.append(
        Row(
            f"{label} search server took_ms p50/p95",
            f"{fmt(stats['search']['server_ms']['p50'])} / "
            f"{fmt(stats['search']['server_ms']['p95'])}",
        )
    )
    rows.append(
        Row(
            f"{label} floor: bare HNSW top 10 p50/p95/p99",
            _triple(floor["ms"]),
            f"full {floor['full']}/{floor['n']}",
        )
    )
    return rows


def growth_rows(
    stats: dict[str, dict[str, Any]], floors: dict[str, Any], small: str, large: str
) -> list[Row]:
    rows = []
    for kind in ("search", "context_uncapped"):
        a, b = stats[small][kind]["client_ms"]["p95"], stats[large][kind]["client_ms"]["p95"]
        ratio = b / a if a else float("nan")
        rows.append(
            Row(
                f"p95 growth {small}→{large} {kind}",
                f"{ratio:.2f}x",
                f"≤ {GROWTH:.0f}x",
                ratio <= GROWTH,
            )
        )
    a, b = floors[small]["ms"]["p95"], floors[large]["ms"]["p95"]
    rows.append(Row(f"p95 growth {small}→{large} floor", f"{b / a:.2f}x" if a else "n/a"))
    return rows


def piece_rows(probe: dict[str, Any]) -> list[Row]:
    rows = []
    for label, data in probe.items():
        for piece, st in sorted(data["pieces"].items(), key=lambda kv: -kv[1]["mean"]):
            rows.append(
                Row(f"{label} {piece} mean / p95 ms", f"{fmt(st['mean'])} / {fmt(st['p95'])}")
            )
    return rows


def whatif_rows(probe: dict[str, Any]) -> list[Row]:
    rows = []
    for label, data in probe.items():
        for name, st in data.get("what_if", {}).items():
            if "overlap" in name:
                rows.append(Row(f"{label} {name} (mean)", fmt(st["mean"], 2)))
            elif name == "candidates loaded":
                rows.append(Row(f"{label} {name} (mean)", fmt(st["mean"], 0)))
            else:
                rows.append(
                    Row(f"{label} {name} p50 / p95 ms", f"{fmt(st['p50'])} / {fmt(st['p95'])}")
                )
    return rows


def report(results: dict[str, Any], progress: dict[str, Any], plan: dict[str, int]) -> dict:
    samples: list[Sample] = results["samples"]
    labels = sorted({s.size for s in samples}, key=lambda x: int(x.rstrip("k")))
    stats = {
        label: {
            kind: _kind_stats([s for s in samples if s.size == label and s.kind == kind])
            for kind in KINDS
        }
        for label in labels
    }
    rows: list[Row] = []
    for label in labels:
        rows += size_rows(label, stats[label], results["floor"][label], label == labels[-1])
    if len(labels) > 1:
        rows += growth_rows(stats, results["floor"], labels[0], labels[-1])
    embed = summarise(results["embed_ms"])
    rows.append(
        Row(
            "query embedding (in this process) p50/p95 ms",
            f"{fmt(embed['p50'])} / {fmt(embed['p95'])}",
        )
    )
    mix = results.get("warmup_mix", "search")
    rows.append(
        Row(f"warm-up requests before measuring (all sizes; {mix} mix)", str(results["warmup"]))
    )
    load = results["load"]
    rows.append(
        Row(
            "load average (1/5/15 min) before / after HTTP",
            f"{load['before_http'][0]:.1f} / {load['after_http'][0]:.1f}",
        )
    )
    rows.append(_shared_memory_row(results.get("shared_memory_mb")))
    print_table(f"Read-path latency, {sum(plan.values()):,} notes, {len(plan)} users", rows)
    pieces = piece_rows(results["probe"])
    print_table("In process: where a search spends its time", pieces)
    variants = whatif_rows(results["probe"])
    print_table("In process: product pieces against cheaper variants", variants)
    floors = {
        k: {kk: vv for kk, vv in v.items() if kk != "raw_ms"} for k, v in results["floor"].items()
    }
    return {
        "notes": sum(plan.values()),
        "users": plan,
        "stats": stats,
        "floor": floors,
        "embed_ms": embed,
        "probe": results["probe"],
        "load_average": load,
        "shared_memory_mb": results.get("shared_memory_mb"),
        "warmup": results["warmup"],
        "warmup_mix": results.get("warmup_mix", "search"),
        "data": progress,
        "sizes": results.get("sizes"),
        "markdown": markdown_table(rows),
        "markdown_pieces": markdown_table(pieces),
        "markdown_what_if": markdown_table(variants),
        "requests": request_log(samples),
    }


def request_log(samples: list[Sample]) -> list[dict[str, Any]]:
    """Each measured request in the order it was sent (where a tail sits in the run, and
    whether it was its user's first of a kind, tells cold pages from slow work)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for order, s in enumerate(samples):
        first = (s.user_id, s.kind) not in seen
        seen.add((s.user_id, s.kind))
        out.append(
            {
                "order": order,
                "size": s.size,
                "kind": s.kind,
                "user_id": s.user_id,
                "client_ms": round(s.client_ms, 2),
                "server_ms": round(s.server_ms, 2),
                "count": s.count,
                "first_of_kind": first,
            }
        )
    return out


def _shared_memory_row(shared: dict[str, float | None] | None) -> Row:
    """Shared memory before / after the measured requests: growth means PostgreSQL's
    buffer pool was still filling, its new pages faulted in as the requests read them."""
    label = "shared memory (MB) before / after the measured requests"
    if not shared or shared.get("before_http") is None or shared.get("after_http") is None:
        return Row(label, "unknown")
    before, after = shared["before_http"], shared["after_http"]
    return Row(label, f"{before:,.0f} / {after:,.0f} (+{after - before:,.0f})")
