"""Views through the HMS endpoint cannot stall anyone (issue 21, item 3): each text parsed once per
mapping, long parses off other clients' paths, views reading another catalog refused.

One daemon of its own (memory catalogs ``main``, the default, and ``scratch``, shown as
``scratch__<db>``; no JVM). A memory catalog's ``get_table`` is never answered from the
metadata cache, so every read goes through the view rewrite: the parse counter on ``/metrics``
tells whether a text was parsed again. Stalls are proven with deadlines, never with durations.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from catalogd.hive_idl import ttypes

from .helpers import Daemon, answer_within, free_port, hms_connection, http_get, start_daemon, write_config

pytestmark = pytest.mark.integration

#: server.hms-max-view-text here: above the texts below, so that what is measured is the parse.
VIEW_TEXT = 2 * 1024 * 1024
#: A generous deadline for a call that should answer at once (the machine is shared and slow).
DEADLINE = 30.0


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    tmp = tmp_path_factory.mktemp("views")
    data_dir = tmp / "data"
    config = write_config(tmp / "views.yaml", port=free_port(), http_port=free_port(), data_dir=data_dir,
                          catalogs=[{"name": "main", "type": "memory", "default": True},
                                    {"name": "scratch", "type": "memory"}],
                          extra={"server": {"hms-max-view-text": VIEW_TEXT, "hms-view-parse-timeout": "60s"}})
    started = start_daemon(config, data_dir, tmp / "views.log")
    with hms_connection(started.hms_address, "owner") as client:
        for name in ("v_x", "scratch__v_x"):
            client.create_database(ttypes.Database(name=name, description="", parameters={}))
    yield started
    code = started.stop()
    assert code == 0, f"the daemon exited with {code}; log:\n{started.log()}"


def view(db: str, name: str, text: str) -> ttypes.Table:
    return ttypes.Table(dbName=db, tableName=name, owner="owner", tableType="VIRTUAL_VIEW",
                        viewOriginalText=text, viewExpandedText=text, parameters={},
                        sd=ttypes.StorageDescriptor(cols=[ttypes.FieldSchema(name="a", type="int")]))


def big_text(selects: int, tag: str = "") -> str:
    """About 85 characters per SELECT, each naming two tables of scratch's databases."""
    parts = [f"SELECT a{i}, b FROM scratch__db{i % 7}.t{i} JOIN scratch__other.c ON t{i}.id = c.id "
             f"WHERE x > {i}" for i in range(selects)]
    return f"SELECT * FROM ( /* {tag} */ " + " UNION ALL ".join(parts) + ") u"


def metric(daemon: Daemon, name: str) -> float:
    status, text = http_get(f"{daemon.http}/metrics")
    assert status == 200
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    assert found is not None, f"no {name} in /metrics"
    return float(found.group(1))


def parses(daemon: Daemon) -> int:
    return int(metric(daemon, "catalogd_hms_view_parses_total"))


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(("name", "text", "message"), [
    ("v_default", "SELECT * FROM v_x.base",
     r"catalogd: the text of view scratch__v_x\.v_default names database v_x, not one of this catalog's "
     r"\(scratch__\*\): a view can read only its own catalog's databases \(stored, the name would be read back "
     r"as scratch__v_x, another database\); create_table refused"),
    ("v_ro", "SELECT * FROM ro__v_x.base", r"names database ro__v_x, not one of this catalog's \(scratch__\*\)"),
    ("v_two", "SELECT * FROM scratch__v_x.base; DROP DATABASE scratch__v_x",
     r"the text of view scratch__v_x\.v_two holds 2 statements; a view is one query"),
    ("v_deep", "SELECT * FROM " + "(SELECT * FROM " * 2000 + "scratch__v_x.base" + ") x" * 2000,
     r"the text of view scratch__v_x\.v_deep cannot be checked: it nests 2000 levels deep, over the bound of 64"),
])
def test_views_that_would_read_elsewhere_or_stall_are_refused_with_why(daemon: Daemon, name: str, text: str,
                                                                      message: str) -> None:
    with hms_connection(daemon.hms_address, "owner") as client:
        with pytest.raises(ttypes.MetaException, match=message):
            answer_within(DEADLINE, lambda: client.create_table(view("scratch__v_x", name, text)))
        with pytest.raises(ttypes.NoSuchObjectException):
            client.get_table("scratch__v_x", name)
        # The connection serves on.
        assert client.get_database("scratch__v_x").name == "scratch__v_x"


def test_an_alter_to_another_catalogs_database_is_refused_and_the_view_kept(daemon: Daemon) -> None:
    with hms_connection(daemon.hms_address, "owner") as client:
        ok = "SELECT * FROM scratch__v_x.base"
        client.create_table(view("scratch__v_x", "v_alter", ok))
        with pytest.raises(ttypes.MetaException, match=r"names database v_x.*alter_table refused"):
            client.alter_table("scratch__v_x", "v_alter", view("scratch__v_x", "v_alter", "SELECT * FROM v_x.base"))
        assert client.get_table("scratch__v_x", "v_alter").viewOriginalText == ok


# ---------------------------------------------------------------- parsed once


def test_a_large_view_is_parsed_once_per_direction(daemon: Daemon) -> None:
    text = big_text(2400, "once")  # about 200 KB
    assert 190_000 < len(text) < VIEW_TEXT
    before = parses(daemon)
    with hms_connection(daemon.hms_address, "owner") as client:
        client.create_table(view("scratch__v_x", "v_big", text))
        assert parses(daemon) == before + 1  # the client's text, mapped to the backing names
        for _ in range(5):
            got = client.get_table("scratch__v_x", "v_big")
            # Stored as db0.t0 ..., shown as scratch__db0.t0 ... again.
            assert got.viewOriginalText == text and got.viewExpandedText == text
        assert parses(daemon) == before + 2  # the stored text, mapped once to the endpoint's names
        assert metric(daemon, "catalogd_hms_view_cache_hits_total") >= 4
    with hms_connection(daemon.hms_address, "other") as other:
        assert other.get_table("scratch__v_x", "v_big").viewOriginalText == text
    assert parses(daemon) == before + 2


# ---------------------------------------------------------------- no stall


def test_other_clients_are_answered_while_a_large_view_is_parsed(daemon: Daemon) -> None:
    text = big_text(16_000, "stall")  # about 1.4 MB: seconds of parsing, in a worker process
    outcome: list[Any] = []

    def create() -> None:
        try:
            with hms_connection(daemon.hms_address, "owner") as client:
                client.create_table(view("scratch__v_x", "v_huge", text))
                outcome.append("created")
        except Exception as e:  # the assertion below shows it
            outcome.append(e)

    started = metric(daemon, "catalogd_hms_view_worker_parses_total")
    creator = threading.Thread(target=create, daemon=True)
    creator.start()
    answered_during_parse = 0
    with hms_connection(daemon.hms_address, "reader") as reader:
        while creator.is_alive():
            parsing = metric(daemon, "catalogd_hms_view_worker_parses_total") > started
            database = answer_within(DEADLINE, lambda: reader.get_database("v_x"))
            assert database.name == "v_x"
            if parsing and creator.is_alive():
                answered_during_parse += 1
    creator.join(DEADLINE)
    assert outcome == ["created"]
    assert answered_during_parse >= 1, "the parse ended before another client's call could be made"


def test_the_view_parser_worker_is_a_child_of_the_daemon(daemon: Daemon) -> None:
    # Long texts are parsed in processes of their own: their memory is not the daemon's.
    children = Path(f"/proc/{daemon.pid}/task/{daemon.pid}/children").read_text().split()
    commands = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") for pid in children]
    assert any(b"catalogd.hms.view_text" in command for command in commands)
