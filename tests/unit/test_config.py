"""Settings: defaults of DESIGN.md §10, env nesting, `.muma.json` camelCase, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.config import Settings, load_settings
from memory.errors import ConfigError


@pytest.fixture()
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    for key in list(__import__("os").environ):
        if key.startswith("MUMA_"):
            monkeypatch.delenv(key)
    return tmp_path


def test_defaults_follow_the_seed(isolated: Path) -> None:
    settings = load_settings()
    assert settings.activation.context_weight == 11.0
    assert settings.activation.noise_stddev == 1.2
    assert settings.activation.decay_parameter == 0.5
    assert settings.activation.retrieval_threshold == 0.0
    assert settings.decay.sweep_interval_minutes == 60
    assert settings.decay.prune_threshold == -2.0
    assert settings.decay.hard_prune_threshold == -5.0
    assert settings.decay.min_age_hours == 72
    assert settings.decay.max_age_hours == 720
    assert settings.visibility.default_visibility == "scoped"
    assert settings.visibility.domain_boost == 1.0
    assert settings.home == Path(isolated / "home" / ".local/share/muma")
    assert settings.embedded_database and settings.embedded_redis


def test_env_nested_with_double_underscore(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUMA_ACTIVATION__CONTEXT_WEIGHT", "7.5")
    monkeypatch.setenv("MUMA_DATABASE_URL", "postgresql://db/x")
    settings = load_settings()
    assert settings.activation.context_weight == 7.5
    assert settings.database_url == "postgresql://db/x"
    assert not settings.embedded_database


def test_muma_json_camel_case_keys_and_free_form_maps(isolated: Path) -> None:
    (isolated / "work" / ".muma.json").write_text(
        json.dumps(
            {
                "activation": {"contextWeight": 9.0, "noiseStddev": 0.5},
                "visibility": {"defaultVisibility": "open", "domainRules": {"finance": "private"}},
                "agentMemory": {"travelBot": {"domains": ["travel"], "canSeePrivate": True}},
            }
        )
    )
    settings = load_settings()
    assert settings.activation.context_weight == 9.0
    assert settings.activation.noise_stddev == 0.5
    assert settings.visibility.default_visibility == "open"
    assert settings.visibility.domain_rules == {"finance": "private"}
    # Agent ids are map keys: they keep their spelling, their settings are converted.
    assert settings.agent_memory["travelBot"].can_see_private is True


def test_precedence_env_over_cwd_over_home(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (isolated / "home" / ".muma.json").write_text(
        json.dumps({"decay": {"minAgeHours": 10, "maxAgeHours": 99}})
    )
    (isolated / "work" / ".muma.json").write_text(json.dumps({"decay": {"minAgeHours": 20}}))
    assert load_settings().decay.min_age_hours == 20
    assert load_settings().decay.max_age_hours == 99
    monkeypatch.setenv("MUMA_DECAY__MIN_AGE_HOURS", "30")
    assert load_settings().decay.min_age_hours == 30


def test_invalid_value_names_the_key(isolated: Path) -> None:
    (isolated / "work" / ".muma.json").write_text(
        json.dumps({"visibility": {"defaultVisibility": "everyone"}})
    )
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "visibility.default_visibility" in info.value.message


def test_unknown_key_is_rejected(isolated: Path) -> None:
    (isolated / "work" / ".muma.json").write_text(json.dumps({"activation": {"contxtWeight": 1}}))
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "contxtWeight" in info.value.message


def test_malformed_file_is_a_clear_error(isolated: Path) -> None:
    (isolated / "work" / ".muma.json").write_text("{not json")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert ".muma.json" in info.value.message


def test_provider_e5_alone_names_its_model_and_reembed_follows() -> None:
    from memory.cli.reembed import _settings

    assert Settings(embedding={"provider": "e5"}).embedding.model == "multilingual-e5-small"  # type: ignore[arg-type]
    explicit = Settings(embedding={"provider": "e5", "model": "intfloat/multilingual-e5-small"})  # type: ignore[arg-type]
    assert explicit.embedding.model == "intfloat/multilingual-e5-small"
    assert _settings("e5", None).embedding.model == "multilingual-e5-small"
    assert _settings("onnx", "all-MiniLM-L6-v2").embedding.provider == "onnx"


@pytest.mark.parametrize("args", [["up"], ["tokens", "list"], ["stats", "--user", "a"]])
def test_the_cli_names_an_invalid_setting_in_one_line(tmp_path: Path, args: list[str]) -> None:
    """A command whose settings are invalid answers with one line naming the key and its
    variable, not a traceback; `muma --help` still answers."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "MUMA_HOME": str(tmp_path), "MUMA_API__PORT": "abc"}
    muma = [sys.executable, "-c", "from memory.cli.main import main; main()"]
    done = subprocess.run([*muma, *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "Error: invalid configuration: api.port (MUMA_API__PORT): Input should be a valid "
        "integer, unable to parse string as an integer"
    ]
    helped = subprocess.run([*muma, "--help"], env=env, capture_output=True, text=True)
    assert helped.returncode == 0 and "Commands:" in helped.stdout


def test_a_misspelt_variable_is_named_with_the_setting_it_resembles(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from memory.config_variables import unknown_variables, warn_unknown_variables

    environ = {
        "MUMA_REDIS_URLL": "redis://h/0",  # top level: pydantic-settings ignores it
        "MUMA_RETRIEVAL_LENGTH_PRIOR": "0.2",  # one underscore where two nest
        "MUMA_NOTHING_LIKE_IT": "1",
        "MUMA_API__PORT": "9000",  # real settings, a dict section, the plugin's test's
        "MUMA_AGENT_MEMORY__BOT__MAX_NOTES": "5",
        "MUMA_E2E_URL": "http://x",
        "PATH": "/bin",
    }
    assert unknown_variables(Settings, environ) == [
        ("MUMA_NOTHING_LIKE_IT", None),
        ("MUMA_REDIS_URLL", "MUMA_REDIS_URL"),
        ("MUMA_RETRIEVAL_LENGTH_PRIOR", "MUMA_RETRIEVAL__LENGTH_PRIOR"),
    ]
    with caplog.at_level("WARNING", logger="memory.config"):
        warn_unknown_variables(Settings, {"MUMA_REDIS_URLL": "x"})
    assert caplog.messages == [
        "MUMA_REDIS_URLL is not a MUMA setting and is ignored; did you mean MUMA_REDIS_URL?"
    ]
