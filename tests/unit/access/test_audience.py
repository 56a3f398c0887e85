"""The lattice of memory.access.audience, checked against the visibility rule itself:
B may flow into A exactly when, under every configuration of agents, every viewer that
`can_see_attributes` lets read A may also read B."""

from __future__ import annotations

import itertools

import pytest

from memory.access.audience import (
    SYSTEM_AUTHORS,
    Audience,
    audience_key,
    in_window,
    may_flow,
    window_readers,
)
from memory.access.policy import Viewer, can_see_attributes

DOMAINS = ("work", "health")
AUTHORS = ("writer", "other", next(iter(SYSTEM_AUTHORS)))
AGENTS = ("writer", "other", "reader")  # "reader" never authors a note
VISIBILITIES = ("open", "scoped", "private", "user-only")

AUDIENCES = [
    Audience(visibility, domain, author)
    for visibility, domain, author in itertools.product(VISIBILITIES, DOMAINS, AUTHORS)
]
# Every agent: any subset of the domains, with or without canSeePrivate.
RIGHTS = [
    (frozenset(domains), private)
    for size in range(len(DOMAINS) + 1)
    for domains in itertools.combinations(DOMAINS, size)
    for private in (False, True)
]
CONFIGURATIONS = list(itertools.product(RIGHTS, repeat=len(AGENTS)))


def _readers(audience: Audience, configuration: tuple) -> frozenset[str]:
    viewers = [Viewer("t", "u", None)] + [
        Viewer("t", "u", agent, domains, private)
        for agent, (domains, private) in zip(AGENTS, configuration, strict=True)
    ]
    return frozenset(
        viewer.agent_id or "<user>"
        for viewer in viewers
        if can_see_attributes(
            viewer,
            agent_id=audience.agent_id,
            visibility=audience.visibility,
            domain=audience.domain,
        )
    )


@pytest.fixture(scope="module")
def readers() -> dict[Audience, list[frozenset[str]]]:
    return {a: [_readers(a, c) for c in CONFIGURATIONS] for a in AUDIENCES}


def test_may_flow_is_the_readers_inclusion_under_every_configuration(
    readers: dict[Audience, list[frozenset[str]]],
) -> None:
    for source, into in itertools.product(AUDIENCES, repeat=2):
        safe = all(
            r_into <= r_source
            for r_into, r_source in zip(readers[into], readers[source], strict=True)
        )
        assert may_flow(source, into) == safe, (source, into)


def test_the_lattice_is_reflexive_and_transitive() -> None:
    for a in AUDIENCES:
        assert may_flow(a, a)
    for a, b, c in itertools.product(AUDIENCES, repeat=3):
        if may_flow(a, b) and may_flow(b, c):
            assert may_flow(a, c), (a, b, c)


def test_audience_keys_group_exactly_the_mutually_flowing_audiences() -> None:
    for a, b in itertools.product(AUDIENCES, repeat=2):
        mutual = may_flow(a, b) and may_flow(b, a)
        assert (audience_key(a) == audience_key(b)) == mutual, (a, b)


@pytest.mark.parametrize(
    ("source", "into", "allowed"),
    [
        (("open", "work", "other"), ("private", "work", "writer"), True),
        (("user-only", "work", "writer"), ("open", "work", "writer"), False),
        (("private", "work", "writer"), ("open", "work", "writer"), False),
        (("private", "work", "writer"), ("scoped", "work", "writer"), False),
        (("scoped", "health", "writer"), ("scoped", "work", "writer"), False),
        (("scoped", "work", "other"), ("scoped", "work", "writer"), False),
        (("scoped", "work", "writer"), ("scoped", "work", "writer"), True),
        (("private", "health", "writer"), ("user-only", "work", "other"), True),
    ],
)
def test_the_repro_cases(
    source: tuple[str, str, str], into: tuple[str, str, str], allowed: bool
) -> None:
    assert may_flow(Audience(*source), Audience(*into)) is allowed


def test_a_window_holds_what_every_agent_ranking_by_it_may_read_under_every_configuration(
    readers: dict[Audience, list[frozenset[str]]],
) -> None:
    for source, into in itertools.product(AUDIENCES, repeat=2):
        if not in_window(source, into):
            continue
        rankers = window_readers(into, [source])
        for r_into, r_source in zip(readers[into], readers[source], strict=True):
            # Who may rank by the window: its readers, or only its author among them.
            allowed = r_into if rankers is None else r_into & {*rankers, "<user>"}
            assert allowed <= r_source, (source, into)
        if may_flow(source, into):
            assert rankers is None


def test_one_agent_ranks_by_every_neighbour_it_wrote_but_the_user_only_ones() -> None:
    notes = [Audience(v, d, "main") for v in ("open", "scoped", "private") for d in DOMAINS]
    for source, into in itertools.product(notes, repeat=2):
        assert in_window(source, into)
        assert window_readers(into, [source]) in (None, ["main"])
    user_only = Audience("user-only", "work", "main")
    assert not any(in_window(user_only, into) for into in notes)
    assert not in_window(Audience("scoped", "work", "other"), notes[1])
    system = Audience("scoped", "work", next(iter(SYSTEM_AUTHORS)))
    assert not in_window(Audience("scoped", "health", "main"), system)
