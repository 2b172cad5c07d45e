"""What a refresh job is given: its spec (table, query, files to report in), its Spark
settings, and where its files live under the daemon's data dir."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catalogd.catalog.base import Catalog
from catalogd.config import Config
from catalogd.dynamic import incremental, store
from catalogd.dynamic.freshness import Freshness
from catalogd.dynamic.registry import Entry
from catalogd.dynamic.signing import DefinitionSigner
from catalogd.dynamic.validation import check_definition
from catalogd.errors import CatalogError, PermissionDeniedError
from catalogd.manager import CatalogManager
from catalogd.model import Table
from catalogd.spark_common import JDBC_PASSWORD_ENV, jdbc_driver_jars, spark_conf_for

if TYPE_CHECKING:
    from catalogd.auth.model import Authority

#: The environment variable a job's ``CatalogClient`` reads its token from.
TOKEN_ENV = "CATALOGD_TOKEN"
#: Why a definition is not run: catalogd did not sign it ({table}: its full name).
UNSIGNED = ("the definition of dynamic table {table} was not signed by catalogd (written behind catalogd's back, "
            "or changed since): refused, never run; an admin drops and re-creates it")
#: Spark settings of every refresh job and analysis: Spark never reads ``format.`path``` as a file.
LOCKED_SPARK_CONF = {"spark.sql.runSQLOnFiles": "false"}


def trigger_seconds(freshness: Freshness) -> int:
    """A streaming job's trigger: half the freshness, so a change waits at most one trigger, then one refresh."""
    return max(1, freshness.seconds // 2)


def full_only(catalog: Catalog) -> str | None:
    """Why the dynamic tables of ``catalog`` refresh FULL only (None: they may run CONTINUOUS)."""
    if catalog.info().type == "jdbc":
        return (f"{catalog.name} is a jdbc catalog: its dynamic tables refresh FULL only (each refresh commits "
                "a new table in one PostgreSQL transaction; a stream of them is not supported)")
    return None


class JobFactory:
    """Builds the spec and the Spark settings of batch and streaming jobs.

    Args:
        manager: the daemon's catalogs (a job reads its table's expanded query there).
        config: the daemon's configuration (``spark``).
        address: the daemon's Thrift ``host:port`` (jobs commit through it); called when
            a job starts, after the server is bound.
        work_dir: the dynamic tables' directory in the data dir.
        authority: mints each job's token when auth is enabled; None: jobs get none.
    """

    def __init__(self, manager: CatalogManager, config: Config, address: Callable[[], str], work_dir: Path,
                 authority: Authority | None = None) -> None:
        self.manager = manager
        self.config = config
        self.address = address
        self.work_dir = work_dir
        self.authority = authority

    @functools.cached_property
    def signer(self) -> DefinitionSigner:
        """Signs definitions with a key derived from the stage key (the same on every daemon of a metastore)."""
        from catalogd.catalog import stage_key

        return DefinitionSigner(stage_key(self.config))

    def check_definition(self, catalog: str, database: str, name: str, params: dict[str, str],
                         signed: bool = True) -> None:
        """Whether a stored definition may run: catalogd signed it (unless ``signed`` is False:
        one being adopted or created) and it keeps every rule of ``validation`` against the
        catalog its query reads, as that catalog is now.

        Raises:
            PermissionDeniedError: catalogd did not sign it.
            InvalidArgumentError: a rule it breaks (a path-based source, a missing table...).
        """
        full = f"{catalog}.{database}.{name}"
        if signed and not self.signer.verify(full, params):
            raise PermissionDeniedError(UNSIGNED.format(table=full))
        source_name = params.get(store.SOURCE_CATALOG) or catalog
        source = self.manager.catalog(source_name).fresh()
        default = database if source_name == catalog else self.manager.catalog_info(source.name).default_database
        check_definition(f"dynamic table {full}", params, default, source.get_table, frozenset({source.name}))

    def mint_token(self, entry: Entry, ttl: float) -> str | None:
        """A token for one run of ``entry``'s job, good only for its table's stages (None: auth off).

        It goes to the job in its environment (``TOKEN_ENV``), never in its spec or command line;
        the caller revokes it with ``revoke_token`` when the run ends.
        """
        if self.authority is None or not self.authority.enabled:
            return None
        return self.authority.mint_job_token(entry.catalog, entry.database, entry.name, ttl)

    def revoke_token(self, token: str | None) -> None:
        if token is not None and self.authority is not None:
            self.authority.revoke_job_token(token)

    @staticmethod
    def job_env(token: str | None) -> dict[str, str]:
        """The environment a job gets beyond the daemon's: its token, if it has one."""
        return {TOKEN_ENV: token} if token else {}

    def catalog_env(self, entry: Entry) -> dict[str, str]:
        """What a job of ``entry`` gets in its environment to write its catalog: the password of a
        jdbc catalog, for Spark's JDBC source (``spark_common.jdbc_properties`` reads it there).
        Only the job's own user can read a process's environment (``/proc/PID/environ`` is 0400)."""
        password = self.catalog_password(entry)
        return {JDBC_PASSWORD_ENV.format(NAME=entry.catalog.upper()): password} if password is not None else {}

    def catalog_password(self, entry: Entry) -> str | None:
        """The password of ``entry``'s jdbc catalog (None: it has none, or is no jdbc catalog). A run in
        the daemon's Connect engine has it written to its server's password file (``pgpass``): a
        session setting comes back redacted, and a JDBC option would be in the run's logged plan."""
        return self.manager.catalog(entry.catalog).job_password()

    def spark_conf(self, catalog: Catalog, extra: dict[str, str] | None = None) -> dict[str, str]:
        # The catalog's metastore settings win over spark.conf; a request's configuration over both.
        return {"spark.ui.enabled": "false", **self.config.spark.conf, **spark_conf_for(catalog.info()),
                **(extra or {}), **LOCKED_SPARK_CONF}

    def run_conf(self, entry: Entry, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The Spark settings of ``entry``'s jobs: on the metastore of the catalog its query reads;
        a table in a jdbc catalog adds that catalog's JDBC driver to the job's classpath."""
        source = self.manager.catalog(entry.source_catalog or entry.catalog)
        conf = self.spark_conf(source)
        if entry.source_catalog:
            jars = jdbc_driver_jars([self.manager.catalog(entry.catalog).info()])
            if jars:
                conf["spark.jars"] = ",".join([j for j in conf.get("spark.jars", "").split(",") if j] + jars)
        return {**conf, **(extra or {}), **LOCKED_SPARK_CONF}

    def table_dir(self, entry: Entry) -> Path:
        """The table's own directory: the streaming job's work dir and checkpoint."""
        return self.work_dir / entry.catalog / entry.database / entry.name

    def checkpoint(self, entry: Entry) -> Path:
        return self.table_dir(entry) / "checkpoint"

    def runs_dir(self) -> Path:
        return self.work_dir / "runs"

    def refresh_plan(self, entry: Entry, target: Table | None = None) -> incremental.Plan:
        """How ``entry`` refreshes when CONTINUOUS: incrementally or by recomputing, and why
        (from its stored query and its sources as the metastore has them now)."""
        catalog = self.manager.catalog(entry.catalog).fresh()
        try:
            target = target or catalog.get_table(entry.database, entry.name)
            sources: dict[str, Table] = {}
            for name in store.sources(target.properties):
                database, _, table = name.partition(".")
                sources[name] = catalog.get_table(database, table)
        except CatalogError as e:
            return incremental.recompute(f"its tables could not be read ({e.kind}: {e.message})")
        return incremental.plan(store.unchunk(target.properties, store.EXPANDED) or "", target, sources)

    def spec(self, entry: Entry, work_dir: Path, mode: str, partition: dict[str, str] | None = None,
             run_id: str | None = None) -> dict[str, Any]:
        """The job's ``spec.json`` (``mode`` is ``batch`` or ``continuous``)."""
        catalog = self.manager.catalog(entry.catalog).fresh()  # the query a refresh runs and commits
        target = catalog.get_table(entry.database, entry.name)
        params = target.properties
        # The definition this run executes, checked as it is now (signed by catalogd, valid).
        self.check_definition(entry.catalog, entry.database, entry.name, params)
        spec: dict[str, Any] = {
            "mode": mode, "daemon": self.address(), "table": entry.full_name,
            "query": store.unchunk(params, store.EXPANDED), "partition": partition or None,
            "status_file": str(work_dir / "status.json"), "result_file": str(work_dir / "result.json"),
            "app_name": f"catalogd {mode} refresh of {entry.full_name}" + (f" ({run_id})" if run_id else ""),
        }
        tls = self.config.server.tls
        if tls is not None:
            # The job trusts exactly the certificate its daemon serves, and shows it back under mutual TLS.
            spec["tls"] = {"server_cert": str(tls.cert), "cert": str(tls.cert) if tls.client_ca else None,
                           "key": str(tls.key) if tls.client_ca else None}
        if mode == "continuous":
            spec["trigger_seconds"] = trigger_seconds(entry.freshness)
            spec["checkpoint"] = str(self.checkpoint(entry))
            spec["sources"] = store.sources(params)
            plan = self.refresh_plan(entry, target)
            spec["refresh"], spec["refresh_why"] = plan.refresh, plan.why
            if plan.incremental:
                spec["incremental"] = plan.to_spec()
        return spec
