"""``catalogd config check|reload``: validate a configuration file, make the daemon re-read its own."""

from __future__ import annotations

import click

from catalogd.cli.context import Context, pass_ctx
from catalogd.cli.failures import ConfigRejected
from catalogd.cli.results import Message
from catalogd.errors import ConfigError, InvalidArgumentError
from catalogd.model import ReloadResult

#: The first line of the daemon's answer to a reload of an invalid file; its problems follow, one a line.
_REJECTED = "configuration rejected"


@click.group()
def config() -> None:
    """Configuration: check a file, reload the daemon's."""


@config.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
def config_check(file: str) -> Message:
    """Validate FILE: print its problems and exit 2, or print ok."""
    from catalogd.config import load_config

    try:
        load_config(file)
    except ConfigError as e:
        raise ConfigRejected(e.problems) from None
    return Message("ok")


@config.command("reload")
@pass_ctx
def config_reload(ctx: Context) -> ReloadResult:
    """Make the daemon re-read its configuration file (as SIGHUP does).

    An invalid file is rejected with the same problems `config check` prints (exit 2),
    and the daemon keeps its running configuration.
    """
    try:
        return ctx.client.reload_config()
    except InvalidArgumentError as e:
        lines = e.message.splitlines()
        if len(lines) > 1 and lines[0].startswith(_REJECTED):
            raise ConfigRejected(lines[1:]) from None
        raise
