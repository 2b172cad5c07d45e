"""What no client writes: catalogd's reserved properties (``catalogd.*``) and the marker a jdbc
catalog keeps its properties behind in a comment.

catalogd keeps its own state beside the user's metadata: a dynamic table's definition and
history, a stage's and a commit's marks, what it created (``catalogd.`` properties; in a jdbc
catalog they follow a marker line inside the object's PostgreSQL comment). Anything a client
could write there would be believed: a forged definition would be run. So every door a client
writes metadata through (the Thrift API and so the CLI, dynamic-table statements, stages; the
HMS endpoint has its own rule in ``hms.policy``) checks what it is given here first.
"""

from __future__ import annotations

from collections.abc import Iterable

from catalogd.catalog.base import RESERVED_PROPERTY_PREFIX
from catalogd.catalog.jdbc_comments import PROPERTIES_MARKER
from catalogd.errors import InvalidArgumentError

__all__ = ["check_client_metadata", "reserved_keys"]

#: The marker without its leading line break, lower case: a comment holding it anywhere is refused
#: (however its line ends, it is not a user's text).
_MARKER = PROPERTIES_MARKER.strip().lower()


def reserved_keys(keys: Iterable[str]) -> list[str]:
    """The keys among ``keys`` that are catalogd's own (any case: ``CATALOGD.dt.x`` too)."""
    return sorted(k for k in keys if k.lower().startswith(RESERVED_PROPERTY_PREFIX))


def check_client_metadata(what: str, properties: Iterable[str] = (), comments: Iterable[str | None] = ()) -> None:
    """Refuse a client's property keys (set or unset) or comments that would write catalogd's own state.

    Args:
        what: the object, for the message ("table pg.sales.orders").

    Raises:
        InvalidArgumentError: a reserved key, or a comment holding the properties marker; the
            caller has changed nothing.
    """
    reserved = reserved_keys(properties)
    if reserved:
        raise InvalidArgumentError(
            f"{what}: properties {reserved} are catalogd's own (names starting with {RESERVED_PROPERTY_PREFIX!r}: "
            "a dynamic table's definition and state, a stage's or a commit's marks); nothing was changed")
    for comment in comments:
        if comment and _MARKER in comment.lower():
            raise InvalidArgumentError(
                f"{what}: a comment may not contain {_MARKER!r} (the line catalogd keeps its own properties "
                "behind); nothing was changed")
