"""``catalogd cluster ...``: the members of a deployment (``cluster.members``) and its leader."""

from __future__ import annotations

import click

from catalogd.cli.context import Context, pass_ctx
from catalogd.model import ClusterStatus


@click.group()
def cluster() -> None:
    """The daemons of one deployment: which are up, which one leads the background work."""


@cluster.command("status")
@pass_ctx
def cluster_status(ctx: Context) -> ClusterStatus:
    """Every member (up or down, pinged by the daemon now), the leader and since when, the lease's age."""
    return ctx.client.cluster_status()
