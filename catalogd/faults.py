"""Named fault-injection points for crash tests; inert unless an environment variable names them.

``CATALOGD_FAULT_POINTS=commit.marked,commit.switched`` makes the process kill
itself with SIGKILL when it reaches one of those points, so tests can stop the
daemon between two steps of a commit. Never set it in production.
"""

from __future__ import annotations

import logging
import os
import signal

logger = logging.getLogger(__name__)

ENV = "CATALOGD_FAULT_POINTS"

#: Every point, in the order a commit reaches them.
POINTS = (
    "commit.before-rename",  # CREATE: nothing done yet
    "commit.after-rename",  # CREATE: the target exists
    "commit.marked",  # REPLACE / OVERWRITE_PARTITIONS / APPEND: the stage says COMMITTING
    "commit.moved",  # APPEND: the staged files are in the target's existing directories
    "commit.dropped",  # REPLACE on the weaker path: the old target is dropped, the new one not created
    "commit.switched",  # the target points at the new data
    "commit.partitions",  # the target's partitions point at the new data
    "commit.retired",  # the staging table stands for the replaced data
    "jdbc.commit.renamed",  # jdbc: inside the publishing transaction, renames and drop done, not committed
    "jdbc.commit.committed",  # jdbc: the transaction committed, the daemon not yet told
    "iceberg.txn.locked",  # Iceberg multi-table commit: every table locked, nothing written
    "iceberg.txn.intent",  # Iceberg multi-table commit: the intent is durable, no pointer moved
    "iceberg.txn.moved-one",  # Iceberg multi-table commit: after each pointer move (the first kills)
)


def fault_point(name: str) -> None:
    """Kill this process with SIGKILL if ``$CATALOGD_FAULT_POINTS`` names ``name``."""
    armed = os.environ.get(ENV)
    if armed and name in {p.strip() for p in armed.split(",")}:
        logger.critical("fault point %s reached: killing the process (%s is set)", name, ENV)
        for handler in logging.getLogger().handlers:
            handler.flush()
        os.kill(os.getpid(), signal.SIGKILL)
