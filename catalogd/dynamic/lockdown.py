"""The Spark processes catalogd starts are its alone: on a local master, every port they open
listens on loopback and asks for Spark's authentication.

A refresh job (``spark-submit``), a CONTINUOUS table's job, the Spark Connect server and the
analyzer helper each run a driver JVM that opens ports besides the one catalogd talks to: the
driver's RPC endpoint, the block manager (which serves broadcast and shuffle blocks: the data a
query read) and, when enabled, the web UI. Spark binds the first two to the machine's address
and serves them to anyone unless ``spark.authenticate`` is on.

On a local master (``local``, ``local[N]``, ``local[*]``, ``local[N,F]``) the executors live in
the driver's JVM, so nothing outside it has a reason to connect:

* the driver and its block manager bind to 127.0.0.1 (``spark.driver.bindAddress``,
  ``spark.driver.host``) and the UI too (``SPARK_LOCAL_IP`` in the process's environment: Spark's
  UI binds to it, else to every address);
* ``spark.authenticate`` is on. Spark's ``SecurityManager.initializeAuth`` then makes a random
  secret itself for these masters (also for ``yarn`` and Kubernetes), in the JVM's memory only:
  it is in no file, no command line and no environment, so catalogd has nothing to hand over.

These settings replace whatever ``spark.conf`` says for the same keys: the engine is catalogd's.

Any other master (``spark://``, ``local-cluster``, ``yarn``, ``k8s://``) has executors on other
processes or hosts that must reach the driver, so catalogd changes nothing: the cluster's own
authentication applies, which its operator configures (docs/security.md, "The refresh engine").
"""

from __future__ import annotations

import re

#: Where a local master's Spark processes listen.
LOOPBACK = "127.0.0.1"
#: The settings a local master's processes get (over ``spark.conf``'s).
LOCAL_SETTINGS: dict[str, str] = {
    "spark.authenticate": "true",
    "spark.driver.bindAddress": LOOPBACK,
    "spark.driver.host": LOOPBACK,
}
#: The environment variable Spark's web UI (and its default host name) binds to.
LOCAL_IP_ENV = "SPARK_LOCAL_IP"

# Spark's own patterns (SparkMasterRegex.LOCAL_N_REGEX, LOCAL_N_FAILURES_REGEX), exactly: a master
# called local here must be one Spark makes a secret for, else its start fails on the missing one.
_LOCAL = re.compile(r"local|local\[([0-9]+|\*)\]|local\[([0-9]+|\*)\s*,\s*([0-9]+)\]")


def is_local(master: str) -> bool:
    """Whether ``master`` runs the executors in the driver's JVM (``local-cluster`` does not)."""
    return _LOCAL.fullmatch(master) is not None


def locked_conf(master: str, conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with ``LOCAL_SETTINGS`` on a local master; unchanged on any other."""
    return {**conf, **LOCAL_SETTINGS} if is_local(master) else dict(conf)


def locked_env(master: str) -> dict[str, str]:
    """What a local master's process gets in its environment (the UI's bind address)."""
    return {LOCAL_IP_ENV: LOOPBACK} if is_local(master) else {}


def unguarded(master: str, conf: dict[str, str]) -> str | None:
    """Why the engine's ports are open to whoever reaches them (None: they are not, or the
    operator's Spark settings say so): a non-local master without ``spark.authenticate``."""
    if is_local(master) or conf.get("spark.authenticate", "").strip().lower() == "true":
        return None
    return (f"spark.master {master!r} is not local: catalogd leaves its Spark processes' ports and authentication "
            "to the cluster's settings, and spark.conf does not set spark.authenticate (unless "
            "spark-defaults.conf does, their driver and block manager serve anyone who reaches them)")


__all__ = ["LOCAL_IP_ENV", "LOCAL_SETTINGS", "LOOPBACK", "is_local", "locked_conf", "locked_env", "unguarded"]
