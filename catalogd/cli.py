"""The ``catalogd`` admin CLI. Talks to the daemon through ``catalogd.client``.

Errors print one line ``error: <kind>: <message>`` on stderr and exit 1 (the
operation failed) or 2 (usage or configuration error).
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import asdict
from typing import Any

import click
from rich.console import Console
from rich.table import Table as RichTable

from catalogd import __version__
from catalogd.errors import EXIT_USAGE, CatalogError, UsageError
from catalogd.model import CatalogInfo, Database, Function, Partition, Stage, Statistics, Table

# Piped output is read by scripts and people alike: never cut a cell to fit 80 columns.
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 1000)


class Context:
    def __init__(self, server: str | None, as_json: bool) -> None:
        self.server = server
        self.as_json = as_json
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            from catalogd.client import CatalogClient

            self._client = CatalogClient(self.server)
        return self._client


pass_ctx = click.make_pass_decorator(Context)


# ---------------------------------------------------------------- output

def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=False, default=str))


def print_rows(headers: list[str], rows: list[list[Any]]) -> None:
    table = RichTable(box=None, show_header=True, header_style="bold", pad_edge=False)
    for header in headers:
        table.add_column(header)
    for row in rows:
        table.add_row(*("" if v is None else str(v) for v in row))
    out.print(table)


def print_names(ctx: Context, names: list[str], header: str) -> None:
    if ctx.as_json:
        emit_json(names)
    else:
        print_rows([header], [[n] for n in names])


def table_json(table: Table) -> dict[str, Any]:
    return {
        "catalog": table.catalog,
        "database": table.database,
        "name": table.name,
        "kind": table.kind.value,
        "columns": [{"name": c.name, "type": c.type, "comment": c.comment} for c in table.columns],
        "partition_keys": [{"name": c.name, "type": c.type, "comment": c.comment} for c in table.partition_keys],
        "format": table.format.value if table.format else None,
        "location": table.location,
        "properties": table.properties,
        "comment": table.comment,
        "owner": table.owner,
        "created": table.created,
        "statistics": statistics_json(table.statistics),
    }


def statistics_json(stats: Statistics) -> dict[str, int | None]:
    return {"row_count": stats.row_count, "total_size": stats.total_size, "file_count": stats.file_count}


def _statistics_text(stats: Statistics) -> str:
    if not stats.known:
        return "unknown (the metastore holds none; ANALYZE TABLE in Spark computes them)"

    def show(value: int | None, unit: str = "") -> str:
        return "unknown" if value is None else f"{value:,}{unit}"

    return (f"rows {show(stats.row_count)}, size {show(stats.total_size, ' bytes')}, "
            f"files {show(stats.file_count)}")


def partition_json(partition: Partition) -> dict[str, Any]:
    return {
        "name": partition.name,
        "values": partition.spec,
        "location": partition.location,
        "properties": partition.properties,
        "created": partition.created,
        "statistics": statistics_json(partition.statistics),
    }


def database_json(db: Database) -> dict[str, Any]:
    return {"catalog": db.catalog, "name": db.name, "comment": db.comment, "location": db.location,
            "properties": db.properties, "owner": db.owner}


def catalog_json(info: CatalogInfo) -> dict[str, Any]:
    data = asdict(info)
    data["read_only"] = data.pop("read_only")
    return data


def report_done(ctx: Context, action: str, kind: str, name: str, to: str | None = None) -> None:
    """``{"renamed": name, "to": to}`` / ``{"dropped": name}`` in JSON, else one sentence."""
    if ctx.as_json:
        emit_json({action: name, "to": to} if to is not None else {action: name})
    else:
        click.echo(f"{action} {kind} {name}" + (f" to {to}" if to is not None else ""))


def print_fields(fields: list[tuple[str, Any]]) -> None:
    print_rows(["field", "value"], [[k, v] for k, v in fields])


def print_properties(props: dict[str, str]) -> None:
    if props:
        out.print()
        print_rows(["property", "value"], [[k, v] for k, v in sorted(props.items())])


def parse_properties(values: tuple[str, ...]) -> dict[str, str]:
    props = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"bad property {item!r}: write it as KEY=VALUE")
        props[key.strip()] = value
    return props


# ---------------------------------------------------------------- root

@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--server", metavar="HOST:PORT", default=None,
              help="catalogd daemon address [default: $CATALOGD_SERVER or localhost:9190]")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.version_option(__version__, prog_name="catalogd")
@click.pass_context
def cli(ctx: click.Context, server: str | None, as_json: bool) -> None:
    """catalogd: a catalog daemon for Spark on Hive Metastores."""
    ctx.obj = Context(server, as_json)


@cli.command()
@click.option("--config", "config_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="YAML config [default: $CATALOGD_CONFIG, else ./conf/catalogd.yaml, else the packaged default]")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default=None,
              help="Override server.log-level.")
def serve(config_path: str | None, log_level: str | None) -> None:
    """Run the daemon in the foreground until SIGINT or SIGTERM."""
    from catalogd.config import default_config_path, load_config
    from catalogd.server.daemon import Daemon

    config = load_config(config_path or default_config_path())
    logging.basicConfig(
        level=(log_level or config.server.log_level).upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    sys.exit(Daemon(config).run())


# ---------------------------------------------------------------- config

@cli.group()
def config() -> None:
    """Configuration: check a file, reload the daemon's."""


@config.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
def config_check(file: str) -> None:
    """Validate FILE: print its problems and exit 2, or print ok."""
    from catalogd.config import load_config
    from catalogd.errors import ConfigError

    try:
        load_config(file)
    except ConfigError as e:
        for problem in e.problems:
            click.echo(problem, err=True)
        sys.exit(EXIT_USAGE)
    click.echo("ok")


@config.command("reload")
@pass_ctx
def config_reload(ctx: Context) -> None:
    """Make the daemon re-read its configuration file (as SIGHUP does).

    An invalid file is rejected with the same problems `config check` prints (exit 2),
    and the daemon keeps its running configuration.
    """
    from catalogd.errors import InvalidArgumentError

    try:
        result = ctx.client.reload_config()
    except InvalidArgumentError as e:
        lines = e.message.splitlines()
        if len(lines) > 1 and lines[0].startswith("configuration rejected"):
            for problem in lines[1:]:
                click.echo(problem, err=True)
            sys.exit(EXIT_USAGE)
        raise
    if ctx.as_json:
        emit_json({"source": result.source, "added": result.added, "removed": result.removed,
                   "changed": result.changed, "unchanged": result.unchanged,
                   "restart_needed": result.restart_needed})
        return
    click.echo(f"reloaded {result.source}: added {', '.join(result.added) or 'none'}; "
               f"removed {', '.join(result.removed) or 'none'}; changed {', '.join(result.changed) or 'none'}")
    if result.restart_needed:
        click.echo(f"restart the daemon to apply: {', '.join(result.restart_needed)}")


# ---------------------------------------------------------------- catalogs

@cli.group()
def catalog() -> None:
    """Configured catalogs."""


@catalog.command("list")
@pass_ctx
def catalog_list(ctx: Context) -> None:
    """List catalogs (name, type, default, read-only, metastore)."""
    catalogs = ctx.client.list_catalogs()
    if ctx.as_json:
        emit_json([c.name for c in catalogs])
        return
    print_rows(
        ["name", "type", "default", "read-only", "default database", "metastore"],
        [[c.name, c.type, "yes" if c.default else "", "yes" if c.read_only else "", c.default_database,
          c.metastore or ""] for c in catalogs],
    )


@catalog.command("describe")
@click.argument("name")
@pass_ctx
def catalog_describe(ctx: Context, name: str) -> None:
    """Show one catalog."""
    info = ctx.client.get_catalog(name)
    if ctx.as_json:
        emit_json(catalog_json(info))
        return
    print_fields([(k, v) for k, v in catalog_json(info).items()])


@cli.command("spark-conf")
@click.argument("catalog_name", metavar="CATALOG")
@pass_ctx
def spark_conf(ctx: Context, catalog_name: str) -> None:
    """Print the Spark settings (key=value) that point Spark at CATALOG's metastore."""
    from catalogd.spark.conf import spark_conf_for

    info = ctx.client.get_catalog(catalog_name)
    settings = spark_conf_for(info)
    if ctx.as_json:
        emit_json(settings)
        return
    for key, value in settings.items():
        click.echo(f"{key}={value}")


# ---------------------------------------------------------------- databases

@cli.group()
def db() -> None:
    """Databases: list, create, describe, alter, drop."""


@db.command("list")
@click.argument("catalog_name", metavar="CATALOG", required=False)
@pass_ctx
def db_list(ctx: Context, catalog_name: str | None) -> None:
    """List the databases of CATALOG (default: the default catalog)."""
    print_names(ctx, ctx.client.list_databases(catalog_name), "database")


@db.command("create")
@click.argument("name", metavar="CATALOG.DB")
@click.option("--comment", help="Description of the database.")
@click.option("--location", metavar="URI", help="Where its tables go [default: under the warehouse].")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def db_create(ctx: Context, name: str, comment: str | None, location: str | None, properties: tuple[str, ...],
              if_not_exists: bool) -> None:
    """Create a database."""
    database = ctx.client.create_database(name, comment=comment, location=location,
                                          properties=parse_properties(properties), if_not_exists=if_not_exists)
    _show_database(ctx, database)


def _show_database(ctx: Context, database: Database) -> None:
    if ctx.as_json:
        emit_json(database_json(database))
        return
    print_fields([("catalog", database.catalog), ("name", database.name), ("comment", database.comment),
                  ("location", database.location), ("owner", database.owner)])
    print_properties(database.properties)


@db.command("describe")
@click.argument("name", metavar="CATALOG.DB")
@pass_ctx
def db_describe(ctx: Context, name: str) -> None:
    """Show a database."""
    _show_database(ctx, ctx.client.get_database(name))


@db.command("alter")
@click.argument("name", metavar="CATALOG.DB")
@click.option("--comment", help="New description.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Set a property; repeatable.")
@click.option("--unset-property", "unset", multiple=True, metavar="KEY", help="Remove a property; repeatable.")
@pass_ctx
def db_alter(ctx: Context, name: str, comment: str | None, properties: tuple[str, ...], unset: tuple[str, ...]) -> None:
    """Change a database's comment or properties."""
    if comment is None and not properties and not unset:
        raise UsageError("nothing to change: give --comment, --property or --unset-property")
    database = ctx.client.alter_database(name, comment=comment, set_properties=parse_properties(properties),
                                         unset_properties=list(unset))
    _show_database(ctx, database)


@db.command("rename")
@click.argument("name", metavar="CATALOG.DB")
@click.argument("new_name", metavar="NEW_NAME")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def db_rename(ctx: Context, name: str, new_name: str, if_exists: bool) -> None:
    """Rename a database (memory catalogs; a Hive Metastore cannot: unsupported)."""
    ctx.client.rename_database(name, new_name, if_exists)
    report_done(ctx, "renamed", "database", name, new_name)


@db.command("drop")
@click.argument("name", metavar="CATALOG.DB")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@click.option("--cascade", is_flag=True, help="Drop its tables too.")
@pass_ctx
def db_drop(ctx: Context, name: str, if_exists: bool, cascade: bool) -> None:
    """Drop a database (refused when it has tables, unless --cascade)."""
    ctx.client.drop_database(name, if_exists=if_exists, cascade=cascade)
    report_done(ctx, "dropped", "database", name)


# ---------------------------------------------------------------- tables

@cli.group()
def table() -> None:
    """Tables: list, create, describe, alter, rename, drop, partitions."""


@table.command("list")
@click.argument("database", metavar="CATALOG.DB")
@pass_ctx
def table_list(ctx: Context, database: str) -> None:
    """List the tables of a database (views are not listed)."""
    print_names(ctx, ctx.client.list_tables(database), "table")


@table.command("create")
@click.argument("name", metavar="CATALOG.DB.T")
@click.option("--schema", required=True, help="Columns, e.g. \"id bigint, amount decimal(10,2) COMMENT 'EUR'\".")
@click.option("--partitioned-by", metavar="COLUMNS", help="Partition columns, e.g. \"ds string\".")
@click.option("--format", "fmt", default="parquet", show_default=True,
              type=click.Choice(["parquet", "orc", "avro", "csv", "json", "textfile"], case_sensitive=False))
@click.option("--location", metavar="URI", help="Where the files go [default: under the database].")
@click.option("--external", is_flag=True, help="The files outlive the table (needs --location).")
@click.option("--comment", help="Description of the table.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def table_create(ctx: Context, name: str, schema: str, partitioned_by: str | None, fmt: str, location: str | None,
                 external: bool, comment: str | None, properties: tuple[str, ...], if_not_exists: bool) -> None:
    """Create a table."""
    created = ctx.client.create_table(
        name, schema, partitioned_by=partitioned_by, format=fmt, location=location, external=external,
        comment=comment, properties=parse_properties(properties), if_not_exists=if_not_exists,
    )
    _show_table(ctx, created)


def _show_table(ctx: Context, tbl: Table) -> None:
    if ctx.as_json:
        emit_json(table_json(tbl))
        return
    print_fields([
        ("table", f"{tbl.catalog}.{tbl.database}.{tbl.name}"),
        ("kind", tbl.kind.value),
        ("format", tbl.format.value if tbl.format else "unknown"),
        ("location", tbl.location),
        ("comment", tbl.comment),
        ("owner", tbl.owner),
        ("statistics", _statistics_text(tbl.statistics)),
    ])
    out.print()
    rows = [[c.name, c.type, "", c.comment] for c in tbl.columns]
    rows += [[c.name, c.type, "partition key", c.comment] for c in tbl.partition_keys]
    print_rows(["column", "type", "", "comment"], rows)
    print_properties(tbl.properties)


@table.command("describe")
@click.argument("name", metavar="CATALOG.DB.T")
@pass_ctx
def table_describe(ctx: Context, name: str) -> None:
    """Show a table: columns, partition keys, format, location, properties."""
    _show_table(ctx, ctx.client.get_table(name))


@table.command("alter")
@click.argument("name", metavar="CATALOG.DB.T")
@click.option("--comment", help="New description.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Set a property; repeatable.")
@click.option("--unset-property", "unset", multiple=True, metavar="KEY", help="Remove a property; repeatable.")
@click.option("--add-columns", metavar="COLUMNS", help="Columns to append, e.g. \"note string\".")
@pass_ctx
def table_alter(ctx: Context, name: str, comment: str | None, properties: tuple[str, ...], unset: tuple[str, ...],
                add_columns: str | None) -> None:
    """Change a table's comment or properties, or add columns."""
    if comment is None and not properties and not unset and not add_columns:
        raise UsageError("nothing to change: give --comment, --property, --unset-property or --add-columns")
    altered = ctx.client.alter_table(name, comment=comment, set_properties=parse_properties(properties),
                                     unset_properties=list(unset), add_columns=add_columns)
    _show_table(ctx, altered)


@table.command("rename")
@click.argument("name", metavar="CATALOG.DB.T")
@click.argument("new_name", metavar="NEW_NAME")
@click.option("--if-exists", is_flag=True, help="Succeed if the table does not exist.")
@pass_ctx
def table_rename(ctx: Context, name: str, new_name: str, if_exists: bool) -> None:
    """Rename a table within its database."""
    ctx.client.rename_table(name, new_name, if_exists=if_exists)
    if ctx.as_json:
        emit_json({"renamed": name, "to": new_name})
    else:
        click.echo(f"renamed table {name} to {new_name}")


@table.command("drop")
@click.argument("name", metavar="CATALOG.DB.T")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@click.option("--purge", is_flag=True, help="Delete the files at once (no trash).")
@pass_ctx
def table_drop(ctx: Context, name: str, if_exists: bool, purge: bool) -> None:
    """Drop a table; a managed table's files go with it."""
    ctx.client.drop_table(name, if_exists=if_exists, purge=purge)
    if ctx.as_json:
        emit_json({"dropped": name})
    else:
        click.echo(f"dropped table {name}")


# ---------------------------------------------------------------- functions

def function_json(function: Function) -> dict[str, Any]:
    return {
        "catalog": function.catalog,
        "database": function.database,
        "name": function.name,
        "class_name": function.class_name,
        "language": function.language.value,
        "resources": [{"type": r.type, "uri": r.uri} for r in function.resources],
        "owner": function.owner,
        "created": function.created,
    }


def _show_function(ctx: Context, function: Function) -> None:
    if ctx.as_json:
        emit_json(function_json(function))
        return
    print_fields([("function", function.qualified_name), ("class", function.class_name),
                  ("language", function.language.value), ("owner", function.owner)])
    if function.resources:
        out.print()
        print_rows(["resource", "uri"], [[r.type, r.uri] for r in function.resources])


_LANGUAGES = click.Choice(["java", "scala", "python"], case_sensitive=False)


@cli.group()
def function() -> None:
    """Functions: list, create, describe, alter, rename, drop."""


@function.command("list")
@click.argument("database", metavar="CATALOG.DB")
@pass_ctx
def function_list(ctx: Context, database: str) -> None:
    """List the functions of a database."""
    print_names(ctx, ctx.client.list_functions(database), "function")


@function.command("create")
@click.argument("name", metavar="CATALOG.DB.F")
@click.option("--class", "class_name", required=True, metavar="CLASS",
              help="A JVM class (java, scala), or module:function (python).")
@click.option("--language", default="java", show_default=True, type=_LANGUAGES)
@click.option("--resource", "resources", multiple=True, metavar="URI",
              help="A jar, file or archive the function needs (typed by extension, or jar:URI / archive:URI); "
                   "repeatable.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def function_create(ctx: Context, name: str, class_name: str, language: str, resources: tuple[str, ...],
                    if_not_exists: bool) -> None:
    """Create a function."""
    _show_function(ctx, ctx.client.create_function(name, class_name, language, list(resources), if_not_exists))


@function.command("describe")
@click.argument("name", metavar="CATALOG.DB.F")
@pass_ctx
def function_describe(ctx: Context, name: str) -> None:
    """Show a function: class, language, resources."""
    _show_function(ctx, ctx.client.get_function(name))


@function.command("alter")
@click.argument("name", metavar="CATALOG.DB.F")
@click.option("--class", "class_name", metavar="CLASS", help="New class [default: unchanged].")
@click.option("--language", type=_LANGUAGES, help="New language [default: unchanged].")
@click.option("--resource", "resources", multiple=True, metavar="URI",
              help="Replaces every resource; repeatable [default: unchanged].")
@click.option("--no-resources", is_flag=True, help="Remove every resource.")
@pass_ctx
def function_alter(ctx: Context, name: str, class_name: str | None, language: str | None,
                   resources: tuple[str, ...], no_resources: bool) -> None:
    """Change a function's class, language or resources."""
    if class_name is None and language is None and not resources and not no_resources:
        raise UsageError("nothing to change: give --class, --language, --resource or --no-resources")
    if resources and no_resources:
        raise UsageError("--resource and --no-resources contradict each other")
    current = ctx.client.get_function(name)
    if no_resources:
        kept: list[Any] = []
    else:
        kept = list(resources) if resources else list(current.resources)
    _show_function(ctx, ctx.client.alter_function(name, class_name or current.class_name,
                                                  language or current.language, kept))


@function.command("rename")
@click.argument("name", metavar="CATALOG.DB.F")
@click.argument("new_name", metavar="NEW_NAME")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def function_rename(ctx: Context, name: str, new_name: str, if_exists: bool) -> None:
    """Rename a function within its database."""
    ctx.client.rename_function(name, new_name, if_exists)
    report_done(ctx, "renamed", "function", name, new_name)


@function.command("drop")
@click.argument("name", metavar="CATALOG.DB.F")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def function_drop(ctx: Context, name: str, if_exists: bool) -> None:
    """Drop a function."""
    ctx.client.drop_function(name, if_exists)
    report_done(ctx, "dropped", "function", name)


# ---------------------------------------------------------------- views

def view_json(view: Table) -> dict[str, Any]:
    return {
        "catalog": view.catalog,
        "database": view.database,
        "name": view.name,
        "columns": [{"name": c.name, "type": c.type, "comment": c.comment} for c in view.columns],
        "query": view.view_text,
        "expanded_query": view.view_expanded_text,
        "comment": view.comment,
        "properties": view.properties,
        "owner": view.owner,
        "created": view.created,
    }


def _show_view(ctx: Context, view: Table) -> None:
    if ctx.as_json:
        emit_json(view_json(view))
        return
    print_fields([("view", f"{view.catalog}.{view.database}.{view.name}"), ("comment", view.comment),
                  ("owner", view.owner), ("query", view.view_text), ("expanded", view.view_expanded_text)])
    out.print()
    print_rows(["column", "type", "comment"], [[c.name, c.type, c.comment] for c in view.columns])
    print_properties(view.properties)


@cli.group()
def view() -> None:
    """Views: list, create, describe, alter, rename, drop."""


@view.command("list")
@click.argument("database", metavar="CATALOG.DB")
@pass_ctx
def view_list(ctx: Context, database: str) -> None:
    """List the views of a database (tables are not listed)."""
    print_names(ctx, ctx.client.list_views(database), "view")


@view.command("create")
@click.argument("name", metavar="CATALOG.DB.V")
@click.option("--query", required=True, help="One SELECT; checked against the catalog and stored expanded.")
@click.option("--comment", help="Description of the view.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def view_create(ctx: Context, name: str, query: str, comment: str | None, properties: tuple[str, ...],
                if_not_exists: bool) -> None:
    """Create a view."""
    _show_view(ctx, ctx.client.create_view(name, query, comment, parse_properties(properties), if_not_exists))


@view.command("describe")
@click.argument("name", metavar="CATALOG.DB.V")
@pass_ctx
def view_describe(ctx: Context, name: str) -> None:
    """Show a view: columns, query as written and expanded."""
    _show_view(ctx, ctx.client.get_view(name))


@view.command("alter")
@click.argument("name", metavar="CATALOG.DB.V")
@click.option("--query", help="A new query (checked and expanded again).")
@click.option("--comment", help="New description.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Set a property; repeatable.")
@click.option("--unset-property", "unset", multiple=True, metavar="KEY", help="Remove a property; repeatable.")
@pass_ctx
def view_alter(ctx: Context, name: str, query: str | None, comment: str | None, properties: tuple[str, ...],
               unset: tuple[str, ...]) -> None:
    """Change a view's query, comment or properties."""
    if query is None and comment is None and not properties and not unset:
        raise UsageError("nothing to change: give --query, --comment, --property or --unset-property")
    _show_view(ctx, ctx.client.alter_view(name, query, comment, parse_properties(properties), list(unset)))


@view.command("rename")
@click.argument("name", metavar="CATALOG.DB.V")
@click.argument("new_name", metavar="NEW_NAME")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def view_rename(ctx: Context, name: str, new_name: str, if_exists: bool) -> None:
    """Rename a view within its database."""
    ctx.client.rename_view(name, new_name, if_exists)
    report_done(ctx, "renamed", "view", name, new_name)


@view.command("drop")
@click.argument("name", metavar="CATALOG.DB.V")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@pass_ctx
def view_drop(ctx: Context, name: str, if_exists: bool) -> None:
    """Drop a view (never a table)."""
    ctx.client.drop_view(name, if_exists)
    report_done(ctx, "dropped", "view", name)


# ---------------------------------------------------------------- partitions

@table.command("partitions")
@click.argument("name", metavar="CATALOG.DB.T")
@click.option("--filter", "filter_", metavar="CONDITION",
              help="On partition keys, e.g. \"ds >= '2024-03-01' AND hr = '01'\".")
@pass_ctx
def table_partitions(ctx: Context, name: str, filter_: str | None) -> None:
    """List the partitions of a partitioned table."""
    partitions = ctx.client.list_partitions(name, filter_)
    if ctx.as_json:
        emit_json([partition_json(p) for p in partitions])
        return
    print_rows(["partition", "location", "rows", "files", "bytes"],
               [[p.name, p.location, p.statistics.row_count, p.statistics.file_count, p.statistics.total_size]
                for p in partitions])


@table.group("partition")
def table_partition() -> None:
    """One partition: describe, add, drop (SPEC is key=value ..., e.g. ds=2024-03-01 hr=01)."""


def _show_partition(ctx: Context, partition: Partition) -> None:
    if ctx.as_json:
        emit_json(partition_json(partition))
        return
    print_fields([("partition", partition.name), ("location", partition.location),
                  ("created", partition.created), ("statistics", _statistics_text(partition.statistics))])
    print_properties(partition.properties)


@table_partition.command("describe")
@click.argument("name", metavar="CATALOG.DB.T")
@click.argument("spec", nargs=-1, required=True, metavar="KEY=VALUE...")
@pass_ctx
def partition_describe(ctx: Context, name: str, spec: tuple[str, ...]) -> None:
    """Show one partition."""
    from catalogd.client import parse_partition_spec

    _show_partition(ctx, ctx.client.get_partition(name, parse_partition_spec(spec)))


@table_partition.command("add")
@click.argument("name", metavar="CATALOG.DB.T")
@click.argument("spec", nargs=-1, required=True, metavar="KEY=VALUE...")
@click.option("--location", metavar="URI", help="Its directory [default: <table location>/<partition name>].")
@click.option("--if-not-exists", is_flag=True, help="Succeed if it exists already.")
@pass_ctx
def partition_add(ctx: Context, name: str, spec: tuple[str, ...], location: str | None, if_not_exists: bool) -> None:
    """Add a partition."""
    from catalogd.client import parse_partition_spec

    _show_partition(ctx, ctx.client.add_partition(name, parse_partition_spec(spec), location, if_not_exists))


@table_partition.command("drop")
@click.argument("name", metavar="CATALOG.DB.T")
@click.argument("spec", nargs=-1, required=True, metavar="KEY=VALUE...")
@click.option("--if-exists", is_flag=True, help="Succeed if it does not exist.")
@click.option("--purge", is_flag=True, help="Delete the files at once instead of moving them to a trash dir.")
@pass_ctx
def partition_drop(ctx: Context, name: str, spec: tuple[str, ...], if_exists: bool, purge: bool) -> None:
    """Drop a partition (a managed table's partition files go with it)."""
    from catalogd.client import parse_partition_spec

    values = parse_partition_spec(spec)
    ctx.client.drop_partition(name, values, if_exists, purge)
    if ctx.as_json:
        emit_json({"dropped": "/".join(f"{k}={v}" for k, v in values.items()), "table": name})
    else:
        click.echo(f"dropped partition {'/'.join(f'{k}={v}' for k, v in values.items())} of {name}")


# ---------------------------------------------------------------- stages

def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    import datetime

    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def stage_json(stage: Stage) -> dict[str, Any]:
    return {
        "id": stage.id,
        "target": stage.target_name,
        "purpose": stage.purpose.value,
        "state": stage.state.value,
        "owner": stage.owner,
        "created": _iso(stage.created),
        "lease_deadline": _iso(stage.lease_deadline),
        "staging_table": f"{stage.database}.{stage.staging_table}" if stage.staging_table else None,
        "message": stage.message,
    }


@cli.group()
def stage() -> None:
    """Stages of atomic writes: list, describe, begin, heartbeat, commit, abort."""


@stage.command("list")
@click.argument("catalog_name", metavar="CATALOG", required=False)
@pass_ctx
def stage_list(ctx: Context, catalog_name: str | None) -> None:
    """List the open stages of a catalog (and committed ones whose replaced data is still kept)."""
    stages = ctx.client.list_stages(catalog_name)
    if ctx.as_json:
        emit_json([stage_json(s) for s in stages])
        return
    print_rows(
        ["id", "target", "purpose", "state", "owner", "created", "lease deadline"],
        [[s.id, s.target_name, s.purpose.value, s.state.value, s.owner, _iso(s.created), _iso(s.lease_deadline)]
         for s in stages],
    )


def _show_stage(ctx: Context, stage: Stage) -> None:
    if ctx.as_json:
        emit_json(stage_json(stage))
    else:
        print_fields([(k.replace("_", " "), v) for k, v in stage_json(stage).items()])


@stage.command("describe")
@click.argument("stage_id", metavar="ID")
@pass_ctx
def stage_describe(ctx: Context, stage_id: str) -> None:
    """Show one stage (COMMITTED once its target carries its id)."""
    _show_stage(ctx, ctx.client.get_stage(stage_id))


def _lease_seconds(text: str | None) -> float | None:
    """``--lease`` as seconds (None: the daemon's default)."""
    from catalogd.config import parse_duration

    if text is None:
        return None
    try:
        seconds = parse_duration(text).total_seconds()
    except ValueError as e:
        raise UsageError(f"--lease: {e}") from None
    if seconds <= 0:
        raise UsageError(f"--lease: must be longer than zero, got {text!r}")
    return seconds


@stage.command("begin")
@click.argument("target", metavar="CATALOG.DB.T")
@click.option("--schema", help="Columns, e.g. \"id bigint, name string\" (OVERWRITE_PARTITIONS: the target's).")
@click.option("--partitioned-by", metavar="COLUMNS", help="Partition columns, e.g. \"ds string\".")
@click.option("--format", "fmt", default=None,
              type=click.Choice(["parquet", "orc", "avro", "csv", "json", "textfile"], case_sensitive=False),
              help="Storage format [default: parquet].")
@click.option("--purpose", default="create", show_default=True,
              type=click.Choice(["create", "create_if_not_exists", "replace", "overwrite_partitions"],
                                case_sensitive=False))
@click.option("--lease", metavar="DURATION", help="e.g. 5 min [default: the daemon's staging.lease].")
@click.option("--comment", help="Description of the table.")
@click.option("--property", "properties", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@pass_ctx
def stage_begin(ctx: Context, target: str, schema: str | None, partitioned_by: str | None, fmt: str | None,
                purpose: str, lease: str | None, comment: str | None, properties: tuple[str, ...]) -> None:
    """Open a stage on TARGET: a hidden staging table to write into, published by `stage commit`."""
    seconds = _lease_seconds(lease)
    stage = ctx.client.begin_stage(target, schema, partitioned_by, format=fmt, purpose=purpose,
                                   properties=parse_properties(properties), comment=comment, lease=seconds)
    _show_stage(ctx, stage)


@stage.command("heartbeat")
@click.argument("stage_id", metavar="ID")
@click.option("--lease", metavar="DURATION", help="New lease from now [default: the daemon's staging.lease].")
@pass_ctx
def stage_heartbeat(ctx: Context, stage_id: str, lease: str | None) -> None:
    """Extend an open stage's lease."""
    _show_stage(ctx, ctx.client.heartbeat_stage(stage_id, _lease_seconds(lease)))


@stage.command("commit")
@click.argument("stage_id", metavar="ID")
@pass_ctx
def stage_commit(ctx: Context, stage_id: str) -> None:
    """Publish a stage into its target atomically (safe to repeat)."""
    result = ctx.client.commit_stage(stage_id)
    if ctx.as_json:
        emit_json(stage_json(result))
    elif result.state.value == "COMMITTED":
        click.echo(f"committed stage {stage_id}: {result.message or result.target_name}")
    else:
        click.echo(f"stage {stage_id} ended {result.state.value}: {result.message}")


@stage.command("abort")
@click.argument("stage_id", metavar="ID")
@click.option("--writer-stopped", is_flag=True,
              help="Its writer writes no more: delete the files now, not a lease later.")
@pass_ctx
def stage_abort(ctx: Context, stage_id: str, writer_stopped: bool) -> None:
    """Abort a stage (a committed stage cannot be aborted).

    Its writer may still be running, so the stage stays as an ABORTED tombstone and
    its files, with any the writer adds, are deleted a lease later; catalogd.spark
    writers cancel their job at their next heartbeat.
    """
    result = ctx.client.abort_stage(stage_id, writer_stopped=writer_stopped)
    if ctx.as_json:
        emit_json(stage_json(result))
    else:
        click.echo(f"aborted stage {stage_id}")


# ---------------------------------------------------------------- entry point

def _json_first(args: list[str]) -> list[str]:
    """``--json`` works after the command too (``catalogd dt describe X --json``): moved to the front.

    Only before a ``--``, after which every word is an argument.
    """
    end = args.index("--") if "--" in args else len(args)
    if "--json" not in args[:end]:
        return list(args)
    return ["--json", *(a for a in args[:end] if a != "--json"), *args[end:]]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; errors become one ``error: <kind>: <message>`` line."""
    # thrift logs a failed connect itself, which without a handler lands on
    # stderr next to our own error line; `serve` still gets it via the root logger.
    logging.getLogger("thrift").addHandler(logging.NullHandler())
    try:
        result = cli.main(args=_json_first(sys.argv[1:] if argv is None else argv), prog_name="catalogd",
                          standalone_mode=False)
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        return 1
    except click.UsageError as e:
        click.echo(f"error: usage: {e.format_message()}", err=True)
        return EXIT_USAGE
    except CatalogError as e:
        click.echo(f"error: {e.kind}: {e.message}", err=True)
        return e.exit_code
    except BrokenPipeError:
        return 1
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


# The dynamic-table commands live in their own module; importing it registers them.
from catalogd import cli_dt  # noqa: E402, F401
