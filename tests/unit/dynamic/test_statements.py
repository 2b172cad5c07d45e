"""Tests for catalogd.dynamic.statements: the CREATE [OR ALTER] / ALTER / DROP / SHOW CREATE DYNAMIC TABLE parser."""

from __future__ import annotations

import pytest

from catalogd.dynamic.freshness import Freshness, TimeUnit
from catalogd.dynamic.statements import (
    NOT_DYNAMIC,
    AlterAction,
    AlterDynamicTable,
    CreateDynamicTable,
    DropDynamicTable,
    ShowCreateDynamicTable,
    parse_statement,
    show_create,
)
from catalogd.errors import InvalidArgumentError, UnsupportedError
from catalogd.model import Column, DynamicTable, RefreshMode
from catalogd.sql_lexer import is_dynamic_statement

ONE_DAY = Freshness(1, TimeUnit.DAY)


def create(text: str) -> CreateDynamicTable:
    statement = parse_statement(text)
    assert isinstance(statement, CreateDynamicTable)
    return statement


def invalid(text: str) -> str:
    with pytest.raises(InvalidArgumentError) as err:
        parse_statement(text)
    return str(err.value)


# --------------------------------------------------------------------------- CREATE


def test_create_minimal() -> None:
    statement = create("CREATE DYNAMIC TABLE daily FRESHNESS = INTERVAL '1' DAY AS SELECT * FROM src")
    assert statement == CreateDynamicTable(
        name="daily",
        query="SELECT * FROM src",
        freshness=ONE_DAY,
        mode=None,
        partitioned_by=[],
        options={},
        comment=None,
        if_not_exists=False,
    )


def test_create_flip_435_example() -> None:
    text = """CREATE DYNAMIC TABLE dt_sink
PARTITIONED BY (ds)
WITH(
  --hint time partition format
  'partition.fields.ds.date-formatter' = 'yyyy-MM-dd'
)
FRESHNESS = INTERVAL '1' DAY
AS SELECT
  ds,
  id,
  order_number,
  user_id
FROM source"""
    statement = create(text)
    assert statement.name == "dt_sink"
    assert statement.partitioned_by == ["ds"]
    assert statement.options == {"partition.fields.ds.date-formatter": "yyyy-MM-dd"}
    assert statement.freshness == ONE_DAY
    assert statement.mode is None
    assert statement.query == "SELECT\n  ds,\n  id,\n  order_number,\n  user_id\nFROM source"


def test_create_every_clause() -> None:
    text = (
        "create dynamic table if not exists Main.Sales.Daily "
        "comment 'Daily sales' partitioned by (DS, `Region`) "
        "with ('format' = 'parquet', 'partition.fields.ds.date-formatter' = 'yyyy-MM-dd') "
        "freshness = interval '2' hours refresh_mode = continuous "
        "as select ds, region, sum(amount) as total from main.sales.orders group by ds, region;"
    )
    statement = create(text)
    assert statement == CreateDynamicTable(
        name="main.sales.daily",
        query="select ds, region, sum(amount) as total from main.sales.orders group by ds, region",
        freshness=Freshness(2, TimeUnit.HOUR),
        mode=RefreshMode.CONTINUOUS,
        partitioned_by=["ds", "region"],
        options={"format": "parquet", "partition.fields.ds.date-formatter": "yyyy-MM-dd"},
        comment="Daily sales",
        if_not_exists=True,
    )


@pytest.mark.parametrize(
    "clauses",
    [
        "COMMENT 'c' PARTITIONED BY (ds) WITH ('k'='v') FRESHNESS = INTERVAL '1' DAY REFRESH_MODE = FULL",
        "WITH ('k'='v') COMMENT 'c' PARTITIONED BY (ds) REFRESH_MODE = FULL FRESHNESS = INTERVAL '1' DAY",
        "PARTITIONED BY (ds) FRESHNESS INTERVAL '1' DAY WITH ('k'='v') REFRESH_MODE FULL COMMENT 'c'",
        "REFRESH_MODE=FULL FRESHNESS=INTERVAL 1 DAYS COMMENT 'c' WITH('k'='v')PARTITIONED BY(ds)",
    ],
)
def test_create_clauses_in_any_order(clauses: str) -> None:
    statement = create(f"CREATE DYNAMIC TABLE db.t {clauses} AS SELECT 1")
    assert statement == CreateDynamicTable(
        name="db.t",
        query="SELECT 1",
        freshness=ONE_DAY,
        mode=RefreshMode.FULL,
        partitioned_by=["ds"],
        options={"k": "v"},
        comment="c",
        if_not_exists=False,
    )


@pytest.mark.parametrize(
    ("interval", "freshness"),
    [
        ("INTERVAL '10' SECOND", Freshness(10, TimeUnit.SECOND)),
        ("INTERVAL '10' SECONDS", Freshness(10, TimeUnit.SECOND)),
        ("interval 30 minute", Freshness(30, TimeUnit.MINUTE)),
        ("INTERVAL '30' MINUTES", Freshness(30, TimeUnit.MINUTE)),
        ("INTERVAL ' 1 ' HOUR", Freshness(1, TimeUnit.HOUR)),
        ("INTERVAL '60' SECOND", Freshness(60, TimeUnit.SECOND)),
        ("Interval '7' Days", Freshness(7, TimeUnit.DAY)),  # CONTINUOUS could still run it
    ],
)
def test_create_freshness_forms(interval: str, freshness: Freshness) -> None:
    assert create(f"CREATE DYNAMIC TABLE t FRESHNESS = {interval} AS SELECT 1").freshness == freshness


def test_create_query_is_the_exact_text_after_as() -> None:
    query = "SELECT a AS b,\n       'x; AS y' AS c -- a comment; AS\n  FROM `db`.`t` /* AS */ WHERE s = \"q\""
    statement = create(f"CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '1' DAY AS\n  {query}  ;  \n")
    assert statement.query == query


def test_create_removes_only_one_trailing_semicolon() -> None:
    assert create("CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '1' DAY AS SELECT 1;;").query == "SELECT 1;"


def test_create_header_strings_may_contain_as_and_semicolons() -> None:
    statement = create(
        "CREATE DYNAMIC TABLE t COMMENT 'totals AS of today; it''s fine' "
        "WITH ('note' = ' AS SELECT 2; ', 'q''k' = '') FRESHNESS = INTERVAL '1' DAY AS SELECT 1"
    )
    assert statement.comment == "totals AS of today; it's fine"
    assert statement.options == {"note": " AS SELECT 2; ", "q'k": ""}
    assert statement.query == "SELECT 1"


def test_create_header_comments_are_skipped() -> None:
    text = """
    -- a dynamic table
    /* with a
       block comment */ CREATE /* inline */ DYNAMIC TABLE -- trailing
    t
    FRESHNESS = INTERVAL '1' DAY -- 'AS' in a comment is not the AS
    /* AS SELECT 0 */
    AS SELECT 1
    """
    statement = create(text)
    assert statement.name == "t"
    assert statement.query == "SELECT 1"


def test_create_backquoted_names() -> None:
    assert create("CREATE DYNAMIC TABLE `main`.`sales`.`daily` FRESHNESS = INTERVAL '1' DAY AS SELECT 1").name == (
        "main.sales.daily"
    )
    # A part that needs its backquotes keeps them, so the name can be parsed again.
    assert create("CREATE DYNAMIC TABLE `my db`.`a.b` FRESHNESS = INTERVAL '1' DAY AS SELECT 1").name == (
        "`my db`.`a.b`"
    )


def test_create_partition_columns_are_lower_case() -> None:
    statement = create("CREATE DYNAMIC TABLE t PARTITIONED BY (DS, `Hour`) FRESHNESS = INTERVAL '1' HOUR AS SELECT 1")
    assert statement.partitioned_by == ["ds", "hour"]


def test_create_empty_with_clause() -> None:
    assert create("CREATE DYNAMIC TABLE t WITH () FRESHNESS = INTERVAL '1' DAY AS SELECT 1").options == {}


def test_create_keeps_option_case() -> None:
    statement = create("CREATE DYNAMIC TABLE t WITH ('Key.Name' = 'Value') FRESHNESS = INTERVAL '1' DAY AS SELECT 1")
    assert statement.options == {"Key.Name": "Value"}


def test_create_without_freshness() -> None:
    # FLIP-551: FRESHNESS is optional (the daemon fills in the configured default of the mode).
    assert create("CREATE DYNAMIC TABLE t AS SELECT 1") == CreateDynamicTable("t", "SELECT 1", None)
    assert create("CREATE DYNAMIC TABLE t REFRESH_MODE = FULL AS SELECT 1").mode is RefreshMode.FULL


def test_create_without_as() -> None:
    assert invalid("CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '1' DAY") == "the statement has no AS <query>"
    assert invalid("CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '1' DAY;").startswith("expected COMMENT")
    assert invalid("CREATE DYNAMIC TABLE t") == "the statement has no AS <query>"


@pytest.mark.parametrize("tail", ["AS", "AS   ", "AS ;", "AS\n;\n"])
def test_create_with_an_empty_query(tail: str) -> None:
    message = invalid(f"CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '1' DAY {tail}")
    assert message.startswith("the statement has no AS <query>")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "CREATE DYNAMIC TABLE t FRESHNESS = '1' DAY AS SELECT 1",
            "expected FRESHNESS = INTERVAL '<n>' SECOND|MINUTE|HOUR|DAY, found \"'1'\" at line 1, column 36",
        ),
        (
            "CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '1' WEEK AS SELECT 1",
            "expected SECOND, MINUTE, HOUR or DAY after INTERVAL '1', found 'WEEK' at line 1, column 49",
        ),
        (
            "CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '0' DAY AS SELECT 1",
            "expected a positive whole number of units after INTERVAL, e.g. INTERVAL '1' DAY, found \"'0'\" "
            "at line 1, column 45",
        ),
        (
            "CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '1.5' DAY AS SELECT 1",
            "expected a positive whole number of units after INTERVAL, e.g. INTERVAL '1' DAY, found \"'1.5'\" "
            "at line 1, column 45",
        ),
        (
            "CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '1' DAY REFRESH_MODE = BATCH AS SELECT 1",
            "expected FULL or CONTINUOUS after REFRESH_MODE, found 'BATCH' at line 1, column 68",
        ),
        (
            "CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '1' DAY TBLPROPERTIES ('a'='b') AS SELECT 1",
            "expected COMMENT, PARTITIONED BY, WITH, FRESHNESS, REFRESH_MODE or AS, found 'TBLPROPERTIES' "
            "at line 1, column 53",
        ),
        (
            "CREATE DYNAMIC TABLE t\nCOMMENT 'a'\nCOMMENT 'b' FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "duplicate COMMENT clause at line 3, column 1",
        ),
        (
            "CREATE DYNAMIC TABLE t PARTITIONED BY (a) PARTITIONED BY (b) FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "duplicate PARTITIONED BY clause at line 1, column 43",
        ),
        (
            "CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '1' DAY FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "duplicate FRESHNESS clause at line 1, column 53",
        ),
        (
            "CREATE DYNAMIC TABLE t COMMENT daily FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected a quoted comment after COMMENT, e.g. COMMENT 'daily sales', found 'daily' at line 1, column 32",
        ),
        (
            "CREATE DYNAMIC TABLE t PARTITIONED (ds) FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected BY after PARTITIONED, found '(' at line 1, column 36",
        ),
        (
            "CREATE DYNAMIC TABLE t PARTITIONED BY ds FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected '(' after PARTITIONED BY, found 'ds' at line 1, column 39",
        ),
        (
            "CREATE DYNAMIC TABLE t PARTITIONED BY (ds hr) FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected ',' or ')' in PARTITIONED BY, found 'hr' at line 1, column 43",
        ),
        (
            "CREATE DYNAMIC TABLE t PARTITIONED BY () FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected a partition column name, found ')' at line 1, column 40",
        ),
        (
            "CREATE DYNAMIC TABLE t PARTITIONED BY (ds, DS) FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "partition column ds is listed twice at line 1, column 44",
        ),
        (
            "CREATE DYNAMIC TABLE t WITH (k = 'v') FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected a quoted option key in WITH, e.g. 'k' = 'v', found 'k' at line 1, column 30",
        ),
        (
            "CREATE DYNAMIC TABLE t WITH ('k' 'v') FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected '=' after option 'k', found \"'v'\" at line 1, column 34",
        ),
        (
            "CREATE DYNAMIC TABLE t WITH ('k' = 1) FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected a quoted value for option 'k', found '1' at line 1, column 36",
        ),
        (
            "CREATE DYNAMIC TABLE t WITH ('k' = 'v',) FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected a quoted option key in WITH, e.g. 'k' = 'v', found ')' at line 1, column 40",
        ),
        (
            "CREATE DYNAMIC TABLE t WITH ('k' = 'v', 'k' = 'w') FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "option 'k' is given twice at line 1, column 41",
        ),
        (
            "CREATE DYNAMIC TABLE IF EXISTS t FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected NOT EXISTS after IF, found 'EXISTS' at line 1, column 25",
        ),
        (
            "CREATE DYNAMIC TABLE a.b.c.d FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected a name of 1 to 3 parts (catalog.database.table), found 'a.b.c.d' at line 1, column 22",
        ),
        (
            "CREATE DYNAMIC TABLE a. FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected COMMENT, PARTITIONED BY, WITH, FRESHNESS, REFRESH_MODE or AS, found '=' at line 1, column 35",
        ),
        (
            "CREATE DYNAMIC TABLE FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected COMMENT, PARTITIONED BY, WITH, FRESHNESS, REFRESH_MODE or AS, found '=' at line 1, column 32",
        ),
        (
            "CREATE DYNAMIC TABLE 'x' FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected a dynamic table name, found \"'x'\" at line 1, column 22",
        ),
        (
            "CREATE DYNAMIC TABLE a.'x' FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected a name part after '.', found \"'x'\" at line 1, column 24",
        ),
        (
            "CREATE DYNAMIC TABLE t COMMENT 'oops FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected COMMENT, PARTITIONED BY, WITH, FRESHNESS, REFRESH_MODE or AS, found '1' at line 1, column 60",
        ),
        (
            "CREATE DYNAMIC TABLE t COMMENT 'unterminated",
            'unterminated string starting with "\'unterminated" at line 1, column 32',
        ),
        (
            "CREATE DYNAMIC TABLE `t FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "unterminated quoted identifier starting with '`t FRESHNESS = INTER' at line 1, column 22",
        ),
        (
            "CREATE DYNAMIC TABLE `` FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "empty quoted identifier `` at line 1, column 22",
        ),
        (
            "CREATE DYNAMIC TABLE t /* never closed FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "unterminated /* comment at line 1, column 24",
        ),
        (
            "CREATE DYNAMIC TABLE t COMMENT \"c\" FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "unexpected character '\"' (strings take single quotes) at line 1, column 32",
        ),
        (
            "CREATE DYNAMIC TABLE t! FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "unexpected character '!' at line 1, column 23",
        ),
        (
            "CREATE DYNAMIC VIEW v FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
            "expected TABLE after CREATE DYNAMIC, found 'VIEW' at line 1, column 16",
        ),
    ],
)
def test_create_errors(text: str, message: str) -> None:
    assert invalid(text) == message


def test_create_error_positions_count_lines() -> None:
    message = invalid("CREATE DYNAMIC TABLE t\n  FRESHNESS = INTERVAL '1' DAY\n  REFRESH_MODE = SOMETIMES\nAS SELECT 1")
    assert message == "expected FULL or CONTINUOUS after REFRESH_MODE, found 'SOMETIMES' at line 3, column 18"


def test_create_error_truncates_long_tokens() -> None:
    message = invalid(f"CREATE DYNAMIC TABLE t COMMENT 'c' '{'x' * 100}' FRESHNESS = INTERVAL '1' DAY AS SELECT 1")
    assert message == (
        f'expected COMMENT, PARTITIONED BY, WITH, FRESHNESS, REFRESH_MODE or AS, found "\'{"x" * 36}..." '
        "at line 1, column 36"
    )


def test_create_name_too_long() -> None:
    with pytest.raises(InvalidArgumentError, match="longer than 128 characters"):
        parse_statement(f"CREATE DYNAMIC TABLE {'t' * 129} FRESHNESS = INTERVAL '1' DAY AS SELECT 1")


def test_create_dataclass_defaults_are_not_shared() -> None:
    a = CreateDynamicTable("a", "SELECT 1", ONE_DAY)
    b = CreateDynamicTable("b", "SELECT 1", ONE_DAY)
    assert a.partitioned_by == [] and a.options == {}
    assert a.partitioned_by is not b.partitioned_by
    assert a.options is not b.options
    assert (a.mode, a.comment, a.if_not_exists) == (None, None, False)


# --------------------------------------------------------------------------- ALTER


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ALTER DYNAMIC TABLE t SUSPEND", AlterDynamicTable("t", AlterAction.SUSPEND)),
        ("alter dynamic table db.t resume;", AlterDynamicTable("db.t", AlterAction.RESUME)),
        ("ALTER DYNAMIC TABLE c.d.t REFRESH", AlterDynamicTable("c.d.t", AlterAction.REFRESH)),
        (
            "ALTER DYNAMIC TABLE t REFRESH PARTITION (ds = '2024-03-01')",
            AlterDynamicTable("t", AlterAction.REFRESH, partition={"ds": "2024-03-01"}),
        ),
        (
            "ALTER DYNAMIC TABLE t REFRESH PARTITION (DS='2024-03-01', `Hr` = 7, region = 'it''s');",
            AlterDynamicTable("t", AlterAction.REFRESH, partition={"ds": "2024-03-01", "hr": "7", "region": "it's"}),
        ),
        (
            "ALTER DYNAMIC TABLE t SET FRESHNESS = INTERVAL '10' SECOND",
            AlterDynamicTable("t", AlterAction.SET_FRESHNESS, freshness=Freshness(10, TimeUnit.SECOND)),
        ),
        (
            "ALTER DYNAMIC TABLE t SET FRESHNESS INTERVAL 2 HOURS",
            AlterDynamicTable("t", AlterAction.SET_FRESHNESS, freshness=Freshness(2, TimeUnit.HOUR)),
        ),
        (
            "ALTER DYNAMIC TABLE t SET REFRESH_MODE = CONTINUOUS",
            AlterDynamicTable("t", AlterAction.SET_REFRESH_MODE, mode=RefreshMode.CONTINUOUS),
        ),
        (
            "ALTER DYNAMIC TABLE t SET REFRESH_MODE full -- done",
            AlterDynamicTable("t", AlterAction.SET_REFRESH_MODE, mode=RefreshMode.FULL),
        ),
        (
            "/* c */ ALTER /* c */ DYNAMIC TABLE `Main`.`Sales`.`Daily` /* c */ SUSPEND /* c */ ; -- c",
            AlterDynamicTable("main.sales.daily", AlterAction.SUSPEND),
        ),
    ],
)
def test_alter(text: str, expected: AlterDynamicTable) -> None:
    assert parse_statement(text) == expected


def test_alter_action_values() -> None:
    assert [a.value for a in AlterAction] == ["SUSPEND", "RESUME", "REFRESH", "SET_FRESHNESS", "SET_REFRESH_MODE",
                                              "SET_QUERY"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "ALTER DYNAMIC TABLE t",
            "expected SUSPEND, RESUME, REFRESH, SET or AS after the table name, found the end of the statement",
        ),
        (
            "ALTER DYNAMIC TABLE t PAUSE",
            "expected SUSPEND, RESUME, REFRESH, SET or AS after the table name, found 'PAUSE' at line 1, column 23",
        ),
        ("ALTER DYNAMIC TABLE t SUSPEND NOW", "expected the end of the statement, found 'NOW' at line 1, column 31"),
        (
            "ALTER DYNAMIC TABLE t RESUME; DROP DYNAMIC TABLE t",
            "expected the end of the statement, found 'DROP' at line 1, column 31",
        ),
        ("ALTER DYNAMIC TABLE t SUSPEND;;", "expected the end of the statement, found ';' at line 1, column 31"),
        (
            "ALTER DYNAMIC TABLE t SET COMMENT = 'x'",
            "expected FRESHNESS or REFRESH_MODE after SET, found 'COMMENT' at line 1, column 27",
        ),
        (
            "ALTER DYNAMIC TABLE t SET FRESHNESS = '1 day'",
            "expected FRESHNESS = INTERVAL '<n>' SECOND|MINUTE|HOUR|DAY, found \"'1 day'\" at line 1, column 39",
        ),
        (
            "ALTER DYNAMIC TABLE t SET FRESHNESS = INTERVAL '1'",
            "expected SECOND, MINUTE, HOUR or DAY after INTERVAL '1', found the end of the statement",
        ),
        (
            "ALTER DYNAMIC TABLE t SET REFRESH_MODE = ",
            "expected FULL or CONTINUOUS after REFRESH_MODE, found the end of the statement",
        ),
        (
            "ALTER DYNAMIC TABLE t REFRESH PARTITION ds = '1'",
            "expected '(' after PARTITION, found 'ds' at line 1, column 41",
        ),
        (
            "ALTER DYNAMIC TABLE t REFRESH PARTITION (ds)",
            "expected '=' after partition column ds, found ')' at line 1, column 44",
        ),
        (
            "ALTER DYNAMIC TABLE t REFRESH PARTITION (ds = x)",
            "expected a quoted value for partition column ds, found 'x' at line 1, column 47",
        ),
        (
            "ALTER DYNAMIC TABLE t REFRESH PARTITION (ds = '1', DS = '2')",
            "partition column ds is given twice at line 1, column 52",
        ),
        (
            "ALTER DYNAMIC TABLE t REFRESH PARTITION (ds = '1'",
            "expected ',' or ')' in PARTITION, found the end of the statement",
        ),
        (
            "ALTER DYNAMIC TABLE t REFRESH PARTITION ()",
            "expected a partition column name, found ')' at line 1, column 42",
        ),
        (
            "ALTER DYNAMIC TABLE SUSPEND",
            "expected SUSPEND, RESUME, REFRESH, SET or AS after the table name, found the end of the statement",
        ),
    ],
)
def test_alter_errors(text: str, message: str) -> None:
    assert invalid(text) == message


# --------------------------------------------------------------------------- DROP


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DROP DYNAMIC TABLE t", DropDynamicTable("t", False)),
        ("drop dynamic table if exists main.sales.daily;", DropDynamicTable("main.sales.daily", True)),
        ("DROP DYNAMIC TABLE `My Table`", DropDynamicTable("`my table`", False)),
        ("DROP DYNAMIC TABLE\n  -- why\n  db.t\n", DropDynamicTable("db.t", False)),
    ],
)
def test_drop(text: str, expected: DropDynamicTable) -> None:
    assert parse_statement(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("DROP DYNAMIC TABLE", "expected a dynamic table name, found the end of the statement"),
        ("DROP DYNAMIC TABLE t CASCADE", "expected the end of the statement, found 'CASCADE' at line 1, column 22"),
        ("DROP DYNAMIC TABLE IF t", "expected EXISTS after IF, found 't' at line 1, column 23"),
        ("DROP DYNAMIC TABLE a b", "expected the end of the statement, found 'b' at line 1, column 22"),
        (
            "DROP DYNAMIC TABLE a.b.c.d",
            "expected a name of 1 to 3 parts (catalog.database.table), found 'a.b.c.d' at line 1, column 20",
        ),
        ("DROP DYNAMIC TABLE a..b", "expected a name part after '.', found '.' at line 1, column 22"),
        ("DROP DYNAMIC", "expected TABLE after DROP DYNAMIC, found the end of the statement"),
    ],
)
def test_drop_errors(text: str, message: str) -> None:
    assert invalid(text) == message


# --------------------------------------------------------------------------- other statements


@pytest.mark.parametrize(
    "text",
    [
        "SELECT 1",
        "CREATE TABLE t (a INT)",
        "create table t as select 1",
        "ALTER TABLE t ADD COLUMNS (b INT)",
        "DROP TABLE t",
        "DROP VIEW v",
        "INSERT INTO t SELECT 1",
        "-- comment\nSELECT 'unterminated",
        'CREATE TEMPORARY VIEW v AS SELECT "x"',
        "CREATE 'x",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "(SELECT 1)",
        "CREATE OR REPLACE VIEW v AS SELECT 1",
    ],
)
def test_other_statements_are_unsupported(text: str) -> None:
    with pytest.raises(UnsupportedError) as err:
        parse_statement(text)
    assert str(err.value) == NOT_DYNAMIC
    assert str(err.value) == (
        "catalogd sql runs CREATE [OR ALTER], ALTER, DROP and SHOW CREATE DYNAMIC (or MATERIALIZED) TABLE "
        "statements; run other SQL in Spark"
    )


def test_create_or_replace_is_unsupported() -> None:
    with pytest.raises(UnsupportedError, match="CREATE OR REPLACE DYNAMIC TABLE is not supported"):
        parse_statement("CREATE OR REPLACE DYNAMIC TABLE t FRESHNESS = INTERVAL '1' DAY AS SELECT 1")


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "-- only a comment", "/* only */ -- comments\n"])
def test_empty_statement(text: str) -> None:
    assert invalid(text) == "empty statement: expected CREATE, ALTER, DROP or SHOW CREATE DYNAMIC TABLE"


def test_non_text_statement() -> None:
    with pytest.raises(InvalidArgumentError, match="expected a SQL statement"):
        parse_statement(None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- is_dynamic_statement


@pytest.mark.parametrize(
    "text",
    [
        "CREATE DYNAMIC TABLE t FRESHNESS = INTERVAL '1' DAY AS SELECT 1",
        "create dynamic table",
        "  alter Dynamic Table t suspend",
        "DROP DYNAMIC TABLE t",
        "-- x\n/* y */ DROP/**/DYNAMIC\nTABLE t",
        "CREATE DYNAMIC TABLE t COMMENT 'unterminated",
        # The daemon explains that it does not do this one (Spark would only fail to parse it).
        "CREATE OR REPLACE DYNAMIC TABLE t",
        "CREATE OR ALTER DYNAMIC TABLE t AS SELECT 1",
        "create or alter materialized table t",
        "CREATE MATERIALIZED TABLE t AS SELECT 1",
        "ALTER MATERIALIZED TABLE t AS SELECT 1",
        "DROP MATERIALIZED TABLE t",
        "SHOW CREATE DYNAMIC TABLE t",
        "show create materialized table c.d.t",
    ],
)
def test_is_dynamic_statement(text: str) -> None:
    assert is_dynamic_statement(text) is True


@pytest.mark.parametrize(
    "text",
    [
        "",
        "-- CREATE DYNAMIC TABLE t",
        "/* DROP DYNAMIC TABLE t */ SELECT 1",
        "SELECT 1",
        "CREATE TABLE t",
        "CREATE DYNAMIC VIEW v",
        "CREATE OR REPLACE VIEW v AS SELECT 1",
        "CREATE OR ALTER VIEW v",
        "SHOW CREATE TABLE t",
        "SHOW TABLES",
        "SHOW DYNAMIC TABLE t",
        "CREATE MATERIALIZED VIEW v AS SELECT 1",
        "CREATE DYNAMIC",
        "DROP TABLE dynamic",
        "CREATE DYNAMIC_TABLE t",
        "'CREATE DYNAMIC TABLE'",
        "CREATE DYNAMIC 'x",
        "/* unterminated CREATE DYNAMIC TABLE",
        'SELECT "CREATE DYNAMIC TABLE"',
    ],
)
def test_is_not_dynamic_statement(text: str) -> None:
    assert is_dynamic_statement(text) is False


def test_is_dynamic_statement_of_non_text() -> None:
    assert is_dynamic_statement(None) is False  # type: ignore[arg-type]


# --------------------------------------------------------------------------- Flink 2.x's statements


def test_alter_as_query() -> None:
    text = "ALTER DYNAMIC TABLE db.t AS\n  SELECT a, b, c AS new_col FROM src;"
    assert parse_statement(text) == AlterDynamicTable("db.t", AlterAction.SET_QUERY,
                                                      query="SELECT a, b, c AS new_col FROM src")


@pytest.mark.parametrize("tail", ["AS", "AS ;", "AS  \n"])
def test_alter_as_an_empty_query(tail: str) -> None:
    assert invalid(f"ALTER DYNAMIC TABLE t {tail}").startswith("the statement has no AS <query>")


def test_create_or_alter() -> None:
    statement = create("CREATE OR ALTER DYNAMIC TABLE t FRESHNESS = INTERVAL '10' SECOND AS SELECT 1 AS a")
    assert statement == CreateDynamicTable("t", "SELECT 1 AS a", Freshness(10, TimeUnit.SECOND), or_alter=True)


def test_create_or_alter_refuses_if_not_exists() -> None:
    message = invalid("CREATE OR ALTER DYNAMIC TABLE IF NOT EXISTS t AS SELECT 1")
    assert message.startswith("CREATE OR ALTER takes no IF NOT EXISTS") and "line 1, column 31" in message


def test_create_or_replace_points_at_create_or_alter() -> None:
    with pytest.raises(UnsupportedError, match="CREATE OR ALTER DYNAMIC TABLE changes the query"):
        parse_statement("CREATE OR REPLACE DYNAMIC TABLE t AS SELECT 1")


@pytest.mark.parametrize("text", ["CREATE OR ALTER VIEW v AS SELECT 1", "CREATE OR DYNAMIC TABLE t AS SELECT 1",
                                  "SHOW CREATE TABLE t", "SHOW TABLES", "SHOW CREATE VIEW v"])
def test_other_create_or_and_show_statements_are_unsupported(text: str) -> None:
    with pytest.raises(UnsupportedError) as err:
        parse_statement(text)
    assert str(err.value) == NOT_DYNAMIC


def test_show_create() -> None:
    assert parse_statement("SHOW CREATE DYNAMIC TABLE c.d.t;") == ShowCreateDynamicTable("c.d.t", "DYNAMIC")
    assert parse_statement("show create materialized table t") == ShowCreateDynamicTable("t", "MATERIALIZED")
    assert invalid("SHOW CREATE DYNAMIC TABLE t extra").startswith("expected the end of the statement")
    assert invalid("SHOW CREATE DYNAMIC VIEW t").startswith("expected TABLE after SHOW CREATE DYNAMIC")


@pytest.mark.parametrize(
    "text",
    [
        "CREATE {} TABLE IF NOT EXISTS db.t PARTITIONED BY (ds) FRESHNESS = INTERVAL '1' DAY AS SELECT 1 AS ds",
        "ALTER {} TABLE t SUSPEND",
        "ALTER {} TABLE t REFRESH PARTITION (ds = '2024-01-01')",
        "ALTER {} TABLE t SET FRESHNESS = INTERVAL '2' HOUR",
        "ALTER {} TABLE t AS SELECT 2",
        "DROP {} TABLE IF EXISTS t",
        "CREATE OR ALTER {} TABLE t AS SELECT 3",
    ],
)
def test_materialized_table_is_dynamic_table(text: str) -> None:
    # Flink's name since 1.20 stands wherever catalogd's does, and means the same.
    assert parse_statement(text.format("MATERIALIZED")) == parse_statement(text.format("DYNAMIC"))


def _table(**changes: object) -> DynamicTable:
    fields: dict[str, object] = {
        "catalog": "main", "database": "sales", "name": "daily",
        "query": "SELECT ds, sum(x) AS s\nFROM src GROUP BY ds", "freshness": "1 DAY"}
    fields.update(changes)
    return DynamicTable(**fields)  # type: ignore[arg-type]


def test_show_create_minimal() -> None:
    assert show_create(_table()) == ("CREATE DYNAMIC TABLE main.sales.daily\nFRESHNESS = INTERVAL '1' DAY\n"
                                     "AS SELECT ds, sum(x) AS s\nFROM src GROUP BY ds")


def test_show_create_every_clause_round_trips() -> None:
    dt = _table(name="my table", comment="it's daily", partition_keys=[Column("ds", "string")],
                options={"partition.fields.ds.date-formatter": "yyyy-MM-dd", "b": "it's"},
                declared_mode=RefreshMode.FULL, freshness="2 HOUR")
    text = show_create(dt, "MATERIALIZED")
    assert text.splitlines()[0] == "CREATE MATERIALIZED TABLE main.sales.`my table`"
    assert "REFRESH_MODE = FULL" in text
    parsed = create(text)
    assert parsed == CreateDynamicTable(
        name="main.sales.`my table`", query=dt.query, freshness=Freshness(2, TimeUnit.HOUR), mode=RefreshMode.FULL,
        partitioned_by=["ds"], options=dt.options, comment="it's daily")


def test_show_create_leaves_a_derived_mode_out() -> None:
    # A derived mode follows the freshness; written out it would become a declared one.
    text = show_create(_table(refresh_mode=RefreshMode.CONTINUOUS, freshness="10 SECOND"))
    assert "REFRESH_MODE" not in text
    assert create(text).mode is None
