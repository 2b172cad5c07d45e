"""``catalogd serve``: run the daemon in the foreground."""

from __future__ import annotations

import sys

import click


@click.command()
@click.option("--config", "config_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="YAML config [default: $CATALOGD_CONFIG, else ./conf/catalogd.yaml, else the packaged default]")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default=None,
              help="Override server.log-level.")
def serve(config_path: str | None, log_level: str | None) -> None:
    """Run the daemon in the foreground until SIGINT or SIGTERM."""
    from catalogd.config import default_config_path, load_config
    from catalogd.logs import configure_logging
    from catalogd.server.daemon import Daemon

    config = load_config(config_path or default_config_path())
    configure_logging(log_level or config.server.log_level)
    sys.exit(Daemon(config).run())
