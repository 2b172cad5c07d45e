"""Atomic writes from PySpark: CTAS, REPLACE, INSERT OVERWRITE and INSERT INTO through catalogd stages.

The Spark job writes into a hidden staging table; the daemon publishes it in one
metastore call on success and drops it on failure (docs/atomic-writes.md).

    >>> from catalogd.spark import atomic_ctas
    >>> atomic_ctas(spark, "main.sales.daily", "SELECT ds, sum(amount) AS total FROM main_sales GROUP BY ds",
    ...             partition_by=["ds"])

The SparkSession must use the target catalog's metastore (see
``catalogd.spark.session_builder``). Names with two parts (``db.table``) and one
part (``table``) mean the session's catalog, as they do in Spark SQL.
"""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING, Any

from catalogd.errors import InvalidArgumentError, UnsupportedError
from catalogd.model import CatalogInfo, Stage, StagePurpose, TableFormat
from catalogd.spark_common import (
    MODES,
    client_or_own,
    dynamic_partitions,
    insert_by_position,
    metastore_uris,
    read_jdbc,
    session_uris,
    spark_prefix,
    staged_table,
    write_jdbc,
    write_staged,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from catalogd.client import CatalogClient


# ---------------------------------------------------------------- plumbing

def _on_endpoint(infos: list[CatalogInfo], session: set[str]) -> bool:
    """Whether the session's metastore is catalogd's HMS endpoint (it sees every catalog)."""
    return any(metastore_uris(c.hms_endpoint) & session for c in infos)


def session_catalog(spark: SparkSession, client: CatalogClient) -> CatalogInfo:
    """The catalog that names without a catalog mean in the session: the default catalog for
    a session on catalogd's HMS endpoint, else the hive catalog whose metastore it uses.

    Raises:
        InvalidArgumentError: the session uses no metastore that catalogd serves.
    """
    session = session_uris(spark)
    infos = client.list_catalogs()
    if _on_endpoint(infos, session):
        return next(c for c in infos if c.default)
    catalogs = [c for c in infos if c.type == "hive" and metastore_uris(c.metastore) & session]
    if not catalogs:
        raise InvalidArgumentError(
            f"the SparkSession's metastore {', '.join(sorted(session))} is not one of catalogd's catalogs"
        )
    return catalogs[0]


def spark_name(info: CatalogInfo, name: str, spark: SparkSession | None = None) -> str:
    """``catalog.db.table`` -> the name Spark SQL uses for it in ``spark``'s session."""
    _, database, table = name.split(".", 2)
    return f"{spark_prefix(info, spark)}{database}.{table}"


def _resolve(spark: SparkSession, client: CatalogClient, target: str) -> tuple[CatalogInfo, str]:
    """``target`` -> (its catalog, ``catalog.db.table``); checks the session can reach that catalog."""
    from catalogd.names import split_name

    parts = split_name(target)
    infos = client.list_catalogs()
    if len(parts) == 3:
        jdbc = next((c for c in infos if c.name == parts[0] and c.type == "jdbc"), None)
        if jdbc is not None:
            # Spark reaches a jdbc catalog's tables through JDBC, whatever metastore the session uses.
            return jdbc, ".".join(parts)
    session = session_uris(spark)
    if _on_endpoint(infos, session):
        by_name = {c.name: c for c in infos}
        if len(parts) == 3:
            if parts[0] not in by_name:
                known = ", ".join(sorted(by_name))
                raise InvalidArgumentError(f"{target}: no catalog {parts[0]!r} (catalogs: {known})")
            return by_name[parts[0]], ".".join(parts)
        if len(parts) in (1, 2):
            database = parts[0] if len(parts) == 2 else spark.catalog.currentDatabase()
            prefixed = [c for c in infos if c.hms_prefix and database.lower().startswith(c.hms_prefix)]
            info = prefixed[0] if prefixed else next(c for c in infos if c.default)
            if not prefixed and info.hms_prefix:
                raise InvalidArgumentError(f"{target}: database {database!r} belongs to no catalog on the endpoint")
            return info, f"{info.name}.{database[len(info.hms_prefix) if prefixed else 0:]}.{parts[-1]}"
        raise InvalidArgumentError(f"bad table name {target!r}: expected catalog.database.table")
    info = session_catalog(spark, client)
    if len(parts) == 3:
        if parts[0] != info.name:
            raise InvalidArgumentError(
                f"{target}: the SparkSession uses catalog {info.name!r}'s metastore, not {parts[0]!r}; "
                f"build a session with catalogd.spark.session_builder({parts[0]!r})"
            )
        return info, ".".join(parts)
    if len(parts) == 2:
        return info, f"{info.name}.{parts[0]}.{parts[1]}"
    if len(parts) == 1:
        return info, f"{info.name}.{spark.catalog.currentDatabase()}.{parts[0]}"
    raise InvalidArgumentError(f"bad table name {target!r}: expected catalog.database.table")


def _query(spark: SparkSession, source: DataFrame | str) -> DataFrame:
    if not isinstance(source, str):
        return source
    import sqlglot
    from sqlglot import exp

    try:
        parsed = sqlglot.parse(source, read="spark")
    except sqlglot.errors.ParseError as e:
        raise InvalidArgumentError(f"cannot parse the query: {e}") from e
    if len(parsed) != 1 or not isinstance(parsed[0], exp.Query):
        raise InvalidArgumentError("the source must be one query (SELECT, WITH ... SELECT, VALUES, a UNION)")
    return spark.sql(source)


def _with_partitions_last(df: DataFrame, partition_by: list[str]) -> DataFrame:
    lowered = {c.lower(): c for c in df.columns}
    missing = [p for p in partition_by if p.lower() not in lowered]
    if missing:
        raise InvalidArgumentError(f"partition columns {missing} are not among the query's columns {df.columns}")
    keys = [lowered[p.lower()] for p in partition_by]
    return df.select(*[c for c in df.columns if c not in keys], *keys)


def atomic_ctas(
    spark: SparkSession,
    target: str,
    source: DataFrame | str,
    *,
    mode: str = "create",
    partition_by: list[str] | str | None = None,
    format: str = "parquet",
    properties: dict[str, str] | None = None,
    client: CatalogClient | None = None,
    comment: str | None = None,
) -> Stage | None:
    """CREATE TABLE ... AS SELECT, atomically: the target appears complete or not at all.

    Args:
        spark: a session on the target catalog's metastore.
        target: ``catalog.database.table``; ``db.table`` means the session's catalog.
        source: a DataFrame or one SELECT statement.
        mode: ``create`` (fail if the target exists), ``create_if_not_exists`` (do
            nothing then) or ``replace`` (swap the target's data and definition).
        partition_by: partition columns (moved to the end, as Hive stores them).
        format: parquet, orc, avro, csv, json or textfile.

    Returns:
        The final stage (COMMITTED, or ABORTED under create_if_not_exists when the
        target exists); None when the catalog has ``atomic-writes: false`` and Spark
        wrote the table itself.

    Raises:
        TableAlreadyExistsError: mode create and the target exists (nothing was written).
        CatalogError: any other failure; the stage is aborted and nothing is left behind.
    """
    if mode not in MODES:
        raise InvalidArgumentError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    fmt = TableFormat.parse(format)
    keys = [partition_by] if isinstance(partition_by, str) else list(partition_by or [])
    with client_or_own(client) as c:
        info, name = _resolve(spark, c, target)
        df = _query(spark, source)
        if keys:
            df = _with_partitions_last(df, keys)
        if not info.atomic_writes:
            if info.type == "jdbc":
                _plain_jdbc(spark, df, info, name, {"create": "errorifexists", "create_if_not_exists": "ignore",
                                                    "replace": "overwrite"}[mode])
            else:
                _plain_save(df, spark_name(info, name, spark), mode, keys, fmt)
            return None
        with staged_table(name, df.schema, partition_by=keys, format=fmt, mode=mode, properties=properties,
                          comment=comment, client=c, spark=spark) as staged:
            if staged.active:
                write_staged(spark, df, staged)
        if MODES[mode] is StagePurpose.REPLACE:
            _refresh(spark, spark_name(info, name, spark))  # a new table cannot be cached yet; a replaced one may be
        assert staged.result is not None
        return staged.result


def _plain_save(df: DataFrame, name: str, mode: str, keys: list[str], fmt: TableFormat) -> None:
    """Spark's own, non-atomic write (``atomic-writes: false``)."""
    spark_mode = {"create": "errorifexists", "create_if_not_exists": "ignore", "replace": "overwrite"}[mode]
    writer = df.write.mode(spark_mode)
    if fmt in (TableFormat.CSV, TableFormat.JSON):
        writer = writer.format(fmt.value)
    else:
        writer = writer.format("hive").option("fileFormat", fmt.value)
    if keys:
        writer = writer.partitionBy(*keys)
    writer.saveAsTable(name)


def _plain_jdbc(spark: SparkSession, df: DataFrame, info: CatalogInfo, name: str, mode: str) -> None:
    """Spark's own, non-atomic JDBC write into a jdbc catalog's table (``atomic-writes: false``)."""
    _, database, table = name.split(".", 2)
    write_jdbc(spark, df.toDF(*[c.lower() for c in df.columns]), info, f"{database}.{table}", mode)


def read_table(spark: SparkSession, name: str, client: CatalogClient | None = None) -> DataFrame:
    """A catalog table as a DataFrame: a jdbc catalog's through Spark's JDBC source (HMS clients,
    Spark's session catalog included, cannot read those), any other through the session's catalog.

    The job gives a jdbc catalog's credentials as ``spark.catalogd.jdbc.<catalog>.user`` /
    ``.password`` settings or ``CATALOGD_JDBC_USER_<CATALOG>`` / ``CATALOGD_JDBC_PASSWORD_<CATALOG>``
    variables (the user defaults to the catalog's ``username``); the driver jar is the catalog's
    ``driver-jar`` (``session_builder`` puts it on the session's classpath).

    Raises:
        TableNotFoundError: no such table (asked of the daemon first).
    """
    with client_or_own(client) as c:
        info, full = _resolve(spark, c, name)
        c.get_table(full)
        if info.type == "jdbc":
            _, database, table = full.split(".", 2)
            return read_jdbc(spark, info, f"{database}.{table}")
        return spark.table(spark_name(info, full, spark))


def _refresh(spark: SparkSession, name: str) -> None:
    # This session may have cached the old table; other sessions notice the new location.
    with contextlib.suppress(Exception):
        spark.catalog.refreshTable(name)


def insert_overwrite(
    spark: SparkSession,
    target: str,
    source: DataFrame | str,
    *,
    partition: dict[str, str | None] | None = None,
    client: CatalogClient | None = None,
) -> Stage | None:
    """INSERT OVERWRITE, atomically: readers see the old rows or the new ones.

    An unpartitioned target is replaced as a whole. A partitioned target gets Hive's
    semantics: the partitions the query writes are replaced, the others stay.

    Args:
        source: its columns are the target's data columns, then the dynamic partition
            columns (those without a value in ``partition``), in order.
        partition: static values (``{"ds": "2024-03-01"}``) and dynamic keys (value None).
    """
    return _insert(spark, target, source, partition, client, overwrite=True)


def insert_into(
    spark: SparkSession,
    target: str,
    source: DataFrame | str,
    *,
    partition: dict[str, str | None] | None = None,
    client: CatalogClient | None = None,
) -> Stage | None:
    """INSERT INTO through a stage: the rows are added to the target's at commit, or not at all.

    The job writes into a staging table; commit adds the new partitions in one metastore
    call and renames the files of partitions that exist (or of an unpartitioned table) into
    their directories (docs/atomic-writes.md#appends says what a reader sees meanwhile). A job
    that fails or dies leaves the target as it was and no files behind.

    Args:
        source: as for ``insert_overwrite``.
        partition: as for ``insert_overwrite``.

    Returns:
        The COMMITTED stage; None when the catalog has ``atomic-writes: false``.

    Raises:
        UnsupportedError: the target is not on a file system the daemon reaches (its local one).
    """
    return _insert(spark, target, source, partition, client, overwrite=False)


def _insert(
    spark: SparkSession,
    target: str,
    source: DataFrame | str,
    partition: dict[str, str | None] | None,
    client: CatalogClient | None,
    *,
    overwrite: bool,
) -> Stage | None:
    """INSERT OVERWRITE (``overwrite``) or INSERT INTO, through a stage."""
    from pyspark.sql import functions as F

    with client_or_own(client) as c:
        info, name = _resolve(spark, c, target)
        table = c.get_table(name)
        df = _query(spark, source)
        spec = {k.lower(): v for k, v in (partition or {}).items()}
        keys = [k.name for k in table.partition_keys]
        unknown = [k for k in spec if k not in keys]
        if unknown:
            raise InvalidArgumentError(f"{name} has no partition column(s) {unknown} (partition columns: {keys})")
        static = [k for k in keys if spec.get(k) is not None]
        dynamic = [k for k in keys if k not in static]
        if static and dynamic and keys.index(dynamic[0]) < keys.index(static[-1]):
            raise InvalidArgumentError(f"{name}: static partition values must come before dynamic ones ({keys})")
        expected = [col.name for col in table.columns] + dynamic
        if len(df.columns) != len(expected):
            raise InvalidArgumentError(
                f"{name}: the query has {len(df.columns)} columns, the target needs {len(expected)}: {expected}"
            )
        df = df.toDF(*expected)
        for key in static:
            key_type = next(k.type for k in table.partition_keys if k.name == key)
            df = df.withColumn(key, F.lit(spec[key]).cast(key_type))
        df = df.select(*[col.name for col in table.columns], *keys)
        if not info.atomic_writes:
            if info.type == "jdbc":
                _plain_jdbc(spark, df, info, name, "overwrite" if overwrite else "append")
                return None
            with dynamic_partitions(spark):
                insert_by_position(df, spark_name(info, name, spark), overwrite=overwrite)
            return None
        if not overwrite:
            purpose = StagePurpose.APPEND
        else:
            purpose = StagePurpose.OVERWRITE_PARTITIONS if keys else StagePurpose.REPLACE
        # A REPLACE carries the table's definition over; the other purposes keep the target's own.
        whole = purpose is StagePurpose.REPLACE
        props = {k: v for k, v in table.properties.items() if not k.startswith("catalogd.")}
        with staged_table(name, table.columns + table.partition_keys, partition_by=keys, format=table.format,
                          mode=purpose, properties=props if whole else None,
                          comment=table.comment if whole else None, client=c, spark=spark) as staged:
            write_staged(spark, df, staged)
        _refresh(spark, spark_name(info, name, spark))
        assert staged.result is not None
        return staged.result


# ---------------------------------------------------------------- SQL

_REPLACE_TABLE = re.compile(r"^\s*REPLACE\s+TABLE\b", re.IGNORECASE)


def sql(spark: SparkSession, statement: str, client: CatalogClient | None = None) -> Any:
    """Run one SQL statement; CTAS, REPLACE ... AS SELECT, INSERT OVERWRITE and INSERT INTO go through a stage.

    Atomic: ``CREATE TABLE [IF NOT EXISTS] t [USING fmt | STORED AS fmt] [PARTITIONED BY (c, ...)]
    [COMMENT '...'] [TBLPROPERTIES (...)] AS SELECT ...``, ``CREATE OR REPLACE TABLE ... AS SELECT``,
    ``REPLACE TABLE ... AS SELECT``, ``INSERT OVERWRITE [TABLE] t [PARTITION (...)] SELECT ...`` and
    ``INSERT INTO [TABLE] t [PARTITION (...)] SELECT ...`` (an append: see ``insert_into``;
    ``INSERT INTO ... VALUES`` is not a query and goes to ``spark.sql``).
    Dynamic-table statements (``sql_lexer.is_dynamic_statement``) go to the daemon (``CatalogClient.sql``).
    Everything else is passed to ``spark.sql`` unchanged.

    Returns:
        The final Stage for an atomic statement (None if the catalog has
        ``atomic-writes: false``), a StatementResult for a dynamic-table
        statement, else what ``spark.sql`` returns.
    """
    import sqlglot
    from sqlglot import exp

    from catalogd.sql_lexer import is_dynamic_statement

    if is_dynamic_statement(statement):
        with client_or_own(client) as c:
            return c.sql(statement)
    text = statement.strip().rstrip(";")
    if _REPLACE_TABLE.match(text):
        # sqlglot's Spark dialect knows CREATE OR REPLACE TABLE but not the short form.
        text = "CREATE OR " + text.lstrip()
    try:
        parsed = sqlglot.parse(text, read="spark")
    except sqlglot.errors.ParseError:
        return spark.sql(statement)
    if len(parsed) != 1 or parsed[0] is None:
        return spark.sql(statement)
    tree = parsed[0]
    if isinstance(tree, exp.Create) and tree.args.get("kind", "").upper() == "TABLE" and isinstance(
        tree.expression, exp.Query
    ) and isinstance(tree.this, exp.Table):
        return _sql_ctas(spark, tree, client)
    if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Table) and isinstance(tree.expression, exp.Query):
        return _sql_insert(spark, tree, client)
    return spark.sql(statement)


def _table_name(table: Any) -> str:
    return ".".join(p for p in (table.catalog, table.db, table.name) if p)


def _sql_ctas(spark: SparkSession, tree: Any, client: CatalogClient | None) -> Stage | None:
    from sqlglot import exp

    mode = "replace" if tree.args.get("replace") else "create_if_not_exists" if tree.args.get("exists") else "create"
    fmt = "parquet"
    keys: list[str] = []
    props: dict[str, str] = {}
    comment = None
    for prop in (tree.args.get("properties") or exp.Properties(expressions=[])).expressions:
        if isinstance(prop, exp.FileFormatProperty):
            fmt = prop.this.name if hasattr(prop.this, "name") else str(prop.this)
        elif isinstance(prop, exp.PartitionedByProperty):
            schema = prop.this
            for item in schema.expressions if isinstance(schema, exp.Schema) else [schema]:
                if not isinstance(item, (exp.Identifier, exp.Column)):
                    raise UnsupportedError(
                        f"PARTITIONED BY {prop.this.sql('spark')}: list the query's columns by name"
                    )
                keys.append(item.name)
        elif isinstance(prop, exp.SchemaCommentProperty):
            comment = prop.this.name
        elif isinstance(prop, exp.Property):
            props[prop.name] = prop.args["value"].name
        else:
            raise UnsupportedError(f"{prop.sql('spark')} is not supported in an atomic CREATE TABLE AS SELECT")
    query = tree.expression.sql(dialect="spark")
    return atomic_ctas(spark, _table_name(tree.this), query, mode=mode, partition_by=keys, format=fmt,
                       properties=props or None, client=client, comment=comment)


def _sql_insert(spark: SparkSession, tree: Any, client: CatalogClient | None) -> Stage | None:
    from sqlglot import exp

    table = tree.this
    spec: dict[str, str | None] = {}
    partition = table.args.get("partition")
    if partition is not None:
        for item in partition.expressions:
            if isinstance(item, exp.EQ):
                spec[item.this.name] = item.expression.name
            else:
                spec[item.name] = None
    query = tree.expression.sql(dialect="spark")
    write = insert_overwrite if tree.args.get("overwrite") else insert_into
    return write(spark, _table_name(table), query, partition=spec, client=client)
