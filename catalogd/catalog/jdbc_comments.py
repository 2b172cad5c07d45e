"""How a jdbc catalog keeps comments and properties in PostgreSQL: both in the object's ``COMMENT``.

The user's comment comes first, exactly as written; catalogd's properties follow after a marker
line as JSON, so they travel with the table through any rename (even one made outside catalogd)
and go with it when it is dropped. A comment without properties is left as written.
"""

from __future__ import annotations

import json

from catalogd.model import DatabaseUpdate, TableUpdate, ViewUpdate

__all__ = ["PROPERTIES_MARKER", "decode_comment", "encode_comment", "updated_comment"]

#: The line that starts catalogd's properties inside a PostgreSQL comment.
PROPERTIES_MARKER = "\n-- catalogd properties: "


def encode_comment(comment: str | None, properties: dict[str, str]) -> str | None:
    """The PostgreSQL comment that keeps ``comment`` and catalogd's ``properties``."""
    if not properties:
        return comment or None
    return (comment or "") + PROPERTIES_MARKER + json.dumps(dict(sorted(properties.items())), separators=(",", ":"))


def decode_comment(text: str | None) -> tuple[str | None, dict[str, str]]:
    """(comment, properties) of a PostgreSQL comment; a comment without the marker has no properties."""
    if not text:
        return None, {}
    comment, marker, rest = text.rpartition(PROPERTIES_MARKER)
    if not marker:
        return text, {}
    try:
        loaded = json.loads(rest)
    except ValueError:
        return text, {}
    if not isinstance(loaded, dict):
        return text, {}
    return comment or None, {str(k): str(v) for k, v in loaded.items()}


def updated_comment(text: str | None, update: DatabaseUpdate | TableUpdate | ViewUpdate) -> str | None:
    """The PostgreSQL comment ``text`` becomes under an ALTER: the new comment, when it gives one,
    and the properties it sets and unsets."""
    comment, properties = decode_comment(text)
    if update.comment is not None:
        comment = update.comment
    properties.update(update.set_properties)
    for key in update.unset_properties:
        properties.pop(key, None)
    return encode_comment(comment, properties)
