"""The ``catalogd`` command: root group, global options, and ``main`` (errors -> one line and an exit code).

Command groups live one per module beside this one (serve, config, catalog + spark-conf + iceberg-conf, db,
table + partitions, view, function, stage, sql + dt, audit); each command returns a result that
``catalogd.cli.output`` prints, as text or, with ``--json``, as JSON. Errors print one line
``error: <kind>: <message>`` on stderr and exit 1 (the operation failed) or 2 (usage or
configuration error).
"""

from __future__ import annotations

import logging
import sys

import click

from catalogd import __version__
from catalogd.cli import (
    audit,
    catalogs,
    cluster,
    configuration,
    databases,
    dynamic_tables,
    functions,
    serve,
    stages,
    tables,
    views,
)
from catalogd.cli.context import Context
from catalogd.cli.output import emit, print_error
from catalogd.cli.results import Failed
from catalogd.errors import EXIT_USAGE, CatalogError


# Help is as wide as the terminal, up to 120 columns (click stops at 80).
@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120},
             invoke_without_command=True, subcommand_metavar="COMMAND [ARGS]...")
@click.option("--server", metavar="HOST:PORT", default=None,
              help="catalogd daemon address [default: $CATALOGD_SERVER or localhost:9190]")
@click.option("--token", metavar="TOKEN", default=None,
              help="Authenticate with this token (a daemon with auth enabled needs one) "
                   "[default: $CATALOGD_TOKEN]; the variable keeps it out of process listings.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--tls-ca", metavar="FILE", default=None,
              help="CA certificates (PEM) to verify a daemon serving TLS [default: $CATALOGD_TLS_CA]")
@click.option("--tls-cert", metavar="FILE", default=None,
              help="client certificate (PEM) for mutual TLS [default: $CATALOGD_TLS_CERT]")
@click.option("--tls-key", metavar="FILE", default=None,
              help="the client certificate's key (PEM) [default: $CATALOGD_TLS_KEY]")
@click.version_option(__version__, prog_name="catalogd")
@click.pass_context
def cli(ctx: click.Context, server: str | None, token: str | None, as_json: bool, tls_ca: str | None,
        tls_cert: str | None, tls_key: str | None) -> None:
    """catalogd: a catalog daemon for Spark on Hive Metastores."""
    ctx.obj = Context(server, token, tls=(tls_ca, tls_cert, tls_key))
    if ctx.invoked_subcommand is None:
        # `catalogd` (maybe with --server or --json) asks what there is: the help, and no error.
        click.echo(ctx.get_help())
        ctx.exit(0)


@cli.result_callback()
def _print_result(result: object, as_json: bool, **_options: object) -> None:
    # click passes every root option by name; only --json matters here.
    if isinstance(result, Failed):
        emit(result.shown, as_json)
        raise result.error
    emit(result, as_json)


for _command in (serve.serve, configuration.config, catalogs.catalog, catalogs.spark_conf, catalogs.iceberg_conf,
                 databases.db, tables.table, views.view, functions.function, stages.stage, dynamic_tables.sql,
                 dynamic_tables.dt, audit.audit, cluster.cluster):
    cli.add_command(_command)


def _full_short_help(command: click.Command) -> None:
    """Command lists show each command's whole first paragraph: click cuts it at about 45 characters."""
    if command.short_help is None and command.help:
        first = command.help.split("\n\n", 1)[0]
        command.short_help = " ".join(line.strip() for line in first.splitlines() if line.strip() != "\b")
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _full_short_help(sub)


_full_short_help(cli)


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
    except click.exceptions.NoArgsIsHelpError as e:
        # `catalogd` (or `catalogd table`) alone asks what there is: the help, and no error.
        click.echo(e.ctx.get_help() if e.ctx is not None else cli.get_help(click.Context(cli)))
        return 0
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        return 1
    except click.UsageError as e:
        click.echo(f"error: usage: {e.format_message()}", err=True)
        return EXIT_USAGE
    except CatalogError as e:
        print_error(e)
        return e.exit_code
    except BrokenPipeError:
        return 1
    return result if isinstance(result, int) else 0
