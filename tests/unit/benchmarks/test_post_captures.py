"""Benchmarks import captures as a client should: a 429 is sent again after Retry-After."""

from __future__ import annotations

import httpx
import pytest

from benchmarks.common import post_captures


def _client(statuses: list[int]) -> tuple[httpx.Client, list[int]]:
    sent: list[int] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(len(sent))
        status = statuses[min(len(sent) - 1, len(statuses) - 1)]
        return httpx.Response(status, headers={"Retry-After": "0"}, json={"episode_ids": []})

    return httpx.Client(transport=httpx.MockTransport(answer), base_url="http://x"), sent


def test_a_429_is_sent_again_until_accepted() -> None:
    client, sent = _client([429, 429, 202])
    assert post_captures(client, {"episodes": []}).status_code == 202
    assert len(sent) == 3


def test_another_error_is_raised_and_endless_429s_give_up() -> None:
    client, _ = _client([422])
    with pytest.raises(httpx.HTTPStatusError):
        post_captures(client, {"episodes": []})
    client, sent = _client([429])
    with pytest.raises(RuntimeError, match="still 429"):
        post_captures(client, {"episodes": []}, attempts=3)
    assert len(sent) == 3
