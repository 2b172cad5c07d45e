"""Flink 2.x's dynamic-table statements end to end (issue 23 item 5): ALTER ... AS <query>
with FLIP-492's schema rules and its refusals, CREATE OR ALTER, FRESHNESS left out (FLIP-551),
SHOW CREATE and MATERIALIZED TABLE, through the session daemon (its Spark analyzer is warm)
with one real refresh job (spark-submit) and the session's SparkSession reading the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from catalogd.client import CatalogClient
from catalogd.errors import ConflictError, InvalidArgumentError, TableNotFoundError
from catalogd.model import RefreshMode, RunStatus

from .conftest import CliResult, source_database
from .helpers import spark_rows

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 300.0


@pytest.fixture
def dts_db(sc: CatalogClient, spark: Any, unique_name: Callable[[str], str]) -> Iterator[str]:
    with source_database(sc, spark, unique_name("dts"), 5) as name:
        yield name


def definition(client: CatalogClient, name: str) -> tuple[Any, ...]:
    """What a refused statement must leave as it was: columns, query, sources, freshness, mode."""
    dt = client.get_dynamic_table(name)
    table = client.get_table(name)
    return (dt.columns, dt.partition_keys, dt.query, dt.expanded_query, dt.freshness, dt.refresh_mode,
            table.properties.get("catalogd.dt.sources"))


def test_alter_as_adds_a_column_refuses_the_rest_and_show_create_round_trips(
        sc: CatalogClient, spark: Any, dts_db: str, run_cli: Callable[..., CliResult]) -> None:
    client, name = sc, f"main.{dts_db}.totals"
    # MATERIALIZED TABLE (Flink's name) for DYNAMIC TABLE; no FRESHNESS: FULL's default (1 h).
    created = client.sql(f"""CREATE MATERIALIZED TABLE {name}
        WITH ('initialize' = 'on_schedule')
        REFRESH_MODE = FULL
        AS SELECT id, amount FROM src""")
    assert created.kind == "created", created.message
    assert created.table is not None
    assert (created.table.freshness, created.table.refresh_mode) == ("1 HOUR", RefreshMode.FULL)
    before = definition(client, name)
    assert [(c.name, c.type) for c in before[0]] == [("id", "bigint"), ("amount", "double")]

    # FLIP-492's refusals: invalid-argument, and nothing changed.
    refusals = {
        "SELECT CAST(id AS STRING) AS id, amount FROM src": "column id would change type from bigint to string",
        "SELECT id FROM src": "column amount is not in the new query",
        "SELECT id, amount AS amt FROM src": "column amount is not in the new query",
        "SELECT amount, id FROM src": "column id would move from position 1 to 2",
    }
    for query, message in refusals.items():
        with pytest.raises(InvalidArgumentError, match=message):
            client.sql(f"ALTER DYNAMIC TABLE {name} AS {query}")
    with pytest.raises(InvalidArgumentError, match=r"CREATE OR ALTER changes only its query.*FRESHNESS 1 DAY"):
        client.sql(f"CREATE OR ALTER DYNAMIC TABLE {name} FRESHNESS = INTERVAL '1' DAY "
                   "AS SELECT id, amount, id AS again FROM src")
    with pytest.raises(InvalidArgumentError, match="no_such_column"):
        client.sql(f"ALTER DYNAMIC TABLE {name} AS SELECT id, amount, no_such_column FROM src")
    assert definition(client, name) == before

    # A new column, appended: FULL uses the new query from the next refresh.
    altered = client.sql(f"ALTER MATERIALIZED TABLE {name} AS SELECT id, amount, amount * 2 AS doubled FROM src")
    assert altered.kind == "altered"
    assert "from its next refresh; columns added: doubled double" in altered.message
    assert [c.name for c in client.get_table(name).columns] == ["id", "amount", "doubled"]

    job = client.sql(f"ALTER DYNAMIC TABLE {name} REFRESH").job
    assert job is not None
    # A run under way would commit the old schema over a new one: refused, nothing changed. (The
    # run has just started and takes many seconds; should it have ended already, the statement,
    # which repeats the query, changes nothing either.)
    try:
        client.sql(f"ALTER DYNAMIC TABLE {name} AS SELECT id, amount, amount * 2 AS doubled FROM src")
    except ConflictError as e:
        assert "are under way and would commit the old schema" in e.message
    else:
        assert client.get_refresh_job(job.id).status not in (RunStatus.PENDING, RunStatus.RUNNING)
    done = client.wait_refresh_job(job.id, timeout=JOB_TIMEOUT)
    assert done.status is RunStatus.SUCCEEDED, done
    assert spark_rows(spark, f"{dts_db}.totals") == [(i, i * 1.5, i * 3.0) for i in range(5)]

    # CREATE OR ALTER of the table as it is: the query again, nothing added.
    again = client.sql(f"CREATE OR ALTER DYNAMIC TABLE {name} REFRESH_MODE = FULL "
                       "AS SELECT id, amount, amount * 2 AS doubled FROM src")
    assert (again.kind, again.message.endswith("the columns are unchanged")) == ("altered", True), again.message

    # SHOW CREATE: a statement that makes the same table again (the CLI prints it).
    shown = run_cli("sql", f"SHOW CREATE MATERIALIZED TABLE {name}")
    assert shown.code == 0, shown.stderr
    text = shown.stdout.strip()
    assert text == (f"CREATE MATERIALIZED TABLE {name}\nWITH (\n  'initialize' = 'on_schedule'\n)\n"
                    "FRESHNESS = INTERVAL '1' HOUR\nREFRESH_MODE = FULL\n"
                    "AS SELECT id, amount, amount * 2 AS doubled FROM src")
    kept = definition(client, name)
    client.sql(f"DROP MATERIALIZED TABLE {name}")
    recreated = client.sql(text)
    assert recreated.kind == "created", recreated.message
    assert definition(client, name) == kept
    assert client.sql(f"SHOW CREATE DYNAMIC TABLE {name}").message == text.replace("MATERIALIZED", "DYNAMIC", 1)


def test_create_or_alter_creates_and_alters_only_dynamic_tables(sc: CatalogClient, dts_db: str) -> None:
    client, name = sc, f"main.{dts_db}.hourly"
    made = client.sql(f"CREATE OR ALTER DYNAMIC TABLE {name} WITH ('initialize' = 'on_schedule') "
                      "FRESHNESS = INTERVAL '2' HOUR AS SELECT id FROM src")
    assert made.kind == "created" and made.table is not None, made.message
    assert (made.table.freshness, made.table.refresh_mode) == ("2 HOUR", RefreshMode.FULL)
    # A plain table of that name is not altered into a dynamic one.
    with pytest.raises(TableNotFoundError, match="is a table, not a dynamic table"):
        client.sql(f"CREATE OR ALTER DYNAMIC TABLE main.{dts_db}.src AS SELECT 1 AS id")
    # IF NOT EXISTS and OR ALTER contradict each other: refused before anything is looked up.
    with pytest.raises(InvalidArgumentError, match="CREATE OR ALTER takes no IF NOT EXISTS"):
        client.sql(f"CREATE OR ALTER DYNAMIC TABLE IF NOT EXISTS {name} AS SELECT id FROM src")
