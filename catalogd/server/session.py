"""Who is calling: the principal and peer address of the Thrift connection whose call a worker thread runs."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from catalogd.auth.model import Principal

__all__ = ["Session", "current_session", "reset_session", "use_session"]


@dataclass
class Session:
    """One Thrift connection as the handler sees it; ``principal`` is None until it authenticates."""

    peer: str
    principal: Principal | None = None


#: Set by the Thrift server around each call (a worker thread runs calls of many connections).
_CURRENT: contextvars.ContextVar[Session | None] = contextvars.ContextVar("catalogd_session", default=None)


def current_session() -> Session | None:
    """The session of the call running on this thread (None outside the Thrift server: tests, direct calls)."""
    return _CURRENT.get()


def use_session(session: Session | None) -> contextvars.Token[Session | None]:
    """Make ``session`` the current one; pass the token to ``reset_session`` when the call ends."""
    return _CURRENT.set(session)


def reset_session(token: contextvars.Token[Session | None]) -> None:
    _CURRENT.reset(token)
