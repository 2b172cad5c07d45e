"""catalogd on a remote Hive Metastore 4 (``apache/hive:4.0.0`` through testcontainers).

Skipped, with the reason, where no Docker engine answers.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from polling import wait_until

from catalogd.client import CatalogClient
from catalogd.errors import DatabaseNotFoundError, TableNotFoundError
from catalogd.model import Column, TableFormat

from .helpers import CATALOGD, clean_env, free_port, start_daemon, write_config

pytestmark = [pytest.mark.integration, pytest.mark.docker]

IMAGE = "apache/hive:4.0.0"
HMS_PORT = 9083
READY_TIMEOUT = 240.0


def _docker_or_skip() -> None:
    try:
        import docker

        docker.from_env().ping()
    except Exception as e:  # any failure means there is no engine to use
        pytest.skip(f"no Docker engine: {type(e).__name__}: {e}")


def _wait_for_metastore(host: str, port: int, container) -> None:
    from catalogd.metastore.client import MetastoreClient

    def answers() -> bool:
        client = MetastoreClient([(host, port)], connect_timeout=2, socket_timeout=10)
        try:
            client.call("get_all_databases")
            return True
        finally:
            client.close()

    try:
        wait_until(answers, READY_TIMEOUT, what=f"the {IMAGE} metastore on {host}:{port}", every=1.0)
    except AssertionError as e:
        logs = b"".join(part or b"" for part in container.get_logs()).decode(errors="replace")[-3000:]
        raise RuntimeError(f"{e}\n{logs}") from None


@pytest.fixture(scope="module")
def metastore_uri() -> Iterator[str]:
    _docker_or_skip()
    from testcontainers.core.container import DockerContainer

    container = DockerContainer(IMAGE).with_env("SERVICE_NAME", "metastore").with_exposed_ports(HMS_PORT)
    container.start()
    try:
        host = container.get_container_host_ip()
        port = int(container.get_exposed_port(HMS_PORT))
        _wait_for_metastore(host, port, container)
        yield f"thrift://{host}:{port}"
    finally:
        container.stop()


@pytest.fixture(scope="module")
def remote_daemon(metastore_uri, tmp_path_factory):
    root = tmp_path_factory.mktemp("remote")
    config = write_config(
        root / "catalogd.yaml", port=free_port(), http_port=free_port(), data_dir=root / "data",
        catalogs=[{
            "name": "remote",
            "type": "hive",
            "default": True,
            # Inside the container: set, so catalogd need not ask HMS for it.
            "warehouse": "file:///opt/hive/data/warehouse",
            "connection": {"hive.metastore.uris": metastore_uri, "hive.metastore.connect.timeout": "10s"},
        }],
    )
    proc = start_daemon(config, root / "data", root / "catalogd.log")
    yield proc
    assert proc.stop() == 0, proc.log()


def test_round_trip_on_remote_hive_4(remote_daemon, metastore_uri, unique_name):
    db = f"remote.{unique_name('remote')}"
    with CatalogClient(remote_daemon.address) as client:
        info = client.get_catalog("remote")
        assert (info.type, info.metastore) == ("hive", metastore_uri)
        client.create_database(db, comment="on hive 4", properties={"k": "v"})
        try:
            got = client.get_database(db)
            assert (got.comment, got.properties.get("k")) == ("on hive 4", "v")
            assert got.name in client.list_databases("remote")

            client.create_table(f"{db}.t", "id bigint COMMENT 'key', amount decimal(10,2)",
                                partitioned_by="ds string", format="orc", comment="remote table",
                                properties={"team": "data"})
            table = client.get_table(f"{db}.t")
            assert table.columns == [Column("id", "bigint", "key"), Column("amount", "decimal(10,2)")]
            assert table.partition_keys == [Column("ds", "string")]
            assert table.format is TableFormat.ORC
            assert table.comment == "remote table"
            assert table.properties.get("team") == "data"
            assert client.list_tables(db) == ["t"]

            altered = client.alter_table(f"{db}.t", add_columns="note string", set_properties={"x": "1"})
            assert [c.name for c in altered.columns] == ["id", "amount", "note"]

            done = subprocess.run(
                [str(CATALOGD), "--server", remote_daemon.address, "--json", "table", "describe", f"{db}.t"],
                capture_output=True, text=True, timeout=60, env=clean_env(),
            )
            assert (done.returncode, done.stderr) == (0, ""), done.stderr
            assert json.loads(done.stdout)["format"] == "orc"

            client.drop_table(f"{db}.t", purge=True)
            with pytest.raises(TableNotFoundError):
                client.get_table(f"{db}.t")
        finally:
            client.drop_database(db, if_exists=True, cascade=True)
        with pytest.raises(DatabaseNotFoundError):
            client.get_database(db)
