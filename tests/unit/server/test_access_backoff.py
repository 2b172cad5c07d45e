"""Others' wrong tokens never refuse a correct one: the back-off is per address and token tried (Thrift
and HTTP through ``Access``, the console's sign-in and its sessions), while one token tried again and
again from one address is still held back."""

from __future__ import annotations

from fastapi.testclient import TestClient
from http_fakes import FakeManager

from catalogd.auth.model import Authority, Role
from catalogd.auth.throttle import THROTTLED, Throttle
from catalogd.errors import PermissionDeniedError
from catalogd.server.access import Access
from catalogd.server.console.app import ConsoleSources
from catalogd.server.http_app import create_app
from catalogd.server.metrics import Metrics
from catalogd.server.overview import HealthSources

ETL = "etl-token-0123456789abcdef"
ADMIN = "admin-token-0123456789abcdef"


def _access(free: int = 3) -> Access:
    authority = Authority(True, {"etl": ETL, "admin": ADMIN},
                          grants={("etl", "*"): Role.WRITER, ("admin", "*"): Role.ADMIN})
    # A long back-off: a correct token refused during the flood would stay refused for the test.
    return Access(authority, None, lambda: "main", lambda: ["main"],
                  throttle=Throttle(free=free, base=60.0, max_delay=600.0))


def _refused(access: Access, token: str, client: str) -> str:
    try:
        access.authenticate(token, client)
    except PermissionDeniedError as e:
        return e.message
    raise AssertionError("accepted")


def test_a_flood_of_wrong_tokens_from_one_address_refuses_no_correct_token_from_it() -> None:
    access = _access()
    assert access.authority is not None
    job = access.authority.mint_job_token("main", "db", "dt", ttl=600.0)
    for n in range(200):
        _refused(access, f"wrong-token-{n:020d}", f"127.0.0.1:{40000 + n}")
    # The job's own token and the admin's, from the flooded address, on a new connection: checked and taken.
    assert access.authenticate(job, "127.0.0.1:50001").job_scope == ("main", "db", "dt")
    assert access.authenticate(ADMIN, "127.0.0.1:50002").name == "admin"
    assert access.authenticate(ETL, "127.0.0.1:50003").name == "etl"


def test_one_wrong_token_tried_again_and_again_is_held_back_unchecked() -> None:
    access = _access()
    for _ in range(4):
        assert "not valid" in _refused(access, "guess-0123456789abcdef", "10.0.0.7:1")
    assert THROTTLED in _refused(access, "guess-0123456789abcdef", "10.0.0.7:2")
    assert access.throttle is not None and access.throttle.stats()["refused"] == 1
    # Not from another address, and not another token.
    assert "not valid" in _refused(access, "guess-0123456789abcdef", "10.0.0.8:1")
    assert access.authenticate(ETL, "10.0.0.7:3").name == "etl"


class _Manager(FakeManager):
    def catalogs(self) -> dict[str, object]:
        return {"main": object()}


def test_others_wrong_sign_ins_neither_end_a_console_session_nor_refuse_a_correct_token() -> None:
    access = _access(free=2)
    manager = _Manager()
    app = create_app(manager, Metrics(), access=access, console=ConsoleSources(health=HealthSources(ping=manager.ping)))
    with TestClient(app) as admin, TestClient(app) as stranger, TestClient(app) as later:
        signed_in = admin.post("/ui/login", data={"token": ADMIN, "next": "/ui/health"}, follow_redirects=False)
        assert signed_in.status_code == 303
        # Both clients are "testclient": one address, as every user behind one proxy is.
        for n in range(8):
            assert stranger.post("/ui/login", data={"token": f"wrong-token-{n:020d}"}).status_code == 401
        for _ in range(4):
            assert stranger.post("/ui/login", data={"token": "wrong-token-again-0123"}).status_code == 401
        assert access.throttle is not None and access.throttle.stats()["refused"] >= 1  # that one is held back
        page = admin.get("/ui/health", follow_redirects=False)
        assert page.status_code == 200, page.headers.get("location")  # the admin's session goes on
        assert later.post("/ui/login", data={"token": ADMIN, "next": "/ui/health"},
                          follow_redirects=False).status_code == 303
