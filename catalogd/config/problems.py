"""How a problem in a configuration file is worded: ``<file>: <key path>: <problem> (did you mean 'x'?)``.

The models raise problems in this wording (:func:`problems_error` carries several at
once); :func:`convert_errors` turns a pydantic ``ValidationError`` into these lines and
:func:`raise_problems` reports them all in one :class:`~catalogd.errors.ConfigError`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any, NoReturn, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from catalogd.errors import ConfigError

__all__ = [
    "Loc",
    "convert_errors",
    "describe",
    "known_keys",
    "problem",
    "problems_error",
    "raise_problems",
    "suggest",
    "unknown_key",
]

#: Where in the file a problem is: keys and list positions, outermost first.
Loc = tuple[str | int, ...]

_PROBLEMS_ERROR = "catalogd_problems"


def describe(value: object) -> str:
    """How a YAML value is shown in a problem: ``'maybe'``, ``12``, ``true``, ``a list``."""
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return repr(shown)
    return str(value)


def suggest(key: object, candidates: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` when a candidate is close to ``key``, else ``''``."""
    wanted = str(key).lower().replace("_", "-")
    matches = difflib.get_close_matches(wanted, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {matches[0]!r}?)" if matches else ""


def unknown_key(key: object, candidates: Sequence[str]) -> str:
    """The problem of a key no model knows, with the closest known key when there is one."""
    return f"unknown key '{key}'" + suggest(key, candidates)


def problems_error(problems: Sequence[tuple[Loc, str]]) -> PydanticCustomError:
    """One pydantic error carrying several problems, each at a location below the failing field."""
    return PydanticCustomError(
        _PROBLEMS_ERROR,
        "{summary}",
        {"summary": "; ".join(message for _, message in problems), "problems": tuple(problems)},
    )


def _format_loc(loc: Loc) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_-]+", part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text


def problem(source: str, loc: Loc, message: str) -> str:
    """One problem line: ``<source>: <key path>: <message>`` (no key path for the file as a whole)."""
    path = _format_loc(loc)
    return f"{source}: {path}: {message}" if path else f"{source}: {message}"


def _model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model class that validates the mapping at ``loc`` (for unknown-key suggestions)."""
    current: Any = root
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = next(
                (f for n, f in current.model_fields.items() if part in (n, f.alias)),
                None,
            )
            if field is None:
                return None
            current = field.annotation
        elif get_origin(current) is list and isinstance(part, int):
            current = get_args(current)[0]
        else:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def known_keys(model: type[BaseModel] | None) -> list[str]:
    """The keys a file may give in the mapping ``model`` validates, spelled as in YAML."""
    if model is None:
        return []
    # A field left out of dumps (Config.source) is set by the loader, never read from the file.
    return [f.alias or n for n, f in model.model_fields.items() if not f.exclude]


_EXPECTED = {
    "bool_type": "expected a boolean (true or false)",
    "bool_parsing": "expected a boolean",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "int_parsing_size": "expected a smaller integer",
    "string_type": "expected a text value",
    "list_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "path_type": "expected a path",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
}


def convert_errors(exc: ValidationError, source: str, root: type[BaseModel]) -> list[str]:
    """Turn pydantic's errors from validating ``root`` into ``<source>: <key path>: <problem>`` lines."""
    problems: list[str] = []
    for error in exc.errors():
        kind = error["type"]
        loc: Loc = tuple(error["loc"])
        ctx = error.get("ctx") or {}
        value = error.get("input")
        shown = describe(value)
        if kind == _PROBLEMS_ERROR:
            problems.extend(problem(source, loc + tuple(sub), message) for sub, message in ctx["problems"])
            continue
        if kind == "extra_forbidden":
            key = loc[-1]
            problems.append(problem(source, loc[:-1], unknown_key(key, known_keys(_model_at(root, loc[:-1])))))
            continue
        if kind == "missing":
            message = "required key is missing"
        elif kind in ("value_error", "assertion_error"):
            message = str(ctx.get("error", error["msg"]))
            message = message.removeprefix("Value error, ")
        elif kind == "literal_error":
            message = f"expected {ctx.get('expected')}, got {shown}"
        elif kind == "list_type" and loc == ("catalogs",):
            message = f"expected a list of catalogs (each item starting with '- name:'), got {shown}"
        elif kind in _EXPECTED:
            message = f"{_EXPECTED[kind]}, got {shown}"
        else:
            text = str(error["msg"])
            message = f"{text[:1].lower()}{text[1:]}, got {shown}"
        problems.append(problem(source, loc, message))
    return problems


def raise_problems(problems: list[str]) -> NoReturn:
    """Report every problem at once; the message is the first, with a count of the rest."""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    raise ConfigError(problems[0] + more, problems=list(problems))
