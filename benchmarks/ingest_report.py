"""Summaries, targets and tables of the ingest benchmark (benchmarks/ingest.py)."""

from __future__ import annotations

import csv
import os
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import Row, fmt, summarise
from benchmarks.pipeline_probe import BACKLOG_FIELDS, BacklogSampler, DonePoller, Finished

ACK_P95_MS = 20.0
SEARCHABLE_P95_S = 2.0
SUSTAINED_RATIO = 0.4


def cpu_delta(before: dict[str, float], after: dict[str, float], elapsed: float) -> dict[str, Any]:
    """CPU seconds per process over a phase, and each one's share of every CPU's time."""
    capacity = max(elapsed, 1e-9) * (os.cpu_count() or 1)
    out: dict[str, Any] = {"elapsed_seconds": elapsed, "cpus": os.cpu_count()}
    for name, value in after.items():
        used = max(0.0, value - before.get(name, 0.0))
        out[name] = {"cpu_seconds": used, "share": used / capacity}
    return out


def _finished_summary(finished: list[Finished], expected: int) -> dict[str, Any]:
    searchable = [f for f in finished if f.searchable]
    processed = [s for f in searchable if (s := f.processed_seconds) is not None]
    return {
        "episodes": expected,
        "searchable": len(searchable),
        "done_without_note": sum(1 for f in finished if f.status == "done" and not f.searchable),
        "failed": sum(1 for f in finished if f.status == "failed"),
        "unfinished": expected - len(finished),
        "observed_seconds": summarise([f.observed_seconds for f in searchable]),
        "processed_seconds": summarise(processed),
    }


def summarise_run(
    config: dict[str, Any],
    raw: dict[str, Any],
    latency: dict[str, Any],
    sustained: dict[str, Any],
    poller: DonePoller,
    sampler: BacklogSampler,
) -> dict[str, Any]:
    """Reduce the raw samples to JSON-friendly summaries."""
    acks = latency.pop("acks")
    lat_ids = latency.pop("ids")
    latency["errors"] = sum(1 for a in acks if a["status"] != 202)
    latency["retried"] = sum(a["retries"] for a in acks)
    latency["error_kinds"] = dict(Counter(str(a["status"]) for a in acks if a["status"] != 202))
    latency["ack_ms"] = summarise([a["ack"] * 1000 for a in acks if a["status"] == 202])
    latency["service_ms"] = summarise([a["service"] * 1000 for a in acks if a["status"] == 202])
    latency["send_lag_ms"] = summarise([a["lag"] * 1000 for a in acks])
    latency["pipeline"] = _finished_summary(poller.finished(lat_ids), len(lat_ids))
    sus_ids = sustained.pop("ids")
    sustained["batch_ack_ms"] = summarise([s * 1000 for s in sustained.pop("batch_acks")])
    sustained["pipeline"] = _finished_summary(poller.finished(sus_ids), len(sus_ids))
    after = raw.get("after", {}).get("notes_per_second", raw["notes_per_second"])
    raw["notes_per_second_mean"] = (raw["notes_per_second"] + after) / 2
    sustained["ratio_to_raw"] = sustained["notes_per_second"] / raw["notes_per_second_mean"]
    for phase in (latency, sustained):
        phase["backlog"] = sampler.between(phase["started"], phase["ended"])
        phase["backlog_peak"] = {
            k: max((b[k] for b in phase["backlog"]), default=0.0) for k in BACKLOG_FIELDS[1:]
        }
    return {
        "config": config,
        "raw": raw,
        "latency": latency,
        "sustained": sustained,
        "poller_queries": poller.queries,
        "sampler_error": repr(sampler.error) if sampler.error else None,
    }


def _triple(summary: dict[str, float], digits: int, unit: str) -> str:
    return " / ".join(fmt(summary[k], digits) for k in ("p50", "p95", "p99")) + unit


def result_rows(results: dict[str, Any]) -> list[Row]:
    raw, lat, sus = results["raw"], results["latency"], results["sustained"]
    rate = lat["offered_rate"]
    searchable = lat["pipeline"]["observed_seconds"]
    floor = SUSTAINED_RATIO * raw["notes_per_second_mean"]
    after = raw.get("after", raw)
    return [
        Row(
            "raw embedding (pipeline texts, 1/note)",
            f"{fmt(raw['texts_per_second'], 0)} texts/s = {fmt(raw['notes_per_second'])} notes/s",
        ),
        Row(
            "raw embedding after phase 3; mean of both",
            f"{fmt(after['notes_per_second'])}; {fmt(raw['notes_per_second_mean'])} notes/s",
        ),
        Row(
            f"offered / achieved load (single POSTs, n={lat['ack_ms']['n']})",
            f"{fmt(rate)} / {fmt(lat['achieved_rate'])} ep/s"
            f" ({lat['errors']} errors, {lat['retried']} resent)",
        ),
        Row(
            "capture ack p50 / p95 / p99",
            _triple(lat["ack_ms"], 1, " ms"),
            f"p95 ≤ {ACK_P95_MS:g} ms",
            lat["ack_ms"]["p95"] <= ACK_P95_MS,
        ),
        Row(
            "  same, from the actual send (client lag excluded)",
            _triple(lat["service_ms"], 1, " ms"),
        ),
        Row(
            f"capture→searchable p50 / p95 / p99 @ {rate:g}/s",
            _triple(searchable, 2, " s"),
            f"p95 ≤ {SEARCHABLE_P95_S:g} s",
            searchable["p95"] <= SEARCHABLE_P95_S,
        ),
        Row(
            "  same, by worker's processed_at",
            _triple(lat["pipeline"]["processed_seconds"], 2, " s"),
        ),
        Row(
            "sustained notes/s (first POST → drained)",
            f"{fmt(sus['notes_per_second'])} notes/s",
            f"≥ {fmt(floor)} (0.4 x mean raw)",
            sus["notes_per_second"] >= floor,
        ),
        Row(
            "sustained / mean raw",
            fmt(sus["ratio_to_raw"], 2),
            f"≥ {SUSTAINED_RATIO}",
            sus["ratio_to_raw"] >= SUSTAINED_RATIO,
        ),
        Row(
            f"sustained: episodes, notes, seconds (batches of {results['config']['batch']})",
            f"{sus['episodes']}, {sus['notes']}, {fmt(sus['seconds'])} s",
        ),
        Row("batch ack p50 / p95 / p99", _triple(sus["batch_ack_ms"], 1, " ms")),
        Row(
            "episodes done without a note / failed / unfinished",
            " / ".join(
                str(sum(p["pipeline"][k] for p in (lat, sus)))
                for k in ("done_without_note", "failed", "unfinished")
            ),
        ),
    ]


def _cost_rows(results: dict[str, Any]) -> list[Row]:
    raw, sus = results["raw"], results["sustained"]
    cpu = sus["cpu"]
    workers = sum(v["cpu_seconds"] for k, v in cpu.items() if k.startswith("worker"))
    others = sum(cpu[k]["cpu_seconds"] for k in ("postgres", "api", "redis") if k in cpu)
    notes = max(1, sus["notes"])
    return [
        Row(
            "raw embedding CPU per note (own text; window derived)",
            f"{fmt(raw['own']['cpu_ms_per_text'])} ms ({fmt(raw['own']['mean_chars'], 0)} chars)",
        ),
        Row("sustained: worker CPU per note", f"{fmt(workers * 1000 / notes)} ms"),
        Row(
            "sustained: postgres + api + redis CPU per note",
            f"{fmt(others * 1000 / notes)} ms",
        ),
    ]


def diagnostic_rows(results: dict[str, Any]) -> list[Row]:
    rows: list[Row] = _cost_rows(results)
    for phase in ("latency", "sustained"):
        cpu = results[phase]["cpu"]
        for name, value in cpu.items():
            if isinstance(value, dict) and value["cpu_seconds"] > 0.05:
                rows.append(
                    Row(
                        f"{phase}: {name}",
                        f"{fmt(value['cpu_seconds'])} s ({value['share'] * 100:.0f}%)",
                    )
                )
        rows.append(Row(f"{phase}: wall time", f"{fmt(cpu['elapsed_seconds'])} s"))
        peak = results[phase]["backlog_peak"]
        rows.append(
            Row(
                f"{phase}: peak notes to embed / to decide",
                f"{peak['notes_to_embed']:.0f} / {peak['notes_to_decide']:.0f}",
            )
        )
    return rows


def profile_rows(results: dict[str, Any]) -> list[Row]:
    """Stage shares of the py-spy samples (API in phase 2, workers in phase 3), if any."""
    rows: list[Row] = []
    profiles = {
        **(results["latency"].get("profile") or {}),
        **(results["sustained"].get("profile") or {}),
    }
    for name, profile in profiles.items():
        stages = profile["stages"]
        rows.append(Row(f"{name}: samples", f"{stages['samples']:.0f}"))
        rows += [
            Row(f"  {stage}", f"{share * 100:.0f}%")
            for stage, share in stages.items()
            if stage != "samples" and share > 0
        ]
    return rows


def write_backlog_csv(json_path: Path, backlog: dict[str, list[dict[str, float]]]) -> Path:
    """The once-a-second backlog samples of each phase, next to the JSON results."""
    path = json_path.with_name(json_path.stem + "-backlog.csv")
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["phase", *BACKLOG_FIELDS])
        for phase, samples in backlog.items():
            for sample in samples:
                writer.writerow([phase, *(round(sample[k], 3) for k in BACKLOG_FIELDS)])
    return path
