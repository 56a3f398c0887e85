"""HTTP load for the ingest benchmark: an open-loop single-POST sender and batch POSTs."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from benchmarks.common import post_captures
from benchmarks.pipeline_probe import DonePoller


async def _send_one(
    client: httpx.AsyncClient, body: dict[str, Any], due: float, poller: DonePoller
) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    started, wall = loop.time(), time.time()
    status: int | str = "not sent"
    retries = -1
    while retries < 1 and status != 202:
        retries += 1
        try:  # a keep-alive connection the server just closed: resend (same idempotency key)
            response = await client.post("/v1/episodes", json=body)
            status = response.status_code
        except httpx.TransportError as exc:  # counted as an error, never fatal to the run
            status = type(exc).__name__
    done = loop.time()
    ids = response.json()["episode_ids"] if status == 202 else []
    for episode_id in ids:
        poller.watch(episode_id, wall)
    return {
        "ack": done - due,
        "service": done - started,
        "lag": started - due,
        "status": status,
        "retries": retries,
        "ids": ids,
    }


async def open_loop(
    api_url: str, token: str, bodies: list[dict[str, Any]], rate: float, poller: DonePoller
) -> tuple[list[dict[str, Any]], float]:
    """POST each body at its scheduled time, never waiting for earlier answers."""
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        base_url=api_url, headers=headers, limits=limits, timeout=60
    ) as client:
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.2
        tasks = []
        for i, body in enumerate(bodies):
            due = start + i / rate
            await asyncio.sleep(max(0.0, due - loop.time()))
            tasks.append(asyncio.create_task(_send_one(client, body, due, poller)))
        sent_span = loop.time() - start
        results = await asyncio.gather(*tasks)
    return list(results), len(bodies) / max(sent_span, 1e-9)


def post_batch(
    client: httpx.Client, bodies: list[dict[str, Any]]
) -> tuple[float, float, list[str]]:
    wall = time.time()
    started = time.perf_counter()
    response = post_captures(client, {"episodes": bodies})
    return wall, time.perf_counter() - started, response.json()["episode_ids"]
