"""Read path settings (included by `memory.config` as `Settings.retrieval`).

Kept apart from `memory.config`, as `memory.journal` and `memory.trust` keep theirs; the
read path owns its vocabulary.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RetrievalSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Benchmarks switch this off so that measuring does not change what is measured.
    record_access: bool = True
    # Accesses are gathered for this long in each API process, then recorded by one task:
    # the maintenance queue gets at most one message a second per process, however many
    # searches arrive (it got one per search). At most access_batch_cap accesses of one
    # memory per window are kept (its rehearsal is capped for ranking anyway).
    access_flush_seconds: float = Field(1.0, gt=0, le=60)
    access_batch_cap: int = Field(16, ge=1, le=1000)
    default_top_k: int = Field(10, ge=1, le=50)
    context_timeout_ms: int = Field(150, ge=1, le=60000)
    context_max_tokens: int = Field(1000, ge=1)
    # Searches and contexts rank by the last paragraphs of the query or prompt that fit
    # in this many characters (memory.retrieval.focus): the ask, not text pasted before.
    query_focus_chars: int = Field(512, ge=16, le=16000)
    # /v1/context answers a prompt made only of greetings, thanks and reactions ("ok",
    # "thanks!", "lol") or go-ons ("continue", "next", "perfect") with an empty block
    # instead of the notes nearest to it (memory.retrieval.gate).
    context_skip_filler: bool = True
    # /v1/context injects nothing when no memory is like the prompt: the best candidate's
    # cosine is below context_min_similarity and the prompt names none of the candidates'
    # speakers. Then each memory whose cosine is known and below context_min_hit_similarity
    # is left out (memory.retrieval.gate.evidenced). None: the embedder's own floors
    # (all-MiniLM-L6-v2: 0.30 and 0.20, chosen on LoCoMo against off-topic prompts,
    # commit 50f19f0); an embedder without known floors
    # gets none. 0 switches a floor off.
    # The dense route reads a prompt's "I", "me" and "my" as the name the user's own words
    # are stored under, when one name clearly is theirs (memory.retrieval.first_person).
    resolve_first_person: bool = True
    context_min_similarity: float | None = Field(None, ge=0, le=1)
    context_min_hit_similarity: float | None = Field(None, ge=0, le=1)
    # pgvector's candidate list per HNSW search (`hnsw.ef_search`, set per connection).
    hnsw_ef_search: int = Field(40, ge=1, le=1000)
    # Graph entries a filtered search's HNSW scan may visit (`hnsw.max_scan_tuples` for
    # that statement) before the slice is ranked exactly instead. A slice far from the
    # query is not found by walking further: at 100k notes the default 20,000 took 53 ms
    # for a domain filter and still came up short (commit 151f653).
    filtered_scan_tuples: int = Field(4000, ge=100, le=1_000_000)
    # Weight of the length prior in /v1/search (relevance + weight · z(ln term_count) among
    # the scored candidates); 0 switches it off. /v1/context never applies it.
    length_prior: float = Field(0.05, ge=0.0, le=1.0)
    # A user with at least this many vectors in a partition of note_vectors shared with
    # other users gets an HNSW graph of its own there (`memory.notes.graphs`): the
    # partition's graph made its searches wade through the other users' entries (a 100k
    # user's dense p95 94-140 ms, 26 with its own; commit 0066427).
    dedicated_graph_notes: int = Field(20000, ge=1)
    # A user's notes of one domain get a graph of their own too when they are at least
    # this many and at most this share of the user's: a search filtered to that domain
    # then walks only them (a 100k user's 21,600-note slice: dense route 39.5 ms mean
    # ranking it exactly, 4.3 with its graph; commit 58f39da). The same two settings
    # govern a user's kind slices, whose graphs a kinds filter uses (commit ef5fc18).
    domain_graph_notes: int = Field(5000, ge=1)
    domain_graph_max_share: float = Field(0.5, gt=0, le=1)
    # How often the maintenance queue checks which users need one (builds are rare).
    dedicated_graph_interval_minutes: int = Field(60, ge=1)
    # Read a user's search files ahead into the OS page cache on their first search and
    # on the first after `read_ahead_idle_seconds` without one, then their `notes` rows
    # into PostgreSQL's buffers (`memory.retrieval.warm`): after a cold restart a 100k
    # user's first searches' mean fell by about 40 % (commit ee72db5), the rows took the
    # HTTP p95 from 61-68 to 55 ms (commit 715e879). Files only where the server's data
    # directory is this machine's (embedded by default); `read_ahead_max_mb` per user.
    read_ahead: bool = True
    read_ahead_idle_seconds: int = Field(600, ge=1)
    read_ahead_max_mb: int = Field(2048, ge=1)
    # When the API starts, the users read ahead most recently before (kept in Redis) are
    # read ahead again, newest first, until this many MB have been read (each user whole,
    # within read_ahead_max_mb); 0 switches it off.
    read_ahead_startup_mb: int = Field(2048, ge=0)
