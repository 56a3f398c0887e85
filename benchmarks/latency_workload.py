"""The latency benchmark's requests: the measured workload and the warm-up before it.

Invariants: no warm-up request repeats a measured request's text (its query embedding
would be cached and the measured request look faster); the measured requests do not
depend on the warm-up's size or mix; the same seed gives the same requests.

The warm-up's mix: `measured` (the default since 2c48abc) draws it from the measured
kinds in their measured proportions, so every path a measured request takes (the
filtered searches' slice graphs, /v1/context's pool) has been exercised before
measuring, as on a server that has been answering such requests. `search` is the
earlier protocol: unfiltered searches only, so the filtered searches measured first met
their slice graphs cold (their tails sat in a run's first third in the latency runs of
commits 07a8587 and 6794f4b); a freshly started server's first requests are
`benchmarks.latency_start`'s measure.
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta
from typing import Any

from benchmarks.latency_data import TOPICS, make_profile, questions
from benchmarks.latency_report import Sample

FILTERS = ("kinds", "domains", "since")
WARMUP_MIXES = ("measured", "search")
# Measured per user: `per_user` searches and contexts, a third as many of each other kind.
_THIRDS = ("context_uncapped", *(f"filter_{name}" for name in FILTERS))


def request_path(kind: str) -> str:
    """The endpoint a request of `kind` goes to."""
    return "/v1/context" if kind.startswith("context") else "/v1/search"


def size_label(size: int) -> str:
    return f"{size // 1000}k" if size >= 1000 else str(size)


def build_requests(
    plan: dict[str, int], args: argparse.Namespace, end: datetime
) -> tuple[list[Sample], list[Sample]]:
    """(warm-up, measured) requests, each list shuffled by the seed (the `search` warm-up
    is kept in user order, as before 2c48abc)."""
    warm: list[Sample] = []
    measured: list[Sample] = []
    for size in sorted(set(plan.values())):
        users = [u for u, s in plan.items() if s == size][: args.measure_users]
        counts = _measured_counts(max(1, args.queries // len(users)))
        label = size_label(size)
        for user_id in users:
            profile = make_profile(user_id, size, args.seed)
            mine = _user_requests(profile, label, counts, end, "")
            taken = {s.text for s in mine}
            if args.warmup_mix == "search":
                warm += _search_warm_up(profile, label, args.warmup, taken)
            else:
                share = _split(args.warmup, counts)
                warm += _user_requests(profile, label, share, end, "warm-", avoid=taken)
            measured += mine
    random.Random(args.seed).shuffle(measured)
    if args.warmup_mix != "search":
        random.Random(f"warm:{args.seed}").shuffle(warm)
    return warm, measured


def _measured_counts(per_user: int) -> dict[str, int]:
    third = max(1, per_user // 3)
    return {"search": per_user, "context": per_user, **dict.fromkeys(_THIRDS, third)}


def _split(total: int, weights: dict[str, int]) -> dict[str, int]:
    """`total` shared out in proportion to `weights` (largest remainders), summing to it."""
    whole = sum(weights.values())
    exact = {kind: total * weight / whole for kind, weight in weights.items()}
    counts = {kind: int(share) for kind, share in exact.items()}
    by_remainder = sorted(exact, key=lambda kind: counts[kind] - exact[kind])
    for kind in by_remainder[: total - sum(counts.values())]:
        counts[kind] += 1
    return counts


def _user_requests(
    profile: Any,
    label: str,
    counts: dict[str, int],
    end: datetime,
    salt: str,
    avoid: set[str] | None = None,
) -> list[Sample]:
    """The user's requests of each kind, `counts[kind]` of each, their texts drawn with
    `salt`; with `avoid`, none in it nor repeated among them (the measured requests are
    drawn without it, exactly as before 2c48abc)."""
    ident = {"user_id": profile.user_id, "agent_id": "main"}
    extra = filter_bodies(profile, end)
    seen = set(avoid) if avoid is not None else None
    out: list[Sample] = []
    for kind, count in counts.items():
        prompts = kind.startswith("context")
        name = kind.replace("filter_", "filter-")
        if seen is None:
            texts = questions(profile, count, prompts=prompts, salt=f"{salt}{name}")
        else:
            # Drawing `count + len(seen)` leaves at least `count` once those seen go.
            drawn = questions(profile, count + len(seen), prompts=prompts, salt=f"{salt}{name}")
            texts = [q for q in drawn if q not in seen][:count]
            seen.update(texts)
        for q in texts:
            out.append(Sample(label, kind, profile.user_id, q, _body(kind, q, ident, extra)))
    return out


def _body(kind: str, text: str, ident: dict[str, str], extra: dict[str, Any]) -> dict[str, Any]:
    if kind.startswith("context"):
        body = {**ident, "prompt": text, "session_id": "bench"}
        return {**body, "timeout_ms": 10_000} if kind == "context_uncapped" else body
    if kind.startswith("filter_"):
        return {**ident, "query": text, **extra[kind.removeprefix("filter_")]}
    return {**ident, "query": text}


def _search_warm_up(profile: Any, label: str, count: int, measured: set[str]) -> list[Sample]:
    """The warm-up before 2c48abc: `count` unfiltered searches, no measured text."""
    if count <= 0:
        return []
    ident = {"user_id": profile.user_id, "agent_id": "main"}
    texts = questions(profile, count + len(measured), prompts=False, salt="warm")
    chosen = [q for q in texts if q not in measured][:count]
    return [Sample(label, "search", profile.user_id, q, {**ident, "query": q}) for q in chosen]


def filter_bodies(profile: Any, end: datetime) -> dict[str, dict[str, Any]]:
    """Each filter kind's request fields for this user: two kinds, the domain of the user's
    most frequent topic, or the last 30 days of its history."""
    top_topic = list(TOPICS)[int(profile.topic_weights.argmax())]
    return {
        "kinds": {"kinds": ["decision", "preference"]},
        "domains": {"domains": [TOPICS[top_topic][0]]},
        "since": {"since": (end - timedelta(days=30)).isoformat()},
    }
