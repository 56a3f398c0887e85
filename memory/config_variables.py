"""MUMA_* environment variables that name no setting.

pydantic-settings ignores an environment variable that matches no field, so a misspelt one
(`MUMA_API__PROT=9000`) silently does nothing. Each such variable gets one warning when
the settings are first read, naming the closest setting.
"""

from __future__ import annotations

import difflib
import logging
import os
import typing
from collections.abc import Mapping

from pydantic import BaseModel

log = logging.getLogger("memory.config")

PREFIX = "MUMA_"
# Variables of MUMA's own tools that are not the service's settings (the plugin's
# end-to-end test).
NOT_SETTINGS = ("MUMA_E2E_",)


def setting_variables(model: type[BaseModel], prefix: str = PREFIX) -> tuple[set[str], set[str]]:
    """The variable names that set a field of `model`, and the prefixes under which any
    name does (a dict of sections, such as agent_memory.<agent>)."""
    names: set[str] = set()
    open_prefixes: set[str] = set()
    for name, field in model.model_fields.items():
        variable = prefix + name.upper()
        names.add(variable)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            inner, inner_open = setting_variables(annotation, variable + "__")
            names |= inner
            open_prefixes |= inner_open
        elif typing.get_origin(annotation) is dict:
            open_prefixes.add(variable + "__")
    return names, open_prefixes


def unknown_variables(
    model: type[BaseModel], environ: Mapping[str, str]
) -> list[tuple[str, str | None]]:
    """(variable, the closest setting's variable or None) for each MUMA_* variable that
    sets nothing."""
    names, open_prefixes = setting_variables(model)
    skipped = (*sorted(open_prefixes), *NOT_SETTINGS)
    unknown = []
    for variable in sorted(environ):
        upper = variable.upper()
        if not upper.startswith(PREFIX) or upper in names or upper.startswith(skipped):
            continue
        close = difflib.get_close_matches(upper, sorted(names), n=1, cutoff=0.8)
        unknown.append((variable, close[0] if close else None))
    return unknown


def warn_unknown_variables(
    model: type[BaseModel], environ: Mapping[str, str] | None = None
) -> None:
    for variable, close in unknown_variables(model, os.environ if environ is None else environ):
        hint = f"; did you mean {close}?" if close else ""
        log.warning("%s is not a MUMA setting and is ignored%s", variable, hint)
