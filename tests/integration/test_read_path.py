"""The read path over HTTP with real notes: relevance, verbatim ids, scoping, budgets."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from memory.db import session_scope
from memory.notes.models import Note
from memory.retrieval.context import CLOSE, FRAME, OPEN
from memory.retrieval.mmr import estimate_tokens
from tests.support.helpers import bearer, wait_until

pytestmark = pytest.mark.integration

FACTS = [
    ("I adopted a beagle called Biscuit in 2021.", "2021-04-02T10:00:00Z"),
    ("My sister Ana lives in Porto and works as a nurse.", "2022-07-15T10:00:00Z"),
    (
        "The production incident INC-4471 was caused by an expired TLS certificate.",
        "2023-01-20T10:00:00Z",
    ),
    ("I am allergic to penicillin.", "2023-03-03T10:00:00Z"),
    ("We decided to use PostgreSQL with pgvector for the memory store.", "2023-06-01T10:00:00Z"),
    ("My favourite band is Radiohead.", "2023-08-09T10:00:00Z"),
]


@pytest.fixture(scope="module")
def memory_user(
    api_client: TestClient, celery_worker: str
) -> Iterator[tuple[str, dict[str, str], str]]:
    from tests.conftest import make_token

    tenant = f"t-{uuid.uuid4().hex[:8]}"
    user = f"u-{uuid.uuid4().hex[:8]}"
    token = make_token("agent", tenant)
    headers = bearer(token)
    episodes = [
        {
            "user_id": user,
            "agent_id": "helper",
            "session_id": "s1",
            "role": "user",
            "speaker": "Alice",
            "content": text,
            "occurred_at": when,
            "metadata": {"n": i},
        }
        for i, (text, when) in enumerate(FACTS)
    ]
    ids = api_client.post("/v1/episodes", json={"episodes": episodes}, headers=headers).json()[
        "episode_ids"
    ]
    from tests.support.helpers import wait_for_episodes

    wait_for_episodes(ids, timeout=180)
    yield user, headers, tenant


def _search(
    client: TestClient, headers: dict[str, str], user: str, query: str, **extra: object
) -> list[dict]:
    body = {"user_id": user, "agent_id": "helper", "query": query, **extra}
    response = client.post("/v1/search", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["results"]


def test_most_relevant_first_with_explanation_and_sources(
    api_client: TestClient, memory_user: tuple
) -> None:
    user, headers, _ = memory_user
    results = _search(api_client, headers, user, "What is the name of my dog?")
    assert "Biscuit" in results[0]["content"]
    top = results[0]
    explanation = top["explanation"]
    assert set(explanation) >= {
        "routes",
        "relevance",
        "base_level",
        "spreading",
        "noise",
        "retention",
        "threshold_passed",
    }
    assert explanation["threshold_passed"] is True and explanation["noise"] == 0.0
    assert explanation["routes"] and 0 <= explanation["relevance"] <= 1
    assert top["sources"][0]["metadata"] == {"n": 0}
    assert top["sources"][0]["occurred_at"].startswith("2021-04-02")


def test_a_search_without_top_k_answers_the_settings_default(
    api_client: TestClient, memory_user: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.config import reset_settings_cache

    user, headers, _ = memory_user
    query = "What do I know about my dog, my sister and my work?"
    assert len(_search(api_client, headers, user, query, top_k=5)) > 2
    monkeypatch.setenv("MUMA_RETRIEVAL__DEFAULT_TOP_K", "2")
    reset_settings_cache()
    try:
        assert len(_search(api_client, headers, user, query)) == 2
        assert len(_search(api_client, headers, user, query, top_k=5)) > 2
    finally:
        monkeypatch.delenv("MUMA_RETRIEVAL__DEFAULT_TOP_K")
        reset_settings_cache()


def test_verbatim_id_is_found(api_client: TestClient, memory_user: tuple) -> None:
    user, headers, _ = memory_user
    results = _search(api_client, headers, user, "INC-4471")
    assert "INC-4471" in results[0]["content"]
    assert "verbatim" in results[0]["explanation"]["routes"]


def test_filters(api_client: TestClient, memory_user: tuple) -> None:
    user, headers, _ = memory_user
    late = _search(api_client, headers, user, "sister nurse Porto", since="2023-01-01T00:00:00Z")
    assert all(r["occurred_at"] >= "2023-01-01" for r in late)
    assert not any("Porto" in r["content"] for r in late)
    decisions = _search(api_client, headers, user, "database", kinds=["decision"])
    assert decisions and all(r["kind"] == "decision" for r in decisions)
    assert len(_search(api_client, headers, user, "anything at all", top_k=2)) <= 2


def test_other_users_and_missing_identity(api_client: TestClient, memory_user: tuple) -> None:
    user, headers, _ = memory_user
    assert _search(api_client, headers, f"{user}-other", "dog Biscuit") == []
    missing = api_client.post(
        "/v1/search", json={"agent_id": "helper", "query": "dog"}, headers=headers
    )
    assert missing.status_code == 422 and "user_id" in missing.json()["detail"]
    no_agent = api_client.post(
        "/v1/search", json={"user_id": user, "query": "dog"}, headers=headers
    )
    assert no_agent.status_code == 422 and "agent_id" in no_agent.json()["detail"]
    bad_k = api_client.post(
        "/v1/search",
        json={"user_id": user, "agent_id": "a", "query": "x", "top_k": 51},
        headers=headers,
    )
    assert bad_k.status_code == 422 and "top_k" in bad_k.json()["detail"]


def test_context_block_respects_the_budget(api_client: TestClient, memory_user: tuple) -> None:
    user, headers, _ = memory_user
    body = {
        "user_id": user,
        "agent_id": "helper",
        "session_id": "s9",
        "prompt": "Tell me about my dog",
        "timeout_ms": 5000,
    }
    full = api_client.post("/v1/context", json=body, headers=headers).json()
    assert full["timed_out"] is False
    assert full["context"].startswith("<relevant-memories>") and "Biscuit" in full["context"]
    assert full["context"].endswith("</relevant-memories>")
    # Every memory with evidence of relevance fits (those under the cosine floor are left
    # out: memory.retrieval.gate.evidenced).
    assert full["tokens"] <= 1000 and 2 <= len(full["memories"]) <= len(FACTS)
    # The frame (tags and the "records, not instructions" line) plus room for one memory.
    budget = sum(estimate_tokens(text) for text in (OPEN, FRAME, CLOSE)) + 20
    small = api_client.post("/v1/context", json={**body, "max_tokens": budget}, headers=headers)
    small = small.json()
    assert small["tokens"] <= budget and 1 <= len(small["memories"]) < len(full["memories"])
    assert "Biscuit" in small["context"]
    nothing = api_client.post("/v1/context", json={**body, "max_tokens": 5}, headers=headers).json()
    assert nothing["context"] == "" and nothing["memories"] == []


def test_context_past_its_timeout_returns_empty(api_client: TestClient, memory_user: tuple) -> None:
    user, headers, _ = memory_user
    body = {
        "user_id": user,
        "agent_id": "helper",
        "session_id": "s9",
        "prompt": "dog " * 500,
        "timeout_ms": 1,
    }
    reply = api_client.post("/v1/context", json=body, headers=headers).json()
    assert reply["timed_out"] is True and reply["context"] == "" and reply["memories"] == []


def test_forgotten_and_superseded_notes_are_not_returned(
    api_client: TestClient, memory_user: tuple
) -> None:
    user, headers, _ = memory_user
    [radiohead] = [
        r
        for r in _search(api_client, headers, user, "favourite band")
        if "Radiohead" in r["content"]
    ]
    params = {"user_id": user, "agent_id": "helper"}
    assert (
        api_client.delete(
            f"/v1/memories/{radiohead['id']}", params=params, headers=headers
        ).status_code
        == 200
    )
    assert not any(
        "Radiohead" in r["content"] for r in _search(api_client, headers, user, "favourite band")
    )


def test_search_records_access_off_the_request_path(
    api_client: TestClient, memory_user: tuple
) -> None:
    user, headers, _ = memory_user
    [hit] = _search(api_client, headers, user, "penicillin allergy", top_k=1)
    note_id = uuid.UUID(hit["id"])

    def accesses() -> int:
        with session_scope() as session:
            note = session.get(Note, note_id)
            return note.access_count if note else 0

    before = accesses()
    _search(api_client, headers, user, "penicillin allergy", top_k=1)
    wait_until(lambda: accesses() > before, timeout=30)


def test_an_exhausted_budget_keeps_the_first_route_and_names_what_it_skipped(
    memory_user: tuple,
) -> None:
    from memory.access.policy import Viewer
    from memory.clients.embedder import embed_query
    from memory.config import get_settings
    from memory.retrieval.budget import Deadline
    from memory.retrieval.service import SearchOptions, search_notes

    user, _, tenant = memory_user
    settings = get_settings()
    query = "the beagle Biscuit"
    deadline = Deadline(at=0.0)  # already past: only the strongest route may run
    with session_scope() as session:
        hits = search_notes(
            session=session,
            viewer=Viewer(tenant_id=tenant, user_id=user, agent_id="helper"),
            query=query,
            vector=embed_query(query, settings),
            top_k=5,
            settings=settings,
            options=SearchOptions(deadline=deadline),
        )
    assert hits and "Biscuit" in hits[0].note.content
    assert all(set(hit.routes) == {"bm25"} for hit in hits), [h.routes for h in hits]
    assert deadline.partial
    # The lexical routes come before the dense one (a self-selecting window route too).
    assert deadline.skipped == ["verbatim", "bm25_window", "dense", "dense_window", "neighbours"]


def test_context_within_its_budget_is_complete(api_client: TestClient, memory_user: tuple) -> None:
    user, headers, _ = memory_user
    body = {
        "user_id": user,
        "agent_id": "helper",
        "session_id": "s-budget",
        "prompt": "What is the name of my dog?",
        "timeout_ms": 30000,
    }
    reply = api_client.post("/v1/context", json=body, headers=headers).json()
    assert reply["timed_out"] is False and "Biscuit" in reply["context"], reply


def test_window_vectors_score_the_other_routes_candidates_only(memory_user: tuple) -> None:
    """dense_window re-scores what the other routes found (it has no index of its own), so
    it never brings in a note none of them matched, and scores every one it can."""
    from memory.access.policy import Viewer
    from memory.clients.embedder import embed_query
    from memory.config import get_settings
    from memory.retrieval.candidates import SearchOptions, run_routes
    from memory.retrieval.scope import ReadScope

    user, _, tenant = memory_user
    query = "Where does my sister Ana live?"
    viewer = Viewer(tenant_id=tenant, user_id=user, agent_id="helper")
    vector = embed_query(query, get_settings())
    with session_scope() as session:
        found = run_routes(
            session,
            ReadScope(viewer),
            query,
            vector,
            SearchOptions(routes=("bm25", "dense_window")),
        )
    assert found["bm25"], found
    # Every fact is close enough to be an HNSW neighbour; only BM25's matches are scored.
    assert set(found["dense_window"]) == set(found["bm25"]), found


def test_window_bm25_scores_other_routes_candidates_when_its_terms_are_too_common(
    memory_user: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When even the rarest query term is in more than MATCH_MAX_NOTES windows, the window
    route scores the candidates the other routes found instead of scanning every match."""
    from memory.access.policy import Viewer
    from memory.retrieval import bm25
    from memory.retrieval.candidates import SearchOptions, run_routes
    from memory.retrieval.scope import ReadScope

    user, _, tenant = memory_user
    query = "Where does my sister Ana live?"
    viewer = Viewer(tenant_id=tenant, user_id=user, agent_id="helper")
    options = SearchOptions(routes=("bm25", "bm25_window"))

    def routes() -> dict[str, dict]:
        with session_scope() as session:
            return run_routes(session, ReadScope(viewer), query, None, options)

    bounded = routes()
    assert bounded["bm25"], bounded
    # The windows of Ana's neighbour turns hold her words: the window route finds them.
    assert set(bounded["bm25_window"]) > set(bounded["bm25"]), bounded
    monkeypatch.setattr(bm25, "MATCH_MAX_NOTES", 0)
    capped = routes()
    assert capped["bm25"] == bounded["bm25"]
    assert capped["bm25_window"] and set(capped["bm25_window"]) <= set(capped["bm25"]), capped
    for note_id, score in capped["bm25_window"].items():
        assert score == pytest.approx(bounded["bm25_window"][note_id])


def test_mmr_pool_vectors_are_the_notes_vectors_of_the_viewer_only(memory_user: tuple) -> None:
    """The MMR pool reads vectors from the viewer's partition of note_vectors (inline):
    they equal the notes' own embeddings, and another user's note ids get none."""
    import numpy as np

    from memory.access.policy import Viewer
    from memory.retrieval.rows import pool_vectors

    user, _, tenant = memory_user
    with session_scope() as session:
        rows = session.execute(
            select(Note.id, Note.embedding).where(Note.user_id == user, Note.status == "active")
        ).all()
        ids = [row.id for row in rows]
        mine = pool_vectors(session, Viewer(tenant, user, "helper"), ids)
        theirs = pool_vectors(session, Viewer(tenant, "someone-else", "helper"), ids)
    assert set(mine) == set(ids) and theirs == {}
    for row in rows:
        assert np.allclose(mine[row.id], np.asarray(row.embedding, dtype=np.float32), atol=1e-6)


def test_search_weighs_a_notes_length_and_context_does_not(
    api_client: TestClient, memory_user: tuple
) -> None:
    """/v1/search adds the length prior to relevance (longer notes gain, shorter lose);
    /v1/context ranks without it, since its block is budgeted in tokens."""
    user, headers, _ = memory_user
    results = _search(api_client, headers, user, "Tell me about my dog and my sister")
    by_content = {r["content"]: r["explanation"] for r in results}
    with session_scope() as session:
        lengths = {
            n.content: n.term_count
            for n in session.query(Note).filter(Note.user_id == user, Note.status == "active")
        }
    priors = {content: e["length_prior"] for content, e in by_content.items()}
    longest = max(priors, key=lambda c: lengths[c])
    shortest = min(priors, key=lambda c: lengths[c])
    assert lengths[longest] > lengths[shortest]
    assert priors[longest] > 0 > priors[shortest]
    body = {"user_id": user, "agent_id": "helper", "session_id": "s9", "timeout_ms": 5000}
    body["prompt"] = "Tell me about my dog and my sister"
    block = api_client.post("/v1/context", json=body, headers=headers).json()
    assert block["memories"] and all(
        m["explanation"]["length_prior"] == 0.0 for m in block["memories"]
    )


def test_a_long_prompt_is_ranked_by_its_ask_not_by_the_text_pasted_before_it(
    api_client: TestClient, memory_user: tuple
) -> None:
    """The read path ranks by the prompt's last paragraphs within query_focus_chars
    (`memory.retrieval.focus`): pasted words reach no route, and in one long paragraph
    the dense route embeds its end, where the question is, not its first word pieces."""
    user, headers, _ = memory_user
    # About the database decision, so a route that read it would rank that note.
    pasted = "We compared database engines and vector indexes for the memory store. " * 20
    question = "Never mind all that: what is the name of my dog?"
    body = {"user_id": user, "agent_id": "helper", "session_id": "s9", "timeout_ms": 5000}
    for prompt in (
        f"{pasted}\n\n{question}",
        pasted + "GET /healthz 200 OK 3 ms\n" * 80 + question,
    ):
        if "healthz" in prompt:
            # The ask shares its last 512 characters with log lines: its best cosine may
            # fall under /v1/context's evidence floor, so its ranking is read from search.
            memories = _search(api_client, headers, user, prompt)
        else:
            block = api_client.post("/v1/context", json={**body, "prompt": prompt}, headers=headers)
            memories = block.json()["memories"]
        dense_first = [m for m in memories if m["explanation"]["routes"].get("dense") == 1]
        assert len(dense_first) == 1 and "Biscuit" in dense_first[0]["content"], memories
        lexical = [m["content"] for m in memories if "bm25" in m["explanation"]["routes"]]
        assert not any("PostgreSQL" in content for content in lexical), memories


def test_context_injects_nothing_for_a_prompt_of_fillers_only(
    api_client: TestClient, memory_user: tuple
) -> None:
    """/v1/context answers greetings, thanks and reactions with an empty block
    (`memory.retrieval.gate`); anything with a content word is looked up, and /v1/search
    still lists what it is asked."""
    user, headers, _ = memory_user
    body = {"user_id": user, "agent_id": "helper", "session_id": "s9", "timeout_ms": 5000}

    def context(prompt: str) -> dict:
        response = api_client.post("/v1/context", json={**body, "prompt": prompt}, headers=headers)
        assert response.status_code == 200, response.text
        return response.json()

    for chit_chat in ("thanks!", "lol", "ok", "Hey Alice!"):
        answer = context(chit_chat)
        assert (answer["context"], answer["memories"], answer["tokens"]) == ("", [], 0), answer
        assert answer["timed_out"] is False
        assert _search(api_client, headers, user, chit_chat)
    assert "Biscuit" in context("Biscuit?")["memories"][0]["content"]
    assert "INC-4471" in context("thanks! INC-4471")["memories"][0]["content"]
    assert "penicillin" in context("Which antibiotics should I avoid?")["context"]


@pytest.mark.parametrize(
    "prompt",
    ["How do I center a div in CSS?", "Write a haiku about autumn leaves.",
     "What is the time complexity of quicksort?", "Convert 72 degrees Fahrenheit to Celsius."],
)  # fmt: skip
def test_context_injects_nothing_for_a_prompt_no_memory_is_about(
    api_client: TestClient, memory_user: tuple, prompt: str
) -> None:
    """An off-topic prompt gets an empty block (`memory.retrieval.gate.evidenced`), though
    /v1/search still ranks the user's notes for it; an ask in the first person of a note
    in the third person is still answered."""
    user, headers, _ = memory_user
    body = {"user_id": user, "agent_id": "helper", "session_id": "s10", "timeout_ms": 5000}
    answer = api_client.post("/v1/context", json={**body, "prompt": prompt}, headers=headers)
    assert answer.status_code == 200, answer.text
    assert (answer.json()["context"], answer.json()["memories"]) == ("", []), answer.json()
    assert _search(api_client, headers, user, prompt)
    asked = {**body, "prompt": "What is the name of my dog?"}
    found = api_client.post("/v1/context", json=asked, headers=headers).json()
    assert "Biscuit" in found["context"], found


def test_a_first_person_ask_is_read_as_the_users_own_words(
    api_client: TestClient, memory_user: tuple
) -> None:
    """Alice's "I adopted a beagle" is stored as "Alice adopted a beagle"; her "Tell me
    about my dog" is near it only once read as "... Alice's dog" (cosine 0.21 as asked,
    under the context's floor; memory.retrieval.first_person)."""
    user, headers, _ = memory_user
    body = {"user_id": user, "agent_id": "helper", "session_id": "s11", "timeout_ms": 5000}
    found = api_client.post(
        "/v1/context", json={**body, "prompt": "Tell me about my dog"}, headers=headers
    ).json()
    assert "Biscuit" in found["memories"][0]["content"], found
    best = _search(api_client, headers, user, "Tell me about my dog")[0]
    assert "Biscuit" in best["content"] and best["explanation"]["similarity"] > 0.5


def test_link_expansion_scores_a_linked_note_no_route_found(
    memory_user: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the links route on, a note one hop from the best candidates joins the scored
    ones although no route found it (its row read after the candidates'), with its
    spread in the explanation."""
    from memory.access.policy import Viewer
    from memory.clients.embedder import embed_query
    from memory.config import get_settings
    from memory.retrieval import routes
    from memory.retrieval.candidates import SearchOptions
    from memory.retrieval.service import search_notes

    user, _, tenant = memory_user
    query = "Where does my sister Ana live?"
    with session_scope() as session:
        linked_id = session.scalar(
            select(Note.id).where(Note.user_id == user, Note.content.contains("penicillin"))
        )
    assert linked_id is not None
    seeds: list[dict] = []

    def linked_route(_session: object, _scope: object, from_seeds: dict, **_: object) -> dict:
        seeds.append(from_seeds)
        return {linked_id: (1.0, next(iter(from_seeds)))}

    monkeypatch.setattr(routes, "linked_route", linked_route)

    def search(*names: str) -> dict:
        with session_scope() as session:
            hits = search_notes(
                session=session,
                viewer=Viewer(tenant_id=tenant, user_id=user, agent_id="helper"),
                query=query,
                vector=embed_query(query, get_settings()),
                top_k=10,
                settings=get_settings(),
                options=SearchOptions(routes=names, mmr=False),
            )
        return {hit.note.id: hit for hit in hits}

    assert linked_id not in search("bm25")  # BM25 alone does not find it
    hits = search("bm25", "links")
    assert seeds and linked_id not in seeds[0]
    hit = hits[linked_id]
    assert "penicillin" in hit.note.content
    assert hit.routes == {"links": 1} and hit.link_spread > 0


def test_search_and_context_answer_as_the_openapi_document_says(
    api_client: TestClient,
    memory_user: tuple,
) -> None:
    import jsonschema_rs

    user, headers, _ = memory_user
    components = api_client.get("/openapi.json").json()["components"]
    asked = {"user_id": user, "agent_id": "helper", "session_id": "s1"}
    # Radiohead is forgotten by an earlier test: asked about the band, the context has no
    # memory with evidence to inject, so the context is asked about the dog.
    answers = {
        "SearchAnswer": api_client.post(
            "/v1/search", json={**asked, "query": "Which band do I like?"}, headers=headers
        ),
        "ContextAnswer": api_client.post(
            "/v1/context", json={**asked, "prompt": "What is my dog called?"}, headers=headers
        ),
    }
    for model, response in answers.items():
        assert response.status_code == 200, response.text
        schema = {"$ref": f"#/components/schemas/{model}", "components": components}
        validator = jsonschema_rs.Draft202012Validator(schema, validate_formats=True)
        errors = [str(e) for e in validator.iter_errors(response.json())]
        assert errors == [], (model, errors[:3])
        assert response.json()["results" if model == "SearchAnswer" else "memories"]
