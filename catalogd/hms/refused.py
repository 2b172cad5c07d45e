"""An HMS call catalogd answers with an HMS exception instead of carrying it out.

Raised by the endpoint's policy (a denied or refused write) and by its dispatch (a call no
catalog can take); the router turns it into the reply the method declares for it.
"""

from __future__ import annotations

from catalogd.hive_idl import ttypes as hms

__all__ = ["Refused", "message_of", "meta_error"]


class Refused(Exception):
    """A call catalogd answers with an HMS exception (already built)."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(str(exc))
        self.exc = exc


def meta_error(message: str) -> Refused:
    """A refusal with a ``MetaException`` (what HMS answers for a rule it enforces)."""
    return Refused(hms.MetaException(message=message))


def message_of(exc: object) -> str:
    """An HMS exception's message (its ``message`` field), or its text."""
    return str(getattr(exc, "message", None) or exc)
