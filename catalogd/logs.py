"""Logging set up once, by an entry point: one format, on stderr."""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(level: str) -> None:
    """Log records at ``level`` (debug, info, warning, error; any case) and above to stderr."""
    logging.basicConfig(level=level.upper(), format=FORMAT, stream=sys.stderr)
