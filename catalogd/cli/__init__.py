"""The ``catalogd`` admin CLI (console script ``catalogd = catalogd.cli:main``); see ``app.py`` for its map."""

from __future__ import annotations

from catalogd.cli.app import cli, main

__all__ = ["cli", "main"]
