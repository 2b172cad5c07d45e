"""``catalogd serve``: run the daemon in the foreground."""

from __future__ import annotations

import logging
import os
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
    from catalogd.hms.listener import listen_early

    config = load_config(config_path or default_config_path())
    # Before the daemon's imports and its catalogs (seconds): a Spark session's metastore client
    # that reconnects during a restart finds the port open and waits for its answer.
    hms_listener = listen_early(config.server.host, config.server.hms_port)

    from catalogd.logs import configure_logging
    from catalogd.server.daemon import Daemon

    configure_logging(log_level or config.server.log_level)
    code = Daemon(config, hms_listener=hms_listener).run()
    # Everything is stopped and its logs flushed here: the interpreter's own teardown of the
    # modules loaded (1 to 2 s measured) would only make a restart longer.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
