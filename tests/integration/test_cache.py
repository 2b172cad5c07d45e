"""The metadata cache on a real daemon and a real embedded metastore: catalogd's own writes
(Thrift API, CLI, stage commits, the HMS endpoint) are read back at once by every surface;
writes made directly on the backing metastore show within ``cache.ttl``."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.model import StageState

from .helpers import Daemon, embedded_catalog, free_port, hms_connection, http_get, metastore_key_file

pytestmark = pytest.mark.integration


def backing(daemon: Daemon, catalog: str = "main") -> tuple[str, int]:
    """The embedded metastore's own address (tests give it a fixed ``metastore-port``)."""
    config = yaml.safe_load(daemon.config_path.read_text())
    return "127.0.0.1", int(next(c for c in config["catalogs"] if c["name"] == catalog)["metastore-port"])


def behind_catalogds_back(daemon: Daemon, database: str, table: str, **params: str) -> None:
    with hms_connection(backing(daemon), key_file=metastore_key_file(daemon.data_dir)) as direct:
        tbl = direct.get_table(database, table)
        tbl.parameters.update(params)
        direct.alter_table(database, table, tbl)


def metric(daemon: Daemon, name: str, labels: str = "") -> float:
    status, text = http_get(f"{daemon.http}/metrics")
    assert status == 200
    found = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.MULTILINE)
    assert found, f"{name}{labels} not in /metrics"
    return float(found.group(1))


@pytest.fixture
def long_ttl(daemon_factory: Callable[..., Daemon]) -> Daemon:
    """A daemon whose cache keeps answers for 30 s: staleness is observable."""
    return daemon_factory(catalogs=[embedded_catalog("main", metastore_port=free_port())], name="cache",
                          extra={"cache": {"ttl": "30s"}})


def test_with_a_long_ttl_a_direct_write_waits_and_a_catalogd_write_shows_at_once(long_ttl: Daemon) -> None:
    with CatalogClient(long_ttl.address, timeout=60.0) as client, hms_connection(long_ttl.hms_address) as endpoint:
        client.create_database("main.shop")
        client.create_table("main.shop.orders", "id bigint", partitioned_by="ds string")
        client.create_table("main.shop.items", "id bigint")
        assert "behind" not in client.get_table("main.shop.orders").properties  # cached now
        assert "behind" not in (endpoint.get_table("shop", "orders").parameters or {})
        hits = metric(long_ttl, "catalogd_cache_hits_total", '{catalog="main"}')

        behind_catalogds_back(long_ttl, "shop", "orders", behind="yes")
        # Within the 30 s TTL both surfaces still answer from the cache.
        assert "behind" not in client.get_table("main.shop.orders").properties
        assert "behind" not in (endpoint.get_table("shop", "orders").parameters or {})
        assert metric(long_ttl, "catalogd_cache_hits_total", '{catalog="main"}') >= hits + 2
        # A write to another table leaves this one's entry alone.
        client.alter_table("main.shop.items", set_properties={"k": "v"})
        assert "behind" not in client.get_table("main.shop.orders").properties

        # A write through catalogd invalidates it: the next read has both changes.
        client.alter_table("main.shop.orders", set_properties={"mine": "1"})
        props = client.get_table("main.shop.orders").properties
        assert (props.get("behind"), props.get("mine")) == ("yes", "1")
        assert (endpoint.get_table("shop", "orders").parameters or {}).get("mine") == "1"

        # Partitions, listings and databases likewise.
        assert client.list_partitions("main.shop.orders") == []
        client.add_partition("main.shop.orders", {"ds": "2024-01-01"})
        assert [p.values for p in client.list_partitions("main.shop.orders")] == [["2024-01-01"]]
        assert client.list_tables("main.shop") == ["items", "orders"]
        client.rename_table("main.shop.items", "goods")
        assert client.list_tables("main.shop") == ["goods", "orders"]
        assert sorted(endpoint.get_all_tables("shop")) == ["goods", "orders"]
        client.alter_database("main.shop", set_properties={"team": "a"})
        assert client.get_database("main.shop").properties["team"] == "a"

        # A write through the HMS endpoint is seen by the Thrift API at once, and back.
        tbl = endpoint.get_table("shop", "orders")
        tbl.parameters["via"] = "endpoint"
        endpoint.alter_table("shop", "orders", tbl)
        assert client.get_table("main.shop.orders").properties["via"] == "endpoint"

        assert metric(long_ttl, "catalogd_cache_entries") > 0
        assert metric(long_ttl, "catalogd_cache_bytes") > 0
        assert metric(long_ttl, "catalogd_cache_misses_total", '{catalog="main"}') > 0
        assert metric(long_ttl, "catalogd_cache_evictions_total") == 0


def test_a_stage_commit_is_visible_at_once(long_ttl: Daemon) -> None:
    with CatalogClient(long_ttl.address, timeout=60.0) as client, hms_connection(long_ttl.hms_address) as endpoint:
        client.create_database("main.shop")
        assert client.list_tables("main.shop") == []  # cached
        assert endpoint.get_all_tables("shop") == []
        stage = client.begin_stage("main.shop.t", "id bigint", purpose="create")
        assert client.list_tables("main.shop") == []  # the stage is hidden
        assert client.commit_stage(stage.id).state is StageState.COMMITTED
        assert client.list_tables("main.shop") == ["t"]
        assert endpoint.get_all_tables("shop") == ["t"]
        assert client.get_table("main.shop.t").properties["catalogd.last-commit"] == stage.id

        # REPLACE: the cached table gives way to the new one at once.
        replace = client.begin_stage("main.shop.t", "id bigint, note string", purpose="replace")
        assert client.get_table("main.shop.t").properties["catalogd.last-commit"] == stage.id
        assert client.commit_stage(replace.id).state is StageState.COMMITTED
        table = client.get_table("main.shop.t")
        assert table.properties["catalogd.last-commit"] == replace.id
        assert [c.name for c in table.columns] == ["id", "note"]
        assert [c.name for c in endpoint.get_table("shop", "t").sd.cols] == ["id", "note"]


def test_ttl_zero_turns_the_cache_off(daemon_factory: Callable[..., Daemon]) -> None:
    off = daemon_factory(catalogs=[embedded_catalog("main", metastore_port=free_port())], name="nocache",
                         extra={"cache": {"ttl": "0s"}})
    with CatalogClient(off.address, timeout=60.0) as client:
        client.create_database("main.shop")
        client.create_table("main.shop.orders", "id bigint")
        client.get_table("main.shop.orders")
        behind_catalogds_back(off, "shop", "orders", behind="yes")
        assert client.get_table("main.shop.orders").properties["behind"] == "yes"
    assert metric(off, "catalogd_cache_entries") == 0
    assert metric(off, "catalogd_cache_hits_total", '{catalog="main"}') == 0
    assert metric(off, "catalogd_cache_misses_total", '{catalog="main"}') >= 2


# --------------------------------------------------------------------------- the session daemon (default 1 s TTL)


def test_a_cli_write_is_read_back_at_once(daemon: Daemon, client: CatalogClient, main_db: str,
                                          run_cli: Callable[..., Any]) -> None:
    client.create_table(f"{main_db}.t", "id bigint")
    assert "k" not in client.get_table(f"{main_db}.t").properties  # cached
    code, _, err = run_cli("table", "alter", f"{main_db}.t", "--property", "k=v")
    assert code == 0, err
    assert client.get_table(f"{main_db}.t").properties["k"] == "v"


def test_with_the_default_ttl_a_direct_write_shows_within_it(daemon: Daemon, client: CatalogClient,
                                                             main_db: str) -> None:
    database = main_db.split(".")[1]
    client.create_table(f"{main_db}.t", "id bigint")
    client.get_table(f"{main_db}.t")
    behind_catalogds_back(daemon, database, "t", behind="yes")
    changed_at = time.monotonic()
    wait_until(lambda: client.get_table(f"{main_db}.t").properties.get("behind") == "yes", timeout=30,
               what="the direct write to show through the Thrift API")
    # cache.ttl is 1 s here: the change showed (the wait only bounds a busy machine).
    assert time.monotonic() - changed_at < 30
