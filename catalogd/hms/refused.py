"""An HMS call catalogd answers with an HMS exception instead of carrying it out.

Raised by the endpoint's policy (a denied or refused write) and by its dispatch (a call no
catalog can take); the router turns it into the reply the method declares for it.

A refusal of catalogd's own (a rule it enforces, not the metastore's answer) also carries
the catalogd error it stands for (``Refused.error``): the REST door's in-process client
answers with that typed error, so no door has to read a kind back out of a message's text.
"""

from __future__ import annotations

from catalogd.errors import CatalogError
from catalogd.hive_idl import ttypes as hms

__all__ = ["Refused", "message_of", "meta_error", "plain"]

_PREFIX = "catalogd: "


class Refused(Exception):
    """A call catalogd answers with an HMS exception (already built).

    Args:
        exc: the HMS exception the client gets.
        error: the catalogd error this refusal stands for; None when the exception is the
            metastore's own answer, relayed as it is.
    """

    def __init__(self, exc: Exception, error: CatalogError | None = None) -> None:
        super().__init__(str(exc))
        self.exc = exc
        self.error = error

    def respelt(self, exc: Exception) -> Refused:
        """The same refusal answered with another HMS exception (another client dialect's)."""
        return Refused(exc, self.error)


def plain(message: str) -> str:
    """A refusal's message without the ``catalogd: `` HMS clients see it by."""
    return message[len(_PREFIX):] if message.startswith(_PREFIX) else message


def meta_error(message: str, kind: type[CatalogError] | None = None) -> Refused:
    """A refusal with a ``MetaException`` (what HMS answers for a rule it enforces).

    Args:
        kind: the catalogd error the rule's refusal is (e.g. ``PermissionDeniedError``), made
            from the message; None for an answer in the metastore's own words.
    """
    return Refused(hms.MetaException(message=message), kind(plain(message)) if kind is not None else None)


def message_of(exc: object) -> str:
    """An HMS exception's message (its ``message`` field), or its text."""
    return str(getattr(exc, "message", None) or exc)
