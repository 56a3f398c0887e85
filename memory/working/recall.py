"""The session's working memory (L1) as a route of the read path: its items that share
terms with the query, ranked by BM25 over the session's items.

Invariants:
- Only one session of one user is read: the caller passes the viewer's tenant and user,
  which the read path has already checked, so an item never crosses users.
- An item is returned only when it shares at least one analysed term (stemmed, stopwords
  out, ids kept whole: `memory.retrieval.text.analyse`) with the query; an item shares no
  score scale with the notes, so the read path reports items beside the notes instead of
  fusing them in.
- Reading changes nothing: no activation, hit count or TTL moves (as GET /working).
- Without Redis the read path goes on without the route (`TransientError` is logged, the
  answer holds no items), since L1 is a help to recall, not a condition of it.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any

import redis

from memory.errors import TransientError
from memory.retrieval.fusion import bm25_scores
from memory.retrieval.text import analyse
from memory.working.service import WorkingItem, list_items

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkingHit:
    """One working item chosen for a query: its BM25 score relative to the best item's."""

    item: WorkingItem
    rank: int
    relevance: float
    matched_terms: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        item = self.item
        return {
            "hash": item.hash,
            "content": item.content,
            "activation": item.activation,
            "agent_id": item.agent_id,
            "role": item.role,
            "speaker": item.speaker,
            "metadata": item.metadata,
            "created_at": item.created_at.isoformat(),
            "updated_at": item.updated_at.isoformat(),
            "score": round(self.relevance, 6),
            "explanation": {
                "routes": {"working": self.rank},
                "relevance": round(self.relevance, 6),
                "activation": item.activation,
                "matched_terms": list(self.matched_terms),
            },
        }


def rank_working_items(items: list[WorkingItem], query: str, *, limit: int) -> list[WorkingHit]:
    """The `limit` items sharing most with `query` by BM25 (`bm25_scores`, statistics over
    these items), best first; ties go to the higher activation, then the later update.
    Items sharing no term with the query are never returned."""
    query_terms = list(dict.fromkeys(analyse(query)))
    if limit <= 0 or not items or not query_terms:
        return []
    docs = {index: analyse(item.content) for index, item in enumerate(items)}
    scores = bm25_scores(
        query_terms,
        docs,
        doc_freq=Counter(term for terms in docs.values() for term in set(terms)),
        n_docs=len(docs),
        avg_len=sum(len(terms) for terms in docs.values()) / len(docs),
    )
    scored = [
        (scores[index], item, tuple(sorted(set(query_terms) & set(docs[index]))))
        for index, item in enumerate(items)
    ]
    scored = [entry for entry in scored if entry[2]]
    scored.sort(key=lambda s: (-s[0], -s[1].activation, -s[1].updated_at.timestamp()))
    best = scored[0][0] if scored else 1.0
    return [
        WorkingHit(item, rank, score / best if best > 0 else 1.0, matched)
        for rank, (score, item, matched) in enumerate(scored[:limit], start=1)
    ]


def recall_working_items(
    *,
    client: redis.Redis,
    tenant_id: str,
    user_id: str,
    session_id: str | None,
    query: str,
    limit: int,
) -> list[WorkingHit]:
    """The session's items for `query` (`rank_working_items`); [] without a session, with
    the route off (`limit` 0) or when Redis cannot be read."""
    if not session_id or limit <= 0:
        return []
    try:
        items = list_items(
            client=client, tenant_id=tenant_id, user_id=user_id, session_id=session_id
        )
    except TransientError as exc:
        log.warning("working memory left out of a search: %s", exc)
        return []
    return rank_working_items(items, query, limit=limit)
