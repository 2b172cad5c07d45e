"""``${VAR}`` and ``${VAR:-default}`` in a configuration file replaced by environment variables."""

from __future__ import annotations

import os
import re

__all__ = ["expand_env", "expand_env_at", "mask_references"]

_VAR_RE = re.compile(r"\$\$\{|\$\{(?P<body>[^}\n]*)\}|\$\{")
_VAR_BODY_RE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)


def expand_env(text: str, source: str) -> tuple[str, list[str]]:
    """Replace ``${VAR}`` and ``${VAR:-default}``; ``$${`` is a literal ``${``.

    Lines that are entirely comments are left alone (a variable mentioned in a comment
    need not be set). A default is used when the variable is unset or empty.

    Returns:
        The expanded text and the problems found, each as ``<source>: line <n>: <problem>``.
    """
    expanded, found = expand_env_at(text)
    return expanded, [f"{source}: line {line}: {message}" for line, _, message in found]


def mask_references(text: str) -> str:
    """``text`` with every variable reference replaced by as many ``x``: parseable YAML, same positions."""
    return _VAR_RE.sub(lambda match: "x" * len(match[0]), text)


def expand_env_at(text: str) -> tuple[str, list[tuple[int, int, str]]]:
    """As :func:`expand_env`, each problem as (line, column, message), both counted from 1."""
    problems: list[tuple[int, int, str]] = []
    lines: list[str] = []
    for lineno, line in enumerate(text.splitlines(keepends=True), start=1):
        if line.lstrip().startswith("#"):
            lines.append(line)
            continue

        def replace(match: re.Match[str], lineno: int = lineno) -> str:
            if match[0] == "$${":
                return "${"
            body = match["body"]
            column = match.start() + 1
            if body is None:
                problems.append((lineno, column, "unterminated '${' (write '$${' for a literal '${')"))
                return ""
            parsed = _VAR_BODY_RE.fullmatch(body)
            if parsed is None:
                problems.append((lineno, column, f"malformed variable reference '${{{body}}}': "
                                                 "expected ${NAME} or ${NAME:-default}"))
                return ""
            name, default = parsed["name"], parsed["default"]
            value = os.environ.get(name)
            if default is not None and not value:
                return default
            if value is None:
                problems.append((lineno, column, f"environment variable {name!r} is not set "
                                                 f"(set it, or give a default with ${{{name}:-default}})"))
                return ""
            return value

        lines.append(_VAR_RE.sub(replace, line))
    return "".join(lines), problems
