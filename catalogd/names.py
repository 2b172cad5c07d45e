"""Object names: ``catalog.database.object`` with parts that may be left out.

A missing leading part means the default catalog (and its default database);
the server fills the defaults in, so a name is parsed into parts where it is
typed (CLI, client) and resolved where the defaults are known (the manager).
Names follow Hive: letters, digits and underscores, case-insensitive (kept in
lower case). A part may be quoted with backticks to allow other characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from catalogd.errors import InvalidArgumentError

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9][A-Za-z0-9_]*")
MAX_NAME_LENGTH = 128


@dataclass(frozen=True)
class NamespacePath:
    """A database, maybe without its catalog."""

    catalog: str | None
    database: str

    def __str__(self) -> str:
        return ".".join(p for p in (self.catalog, self.database) if p)


@dataclass(frozen=True)
class ObjectPath:
    """A table (or other object), maybe without its catalog or database."""

    catalog: str | None
    database: str | None
    name: str

    def __str__(self) -> str:
        return ".".join(p for p in (self.catalog, self.database, self.name) if p)


def split_name(text: str) -> list[str]:
    """Split a dotted name into validated, lower-cased parts.

    Raises:
        InvalidArgumentError: empty parts, bad characters, unbalanced quotes.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("empty name")
    parts: list[str] = []
    i, n = 0, len(text)
    while True:
        if i < n and text[i] == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise InvalidArgumentError(f"unbalanced backtick in name {text!r}")
            part = text[i + 1 : end]
            if not part:
                raise InvalidArgumentError(f"empty part in name {text!r}")
            i = end + 1
        else:
            end = text.find(".", i)
            end = n if end < 0 else end
            part = text[i:end]
            if not _PLAIN.fullmatch(part):
                what = "empty part" if not part else f"invalid part {part!r}"
                raise InvalidArgumentError(
                    f"{what} in name {text!r}: use letters, digits and underscores, "
                    "or quote the part with backticks"
                )
            i = end
        if len(part) > MAX_NAME_LENGTH:
            raise InvalidArgumentError(f"name part longer than {MAX_NAME_LENGTH} characters in {text!r}")
        parts.append(part.lower())
        if i == n:
            return parts
        if text[i] != ".":
            raise InvalidArgumentError(f"expected '.' after a quoted part in name {text!r}")
        i += 1
        if i == n:
            raise InvalidArgumentError(f"name {text!r} ends with '.'")


def parse_catalog(text: str) -> str:
    parts = split_name(text)
    if len(parts) != 1:
        raise InvalidArgumentError(f"expected a catalog name, got {text!r}")
    return parts[0]


def parse_namespace(text: str) -> NamespacePath:
    """``catalog.database`` or ``database`` (in the default catalog)."""
    parts = split_name(text)
    if len(parts) == 1:
        return NamespacePath(None, parts[0])
    if len(parts) == 2:
        return NamespacePath(parts[0], parts[1])
    raise InvalidArgumentError(f"expected CATALOG.DATABASE or DATABASE, got {text!r}")


def parse_object(text: str) -> ObjectPath:
    """``catalog.database.object``, ``database.object`` or ``object``."""
    parts = split_name(text)
    if len(parts) == 1:
        return ObjectPath(None, None, parts[0])
    if len(parts) == 2:
        return ObjectPath(None, parts[0], parts[1])
    if len(parts) == 3:
        return ObjectPath(parts[0], parts[1], parts[2])
    raise InvalidArgumentError(f"expected CATALOG.DATABASE.OBJECT (or a shorter form), got {text!r}")


def quote(part: str) -> str:
    return part if _PLAIN.fullmatch(part) else f"`{part}`"
