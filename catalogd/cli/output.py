"""The CLI's output layer: prints what a command returned, as text for people or as JSON with ``--json``.

A command returns a model object or a ``catalogd.cli.results`` view and never chooses the
form; ``json_form`` and ``text_form`` hold the two renderings of each result type. Errors
are printed here too: one ``error: <kind>: <message>`` line on stderr.
"""

from __future__ import annotations

import datetime
import json

import click

from catalogd.cli.failures import ConfigRejected
from catalogd.cli.json_form import to_json
from catalogd.cli.results import Message
from catalogd.cli.text_form import clock_time, partition_name, show_text
from catalogd.errors import CatalogError
from catalogd.model import RefreshJob


def emit(result: object, as_json: bool) -> None:
    """Print a command's result (None: the command printed nothing)."""
    if result is None:
        return
    if isinstance(result, Message):
        click.echo(result.text)
    elif as_json:
        click.echo(json.dumps(to_json(result), indent=2, sort_keys=False, default=str))
    else:
        show_text(result)


def print_error(error: CatalogError) -> None:
    """One ``error: <kind>: <message>`` line on stderr; a rejected configuration's problems one per line."""
    if isinstance(error, ConfigRejected):
        for problem in error.problems:
            click.echo(problem, err=True)
    else:
        click.echo(f"error: {error.kind}: {error.message}", err=True)


class RefreshProgress:
    """``dt refresh --wait``: a stderr line each time a run of the job changes state."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def __call__(self, job: RefreshJob) -> None:
        for run in job.runs:
            state = run.status.value + (f" ({run.phase})" if run.phase else "")
            if self._seen.get(run.id) != state:
                self._seen[run.id] = state
                click.echo(f"{clock_time(datetime.datetime.now(datetime.UTC).timestamp())} {run.table}"
                           f"{' ' + partition_name(run.partition) if run.partition else ''}: {state}", err=True)
