"""Which found memories /v1/context may inject, in what order (memory.trust).

Invariants:
- A candidate is injected only when the settings say so (`candidates.inject = marked`),
  and then its line says it is unconfirmed (memory.trust.labels).
- An instruction-like memory that is not the user's own words is never injected unless
  the prompt names its source (the tool, page, file or person it came from): a page that
  told "the assistant" what to do comes back only when the user asks about that page.
- Trust moves a memory down, never up: each hit keeps its rank divided by its trust's
  injection weight (weight 1 keeps the search's order exactly).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from memory.retrieval.service import SearchHit
from memory.trust.settings import CandidateSettings, TrustSettings

# A file's or a tool's name shorter than this names nothing in particular ("md", "ls").
MIN_NAME_CHARS = 3


def source_names(origin: str, ref: str) -> set[str]:
    """The names a prompt must use to be about the source: a page's host, a file's name
    (with and without its extension), a tool's name, a person's full or first name. A
    word that only appears somewhere in the URL or path does not count: an attacker
    chooses those words to match the prompts they aim at."""
    ref = ref.strip().casefold()
    if origin == "web" or ref.startswith(("http://", "https://")):
        host = urlsplit(ref if "://" in ref else f"//{ref}").hostname or ""
        return {host.removeprefix("www.")} - {""}
    if origin == "file":
        name = PurePosixPath(ref.replace("\\", "/")).name
        return {n for n in (name, name.split(".")[0]) if len(n) >= MIN_NAME_CHARS}
    if origin == "participant":
        return {ref, ref.split()[0]} if ref.split() else set()
    if origin == "tool":
        return {n for n in (ref, ref.replace("_", " ")) if len(n) >= MIN_NAME_CHARS}
    return set()  # an agent's or an assistant's words have no source to ask about


def about_source(prompt: str, hit: SearchHit) -> bool:
    """Whether the prompt names the hit's source (see `source_names`), as whole words."""
    ref = hit.note.origin_ref or ""
    text = prompt.casefold()
    return any(
        re.search(rf"(?<![\w.]){re.escape(name)}(?![\w]|\.\w)", text)
        for name in source_names(hit.note.origin, ref)
    )


def injectable(
    hits: Sequence[SearchHit],
    prompt: str,
    trust: TrustSettings,
    candidates: CandidateSettings,
) -> list[SearchHit]:
    """The hits the block may hold, in injection order (see the module invariants)."""
    kept: list[tuple[float, int, SearchHit]] = []
    for rank, hit in enumerate(hits):
        note = hit.note
        if note.review == "candidate" and candidates.inject == "never":
            continue
        if note.instruction_like and note.trust != "high" and not about_source(prompt, hit):
            continue
        weight = trust.injection_weight.get(note.trust, 1.0)  # type: ignore[call-overload]
        kept.append(((rank + 1) / max(weight, 1e-6), rank, hit))
    return [hit for _, _, hit in sorted(kept, key=lambda k: (k[0], k[1]))]
