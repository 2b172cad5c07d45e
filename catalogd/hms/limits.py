"""Bounds on single fields of HMS calls, checked before anything works on them (issue 21).

The endpoint's buffer bound keeps a call's bytes in check; these keep a field that is fine for
the wire but costly to carry on from growing without bound: a ``set_ugi`` user name lands in
every audit line of its connection, and a view's text is parsed and rewritten (prefixed
catalogs) on create and on every read. Each check returns the ``MetaException`` to answer with,
or None; the router raises it before it decodes further or routes the call.
"""

from __future__ import annotations

from typing import Any

from catalogd.hive_idl import ttypes as hms
from catalogd.hms import methods

__all__ = ["MAX_SET_UGI_BYTES", "MAX_USER_NAME", "VIEW_TEXT_METHODS", "identity_error", "set_ugi_error",
           "view_text_error"]

#: The largest ``set_ugi`` call (user name and group names together): a user in a thousand
#: groups fits many times over.
MAX_SET_UGI_BYTES = 256 * 1024
#: The longest ``set_ugi`` user name, in characters (Kerberos principals are far shorter).
MAX_USER_NAME = 256
#: The calls that carry a table a view's text may come with.
VIEW_TEXT_METHODS = frozenset({
    "create_table", "create_table_with_environment_context", "create_table_with_constraints",
    "alter_table", "alter_table_with_environment_context", "alter_table_with_cascade",
})


def set_ugi_error(body_size: int) -> hms.MetaException | None:
    """A ``set_ugi`` call too large to decode."""
    if body_size > MAX_SET_UGI_BYTES:
        return hms.MetaException(message=f"catalogd: set_ugi of {body_size} bytes is over the limit of "
                                         f"{MAX_SET_UGI_BYTES} bytes; the connection keeps its user")
    return None


def identity_error(user: str | None) -> hms.MetaException | None:
    """A ``set_ugi`` user name too long to record."""
    if user is not None and len(user) > MAX_USER_NAME:
        return hms.MetaException(message=f"catalogd: set_ugi user name of {len(user)} characters is over the "
                                         f"limit of {MAX_USER_NAME}; the connection keeps its user")
    return None


def view_text_error(method: str, args: Any, limit: int) -> hms.MetaException | None:
    """A view whose original or expanded text is longer than ``limit`` bytes (``server.hms-max-view-text``)."""
    if method not in VIEW_TEXT_METHODS:
        return None
    for table in methods.tables_in(args):
        for name, text in (("original", table.viewOriginalText), ("expanded", table.viewExpandedText)):
            # A UTF-8 character is at most 4 bytes: most texts need no encoding to be measured.
            if not text or len(text) * 4 <= limit:
                continue
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > limit:
                return hms.MetaException(
                    message=f"catalogd: the {name} text of view {table.dbName}.{table.tableName} is {size} bytes, "
                            f"over the limit of {limit} (server.hms-max-view-text); {method} refused")
    return None
