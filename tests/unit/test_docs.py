"""The documentation names only what exists, and the generated reference covers everything.

README.md and docs/*.md (the hand-written pages) are scanned for `muma` invocations in code
(the command path, its options and their choices are resolved through the click group),
`MUMA_*` environment variables (each must be a setting of `memory.config.Settings`, or one
of the few variables read elsewhere, listed below), endpoints (`POST /v1/search`, or a bare
`/v1/...` path: the app must route that method and path), `.muma.json` keys such as
`journal.retentionDays`, and repository paths in code spans. The checker is tested on wrong
examples, so a check that silently passes everything fails here. The generated pages
(scripts/gen_docs.py) must name every setting, command and endpoint, and the site must
build with `mkdocs build --strict` (broken links and anchors fail it).
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, get_origin

import click
import pytest
from pydantic import BaseModel

from memory.config import Settings
from scripts import gen_docs

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def doc_files() -> list[Path]:
    """The hand-written pages: the README and docs/*.md (not the generated docs/reference)."""
    return [README, *sorted(DOCS.glob("*.md"))]


# Environment variables named in the docs that are not settings, and where each is read.
NOT_SETTINGS = {
    "MUMA_SCREENSHOTS": "tests/support/browser.py",
    "MUMA_TOKEN": "plugin/README.md",
    "MUMA_E2E_URL": "plugin/scripts/test.sh",
    "MUMA_E2E_TOKEN": "plugin/scripts/test.sh",
}

SHELL_LANGUAGES = {"", "sh", "bash", "shell", "console", "zsh"}
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
REPO_DIRS = ("memory", "tasks", "schedules", "migrations", "benchmarks", "tests", "scripts",
             "plugin", "docker", "docs")  # fmt: skip


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    text: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text!r}: {self.reason}"


# ------------------------------------------------------------------ reading markdown


@dataclass(frozen=True)
class Code:
    line: int
    text: str
    shell: bool  # a fenced block in a shell language, or an inline span


def code_in(markdown: str) -> Iterator[Code]:
    """Fenced blocks (with their language) and inline code spans, with line numbers."""
    masked = list(markdown)
    for block in re.finditer(r"^(```|~~~)([^\n]*)\n(.*?)^\1[ \t]*$", markdown, re.M | re.S):
        language = block.group(2).strip().split(" ")[0].lower()
        start = markdown.count("\n", 0, block.start(3)) + 1
        # Shell lines continued with a backslash are one command.
        joined = re.sub(r"\\\n", " ", block.group(3))
        shell = language in SHELL_LANGUAGES
        for offset, line in enumerate(joined.splitlines()):
            if shell:  # a comment is prose, not a command
                line = re.sub(r"(^|\s)#.*", "", line)
            yield Code(start + offset, line, shell)
        masked[block.start() : block.end()] = [
            "\n" if ch == "\n" else " " for ch in markdown[block.start() : block.end()]
        ]
    text = "".join(masked)
    for span in re.finditer(r"(`+)(?!`)((?:(?!\n\s*\n).)+?)(?<!`)\1(?!`)", text, re.S):
        line = text.count("\n", 0, span.start()) + 1
        yield Code(line, " ".join(span.group(2).split()), True)


def line_of(markdown: str, offset: int) -> int:
    return markdown.count("\n", 0, offset) + 1


# ------------------------------------------------------------------ muma commands

INVOCATION = re.compile(r"(?:^|(?<=[\s;&|(`$]))(?:[\w.~/-]*/)?muma(?=\s+\S)")
SEPARATORS = re.compile(r"\s(?:;|&&|\|\||\||#)\s|;|\)|$")


def invocations(code: str) -> Iterator[str]:
    """The words after `muma` up to a shell separator, for each invocation in `code`."""
    for found in INVOCATION.finditer(code):
        rest = code[found.end() :]
        end = SEPARATORS.search(rest)
        yield rest[: end.start() if end else len(rest)].strip()


def _words(text: str) -> list[str]:
    text = text.replace("\\|", "|")
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    return [w.strip("[]") for w in words if w.strip("[]")]


def _placeholder(word: str) -> bool:
    """ID, NOTE_ID, <user-id>, …: a value the reader fills in."""
    return bool(re.fullmatch(r"[A-Z][A-Z0-9_]*|<[^>]*>|.*….*|\.\.\.", word))


def _context(command: click.Command, name: str, parent: click.Context | None) -> click.Context:
    return click.Context(command, info_name=name, parent=parent, **command.context_settings)


@cache
def _root() -> tuple[click.Group, click.Context]:
    from memory.cli.main import cli

    return cli, _context(cli, "muma", None)


def check_command(text: str) -> str | None:
    """Why `muma <text>` does not exist, or None when its commands, options and choices do."""
    command, ctx = _root()
    return _check(command, ctx, _words(text))


def _check(command: click.Command, ctx: click.Context, words: list[str]) -> str | None:
    while isinstance(command, click.Group) and words and not words[0].startswith("-"):
        word = words.pop(0)
        if _placeholder(word):
            return None
        for alternative in word.split("|"):
            sub = command.get_command(ctx, alternative)
            if sub is None:
                return f"`{ctx.command_path}` has no command {alternative!r}"
            if "|" in word:
                problem = _check(sub, _context(sub, alternative, ctx), list(words))
                if problem:
                    return problem
        if "|" in word:
            return None
        command = command.get_command(ctx, word)  # type: ignore[assignment]
        ctx = _context(command, word, ctx)
    return _check_arguments(command, ctx, words)


def _check_arguments(command: click.Command, ctx: click.Context, words: list[str]) -> str | None:
    params = command.get_params(ctx)
    options = {
        name: param
        for param in params
        if isinstance(param, click.Option)
        for name in (*param.opts, *param.secondary_opts)
    }
    arguments = [param for param in params if isinstance(param, click.Argument)]
    positional: list[str] = []
    while words:
        word = words.pop(0)
        if word == "--":  # the rest is passed through (muma bench NAME -- ARGS)
            break
        if word.startswith("-") and len(word) > 1 and not re.fullmatch(r"-\d[\d.]*", word):
            name, equals, value = word.partition("=")
            option = options.get(name)
            if option is None:
                return f"`{ctx.command_path}` has no option {name!r}"
            if option.is_flag or option.count:
                continue
            if not equals:
                if not words:
                    return None  # a value left out in prose: `--user`
                value = words.pop(0)
            problem = _check_choice(ctx, name, option.type, value)
            if problem:
                return problem
        else:
            positional.append(word)
    for argument, value in zip(arguments, positional, strict=False):
        problem = _check_choice(ctx, argument.name or "", argument.type, value)
        if problem:
            return problem
    unbounded = any(argument.nargs < 0 for argument in arguments)
    wanted = sum(max(argument.nargs, 0) for argument in arguments)
    if not unbounded and len(positional) > wanted:
        return f"`{ctx.command_path}` takes {wanted} argument(s), given {positional}"
    return None


def _check_choice(ctx: click.Context, name: str, kind: click.ParamType, value: str) -> str | None:
    if not isinstance(kind, click.Choice):
        return None
    for alternative in value.split("|"):
        if not _placeholder(alternative) and alternative not in kind.choices:
            return f"`{ctx.command_path} {name}` has no choice {alternative!r} ({kind.choices})"
    return None


# ------------------------------------------------------------------ settings

ENV = re.compile(r"\bMUMA_[A-Z0-9]+(?:__?[A-Z0-9]+)*\b")


def _section(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def check_env(name: str) -> str | None:
    """Why `name` is no setting's environment variable, or None when it is one."""
    if name in NOT_SETTINGS:
        return None
    parts = name.removeprefix("MUMA_").lower().split("__")
    model: type[BaseModel] = Settings
    for index, part in enumerate(parts):
        field = model.model_fields.get(part)
        if field is None:
            return f"no setting {'.'.join(parts[: index + 1])}"
        section = _section(field.annotation)
        if section is None:
            if index == len(parts) - 1 or get_origin(field.annotation) is dict:
                return None  # a setting, or a key of a map setting
            return f"{'.'.join(parts[: index + 1])} is a setting, not a section"
        model = section
    return f"{'.'.join(parts)} is a section, not a setting"


SETTING_KEY = re.compile(r"([a-z][A-Za-z]*)\.([a-z][A-Za-z_]*)(?::.*)?")


def check_setting_key(code: str) -> str | None:
    """Why `section.key` in `.muma.json` names no setting; None for text that is no such key."""
    found = SETTING_KEY.fullmatch(code)
    if not found:
        return None
    section_name, key = (_snake(part) for part in found.groups())
    field = Settings.model_fields.get(section_name)
    section = _section(field.annotation) if field else None
    if section is None:
        return None  # `origin.kind`, `hnsw.ef_search`: not a settings key
    if key not in section.model_fields:
        return f"no setting {section_name}.{key}"
    return None


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# ------------------------------------------------------------------ endpoints

ENDPOINT = re.compile(
    r"\b(?P<methods>(?:GET|POST|PUT|PATCH|DELETE)(?:/(?:GET|POST|PUT|PATCH|DELETE))*)\s+"
    r"(?P<path>/[^\s`'\"),;?|\]]*)"
)
BARE_V1 = re.compile(r"/v1/[^\s`'\"),;?|\]]*")


def _normalise(path: str) -> str:
    path = path.rstrip(".…:").rstrip("/") or "/"
    return re.sub(r"\{[^}]*\}|<[^>]*>", "{}", path)


@cache
def routes() -> dict[str, frozenset[str]]:
    """Every routed path (parameters as {}) with its methods."""
    from fastapi.routing import iter_route_contexts

    from memory.api.app import create_app

    found: dict[str, set[str]] = {}
    for route in iter_route_contexts(create_app().routes):
        found.setdefault(_normalise(route.path), set()).update(route.methods or ())
    return {path: frozenset(methods) for path, methods in found.items()}


def check_endpoint(methods: list[str], path: str) -> str | None:
    """Why no route answers each of `methods` (any method when empty) at `path`."""
    known = routes().get(_normalise(path))
    if known is None:
        return f"no route {path}"
    missing = [method for method in methods if method not in known]
    return f"{path} does not answer {', '.join(missing)}" if missing else None


# ------------------------------------------------------------------ repository paths

REPO_PATH = re.compile(rf"(?:{'|'.join(REPO_DIRS)})/[\w./-]*")


GENERATED = ("docs/reference/", "docs/reference/api.md", "docs/reference/cli.md",
             "docs/reference/configuration.md")  # fmt: skip


def check_path(code: str) -> str | None:
    if not REPO_PATH.fullmatch(code) or code in GENERATED:
        return None
    return None if (ROOT / code).exists() else f"{code} does not exist"


# ------------------------------------------------------------------ the scan


def scan(markdown: str, file: str) -> list[Problem]:
    problems: list[Problem] = []
    for code in code_in(markdown):
        if code.shell:
            for words in invocations(code.text):
                reason = check_command(words)
                if reason:
                    problems.append(Problem(file, code.line, f"muma {words}", reason))
        for check in (check_setting_key, check_path):
            reason = check(code.text)
            if reason:
                problems.append(Problem(file, code.line, code.text, reason))
    for found in ENV.finditer(markdown):
        reason = check_env(found.group())
        if reason:
            problems.append(Problem(file, line_of(markdown, found.start()), found.group(), reason))
    covered: list[range] = []
    for found in ENDPOINT.finditer(markdown):
        covered.append(range(found.start(), found.end()))
        path = found.group("path")
        if path.startswith("/v1") or path in ("/healthz", "/metrics"):
            reason = check_endpoint(found.group("methods").split("/"), path)
            if reason:
                problems.append(Problem(file, line_of(markdown, found.start()), found[0], reason))
    for found in BARE_V1.finditer(markdown):
        if any(found.start() in span for span in covered):
            continue
        reason = check_endpoint([], found.group())
        if reason:
            problems.append(Problem(file, line_of(markdown, found.start()), found[0], reason))
    return problems


# ------------------------------------------------------------------ the docs


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_name_only_what_exists(path: Path) -> None:
    problems = scan(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not problems, "\n".join(str(p) for p in problems)


def test_the_readme_is_short_and_keeps_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    targets = set(re.findall(r"^make (\w[\w-]*)", text, re.M))
    assert targets == {"run", "test"}, targets


def test_no_internal_session_numbers_are_cited() -> None:
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        cited = re.findall(r"\bsessions? \d+", text, re.I)
        assert not cited, f"{path.relative_to(ROOT)} cites {cited}: cite a results file"


def test_the_readme_links_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith(("#", "../")):
            continue  # a web address, an anchor, or a file outside the repository
        file = target.split("#", 1)[0]
        assert (README.parent / file).exists() or file in GENERATED, target


def test_the_variables_that_are_no_settings_are_read_where_listed() -> None:
    for name, where in NOT_SETTINGS.items():
        assert name in (ROOT / where).read_text(encoding="utf-8"), (name, where)
        assert check_env(name.replace("MUMA_", "MUMA_NOT_")) is not None


# ------------------------------------------------------------------ the checker on bad examples


@pytest.mark.parametrize(
    "words",
    ["up --port 8787 --workers 2", "tokens create --role viewer --user alice",
     "tokens create --role viewer|operator|admin|agent", "candidates list|approve|reject",
     "agents add|update", "conflicts resolve ID --user alice --keep a\\|b\\|both",
     "search --user alice --agent assistant \"sister\"", "bench locomo -- --help",
     "up [--port 8787] [--flower-port 5555]", "COMMAND --help", "export --user alice -o a.jsonl",
     "pin NOTE_ID --user alice [--unpin]", "decay --user alice --dry-run [--now ISO]"],
)  # fmt: skip
def test_the_checker_accepts_real_commands(words: str) -> None:
    assert check_command(words) is None


@pytest.mark.parametrize(
    ("words", "reason"),
    [("tokens mint --role viewer", "no command 'mint'"),
     ("tokenz create", "no command 'tokenz'"),
     ("search --usr alice sister", "no option '--usr'"),
     ("tokens create --role superuser", "no choice 'superuser'"),
     ("candidates list|approve|ignore", "no command 'ignore'"),
     ("conflicts --user alice", "no option '--user'"),
     ("bench locomotion", "no choice 'locomotion'"),
     ("forget ID extra --user alice", "takes 1 argument")],
)  # fmt: skip
def test_the_checker_refuses_wrong_commands(words: str, reason: str) -> None:
    problem = check_command(words)
    assert problem is not None and reason in problem, problem


@pytest.mark.parametrize(
    ("name", "ok"),
    [("MUMA_HOME", True), ("MUMA_API__PORT", True), ("MUMA_RETRIEVAL__LENGTH_PRIOR", True),
     ("MUMA_TRUST__LEVELS__ASSISTANT", True), ("MUMA_SCREENSHOTS", True),
     ("MUMA_API__PORTT", False), ("MUMA_PORT", False), ("MUMA_API", False),
     ("MUMA_HOME__DIR", False), ("MUMA_RETRIEVAL_LENGTH_PRIOR", False)],
)  # fmt: skip
def test_the_checker_knows_the_settings(name: str, ok: bool) -> None:
    assert (check_env(name) is None) is ok, check_env(name)


@pytest.mark.parametrize(
    ("methods", "path", "ok"),
    [(["POST"], "/v1/search", True), (["GET", "POST"], "/v1/tokens", True),
     (["PATCH"], "/v1/memories/{id}", True), ([], "/v1/memories/…", True),
     (["GET"], "/healthz", True), (["POST"], "/v1/serch", False),
     (["DELETE"], "/v1/search", False), ([], "/v1/memories/{id}/nope", False)],
)  # fmt: skip
def test_the_checker_knows_the_endpoints(methods: list[str], path: str, ok: bool) -> None:
    assert (check_endpoint(methods, path) is None) is ok


def test_a_page_with_wrong_names_fails_the_scan() -> None:
    page = """# A page

Start it with `muma upp`, then:

```sh
muma tokens create --role admin --colour red
curl -H "Authorization: Bearer $T" http://127.0.0.1:8787/v1/serch
```

Set `MUMA_API__PORTT=9000` or `journal.retentionWeeks`; `POST /v1/episodes` is real, but
`DELETE /v1/episodes` is not, nor is `memory/retrieval/nothing.py`.

```text
muma API        http://127.0.0.1:8787
```
"""
    found = {(p.line, p.reason.split(" (")[0]) for p in scan(page, "page.md")}
    assert found == {
        (3, "`muma` has no command 'upp'"),
        (6, "`muma tokens create` has no option '--colour'"),
        (7, "no route /v1/serch"),
        (10, "no setting api.portt"),
        (10, "no setting journal.retention_weeks"),
        (11, "/v1/episodes does not answer DELETE"),
        (11, "memory/retrieval/nothing.py does not exist"),
    }, found


# ------------------------------------------------------------------ the generated reference


@pytest.fixture(scope="module")
def reference() -> dict[str, str]:
    return gen_docs.pages()


def test_the_settings_reference_names_every_setting(reference: dict[str, str]) -> None:
    page = reference["configuration.md"]
    for setting in gen_docs.iter_settings():
        assert f"`{setting.env}`" in page, setting.env
        assert f"`{setting.key}`" in page, setting.key
        assert check_env(setting.env) is None


def test_the_generated_pages_cite_no_session_numbers(reference: dict[str, str]) -> None:
    for name, page in reference.items():
        assert not re.search(r"\bsessions? \d+", page, re.I), name


def test_the_cli_reference_names_every_command(reference: dict[str, str]) -> None:
    command, ctx = _root()
    for sub, sub_ctx in gen_docs.iter_commands(command, ctx):
        assert f"`{sub_ctx.command_path}`" in reference["cli.md"], sub_ctx.command_path
        for param in sub.get_params(sub_ctx):
            for name in getattr(param, "opts", []):
                if name.startswith("-"):
                    assert name in reference["cli.md"], (sub_ctx.command_path, name)


def test_the_api_reference_names_every_endpoint(reference: dict[str, str]) -> None:
    document = gen_docs.openapi_document()
    for path, operations in document["paths"].items():
        for method in operations:
            assert f"`{method.upper()} {path}`" in reference["api.md"], (method, path)
    for name in document["components"]["schemas"]:
        assert f"`{name}`" in reference["api.md"], name


def _build_site(reference: dict[str, str], tmp_path: Path, broken: str = "") -> Path:
    """The site as `make docs` builds it, into a temporary folder; `broken` is appended to
    a page."""
    pytest.importorskip("mkdocs")
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs, ignore=shutil.ignore_patterns("reference"))
    (docs / "reference").mkdir()
    for name, text in reference.items():
        (docs / "reference" / name).write_text(text, encoding="utf-8")
    if broken:
        with (docs / "recall.md").open("a", encoding="utf-8") as page:
            page.write(broken)
    config = load_config(
        str(ROOT / "mkdocs.yml"), docs_dir=str(docs), site_dir=str(tmp_path / "site")
    )
    assert config.strict
    build(config)
    return tmp_path / "site"


def test_the_site_builds_strictly(reference: dict[str, str], tmp_path: Path) -> None:
    """A broken link or anchor, or a page left out of the navigation, fails the build."""
    site = _build_site(reference, tmp_path)
    assert (site / "reference" / "configuration.html").is_file()


@pytest.mark.parametrize(
    "broken", ["[a page](nothing.md)", "[an anchor](concepts.md#nothing-here)"]
)
def test_a_broken_link_fails_the_site(
    reference: dict[str, str], tmp_path: Path, broken: str
) -> None:
    from mkdocs.exceptions import Abort

    with pytest.raises(Abort, match="strict mode"):
        _build_site(reference, tmp_path, f"\n\nSee {broken}.\n")


@pytest.mark.parametrize(
    ("comment", "scrubbed"),
    [("fell by 40 % (session 17), the rows", "fell by 40 %, the rows"),
     ("(26 ms; benchmarks/README.md, session 13).", "(26 ms; benchmarks/README.md)."),
     ("(benchmarks/README.md, sessions 17 and 18).", "(benchmarks/README.md)."),
     ("a session id (session_id)", "a session id (session_id)")],
)  # fmt: skip
def test_session_numbers_in_code_comments_are_left_out(comment: str, scrubbed: str) -> None:
    assert gen_docs.scrub(comment) == scrubbed
