"""The length prior: weight · z(ln term_count) among the scored candidates, added to a
candidate's relevance (so to ACT-R's spreading) and shown in its explanation."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from memory.activation.model import base_level
from memory.config import Settings
from memory.retrieval.candidates import SearchOptions
from memory.retrieval.fusion import length_prior
from memory.retrieval.service import _score, _with_settings

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _note(term_count: int) -> SimpleNamespace:
    return SimpleNamespace(
        id=uuid.uuid4(),
        content="x",
        speaker=None,
        base_level=base_level([NOW], NOW),  # as PostgreSQL computes it for the read path
        last_access_at=NOW,
        first_access_at=NOW,
        half_life_hours=168.0,
        term_count=term_count,
    )


def test_prior_is_the_weighted_z_score_of_the_log_length() -> None:
    notes = {n.id: n for n in (_note(1), _note(round(math.e**2)), _note(round(math.e**4)))}
    logs = [math.log(max(n.term_count, 1)) for n in notes.values()]
    mean = sum(logs) / 3
    std = math.sqrt(sum((v - mean) ** 2 for v in logs) / 3)
    priors = length_prior({i: n.term_count for i, n in notes.items()}, 0.05)
    assert list(priors) == list(notes)
    for prior, value in zip(priors.values(), logs, strict=True):
        assert prior == pytest.approx(0.05 * (value - mean) / std)
    # ln 1, ln 7, ln 55: the shortest note loses, the longest gains, the sum is zero.
    shortest, _, longest = priors.values()
    assert shortest < 0 < longest
    assert sum(priors.values()) == pytest.approx(0.0)


def test_prior_is_off_at_weight_zero_for_one_candidate_and_for_equal_lengths() -> None:
    assert length_prior({"a": 3, "b": 30}, 0.0) == {}
    assert length_prior({"a": 12}, 0.05) == {}
    assert length_prior({"a": 9, "b": 9}, 0.05) == {"a": 0.0, "b": 0.0}
    # An empty note counts as one term rather than failing on ln 0.
    assert length_prior({"a": 0, "b": 1}, 0.05) == {"a": 0.0, "b": 0.0}


def test_score_adds_the_prior_to_relevance_and_explains_it() -> None:
    short, long = _note(4), _note(40)
    notes = {short.id: short, long.id: long}
    relevance = {short.id: 0.6, long.id: 0.6}
    settings = Settings()
    scored = {}
    for weight in (0.0, 0.05):
        options = SearchOptions(length_prior=weight, speaker_prior=False)
        passed, below = _score(notes, relevance, {}, {}, None, NOW, settings, options)  # type: ignore[arg-type]
        scored[weight] = {h.note.id: h for h in passed + below}
    assert scored[0.0][short.id].relevance == scored[0.0][long.id].relevance == 0.6
    # Two candidates: z = -1 and +1, so relevance moves by the weight either way.
    assert scored[0.05][short.id].relevance == pytest.approx(0.55)
    assert scored[0.05][long.id].relevance == pytest.approx(0.65)
    assert scored[0.05][long.id].score > scored[0.05][short.id].score
    assert scored[0.05][long.id].explanation()["length_prior"] == pytest.approx(0.05)
    assert scored[0.05][short.id].explanation()["length_prior"] == pytest.approx(-0.05)


def test_unset_options_take_the_servers_settings_and_set_ones_stay() -> None:
    settings = Settings()
    settings.retrieval.length_prior = 0.02
    settings.retrieval.filtered_scan_tuples = 1234
    unset = _with_settings(SearchOptions(), settings)
    assert (unset.length_prior, unset.scan_tuples) == (0.02, 1234)
    kept = _with_settings(SearchOptions(length_prior=0.0, scan_tuples=99), settings)
    assert (kept.length_prior, kept.scan_tuples) == (0.0, 99)
    assert Settings().retrieval.length_prior == 0.05


def test_the_length_prior_setting_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MUMA_RETRIEVAL__LENGTH_PRIOR", "0.1")
    assert Settings().retrieval.length_prior == 0.1
    monkeypatch.setenv("MUMA_RETRIEVAL__LENGTH_PRIOR", "-1")
    with pytest.raises(ValueError, match="length_prior"):
        Settings()
