"""GET /metrics after real traffic, request ids, and JSON logs carrying request/task ids."""

from __future__ import annotations

import io
import json
import logging
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from memory.clients.redis import get_redis
from memory.db import session_scope
from memory.ops.audit import record_event
from memory.ops.logs import JsonFormatter, use_json
from memory.ops.metrics import read_task_metrics
from memory.ops.models import DeadLetter
from tasks import metrics as task_metrics
from tests.conftest import TEST_HOME
from tests.integration.test_transactive import write
from tests.support.helpers import bearer

pytestmark = pytest.mark.integration
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: TestClient, token: str) -> Samples:
    response = client.get("/metrics", headers=bearer(token))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    wanted = set(labels.items())
    found = [v for (n, ls), v in samples.items() if n == name and wanted <= ls]
    return sum(found) if found else None


def test_metrics_requires_a_reader_token(api_client: TestClient, tokens: dict[str, str]) -> None:
    assert api_client.get("/metrics").status_code == 401
    assert api_client.get("/metrics", headers=bearer(tokens["agent"])).status_code == 403
    for role in ("viewer", "operator", "admin"):
        assert api_client.get("/metrics", headers=bearer(tokens[role])).status_code == 200


def _seed_outcomes(tenant_id: str) -> None:
    with session_scope() as session:
        session.add(DeadLetter(tenant_id=tenant_id, task_name="tasks.pipeline.link", args=[],
                               kwargs={}, error="boom"))  # fmt: skip
        for action, actor in (
            ("note.archived", "decay"),
            ("note.archived", "decay"),
            ("note.pruned", "decay"),
            ("note.archived", "token:someone"),
            ("note.consolidated", "consolidation"),
        ):
            record_event(session=session, tenant_id=tenant_id, actor=actor, action=action,
                         entity_type="note")  # fmt: skip


def test_metrics_expose_the_series_after_traffic(
    api_client: TestClient, celery_worker: str, tokens: dict[str, str], tenant_id: str,
    user_id: str,
) -> None:  # fmt: skip
    note_id = write(api_client, tokens["agent"], user_id, "coach", "Ines swims on Fridays.")
    got = api_client.get(f"/v1/memories/{note_id}", params={"user_id": user_id},
                         headers=bearer(tokens["viewer"]))  # fmt: skip
    assert got.status_code == 200
    assert api_client.get("/no/such/page-42").status_code == 404
    _seed_outcomes(tenant_id)
    samples = scrape(api_client, tokens["viewer"])
    route = "/v1/memories/{note_id}"
    assert value(samples, "muma_http_request_duration_seconds_count", route="unmatched",
                 status="404") >= 1  # fmt: skip
    assert value(samples, "muma_http_request_duration_seconds_count", route=route,
                 method="GET", status="200") >= 1  # fmt: skip
    assert value(samples, "muma_http_request_duration_seconds_bucket", route=route,
                 le="+Inf") >= 1  # fmt: skip
    raw = {f"/v1/memories/{note_id}", "/no/such/page-42"}
    assert not [
        ls
        for (n, ls) in samples
        if n.startswith("muma_http") and {v for k, v in ls if k == "route"} & raw
    ]  # templates, never raw paths
    task = "tasks.pipeline.process_episodes"
    assert value(samples, "muma_task_duration_seconds_count", task=task) >= 1
    assert value(samples, "muma_task_duration_seconds_sum", task=task) > 0
    assert value(samples, "muma_task_runs_total", task=task, state="SUCCESS") >= 1
    for queue in ("ingest", "embed", "llm", "maintenance"):
        assert value(samples, "muma_queue_depth", queue=queue) is not None
    assert value(samples, "muma_episodes", status="done") == 1  # this tenant's only episode
    assert value(samples, "muma_dead_letters", state="open") == 1
    assert value(samples, "muma_decay_outcomes_total", outcome="archived") == 2  # not by hand
    assert value(samples, "muma_decay_outcomes_total", outcome="pruned") == 1
    assert value(samples, "muma_decay_outcomes_total", outcome="expired") == 0
    assert value(samples, "muma_consolidation_outcomes_total", outcome="consolidated") == 1
    assert value(samples, "muma_notes", status="active") == 1
    assert value(samples, "muma_scrape_source_up", source="database") == 1


def test_database_series_are_scoped_to_the_token_tenant(
    api_client: TestClient, tokens: dict[str, str], tenant_id: str
) -> None:
    _seed_outcomes(tenant_id)
    from tests.conftest import make_token

    other = make_token("viewer", f"t-{uuid.uuid4().hex[:8]}")
    samples = scrape(api_client, other)
    assert value(samples, "muma_dead_letters", state="open") == 0
    assert value(samples, "muma_decay_outcomes_total", outcome="archived") == 0


def test_request_ids_are_issued_echoed_and_logged(
    api_client: TestClient, tokens: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    issued = api_client.get("/v1/system/status", headers=bearer(tokens["viewer"]))
    assert len(issued.headers["x-request-id"]) == 32
    with caplog.at_level(logging.INFO, logger="memory.api.access"):
        echoed = api_client.get(
            "/v1/system/status", headers={**bearer(tokens["viewer"]), "X-Request-ID": "req-42"}
        )
        unsafe = api_client.get("/healthz", headers={"X-Request-ID": "bad id\n{}"})  # fmt: skip
    assert echoed.headers["x-request-id"] == "req-42"
    assert unsafe.headers["x-request-id"] != "bad id\n{}"
    [record] = [r for r in caplog.records if getattr(r, "request_id", None) == "req-42"]
    line = json.loads(JsonFormatter().format(record))
    assert line["request_id"] == "req-42" and line["route"] == "/v1/system/status"
    assert line["status"] == 200 and line["duration_ms"] > 0 and line["level"] == "INFO"


def _json_log(logger: logging.Logger, message: str) -> dict[str, Any]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    use_json([handler])
    logger.addHandler(handler)
    try:
        logger.warning(message)
    finally:
        logger.removeHandler(handler)
    return json.loads(stream.getvalue())


class _FakeTask:
    name = f"tests.fake_{uuid.uuid4().hex[:6]}"


def test_task_signals_record_durations_and_tag_log_lines(redis_url: str) -> None:
    logger = logging.getLogger("tests.task_logs")
    task_id = uuid.uuid4().hex
    task_metrics._task_started(task_id=task_id, task=_FakeTask())
    inside = _json_log(logger, "working")
    task_metrics._task_finished(task_id=task_id, task=_FakeTask(), state="SUCCESS")
    outside = _json_log(logger, "idle")
    assert inside["task_id"] == task_id and inside["task_name"] == _FakeTask.name
    assert "task_id" not in outside and outside["message"] == "idle"
    data = read_task_metrics(get_redis())[_FakeTask.name]
    assert data["count"] == 1 and data["states"] == {"SUCCESS": 1}
    assert data["buckets"][300.0] == 1 and data["sum"] >= 0


def test_worker_logs_are_json_lines(celery_worker: str) -> None:
    lines = (TEST_HOME / f"{celery_worker}.log").read_text().splitlines()
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    assert any(isinstance(p, dict) and {"ts", "level", "logger", "message"} <= p.keys()
               for p in parsed), lines[-20:]  # fmt: skip
