"""GET /metrics: the Prometheus exposition (viewer, operator or admin token, bound to no
user).

Database-derived series are scoped to the token's tenant; see memory.ops.metrics. The
series span every user of the tenant (and queue depths and latencies the whole service),
so a token bound to a user is refused (403) rather than shown them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool

from memory.access.tokens import Principal
from memory.api.deps import require_roles
from memory.clients.redis import get_redis
from memory.ops.metrics import render_metrics

router = APIRouter(tags=["system"])


@router.get("/metrics", response_class=Response)
async def metrics(
    principal: Annotated[
        Principal, Depends(require_roles("viewer", "operator", "admin", unbound=True))
    ],
) -> Response:
    """HTTP latency per route, task durations, queue depths, dead letters, episodes by
    status, decay and consolidation outcomes."""
    body = await run_in_threadpool(render_metrics, principal.tenant_id, get_redis)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
