"""Console sessions: random ids, a CSRF token each, idle expiry, a bound on how many are kept."""

from __future__ import annotations

from catalogd.server.console.sessions import Sessions


def test_sessions_expire_when_idle_and_are_bounded() -> None:
    now = [0.0]
    sessions = Sessions(idle=10.0, limit=2, clock=lambda: now[0])
    a = sessions.open("tok-a")
    assert a.id != a.csrf and len(a.id) >= 40
    now[0] = 9.0
    assert sessions.get(a.id) is a  # used: its idle time starts again
    now[0] = 18.0
    assert sessions.get(a.id) is a
    now[0] = 29.0
    assert sessions.get(a.id) is None
    b, c, d = sessions.open(None), sessions.open(None), sessions.open(None)
    assert sessions.get(b.id) is None and sessions.get(c.id) is c and sessions.get(d.id) is d


def test_csrf_must_match_exactly() -> None:
    session = Sessions().open(None)
    assert session.csrf_ok(session.csrf)
    assert not session.csrf_ok(None) and not session.csrf_ok("") and not session.csrf_ok(session.csrf + "x")
