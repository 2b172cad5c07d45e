"""``catalogd audit tail``: the last lines of the daemon's audit log, read from its data dir on this machine."""

from __future__ import annotations

import click

from catalogd.cli.results import AuditEntries


@click.group()
def audit() -> None:
    """The audit log: every write and every denial, on every surface."""


@audit.command("tail")
@click.option("-n", "--lines", "limit", type=click.IntRange(min=1), default=20, show_default=True, metavar="N",
              help="Show the last N entries.")
@click.option("--principal", metavar="P", default=None, help="Only the entries of principal P.")
@click.option("--denied", is_flag=True, help="Only denials.")
@click.option("--config", "config_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="The daemon's YAML config, for its data dir [default: $CATALOGD_CONFIG, else "
                   "./conf/catalogd.yaml, else the packaged default]")
def audit_tail(limit: int, principal: str | None, denied: bool, config_path: str | None) -> AuditEntries:
    """Print the last entries of <data-dir>/audit/audit.jsonl and audit-denied.jsonl (and their rotated files),
    merged in time order, oldest first.

    Reads the file of the configured data dir on this machine; the daemon need not run.
    """
    from catalogd.auth.audit import audit_path, read_audit
    from catalogd.config import default_config_path, load_config

    config = load_config(config_path or default_config_path())
    path = audit_path(config.server.data_dir)
    return AuditEntries(read_audit(path, limit, principal=principal, denied=denied))
